"""Seer against the alternatives at equal budgets (`benchmarks/bench_compare.py`): the configs,
the batch-1 and batch-32 runs with their resumable raw records, and the summary.

Every method is a policy of the one denoising loop, set through `SamplingParams` or a window
policy (never a copy of the sampler); the list is in `build_configs`. Batch 1: each request
runs every config `repeats` times, interleaved (one round = every config once), after every
config ran once untimed (`seerbench.runs.warm`); the raw record keeps each repeat's loop
time, so intervals cover requests and repeats. Batch 32: every engine config over all requests
(or a seeded random sample, `seerbench.draws.sample`) at max_batch 32, `repeats` interleaved
rounds, each round's order rotated (`seerbench.runs.round_order`). DPad runs by name
(`cache="dpad"`), through `generate` and the engine alike.

Raw records (JSON Lines, one line per request, one per timed engine round, then one per engine
config) make a run resumable at any n (the draw of n is a prefix of the draw of n + 1), at the
next engine round (a stopped batch-32 part keeps its finished rounds) and per config: a config
added after a finished run is run at batch 1 beside the reference baseline (the full-window
baseline at the first budget) re-run, interleaved on each request, and its batch-1 times are put
on the first pass's scale by that baseline's time ratio alone, so its speed-up over the baseline
is its time over the baseline's in that pass, on one clock (never a ratio carried through another
config). At batch 32 no time is scaled: a config timed in a later
pass or by a second process is kept as measured and compared with no config of another
process (`_mark_processes`; the report gives it no batch-32 speed-up).

Clocks: every config is timed at both batch sizes on four clocks, wall and CPU each, loop and end
to end. Batch 1: `loop` wall is the denoising loop's own time (`stats.seconds`), `loop` CPU the
generate call's CPU time on the encoded prompt (the loop, the window policy, detokenising),
`e2e` adds the prompt's encoding (timed on its own, median over repeats). Batch 32: `e2e` is the
engine's `generate` over every request (it encodes the prompts), `loop` is that minus the same
requests' encoding, timed in the same round on a throwaway engine (`Engine.submit`, no steps).

Block methods run at every block size of `BLOCKS` that fits the window and the budget (a block
of b holds b // k steps at k tokens per step); their names carry it (`dual/b32@k=1`).
`static+guard` cuts every request to one window read off the calibration split's answer lengths
(`static_window`), with Seer's guard; `oracle+threshold` the oracle window under threshold
decoding; `seer-eos` Seer with the end-probability detector (`signal="eos_prob"`).

A raw file written with `keep_text=False` (ParallelBench: its items are not ours to publish)
keeps each answer's score and token hash, never its text or the reference answer.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from seer.boundary.truncation import FixedWindowPolicy, SeerPolicy, round_window
from seer.errors import SeerError
from seerbench import records, stats
from seerbench.compare_report import correct, reference_of
from seerbench.machine import provenance
from seerbench.runs import Timer, round_order, rounds, warm

DPAD_WINDOW = 16  # DPad's sliding window of suffix positions kept after the block
FACTOR = 1.0  # Fast-dLLM's factor (its README's --factor)
BLOCKS = (8, 16, 32, 64)  # block sizes swept for every block method (Fast-dLLM's LLaDA example: 32)
STATIC_QUANTILE = 0.95  # static+guard: this quantile of the calibration split's answer lengths
EOS_SIGNAL = {"signal": "eos_prob"}  # seer-eos: Seer with the end-probability detector


@dataclass(slots=True)
class Config:
    """One method at one budget."""

    method: str  # family name (baseline, seer, seer+dual, ...)
    budget: str  # "k=4" (tokens per step), "t=0.9" (threshold), "f=1.0" (factor), DAEDAL's name
    params: dict  # SamplingParams overrides
    seer: bool = False  # Seer's window policy (model defaults)
    oracle: bool = False  # fixed window at the baseline answer's end
    engine: bool = True  # also run at batch 32 through the engine
    ref: str = ""  # name of the reference config (answers changed / shorter against it)
    block: int | None = None  # semi-AR block size of a block method (in the name: dual/b32)
    static: int | None = None  # static+guard: one window for every request, guard on
    seer_over: dict | None = None  # Seer options over the model's defaults (seer-eos)

    @property
    def name(self) -> str:
        return f"{self.method}@{self.budget}"

    @property
    def family(self) -> str:
        """The method without its block size: dual/b32 -> dual."""
        return family(self.method)


def family(method: str) -> str:
    """dual/b32 -> dual, seer+dual/b8 -> seer+dual, seer -> seer."""
    return method.split("/b", 1)[0]


def fitting_blocks(g: int, k: int | None, blocks=BLOCKS) -> list[int]:
    """The block sizes of `blocks` a run at window `g` and `k` tokens per step can use: each
    divides g, and holds a whole number of steps (b % k == 0; any b under threshold decoding,
    k None)."""
    return [b for b in blocks if b <= g and g % b == 0 and (k is None or b % k == 0)]


def _with_seer(cfgs: list[Config]) -> list[Config]:
    """Each config, then Seer composed with it (cut at step 0, then the method over the kept
    window)."""
    out = []
    for c in cfgs:
        out += [c, dataclasses.replace(c, method=f"seer+{c.method}", seer=True)]
    return out


def build_configs(
    lm,
    g: int,
    budgets: list[int],
    quick: bool,
    dpad: bool = True,
    daedal: bool = True,
    blocks=BLOCKS,
    static: int | None = None,
    seer_signal: str | None = None,
    rho_eos: bool = True,
) -> list[Config]:
    """Every config of the comparison (see the script's docstring); `quick`: baseline, seer,
    stop, oracle, static+guard and threshold 0.9 (and DAEDAL, when `daedal`; ρ-EOS, when
    `rho_eos`). `blocks`: the
    block sizes swept (those that fit, `fitting_blocks`); `static`: static+guard's window (None:
    no static+guard); `seer_signal`: the model's own Seer signal (seer-eos is left out when it
    is already eos_prob)."""
    enders = tuple((t,) for t in lm.tokens.enders)  # ids from the tokenizer, never literals
    eos = seer_signal != EOS_SIGNAL["signal"]
    out: list[Config] = []
    for k in budgets:
        b, st = f"k={k}", g // k
        ref = f"baseline@{b}"
        base = dict(steps=st)
        out += [
            Config("baseline", b, base, ref=ref),
            Config("seer", b, base, seer=True, ref=ref),
            Config("stop", b, dict(base, stop=enders), engine=False, ref=ref),
            Config("oracle", b, base, oracle=True, ref=ref),
        ]
        if static is not None:
            out.append(Config("static+guard", b, base, static=static, ref=ref))
        if quick:
            continue
        if eos:
            out.append(Config("seer-eos", b, base, seer=True, seer_over=EOS_SIGNAL, ref=ref))
        for bl in fitting_blocks(g, k, blocks):
            out += _block_configs(b, dict(steps=st, block_length=bl), bl, ref, dpad)
    ref1 = f"baseline@k={budgets[0]}"
    for k in (16, 32) if not quick else ():  # fewer-steps references for equal NFE
        if g % k == 0:
            out.append(Config("baseline", f"k={k}", dict(steps=g // k), ref=ref1))
    for t in (0.9, 0.7, 0.5) if not quick else (0.9,):
        out += _with_seer([Config("threshold", f"t={t}", dict(threshold=t), ref=ref1)])
    if not quick:
        t9 = dict(threshold=0.9)
        out.append(Config("oracle+threshold", "t=0.9", t9, oracle=True, ref=ref1))
        if eos:
            out.append(
                Config("seer-eos+threshold", "t=0.9", t9, seer=True, seer_over=EOS_SIGNAL, ref=ref1)
            )
        out += _with_seer([Config("factor", f"f={FACTOR}", dict(factor=FACTOR), ref=ref1)])
        for bl in fitting_blocks(g, None, blocks):
            dual, tag = dict(block_length=bl, cache="dual"), f"/b{bl}"
            out += _with_seer(
                [
                    Config(
                        "dual+threshold" + tag,
                        "t=0.9",
                        dict(dual, threshold=0.9),
                        ref=ref1,
                        block=bl,
                    ),
                    Config(
                        "dual+factor" + tag,
                        f"f={FACTOR}",
                        dict(dual, factor=FACTOR),
                        ref=ref1,
                        block=bl,
                    ),
                ]
            )
    if daedal:  # its own length and reveal rule: compared with the k = 1 baseline
        scaled = dict(daedal=True, daedal_block=8, daedal_eos_tokens=8)
        out += [
            Config("daedal", "official", dict(daedal=True), ref=ref1),
            Config("daedal", "i16", dict(scaled, daedal_initial=16), ref=ref1),
            Config("daedal", "i8", dict(scaled, daedal_initial=8), ref=ref1),
        ]
    if rho_eos:  # its own length and reveal rule, DAEDAL's scaled settings: the k = 1 baseline
        scaled = dict(rho_eos=True, rho_block=8, rho_eos_tokens=8)
        out += [
            Config("rho-eos", "official", dict(rho_eos=True), ref=ref1),
            Config("rho-eos", "i16", dict(scaled, rho_initial=16), ref=ref1),
            Config("rho-eos", "i8", dict(scaled, rho_initial=8), ref=ref1),
        ]
    return out


def _block_configs(budget: str, bb: dict, bl: int, ref: str, dpad: bool) -> list[Config]:
    """The block methods at one budget and block size: plain blocks (their reference), early
    stop, Fast-dLLM's prefix and dual caches, DPad (each also with Seer)."""
    tag = f"/b{bl}"
    out = [Config("blocks" + tag, budget, bb, ref=ref, block=bl)]
    out += _with_seer(
        [
            Config("early-stop" + tag, budget, dict(bb, early_stop=True), ref=ref, block=bl),
            Config("prefix" + tag, budget, dict(bb, cache="prefix"), ref=ref, block=bl),
            Config("dual" + tag, budget, dict(bb, cache="dual"), ref=ref, block=bl),
        ]
    )
    if dpad:  # DPad's suffix dropout with its early termination, by name
        es = dict(bb, early_stop=True, cache="dpad", dpad_window=DPAD_WINDOW)
        out += _with_seer([Config("dpad" + tag, budget, es, ref=ref, block=bl)])
    return out


