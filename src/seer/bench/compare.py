"""Seer against the alternatives at equal budgets (`benchmarks/bench_compare.py`): the configs,
the batch-1 and batch-32 runs with their resumable raw records, and the summary.

Every method is a policy of the one denoising loop, set through `SamplingParams` or a window
policy (never a copy of the sampler); the list is in `build_configs`. Batch 1: each request
runs every config `repeats` times, interleaved (one round = every config once), after every
config ran once untimed (`seer.bench.harness.warm`); the raw record keeps each repeat's loop
time, so intervals cover requests and repeats. Batch 32: every engine config over all requests
(or a seeded random sample, `seer.bench.draws.sample`) at max_batch 32, `repeats` interleaved
rounds. DPad runs by name (`cache="dpad"`), through `generate` and the engine alike.

Raw records (JSON Lines, one line per request, one per timed engine round, then one per engine
config) make a run resumable at any n (the draw of n is a prefix of the draw of n + 1), at the
next engine round (a stopped batch-32 part keeps its finished rounds) and per config: a config
added after a finished run is run beside the anchors (the full-window baselines, or those
named), and its times are put on the first pass's scale by the anchors' time ratio.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from seer.bench import stats
from seer.bench.harness import Timer, rounds, warm
from seer.boundary.truncation import FixedWindowPolicy, round_window
from seer.errors import SeerError

DPAD_WINDOW = 16  # DPad's sliding window of suffix positions kept after the block
FACTOR = 1.0  # Fast-dLLM's factor (its README's --factor)


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

    @property
    def name(self) -> str:
        return f"{self.method}@{self.budget}"


def _with_seer(cfgs: list[Config]) -> list[Config]:
    """Each config, then Seer composed with it (cut at step 0, then the method over the kept
    window)."""
    out = []
    for c in cfgs:
        out += [c, dataclasses.replace(c, method=f"seer+{c.method}", seer=True)]
    return out


def build_configs(lm, g: int, budgets: list[int], quick: bool, dpad: bool = True,
                  daedal: bool = True) -> list[Config]:  # fmt: skip
    """Every config of the comparison (see the script's docstring); `quick`: baseline, seer,
    stop, oracle and threshold 0.9 (and DAEDAL, when `daedal`)."""
    enders = tuple((t,) for t in lm.tokens.enders)  # ids from the tokenizer, never literals
    out: list[Config] = []
    for k in budgets:
        b, st = f"k={k}", g // k
        ref = f"baseline@{b}"
        base = dict(steps=st)
        b8 = dict(steps=st, block_length=8)
        out += [
            Config("baseline", b, base, ref=ref),
            Config("seer", b, base, seer=True, ref=ref),
            Config("stop", b, dict(base, stop=enders), engine=False, ref=ref),
            Config("oracle", b, base, oracle=True, ref=ref),
        ]
        if quick:
            continue
        out.append(Config("blocks8", b, b8, ref=ref))
        out += _with_seer([
            Config("early-stop", b, dict(b8, early_stop=True), ref=ref),
            Config("prefix", b, dict(b8, cache="prefix"), ref=ref),
            Config("dual", b, dict(b8, cache="dual"), ref=ref),
        ])  # fmt: skip
        if dpad:  # DPad's suffix dropout with its early termination, by name
            es = dict(b8, early_stop=True, cache="dpad", dpad_window=DPAD_WINDOW)
            out += _with_seer([Config("dpad", b, es, ref=ref)])
    ref1 = f"baseline@k={budgets[0]}"
    for k in (16, 32) if not quick else ():  # fewer-steps references for equal NFE
        out.append(Config("baseline", f"k={k}", dict(steps=g // k), ref=ref1))
    for t in (0.9, 0.7, 0.5) if not quick else (0.9,):
        out += _with_seer([Config("threshold", f"t={t}", dict(threshold=t), ref=ref1)])
    if not quick:
        dual = dict(block_length=8, cache="dual")
        out += _with_seer([
            Config("factor", f"f={FACTOR}", dict(factor=FACTOR), ref=ref1),
            Config("dual+threshold", "t=0.9", dict(dual, threshold=0.9), ref=ref1),
            Config("dual+factor", f"f={FACTOR}", dict(dual, factor=FACTOR), ref=ref1),
        ])  # fmt: skip
    if daedal:  # its own length and reveal rule: compared with the k = 1 baseline
        scaled = dict(daedal=True, daedal_block=8, daedal_eos_tokens=8)
        out += [
            Config("daedal", "official", dict(daedal=True), ref=ref1),
            Config("daedal", "i16", dict(scaled, daedal_initial=16), ref=ref1),
            Config("daedal", "i8", dict(scaled, daedal_initial=8), ref=ref1),
        ]
    return out


# -- one request ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Run:
    text: str  # the decoded answer
    tokens: int  # answer tokens before the first end token
    window: int  # the final window
    nfe: int  # forward passes
    seconds: float  # the denoising loop's wall time
    ids_hash: int  # hash of the answer ids (answers changed)
    detect: float = 0.0  # seconds of it spent in the window policy (Seer's detection and cut)


def encode(lm, ex):
    """A request's prompt, encoded once: its text (and image), or a whole chat's ids."""
    from seer.batch import encoder

    return encoder(lm)(lm, ex)


def request(lm, ex, params, seer_cfg, **kw):
    """An engine request of `ex` (a chat through the chat template), as `seer batch` makes it."""
    from seer.batch import request_for

    return dataclasses.replace(request_for(lm, ex, params, seer_cfg), **kw)


def correct(ex, text: str) -> float:
    """The answer's score (`seer.data.score`: the source's own metric, else exact match)."""
    from seer.data import score

    return score(ex, text)


def run_one(lm, q, cfg: Config, g: int, seer_cfg, refs: dict) -> Run:
    """`cfg` on the encoded prompt `q` at batch 1 (`refs`: runs of this request so far, for
    the oracle's window)."""
    kw = dict(cfg.params, gen_length=g)
    policy = None
    if cfg.oracle:
        base = refs[f"baseline@{cfg.budget}"]
        policy = FixedWindowPolicy([round_window(base.tokens + 1, g, seer_cfg.bucket)])
    out = lm.generate(q, seer=seer_cfg if cfg.seer else None, policy=policy, **kw)
    s = out.stats
    return Run(out.text, s.tokens, s.window, s.nfe, s.seconds, hash(tuple(out.token_ids)),
               s.detect_seconds)  # fmt: skip


def timed(lm, q, todo, g, seer_cfg, repeats, refs0: dict):
    """`todo` interleaved, `repeats` rounds: first results, and per config the loop seconds and
    detection seconds of each repeat."""
    results: dict[str, Run] = {}
    secs: dict[str, list[float]] = {c.name: [] for c in todo}
    detect: dict[str, list[float]] = {c.name: [] for c in todo}
    refs = dict(refs0)
    for r, cfg in rounds(todo, repeats):
        run = run_one(lm, q, cfg, g, seer_cfg, refs)
        refs[cfg.name] = run
        secs[cfg.name].append(run.seconds)
        detect[cfg.name].append(run.detect)
        if r == 0:
            results[cfg.name] = run
        elif run.ids_hash != results[cfg.name].ids_hash:
            raise AssertionError(f"{cfg.name}: a repeat gave other tokens (not greedy?)")
    return results, secs, detect


def _entry(run: Run, secs: list[float], detect: list[float], scale: float = 1.0) -> dict:
    out = dict(asdict(run), seconds=stats.median(secs) * scale, detect=stats.median(detect),
               seconds_repeats=[s * scale for s in secs])  # fmt: skip
    return out


# -- resumable raw records ------------------------------------------------------------------------


def same_run(a: dict | None, b: dict, free: tuple[str, ...] = ("n", "configs")) -> bool:
    """Records of the same run: equal settings but `n` (the pool of n requests is a prefix of the
    pool of n + 1, so a run can be stopped and summarised, or extended, at any n) and the list of
    configs (a config added later is run on its own, beside the anchors: see `batch1`)."""
    if a is None:
        return False
    return {k: v for k, v in a.items() if k not in free} == {
        k: v for k, v in b.items() if k not in free
    }


def recorded(raw: Path, settings: dict, n: int, key: str) -> dict:
    """The raw records of this run, merged per `key` value (a request index, or an engine config):
    the first record of a config wins, later ones only add configs."""
    out: dict = {}
    for rec in raw_lines(raw):
        k = rec.get(key)
        if k is None or not same_run(rec.get("settings"), settings):
            continue
        if key == "request" and k >= n:
            continue
        if k in out:
            for name, res in rec["results"].items():
                out[k]["results"].setdefault(name, res)
        else:
            out[k] = rec
    return out


def raw_lines(raw: Path) -> list[dict]:
    """The records of a raw file. A last line torn by a run killed while writing it is removed
    from the file (its request or round runs again, and the next record starts a line of its
    own); any other unreadable line is an error."""
    if not raw.exists():
        return []
    lines = raw.read_text().splitlines()
    out = []
    for i, line in enumerate(lines, 1):
        try:
            out.append(json.loads(line))
        except ValueError:
            if i < len(lines):
                raise SeerError(f"{raw}:{i}: not a JSON record (one per line)") from None
            raw.write_text("".join(x + "\n" for x in lines[:-1]))
    return out


def _engine_result(results, examples, b1_texts) -> dict:
    """What an engine config's record keeps of its first round's answers."""
    return {
        "correct": [correct(ex, r.text) for r, ex in zip(results, examples, strict=True)],
        "hashes": [hash(tuple(r.token_ids)) for r in results],
        "same_text_as_batch1": sum(r.text == t for r, t in zip(results, b1_texts, strict=True))
        / len(examples),
        "nfe": [r.nfe for r in results],
        "windows": [r.window for r in results],
        "detect_seconds": [r.detect_seconds for r in results],
    }


def _round_lines(raw: Path, settings: dict, idx: list[int], pass_: list[str]) -> list[dict]:
    """The engine rounds of this run and pass (the same configs and requests) already timed."""
    return [x for x in raw_lines(raw) if "engine_round" in x and x["pass"] == pass_
            and x["requests"] == idx and same_run(x["settings"], settings)]  # fmt: skip


def is_anchor(cfg: Config, anchors: tuple[str, ...] = ()) -> bool:
    """The configs re-run beside configs added to a finished request, so that the added configs'
    times can be put on the first pass's scale (the machine's load changes): the full-window
    baselines, or those named in `anchors` (cheaper: a later pass then costs less)."""
    return cfg.name in anchors if anchors else cfg.method == "baseline"


# -- batch 1 --------------------------------------------------------------------------------------


def warm_batch1(lm, q, configs, g, seer_cfg) -> int:
    """Every config once on `q`, untimed (caches, threshold, DAEDAL, DPad, Seer's windows)."""
    refs: dict = {}

    def one(cfg):
        refs[cfg.name] = run_one(lm, q, cfg, g, seer_cfg, refs)

    order = sorted(configs, key=lambda c: c.oracle)  # the oracle reads its baseline's run
    return warm(one, order)


def batch1(lm, examples, configs, g, seer_cfg, repeats, raw: Path, settings: dict, progress,
           anchors: tuple[str, ...] = ()) -> list[dict]:  # fmt: skip
    """Every request through every config; per-request records appended to `raw`.

    A request recorded with fewer configs (a method added after the run) gets only the missing
    configs, run interleaved with the anchors (`is_anchor`); the added configs' times are scaled
    by (anchors' time in the first pass) / (anchors' time now), and the record keeps both."""
    done = recorded(raw, settings, len(examples), "request")
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
        prompt_s, q = [], None
        for _ in range(repeats):
            with Timer() as t:
                q = encode(lm, ex)
            prompt_s.append(t.wall)
        if have is None:
            results, secs, det = timed(lm, q, configs, g, seer_cfg, repeats, {})
            rec = {
                "settings": settings,
                "request": i,
                "id": ex.id,
                "family": ex.family,
                "answer": ex.answer,
                "prompt_seconds": stats.median(prompt_s),
                "results": {
                    name: _entry(run, secs[name], det[name]) for name, run in results.items()
                },  # fmt: skip
            }
            line = rec
        else:
            names = {c.name for c in missing}
            anchor = [c for c in configs if is_anchor(c, anchors) and c.name not in names]
            todo = [c for c in configs if c.name in names or c in anchor]
            results, secs, det = timed(lm, q, todo, g, seer_cfg, repeats, {})
            old = sum(have["results"][c.name]["seconds"] for c in anchor)
            scale = old / sum(stats.median(secs[c.name]) for c in anchor) if anchor else 1.0
            added = {
                name: dict(_entry(results[name], secs[name], det[name], scale),
                           seconds_measured=stats.median(secs[name]), scale=scale)
                for name in names
            }  # fmt: skip
            line = {
                "settings": settings, "request": i, "id": ex.id, "added": sorted(names),
                "scale": scale, "results": added,
                "anchors": {c.name: _entry(results[c.name], secs[c.name], det[c.name])
                            for c in anchor},
            }  # fmt: skip
            for c in anchor:  # the anchors must give the same tokens as in the first pass
                if results[c.name].ids_hash != have["results"][c.name]["ids_hash"]:
                    raise AssertionError(f"{c.name}: other tokens than the recorded run")
            rec = have
            rec["results"].update(added)
        with raw.open("a") as f:
            f.write(json.dumps(line) + "\n")
        rows.append(rec)
        progress(i + 1, len(examples))
    return rows


# -- batch 32 -------------------------------------------------------------------------------------


def batch32(lm, examples, idx: list[int], sample: str, configs, g, seer_cfg, repeats, rows,
            raw: Path, settings: dict, progress, anchors: tuple[str, ...] = ()):  # fmt: skip
    """Each engine config over the requests `idx` (all, or a seeded sample) at max_batch 32,
    `repeats` interleaved rounds (wall and CPU time, end to end: the engine encodes the prompts).

    Configs added after a finished engine run are timed beside a re-run of the cheapest anchor
    (the baseline at the largest tokens per step) and scaled like `batch1`'s."""
    from seer.engine import Engine, EngineConfig

    sub = [examples[i] for i in idx]
    done = recorded(raw, settings, len(examples), "engine")
    done = {k: v for k, v in done.items() if v.get("requests") == idx}
    runnable = [c for c in configs if c.engine]
    todo = [c for c in runnable if c.name not in done]
    if not todo:
        return {c.name: done[c.name] for c in runnable}
    anchor = None
    if done:
        have = [c for c in runnable if is_anchor(c, anchors) and c.name in done]
        if have:
            anchor = max(have, key=lambda c: float(c.budget.split("=")[1]))
    cases = todo + ([anchor] if anchor else [])

    def requests_of(cfg):
        p = lm.sampling(gen_length=g, **cfg.params)  # the model's defaults under the options
        out = []
        for i, ex in zip(idx, sub, strict=True):
            kw = {}
            if cfg.oracle:
                base = rows[i]["results"][f"baseline@{cfg.budget}"]
                kw["window"] = round_window(base["tokens"] + 1, g, seer_cfg.bucket)
            out.append(request(lm, ex, p, seer_cfg if cfg.seer else None, **kw))
        return out

    reqs = {c.name: requests_of(c) for c in cases}
    warm(lambda c: Engine(lm, EngineConfig(max_batch=32)).generate(reqs[c.name][:2]), cases)
    walls, cpus, first = defaultdict(list), defaultdict(list), {}
    pass_ = [c.name for c in cases]  # a pass's rounds resume only into the same pass
    for line in _round_lines(raw, settings, idx, pass_):  # rounds a stopped run finished
        walls[line["engine_round"]].append(line["wall"])
        cpus[line["engine_round"]].append(line["cpu"])
        if "result" in line:
            first.setdefault(line["engine_round"], line["result"])
    for r, cfg in rounds(cases, repeats):
        if len(walls[cfg.name]) > r:
            continue
        eng = Engine(lm, EngineConfig(max_batch=32))
        with Timer() as t:
            res = eng.generate(reqs[cfg.name])
        walls[cfg.name].append(t.wall)
        cpus[cfg.name].append(t.cpu)
        line = {"settings": settings, "engine_round": cfg.name, "round": r, "pass": pass_,
                "requests": idx, "wall": t.wall, "cpu": t.cpu}  # fmt: skip
        if cfg.name not in first and cfg is not anchor:  # an anchor's answers are on record
            b1 = [rows[i]["results"][cfg.name]["text"] for i in idx]
            first[cfg.name] = line["result"] = _engine_result(res, sub, b1)
        with raw.open("a") as f:  # each round is kept: a stopped run resumes at the next one
            f.write(json.dumps(line) + "\n")
        progress(f"engine round {r + 1}/{repeats}, {cfg.name} ({len(reqs[cfg.name])} requests)")
    scale = 1.0
    if anchor is not None:
        scale = done[anchor.name]["wall_seconds"] / stats.median(walls[anchor.name])
    out = {c.name: done[c.name] for c in runnable if c.name in done}
    for cfg in todo:
        rec = {
            "settings": settings,
            "engine": cfg.name,
            "sample": sample,
            "repeats": repeats,
            "requests": idx,
            "wall_seconds": stats.median(walls[cfg.name]) * scale,
            "cpu_seconds": stats.median(cpus[cfg.name]),  # less hit by the machine's other load
            "wall_repeats": walls[cfg.name],
            "cpu_repeats": cpus[cfg.name],
            **first[cfg.name],
        }
        if anchor is not None:
            rec.update(wall_measured=stats.median(walls[cfg.name]), scale=scale)
        with raw.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        out[cfg.name] = rec
        progress(f"engine {cfg.name}")
    return out
