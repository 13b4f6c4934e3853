"""Measure every step-0 signal on a model's own answers and choose its Seer defaults.

Pure measurement over a list of requests (the dataset comes from the caller: `seer calibrate`
reads it with `seer.data`; this module imports no data source):

- `collect` answers each request with the baseline (the full window) to learn where the answer
  really ends (no reference answers needed: the baseline's own end is the truth), and runs the
  step-0 probe (`probe.step0`, the one every reader uses) on the same encoded prompt: sparsity at
  every layer, theta and tensor, and the end-token probability.
- `sweep` scores every detector setting on those samples: the sparsity signal per tensor, layer
  and theta under the paper's SNR rule (a grid of tau_jump, gamma, direction) and the
  change-point rule (z, direction), the end-probability threshold (tau, run), and the combined
  signal (the best sparsity setting with each threshold). `Score`: how many answers the kept
  window would cut (`over`: window < true end + 1), detection rate, boundary MAE, mean window.
- `choose` picks the fastest setting (smallest mean window) of a family that cuts no more than a
  share of the answers and finds some boundary; `shortlist` takes those of every family (at a
  few shares) as the candidates that `seer.calibrate.trials` runs with the guard on, where the
  final choice is made by cost at a stated accuracy margin. `evaluate` scores one setting on
  other samples (the evaluation split).
- `auc` / `separation` say how well a per-position signal separates answer from padding.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from seer.boundary.config import TENSORS, SeerConfig
from seer.boundary.probe import step0
from seer.boundary.truncation import round_window
from seer.errors import SeerError

if TYPE_CHECKING:
    from seer.boundary.model import ProbedModel

THETAS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
PAPER = dict(
    signal="sparsity",
    tensor="down",
    layer=3,
    theta=1e-3,
    direction="rising",
    tau_jump=0.03,
    gamma=0.6,
)


@dataclass(slots=True)
class Sample:
    """One request, measured."""

    id: str  # the request's id in its dataset
    family: str | None  # its family / category, when the dataset has one (per-family tables)
    true_len: int  # answer tokens before the end token in the baseline answer
    correct: bool | None  # baseline answer equals the reference (None: no reference given)
    sparsity: torch.Tensor  # (2 tensors [down, gate], n_layers, n_thetas, W)
    end_prob: torch.Tensor  # (W,) step-0 probability of an end token
    score: float | None = None  # the baseline answer's score by the data's metric (`score=`)
    text: str = ""  # the baseline answer (a Seer run's answer "changed" if it differs)
    nfe: int = 0  # the baseline's forwards (its cost: nfe x gen_length answer positions)


@torch.inference_mode()
def collect(
    lm: ProbedModel,
    examples,
    gen_length: int | None = None,
    batch: int = 32,
    progress=None,
    encode=None,
    score=None,
) -> list[Sample]:
    """Baseline answers and step-0 profiles of `examples` (objects with `id`, `prompt`, `image`,
    `answer`, `family`: `seer.data.Example`), `batch` requests at a time. `encode(lm, example)`
    makes a request's prompt (default: `lm.prompt(example.prompt, example.image)`); it is
    encoded once and both the baseline and the step-0 probe receive it. `score(example, text)`
    scores a baseline answer by the data's own metric (None: it cannot be scored)."""
    encode = encode or (lambda lm, e: lm.prompt(e.prompt, e.image))
    p = lm.sampling(gen_length=gen_length)
    out: list[Sample] = []
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        inputs = [encode(lm, e) for e in chunk]
        gens = lm.generate(inputs, p)
        prof = step0(lm, inputs, params=p, thetas=THETAS, tensors=TENSORS)
        for r, (e, g) in enumerate(zip(chunk, gens, strict=True)):
            correct = None if e.answer is None else g.text.strip() == e.answer.strip()
            sp = prof.sparsity[:, :, :, r]  # (2 tensors, n_layers, n_thetas, W)
            s = None if score is None else score(e, g.text)
            out.append(
                Sample(
                    e.id, e.family, g.stats.tokens, correct, sp, prof.end_prob[r], s, g.text, g.nfe
                )
            )
        if progress is not None:
            progress(len(chunk))
    return out


@dataclass(slots=True)
class Score:
    """How a detector setting does on a set of samples."""

    setting: dict  # the SeerConfig fields that define it
    mae: float  # mean |L* - (true_len + 1)|, undetected rows counted at gen_length
    over: float  # share of rows whose kept window would cut the end token
    detected: float  # share of rows with a boundary
    mean_window: float  # mean kept window after bucket rounding (the fallback if undetected)
    cut: int = 0  # rows whose kept window would cut the end token (over x n)
    n: int = 0  # rows scored