def static_window(
    lm, source: str, g: int, bucket: int, quantile: float = STATIC_QUANTILE, progress=None
) -> dict:
    """static+guard's window: the `quantile` of the calibration split's answer lengths (answer
    tokens + the end token), rounded up to the bucket, never above `g`. The lengths come from
    the model's seer.json "calibration" ("answer_lengths") when it has them, else from the
    full-window baseline's answers (one token per step, batch 32) on the calibration part of
    the data the model was calibrated on (seer.json's "calibration" "data", else `source`):
    the requests the comparison measures are never looked at. A seer.json calibrated by `seer
    calibrate` holds this window already (its `fallback`, at the same window and quantile)."""
    import numpy as np

    from seer.data import load_examples
    from seer.engine import Engine, EngineConfig

    meta = lm.meta.get("seer") or {}
    calib = meta.get("calibration") or {}
    fallback = (meta.get("config") or {}).get("fallback")
    if fallback and quantile == STATIC_QUANTILE and meta.get("gen_length") == g:
        # `seer calibrate` stored this very window: the calibration answers' 95th percentile
        return {
            "window": int(fallback),
            "quantile": quantile,
            "length_at_quantile": None,
            "n": calib.get("n_calibration"),
            "from": "seer.json's fallback window",
        }
    lengths = calib.get("answer_lengths")
    origin = "seer.json calibration answer_lengths"
    if not lengths:
        data = calib.get("data") or source
        examples = load_examples(data, n=calib.get("n_calibration"), part="calib")
        p = lm.sampling(gen_length=g, steps=g)
        if progress:
            progress(f"static+guard: baseline answers of {len(examples)} calibration requests")
        res = Engine(lm, EngineConfig(max_batch=32)).generate(
            [request(lm, ex, p, None) for ex in examples]
        )
        lengths = [r.tokens + 1 for r in res]
        origin = f"full-window baseline answers on the calibration part of {data}"
    q = float(np.quantile(np.asarray(lengths, dtype=float), quantile))
    return {
        "window": round_window(math.ceil(q), g, bucket),
        "quantile": quantile,
        "length_at_quantile": q,
        "n": len(lengths),
        "from": origin,
    }


