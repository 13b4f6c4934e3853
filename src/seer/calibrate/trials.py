"""Seer's detector settings run for real, with the guard on: what each costs and what it keeps.

`seer.calibrate.sweep` scores every setting on the step-0 profiles alone (how many answers
its window would cut, how long a window it keeps). A cut answer is not a lost answer: the guard
grows the window of any row whose answer reaches the cut, so a setting that cuts a few answers
may still be the cheapest at the same accuracy. This module measures that directly: `run` answers
the calibration requests with a setting and the guard on and compares them with the full
window's answers (`Sample.text`, `Sample.score` from `calibrate.collect`):

- cost: answer positions x forwards per request, step 0 over the full window included
  (`gen_length + (nfe - 1) * window`; a row the guard grew is counted at its final window, an
  upper bound), against the full window's `nfe * gen_length`;
- the guard: rows it grew and the extra forwards that cost. A regrowth keeps the tokens already
  revealed, masks the new positions (the window x `growth`, up to gen_length) and denoises them
  with more steps at the same tokens per step, every forward over the grown window;
- answers changed against the full window's, answers made worse and better, and the paired
  difference of the data's score with a one-sided 95 % lower bound (bootstrap over requests).

`passes(trial, margin)` is the accuracy rule of `seer calibrate`: on 100 or more scored
requests the lower bound of the paired difference is at least -margin points; on fewer, the
answers made worse are at most margin % of them (at least one). A request the data cannot score
counts as worse when its answer changed. `pick` takes the cheapest setting that passes.
`run(..., margin=m)` stops a setting early, after any batch of rows, once it can no longer pass:
on fewer than 100 requests, once more answers were made worse than the rule allows of all of
them; on more, once the bound stays below -m even if every request still to answer kept its
full-window answer (`Trial.stopped`; its figures cover the rows answered).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from seer.boundary.config import SeerConfig
from seer.boundary.truncation import FixedWindowPolicy, round_window

if TYPE_CHECKING:
    from seer.boundary.model import ProbedModel

MARGIN = 2.0  # points of the data's score a setting may lose (one-sided 95 % lower bound)
SMALL = 100  # fewer scored requests than this: count the answers made worse instead
BOOTSTRAP = 2000  # resamples of the paired difference's bound (seeded)


@dataclass(slots=True)
class Trial:
    """One setting answered the requests with the guard on."""

    name: str  # what it is ("eos_prob", "sparsity (SNR rule)", "oracle window", ...)
    setting: dict  # its Seer options (empty for the oracle window)
    n: int  # requests answered
    cost: float  # mean answer positions x forwards per request (step 0 included)
    cost_ratio: float  # cost / the full window's (below 1: cheaper)
    nfe: float  # mean forwards per request
    window: float  # mean window kept after step 0
    final_window: float  # mean window at the end (after the guard)
    no_boundary: int  # rows where the signal found no boundary (the fallback window kept)
    regrown: int  # rows the guard grew
    regrowth_cost: float  # share of the cost that the guard's extra forwards took
    changed: int  # answers that differ from the full window's
    worse: int  # answers scored lower than the full window's (changed, when unscorable)
    better: int  # answers scored higher
    score: float | None  # mean score by the data's metric (None: nothing scorable)
    diff: float  # paired mean difference against the full window, in points
    lower: float  # its one-sided 95 % lower bound, in points (bootstrap over requests)
    passes: bool = False  # within the margin (`passes`)
    stopped: bool = False  # stopped early: it could no longer pass (`n` rows answered, not all)


def bootstrap_lower(d: np.ndarray, seed: int = 0, level: float = 0.95) -> float:
    """One-sided `level` lower bound of mean(d) by the bootstrap percentile over rows."""
    if len(d) == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(BOOTSTRAP, len(d)))].mean(axis=1)
    return float(np.quantile(means, 1 - level))


def passes(t: Trial, margin: float = MARGIN) -> bool:
    """The accuracy rule (module docstring)."""
    if t.n >= SMALL:
        return t.lower >= -margin
    return t.worse <= max(1, math.floor(margin / 100 * t.n))


@torch.inference_mode()
def run(
    lm: ProbedModel,
    inputs,
    samples,
    setting: dict | None,
    name: str,
    *,
    params,
    score=None,
    examples=None,
    windows: list[int] | None = None,
    batch: int = 32,
    progress=None,
    margin: float | None = None,
) -> Trial:
    """Answer `inputs` (encoded prompts, one per sample) with Seer `setting` and the guard on
    (or, with `windows`, each row cut to its own fixed window: the oracle) and compare with the
    samples' full-window answers. `score(example, text)` scores an answer (None: unscorable).
    `margin`: stop early once the setting cannot pass it (module docstring)."""
    cfg = None if setting is None else SeerConfig.from_dict(setting)
    rows = []
    stopped = False
    for i in range(0, len(inputs), batch):
        chunk = inputs[i : i + batch]
        if windows is not None:
            policy = FixedWindowPolicy(windows[i : i + batch])
            gens = lm.generate(chunk, params, policy=policy)
        else:
            gens = lm.generate(chunk, params, seer=cfg)
        rows.extend(gens)
        if progress is not None:
            progress(len(chunk))
        if margin is not None and len(rows) < len(inputs):
            d = _deltas(rows, samples, score, examples)
            if cannot_pass(d, len(inputs), margin):
                stopped = True
                break
    t = _trial(rows, samples[: len(rows)], setting, name, params, score, examples, windows)
    t.stopped = stopped
    return t


def _deltas(rows, samples, score, examples) -> list[float]:
    """Each answered row's score against its full-window answer's (unscorable: -1 if changed)."""
    d = []
    for k, (gen, s) in enumerate(zip(rows, samples, strict=False)):
        mine = None if score is None or examples is None else score(examples[k], gen.text)
        if mine is None or s.score is None:
            d.append(0.0 if gen.text.strip() == s.text.strip() else -1.0)
        else:
            d.append(float(mine) - float(s.score))
    return d


def cannot_pass(d: list[float], n: int, margin: float) -> bool:
    """Whether a setting whose first rows scored `d` (against the full window) can no longer
    pass `margin` on all `n` rows (module docstring)."""
    if n < SMALL:
        return sum(x < 0 for x in d) > max(1, math.floor(margin / 100 * n))
    best = np.concatenate([np.asarray(d) * 100, np.zeros(n - len(d))])
    return bootstrap_lower(best) < -margin


def _trial(rows, samples, setting, name, params, score, examples, windows) -> Trial:
    """The figures of the answered `rows` against their samples (`Trial`)."""
    g = params.gen_length
    if windows is not None:
        windows = windows[: len(rows)]
    steps = params.steps or g
    costs, extra, d = [], 0.0, []
    changed = worse = better = 0
    scored = []
    for k, (gen, s) in enumerate(zip(rows, samples, strict=True)):
        w0 = gen.boundary.window if gen.boundary is not None else gen.window
        cost = g + (gen.nfe - 1) * gen.window
        if gen.grown:  # forwards beyond the plan of the first window, at the final window
            extra += max(0, gen.nfe - 1 - math.ceil(steps * w0 / g)) * gen.window
        costs.append(cost)
        same = gen.text.strip() == s.text.strip()
        changed += not same
        mine = None if score is None or examples is None else score(examples[k], gen.text)
        if mine is None or s.score is None:
            delta = 0.0 if same else -1.0  # unscorable: a changed answer counts as a loss
        else:
            delta = float(mine) - float(s.score)
            scored.append(float(mine))
        worse += delta < 0
        better += delta > 0
        d.append(delta)
    base = float(np.mean([s.nfe * g for s in samples]))
    arr = np.asarray(d) * 100
    reports = [gen.boundary for gen in rows if gen.boundary is not None]
    t = Trial(
        name=name,
        setting={} if setting is None else dict(setting),
        n=len(rows),
        cost=float(np.mean(costs)),
        cost_ratio=float(np.mean(costs)) / base,
        nfe=float(np.mean([gen.nfe for gen in rows])),
        window=float(np.mean([r.window for r in reports] or windows or [g])),
        final_window=float(np.mean([gen.window for gen in rows])),
        no_boundary=sum(r.length is None for r in reports),
        regrown=sum(gen.grown > 0 for gen in rows),
        regrowth_cost=extra / max(1.0, float(np.sum(costs))),
        changed=changed,
        worse=worse,
        better=better,
        score=float(np.mean(scored)) if len(scored) == len(rows) else None,
        diff=float(arr.mean()),
        lower=bootstrap_lower(arr),
    )
    return t


def oracle_windows(samples, g: int, bucket: int) -> list[int]:
    """Each row's window cut right after its full-window answer's end token (bucket-rounded)."""
    return [round_window(s.true_len + 1, g, bucket) for s in samples]


def fallback_window(samples, g: int, bucket: int, q: float = 0.95) -> int:
    """The static window that holds `q` of the samples' answers with their end token."""
    ends = np.array([min(s.true_len + 1, g) for s in samples])
    return round_window(int(np.ceil(np.quantile(ends, q))), g, bucket)


def pick(trials: list[Trial], margin: float = MARGIN) -> Trial | None:
    """The cheapest trial with Seer options that passes the margin (None: none does)."""
    for t in trials:
        t.passes = passes(t, margin) and not t.stopped
    ok = [t for t in trials if t.passes and t.setting]
    return min(ok, key=lambda t: (t.cost, t.changed)) if ok else None