def score(setting: dict, lengths: list[int | None], samples, g: int, bucket: int) -> Score:
    """Score the boundaries `lengths` (L* per sample, None: none found) against the samples."""
    margin = setting.get("margin", 0)
    fallback = round_window(setting.get("fallback") or g, g, bucket)  # kept without a boundary
    err, over, det, win = 0.0, 0, 0, 0
    for length, s in zip(lengths, samples, strict=True):
        target = s.true_len + 1
        w = fallback if length is None else round_window(length, g, bucket, margin)
        err += abs((length if length is not None else g) - target)
        over += w < min(target, g)
        det += length is not None
        win += w
    n = len(samples)
    return Score(setting, err / n, over / n, det / n, win / n, over, n)


def _lengths(index: np.ndarray) -> list[int | None]:
    return [None if i < 0 else i + 1 for i in index.tolist()]


class _Profiles:
    """The samples' profiles on the host, stacked once: every rule reads slices of these."""

    def __init__(self, samples: list[Sample]) -> None:
        self.sparsity = torch.stack([s.sparsity for s in samples]).double().numpy()
        self.ends = torch.stack([s.end_prob for s in samples]).double().numpy()  # (N, W)

    def at(self, tensor: str, layer: int, theta: float) -> np.ndarray:
        """(N, W) sparsity at one probe point."""
        if theta not in THETAS:
            raise SeerError(f"theta {theta:g} was not measured; choose one of {THETAS}")
        if not 0 <= layer < self.sparsity.shape[2]:
            raise SeerError(f"layer {layer} was not measured (the model has fewer layers)")
        return self.sparsity[:, TENSORS.index(tensor), layer, THETAS.index(theta)]


def lengths_for(setting: dict, samples: list[Sample], profiles: _Profiles | None = None):
    """L* per sample (None: no boundary) under one setting of any signal."""
    prof = profiles or _Profiles(samples)
    cfg = SeerConfig.from_dict({k: v for k, v in setting.items() if k != "signal"})
    signal = setting.get("signal", cfg.signal)
    if signal == "eos_prob":
        return _lengths(cfg.threshold.find_all(prof.ends))
    layer = 3 if cfg.layer is None else cfg.layer
    by_sp = _lengths(cfg.snr.find_all(prof.at(cfg.tensor, layer, cfg.theta)))
    if signal == "sparsity":
        return by_sp
    by_eos = _lengths(cfg.threshold.find_all(prof.ends))
    return [
        None if a is None or b is None else max(a, b) for a, b in zip(by_sp, by_eos, strict=True)
    ]


def evaluate(setting: dict, samples: list[Sample], g: int, bucket: int = 8) -> Score:
    """One setting scored on `samples` (e.g. the evaluation split)."""
    return score(setting, lengths_for(setting, samples), samples, g, bucket)


def sweep(samples: list[Sample], g: int, bucket: int = 8, max_over: float = 0.0) -> list[Score]:
    """Score every signal's settings (see the module docstring) on `samples`."""
    results = []
    prof = _Profiles(samples)
    n_layers = prof.sparsity.shape[2]
    points = list(itertools.product(TENSORS, range(n_layers), THETAS, ("rising", "falling")))
    for (tensor, layer, theta, direction), tau, gamma in itertools.product(
        points, (0.01, 0.02, 0.03, 0.05, 0.1), (0.3, 0.6, 1.0)
    ):
        setting = dict(
            signal="sparsity",
            tensor=tensor,
            layer=layer,
            theta=theta,
            direction=direction,
            tau_jump=tau,
            gamma=gamma,
        )
        results.append(score(setting, lengths_for(setting, samples, prof), samples, g, bucket))
    for (tensor, layer, theta, direction), z in itertools.product(
        points, (2.0, 3.0, 4.0, 6.0, 8.0)
    ):
        setting = dict(
            signal="sparsity",
            rule="changepoint",
            tensor=tensor,
            layer=layer,
            theta=theta,
            direction=direction,
            z=z,
        )
        results.append(score(setting, lengths_for(setting, samples, prof), samples, g, bucket))
    eos = []
    for tau, run in itertools.product((0.2, 0.3, 0.5, 0.7, 0.9), (1, 2, 3)):
        setting = dict(signal="eos_prob", eos_tau=tau, eos_run=run)
        eos.append(score(setting, lengths_for(setting, samples, prof), samples, g, bucket))
    results += eos
    best_sp = choose(results, "sparsity", max_over)
    sp = {k: v for k, v in best_sp.setting.items() if k != "signal"}
    for e in eos:
        setting = {**sp, **{k: e.setting[k] for k in ("eos_tau", "eos_run")}, "signal": "combined"}
        results.append(score(setting, lengths_for(setting, samples, prof), samples, g, bucket))
    return results