# -- one request ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Run:
    text: str  # the decoded answer
    tokens: int  # answer tokens before the first end token
    window: int  # the final window
    nfe: int  # forward passes
    seconds: float  # the denoising loop's wall time
    ids_hash: int  # hash of all gen_length answer ids, [EOS] padding included (one window)
    detect: float = 0.0  # seconds of it spent in the window policy (Seer's detection and cut)
    call_wall: float = 0.0  # the generate call on the encoded prompt: wall seconds
    call_cpu: float = 0.0  # ... and this process's CPU seconds
    prompt_tokens: int = 0  # prompt length in tokens (image positions included)
    answer_hash: int | None = None  # hash of the ids before the end token: the same at any window


class StaticGuardPolicy(SeerPolicy):
    """Every row cut to one `window` after step 0 (no detection), then Seer's guard: a row
    whose answer reaches the cut grows (`SeerConfig.growth`), so nothing is cut silently."""

    def __init__(self, window: int, cfg, tokens) -> None:
        super().__init__(cfg, tokens)
        self.window = window

    def start(self, model, canvas) -> dict:
        self.reports, self.windows, self.guard_fired = [], None, 0
        self.detect_seconds = self.detect_cpu_seconds = 0.0
        return {}

    def cut(self, canvas, logits: torch.Tensor) -> torch.Tensor:
        rows = canvas.x.shape[0]
        return torch.full((rows,), min(self.window, canvas.width), device=canvas.x.device)


def seer_of(cfg: Config, seer_cfg):
    """The Seer settings a config runs with (None: none)."""
    if not cfg.seer:
        return None
    return seer_cfg.override(cfg.seer_over) if cfg.seer_over else seer_cfg


def encode(lm, ex):
    """A request's prompt, encoded once: its text (and image), or a whole chat's ids."""
    from seer.batch import encoder

    return encoder(lm)(lm, ex)


def request(lm, ex, params, seer_cfg, **kw):
    """An engine request of `ex` (a chat through the chat template), as `seer batch` makes it."""
    from seer.batch import request_for

    return dataclasses.replace(request_for(lm, ex, params, seer_cfg), **kw)


def run_one(lm, q, cfg: Config, g: int, seer_cfg, refs: dict) -> Run:
    """`cfg` on the encoded prompt `q` at batch 1 (`refs`: runs of this request so far, for
    the oracle's window: its reference config's answer)."""
    kw = dict(cfg.params, gen_length=g)
    policy = None
    if cfg.oracle:
        base = refs[cfg.ref]
        policy = FixedWindowPolicy([round_window(base.tokens + 1, g, seer_cfg.bucket)])
    elif cfg.static is not None:
        policy = StaticGuardPolicy(cfg.static, seer_cfg, lm.tokens)
    with Timer() as t:
        out = lm.generate(q, seer=seer_of(cfg, seer_cfg), policy=policy, **kw)
    s = out.stats
    return Run(
        out.text,
        s.tokens,
        s.window,
        s.nfe,
        s.seconds,
        hash(tuple(out.token_ids)),
        s.detect_seconds,
        t.wall,
        t.cpu,
        getattr(out, "prompt_tokens", 0),
        hash(tuple(out.token_ids[: s.tokens])),
    )


def timed(lm, q, todo, g, seer_cfg, repeats, refs0: dict):
    """`todo` interleaved, `repeats` rounds: first results, and per config each repeat's
    (loop wall, detection, call wall, call CPU) seconds."""
    results: dict[str, Run] = {}
    secs: dict[str, list[tuple]] = {c.name: [] for c in todo}
    refs = dict(refs0)
    for r, cfg in rounds(todo, repeats):
        run = run_one(lm, q, cfg, g, seer_cfg, refs)
        refs[cfg.name] = run
        secs[cfg.name].append((run.seconds, run.detect, run.call_wall, run.call_cpu))
        if r == 0:
            results[cfg.name] = run
        elif run.ids_hash != results[cfg.name].ids_hash:
            raise AssertionError(f"{cfg.name}: a repeat gave other tokens (not greedy?)")
    return results, secs


def _entry(run: Run, reps: list[tuple], scale: float = 1.0, ex=None) -> dict:
    """A config's result on one request: its first run, the medians over repeats and each
    repeat's times (scaled for a later pass). `ex` given: the text is left out and its score
    kept instead (`keep_text=False`)."""
    loop, det, wall, cpu = (list(x) for x in zip(*reps, strict=True))
    out = dict(
        asdict(run),
        seconds=stats.median(loop) * scale,
        detect=stats.median(det),
        seconds_repeats=[s * scale for s in loop],
        call_wall_repeats=[s * scale for s in wall],
        call_cpu_repeats=[s * scale for s in cpu],
    )
    for k in ("call_wall", "call_cpu"):
        del out[k]
    if ex is not None:
        out["score"] = correct(ex, out.pop("text"))
    return out


# -- resumable raw records ------------------------------------------------------------------------


FREE = ("n", "configs", "quick", "budgets", "blocks")


def same_run(a: dict | None, b: dict, free: tuple[str, ...] = FREE) -> bool:
    """Records of the same run: equal settings but `n` (the pool of n requests is a prefix of the
    pool of n + 1, so a run can be stopped and summarised, or extended, at any n) and the choice
    of configs (the list, and `quick`, `budgets` and `blocks` that only choose it: a config added
    later is run on its own, beside the anchors: see `batch1`)."""
    if a is None:
        return False
    return {k: v for k, v in a.items() if k not in free} == {
        k: v for k, v in b.items() if k not in free
    }


def recorded(raw: Path, settings: dict, n: int, key: str) -> dict:
    """The raw records of this run, merged per `key` value (a request index, or an engine config):
    the first record of a config wins, later ones only add configs (an engine config timed
    again, by a second process of a split pass, keeps its first record)."""
    out: dict = {}
    for rec in raw_lines(raw):
        k = rec.get(key)
        if k is None or not same_run(rec.get("settings"), settings):
            continue
        if key == "request" and k >= n:
            continue
        if k in out and key == "engine":
            continue
        if k in out:
            for name, res in rec["results"].items():
                out[k]["results"].setdefault(name, res)
        else:
            out[k] = rec
    return out