def choose(scores: list[Score], signal: str | None = None, max_over: float = 0.0) -> Score:
    """The setting with the smallest mean window (the fastest) among those that cut at most
    `max_over` of the answers and find some boundary; if none does, the one that cuts fewest.
    `signal`: choose among that signal's settings only (None: every signal)."""
    pool = [s for s in scores if signal is None or s.setting["signal"] == signal]
    if not pool:
        raise SeerError(f"no {signal} setting was scored")
    safe = [s for s in pool if s.over <= max_over and s.detected > 0]
    if safe:
        return min(safe, key=lambda s: (s.mean_window, s.mae))
    return min(pool, key=lambda s: (s.over, s.mean_window, s.mae))


GROUPS = {  # the detector families `shortlist` takes candidates from, by name
    "sparsity, SNR rule": lambda st: st["signal"] == "sparsity" and "rule" not in st,
    "sparsity, change point": lambda st: st["signal"] == "sparsity" and "rule" in st,
    "end probability": lambda st: st["signal"] == "eos_prob",
    "combined": lambda st: st["signal"] == "combined",
}
LEVELS = (0.0, 0.05)  # shares of answers a candidate's window may cut (the guard regrows them)


def shortlist(scores: list[Score], fallback: int, max_over: float | None = None):
    """The settings worth running with the guard (`seer.calibrate.trials`): per detector family,
    the fastest setting that cuts at most each of `LEVELS` of the answers (or `max_over` only,
    when the user set that constraint), and the paper's defaults; each with the `fallback`
    window. Returns [(family name, setting)], without repeats."""
    out, seen = [], set()
    levels = LEVELS if max_over is None else (max_over,)
    picks = [
        (name, choose([s for s in scores if keep(s.setting)], None, level))
        for name, keep in GROUPS.items()
        if any(keep(s.setting) for s in scores)
        for level in levels
    ]
    paper = paper_score(scores)
    if paper is not None and (max_over is None or paper.over <= max_over):
        picks.append(("paper's defaults", paper))
    for name, sc in picks:
        if max_over is not None and sc.over > max_over:
            continue
        setting = {**sc.setting, "fallback": fallback}
        key = tuple(sorted(setting.items()))
        if key not in seen:
            seen.add(key)
            out.append((name, setting))
    return out


def paper_score(scores: list[Score]) -> Score | None:
    """The paper's setting (layer 3, theta 1e-3, SNR 0.03 / 0.6), when the model has a layer 3."""
    return next((s for s in scores if all(s.setting.get(k) == v for k, v in PAPER.items())), None)


def auc(pos: torch.Tensor, neg: torch.Tensor) -> float:
    """P(neg > pos) + 0.5 P(tie): 1.0 = padding always scores higher than answer positions."""
    if pos.numel() == 0 or neg.numel() == 0:
        return float("nan")
    allv = torch.cat([pos, neg]).double()
    ranks = allv.argsort().argsort().double() + 1
    # average ranks over ties
    uniq, inv = torch.unique(allv, return_inverse=True)
    sums = torch.zeros(len(uniq), dtype=torch.float64).index_add_(0, inv, ranks)
    counts = torch.zeros(len(uniq), dtype=torch.float64).index_add_(0, inv, torch.ones_like(ranks))
    ranks = (sums / counts)[inv]
    r_neg = ranks[pos.numel() :].sum()
    n1, n2 = neg.numel(), pos.numel()
    return float((r_neg - n1 * (n1 + 1) / 2) / (n1 * n2))


def separation(samples: list[Sample], signal) -> float:
    """AUC of a per-position signal (sample -> (W,)) for padding vs answer positions."""
    pos, neg = [], []
    for s in samples:
        v = signal(s)
        end = min(s.true_len, v.shape[0])
        pos.append(v[:end])
        neg.append(v[end + 1 :])
    return auc(torch.cat(pos), torch.cat(neg))


def aligned_mean(samples: list[Sample], signal, k: int = 8) -> torch.Tensor:
    """Mean of signal(sample) at offsets -k..k from the true end token (positions that exist)."""
    acc = torch.zeros(2 * k + 1, dtype=torch.float64)
    cnt = torch.zeros(2 * k + 1, dtype=torch.float64)
    for s in samples:
        v = signal(s).double()
        for o in range(-k, k + 1):
            j = s.true_len + o
            if 0 <= j < v.shape[0]:
                acc[o + k] += v[j]
                cnt[o + k] += 1
    return acc / cnt.clamp(min=1)


def as_rows(scores: list[Score]) -> list[dict]:
    return [{**s.setting, **{k: v for k, v in asdict(s).items() if k != "setting"}} for s in scores]