def preregister(raw: Path, settings: dict, plan: dict) -> dict:
    """The run's plan (margin, primary comparison, selection rule) as its raw file holds it:
    the first plan line of this run (`same_run`: a resumed run keeps its first plan, so a
    report with another margin is labelled post hoc), else `plan` appended now, with the time
    and `requests_done`, the requests of this run the file already holds (0: written before the
    first request)."""
    for line in raw_lines(raw):
        if "preregistered" in line and same_run(line.get("settings"), settings):
            return line["preregistered"]
    done = len(recorded(raw, settings, 10**9, "request"))
    plan = dict(
        plan, written=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), requests_done=done
    )
    raw.parent.mkdir(parents=True, exist_ok=True)
    with records.append(raw) as f:
        f.write(json.dumps({"settings": settings, "preregistered": plan}) + "\n")
    return plan


def raw_lines(raw: Path) -> list[dict]:
    """The records of a raw file. A last line torn by a run killed while writing it is removed
    from the file (its request or round runs again, and the next record starts a line of its
    own); any other unreadable line is an error."""
    raw = records.path_of(raw)
    if not raw.exists():
        return []
    lines = records.read_text(raw).splitlines()
    out = []
    for i, line in enumerate(lines, 1):
        try:
            out.append(json.loads(line))
        except ValueError:
            if i < len(lines):
                raise SeerError(f"{raw}:{i}: not a JSON record (one per line)") from None
            records.write_text(raw, "".join(x + "\n" for x in lines[:-1]))
    return out


def _engine_result(results, examples, b1_hashes) -> dict:
    """What an engine config's record keeps of its first round's answers (scores and token
    hashes, never the text)."""
    return {
        "correct": [correct(ex, r.text) for r, ex in zip(results, examples, strict=True)],
        "hashes": [hash(tuple(r.token_ids)) for r in results],
        "same_text_as_batch1": sum(
            hash(tuple(r.token_ids)) == h for r, h in zip(results, b1_hashes, strict=True)
        )
        / len(examples),
        "nfe": [r.nfe for r in results],
        "windows": [r.window for r in results],
        "prompt_tokens": [r.prompt_tokens for r in results],
        "detect_seconds": [r.detect_seconds for r in results],
    }


def _round_lines(raw: Path, settings: dict, idx: list[int], pass_: list[str]) -> list[dict]:
    """The engine rounds of this run and pass (the same configs and requests) already timed."""
    return [
        x
        for x in raw_lines(raw)
        if "engine_round" in x
        and x["pass"] == pass_
        and x["requests"] == idx
        and same_run(x["settings"], settings)
    ]


def anchors_error(anchors: tuple[str, ...], configs: list[Config]) -> str | None:
    """One line when `anchors` (`--anchors`) names a config other than the reference baseline:
    a later pass is timed beside that baseline re-run and nothing else, so that its speed-ups
    are config / baseline on the later pass's clock, never a ratio carried through another
    config (a threshold config re-timed, say); None when they are fine."""
    ref = reference_of(configs)
    other = sorted(set(anchors) - {ref})
    if not other:
        return None
    return (
        f"--anchors: a later pass is timed beside the reference baseline {ref} re-run, never "
        f"through another config: {', '.join(other)} cannot anchor it"
    )


# -- batch 1 --------------------------------------------------------------------------------------


def warm_batch1(lm, q, configs, g, seer_cfg) -> int:
    """Every config once on `q`, untimed (caches, threshold, DAEDAL, DPad, Seer's windows)."""
    refs: dict = {}

    def one(cfg):
        refs[cfg.name] = run_one(lm, q, cfg, g, seer_cfg, refs)

    order = sorted(configs, key=lambda c: c.oracle)  # the oracle reads its baseline's run
    return warm(one, order)


def batch1(
    lm,
    examples,
    configs,
    g,
    seer_cfg,
    repeats,
    raw: Path,
    settings: dict,
    progress,
    keep_text: bool = True,
) -> list[dict]:
    """Every request through every config; per-request records appended to `raw`.

    A request recorded with fewer configs (a method added after the run) gets only the missing
    configs, run interleaved with the reference baseline (`reference_of`, its line's `anchors`);
    the added configs' times are put on the first pass's scale by that baseline's ratio alone
    (`_pass_scale`), and the record keeps the times measured.
    `keep_text=False`: the records keep scores and token hashes, never the text (nor the
    request's reference answer)."""
    done = recorded(raw, settings, len(examples), "request")
    machine = provenance()
    reference = reference_of(configs)
    later_passes(raw, settings, len(examples), reference)  # refused now, not after a pass runs
    rows = []
    for i, ex in enumerate(examples):
        have = done.get(i)
        if have is not None:
            if have["id"] != ex.id:
                raise AssertionError("raw records of other data")
            missing = [c for c in configs if c.name not in have["results"]]
            if not missing:
                rows.append(have)
                continue
            if reference not in have["results"]:  # a later pass is timed beside it
                raise SeerError(
                    f"{raw}: request {i} has no {reference} record to time "
                    f"{', '.join(c.name for c in missing)} beside: start a new raw file"
                )
        drop = None if keep_text else ex
        prompt_w, prompt_c, q = [], [], None
        for _ in range(repeats):
            with Timer() as t:
                q = encode(lm, ex)
            prompt_w.append(t.wall)
            prompt_c.append(t.cpu)
        if have is None:
            results, secs = timed(lm, q, configs, g, seer_cfg, repeats, {})
            rec = {
                "settings": settings,
                "request": i,
                "id": ex.id,
                "family": ex.family,
                **({"answer": ex.answer} if keep_text else {}),
                "prompt_seconds": stats.median(prompt_w),
                "prompt_cpu_seconds": stats.median(prompt_c),
                "results": {
                    name: _entry(run, secs[name], ex=drop) for name, run in results.items()
                },
                "machine": machine,
            }
            line = rec
        else:
            names = {c.name for c in missing}
            anchor = [c for c in configs if c.name == reference and c.name not in names]
            todo = [c for c in configs if c.name in names or c in anchor]
            # an added oracle reads its reference's recorded answer
            refs = {c.name: _as_run(x) for c in configs if (x := have["results"].get(c.name))}
            results, secs = timed(lm, q, todo, g, seer_cfg, repeats, refs)
            old = sum(have["results"][c.name]["seconds"] for c in anchor)
            new = sum(stats.median([x[0] for x in secs[c.name]]) for c in anchor)
            scale = old / new if anchor else 1.0
            added = {
                name: dict(
                    _entry(results[name], secs[name], scale, drop),
                    seconds_measured=stats.median([x[0] for x in secs[name]]),
                    scale=scale,
                )
                for name in names
            }
            line = {
                "settings": settings,
                "request": i,
                "id": ex.id,
                "added": sorted(names),
                "scale": scale,
                "results": added,
                "anchors": {c.name: _entry(results[c.name], secs[c.name], ex=drop) for c in anchor},
                "machine": machine,
            }
            for c in anchor:  # the anchors must give the same tokens as in the first pass
                if results[c.name].ids_hash != have["results"][c.name]["ids_hash"]:
                    raise AssertionError(f"{c.name}: other tokens than the recorded run")
            rec = have
            rec["results"].update(added)
        with records.append(raw) as f:
            f.write(json.dumps(line) + "\n")
        rows.append(rec)
        progress(i + 1, len(examples))
    _pass_scale(raw, settings, len(examples), rows, reference)
    return rows


def later_passes(raw: Path, settings: dict, n: int, reference: str) -> dict[tuple, list[dict]]:
    """The raw file's later-pass lines of this run (its first `n` requests) by the configs each
    pass added; a pass that did not re-time the `reference` baseline is refused in one
    `SeerError` line (its times could reach the baseline only through another config)."""
    passes: dict[tuple, list[dict]] = defaultdict(list)
    for line in raw_lines(raw):
        if "added" in line and line["request"] < n and same_run(line["settings"], settings):
            passes[tuple(line["added"])].append(line)
    for added, lines in passes.items():
        if any(reference not in x["anchors"] for x in lines):
            raise SeerError(
                f"{raw}: {', '.join(added)} were timed in a later pass without the reference "
                f"baseline {reference} re-run: time them in one pass with the others"
            )
    return passes


def _pass_scale(raw: Path, settings: dict, n: int, rows: list[dict], reference: str) -> None:
    """Put the batch-1 times of every config added in a later pass on the first pass's scale, each
    clock by its own ratio: the `reference` baseline's total time in the first pass over its
    total re-timed in the later pass, on that clock (loop wall, call wall, call CPU), over every
    request the pass ran. Only that baseline: an added config's speed-up over it is then its
    time over the baseline's in the same pass, on one clock (the end-to-end clocks add the first
    pass's prompt encoding to both, about 1 ms a request on the built-in models); another config
    re-timed beside it (an older raw file's `anchors`) is never used, and a pass without the
    baseline re-timed is refused (`SeerError`): its times could only reach the baseline through
    another config's ratio. A raw line keeps its own request's loop-wall ratio (`scale`) and its
    times scaled by it; scaling CPU time by a wall ratio is wrong where the machine's load
    changed between the passes (load stretches wall time, not CPU time): on the text model's
    300-request run it put the added configs' CPU-time speed-ups 37-39 % under a one-pass run's
    on the same requests, where each clock's own ratio gives them within 2 %."""
    by_request = {row["request"]: row["results"] for row in rows}
    for lines in later_passes(raw, settings, n, reference).values():
        first = [by_request[x["request"]][reference] for x in lines]
        later = [x["anchors"][reference] for x in lines]
        ratio = {}
        for key in ("seconds_repeats", "call_wall_repeats", "call_cpu_repeats"):
            if all(key in e for e in first + later):  # records from before the clocks: loop only
                old = sum(stats.median(e[key]) for e in first)
                new = sum(stats.median(e[key]) for e in later)
                ratio[key] = old / new if old > 0 and new > 0 else 1.0
        for x in lines:
            for name in x["added"]:
                e = by_request[x["request"]][name]
                if "scales" in e:
                    continue  # already on the first pass's scale
                for key, r in ratio.items():
                    e[key] = [t / e["scale"] * r for t in e[key]]
                if "seconds_repeats" in ratio:
                    e["seconds"] = stats.median(e["seconds_repeats"])
                e["scales"] = {k.removesuffix("_repeats"): r for k, r in ratio.items()}


def _as_run(entry: dict) -> Run:
    """A recorded entry as a `Run` (what an added oracle reads of its reference)."""
    return Run(
        entry.get("text", ""),
        entry["tokens"],
        entry["window"],
        entry["nfe"],
        entry["seconds"],
        entry["ids_hash"],
        answer_hash=entry.get("answer_hash"),
    )


# -- batch 32 -------------------------------------------------------------------------------------


def _engine_run(lm, cfg: Config, reqs: list, seer_cfg, max_batch: int = 32) -> list:
    """One engine pass of `reqs` at `max_batch`; static+guard shares a policy per batch."""
    from seer.engine import Engine, EngineConfig

    eng = Engine(lm, EngineConfig(max_batch=max_batch))
    if cfg.static is None:
        return eng.generate(reqs)
    out = []
    for i in range(0, len(reqs), max_batch):
        policy = StaticGuardPolicy(cfg.static, seer_cfg, lm.tokens)
        out += eng.generate(reqs[i : i + max_batch], policy=policy)
    return out


def _encode_time(lm, reqs: list) -> Timer:
    """The requests' encoding alone (`Engine.submit` on a throwaway engine: resolve, tokenise,
    queue; no step), the part of an engine call that is not the loop."""
    from seer.engine import Engine, EngineConfig

    eng = Engine(lm, EngineConfig(max_batch=32))
    with Timer() as t:
        for r in reqs:
            eng.submit(dataclasses.replace(r, window=None) if r.window is not None else r)
    return t


def batch32(
    lm,
    examples,
    idx: list[int],
    sample: str,
    configs,
    g,
    seer_cfg,
    repeats,
    rows,
    raw: Path,
    settings: dict,
    progress,
):
    """Each engine config over the requests `idx` (all, or a seeded sample) at max_batch 32,
    `repeats` interleaved rounds, round r in the order rotated by r (`runs.round_order`; runs
    before it kept one order in every round); each round times the engine call end to end (wall
    and CPU: the engine encodes the prompts) and the same requests' encoding alone
    (`_encode_time`), so the loop's time is their difference. Each round's line records its
    planned `order`; each config's record the order every round ran in (`round_orders`).

    Configs added after a finished engine run are timed in a pass of their own and kept as
    measured (`later_pass`): no ratio carries one pass's clock to another's, so the report gives
    them no batch-32 speed-up over the first pass's configs."""
    sub = [examples[i] for i in idx]
    done = recorded(raw, settings, len(examples), "engine")
    done = {k: v for k, v in done.items() if v.get("requests") == idx}
    runnable = [c for c in configs if c.engine]
    todo = [c for c in runnable if c.name not in done]
    reference = next((c.name for c in runnable if c.method == "baseline"), None)
    if not todo:
        out = {c.name: done[c.name] for c in runnable}
        return _mark_processes(raw, settings, idx, out, reference)
    later = bool(done)
    if later:
        progress(
            f"engine: {len(todo)} configs added to a finished batch-32 pass are timed in a pass "
            "of their own, as measured: no batch-32 speed-up against the first pass's configs "
            "(for one clock, time every config together on a new --raw)"
        )
    cases = todo

    def requests_of(cfg):
        p = lm.sampling(gen_length=g, **cfg.params)  # the model's defaults under the options
        out = []
        for i, ex in zip(idx, sub, strict=True):
            kw = {}
            if cfg.oracle:
                base = rows[i]["results"][cfg.ref]
                kw["window"] = round_window(base["tokens"] + 1, g, seer_cfg.bucket)
            out.append(request(lm, ex, p, seer_of(cfg, seer_cfg), **kw))
        return out

    reqs = {c.name: requests_of(c) for c in cases}
    progress(f"engine: warming {len(cases)} configs (2 requests each, untimed)")
    warm(lambda c: _engine_run(lm, c, reqs[c.name][:2], seer_cfg), cases)
    times: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    first: dict = {}
    keys = ("wall", "cpu", "enc_wall", "enc_cpu")
    pass_ = [c.name for c in cases]  # a pass's rounds resume only into the same pass
    ran: dict[int, list[str]] = defaultdict(list)  # round -> configs in the order they ran
    for line in _round_lines(raw, settings, idx, pass_):  # rounds a stopped run finished
        for k in keys:
            times[line["engine_round"]][k].append(line.get(k, 0.0))
        if "result" in line:
            first.setdefault(line["engine_round"], line["result"])
        ran[line["round"]].append(line["engine_round"])  # file order is run order
    machine = provenance()
    for r, cfg in rounds(cases, repeats, rotate=True):  # round r's order rotated (`round_order`)
        if len(times[cfg.name]["wall"]) > r:
            continue
        progress(f"engine round {r + 1}/{repeats}, {cfg.name}: running")
        enc = _encode_time(lm, reqs[cfg.name])
        with Timer() as t:
            res = _engine_run(lm, cfg, reqs[cfg.name], seer_cfg)
        got = dict(wall=t.wall, cpu=t.cpu, enc_wall=enc.wall, enc_cpu=enc.cpu)
        for k in keys:
            times[cfg.name][k].append(got[k])
        line = {
            "settings": settings,
            "engine_round": cfg.name,
            "round": r,
            "order": [c.name for c in round_order(cases, r, repeats)],  # this round's plan
            "pass": pass_,
            "requests": idx,
            **got,
            "machine": machine,
        }
        if cfg.name not in first:
            b1 = [rows[i]["results"][cfg.name]["ids_hash"] for i in idx]
            first[cfg.name] = line["result"] = _engine_result(res, sub, b1)
        with records.append(raw) as f:  # each round is kept: a stopped run resumes at the next one
            f.write(json.dumps(line) + "\n")
        ran[r].append(cfg.name)
        n_req = len(reqs[cfg.name])
        progress(f"engine round {r + 1}/{repeats}, {cfg.name}: done ({n_req} requests)")
    out = {c.name: done[c.name] for c in runnable if c.name in done}
    for cfg in todo:
        tm = times[cfg.name]
        loop_w = [w - e for w, e in zip(tm["wall"], tm["enc_wall"], strict=True)]
        loop_c = [c - e for c, e in zip(tm["cpu"], tm["enc_cpu"], strict=True)]
        rec = {
            "settings": settings,
            "engine": cfg.name,
            "pass": pass_,
            "sample": sample,
            "repeats": repeats,
            "requests": idx,
            "wall_seconds": stats.median(tm["wall"]),
            "cpu_seconds": stats.median(tm["cpu"]),  # less hit by the machine's other load
            "loop_wall_seconds": stats.median(loop_w),
            "loop_cpu_seconds": stats.median(loop_c),
            "wall_repeats": tm["wall"],
            "cpu_repeats": tm["cpu"],
            "loop_wall_repeats": loop_w,
            "loop_cpu_repeats": loop_c,
            "round_orders": [ran[r] for r in range(repeats)],  # configs in run order, per round
            "machine": machine,
            **first[cfg.name],
        }
        if later:
            rec["later_pass"] = True  # another pass, another clock: no ratio to the first's
        with records.append(raw) as f:
            f.write(json.dumps(rec) + "\n")
        out[cfg.name] = rec
        progress(f"engine {cfg.name}")
    return _mark_processes(raw, settings, idx, out, reference)


def _mark_processes(
    raw: Path, settings: dict, idx: list[int], out: dict, reference: str | None
) -> dict:
    """Mark the batch-32 records timed by another process than the `reference`'s (the first
    baseline): a batch-32 pass split over the cores (the same command side by side with other
    `--blocks` or `--skip`, each on its own copy of the raw file, the second's new lines appended
    to the first's after) times each part on its own clock. Two such processes on the 2-core
    machine timed the 128-step baseline 9 % apart and the 16- and 32-step baselines 1 and 3 %
    apart: no one ratio carries one part's clock to the other's. The marked records
    (`other_process`) keep the times measured; the report gives them no batch-32 speed-up
    against the reference's part."""
    lines = [
        x
        for x in raw_lines(raw)
        if "engine_round" in x and x["requests"] == idx and same_run(x["settings"], settings)
    ]

    def part(name: str, rec: dict) -> tuple | None:
        if "pass" in rec:
            return tuple(rec["pass"])
        for x in lines:  # records from before `pass` was written: the rounds it took its times of
            if x["engine_round"] == name and x["cpu"] in rec.get("cpu_repeats", ()):
                return tuple(x["pass"])
        return None

    parts = {name: part(name, rec) for name, rec in out.items()}
    home = parts.get(reference) if reference else None
    if home is None:
        return out
    return {
        name: rec
        if parts[name] in (home, None) or "later_pass" in rec or "scale" in rec
        # a later pass is marked as such already
        else dict(rec, other_process=True)
        for name, rec in out.items()
    }
