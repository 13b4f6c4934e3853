"""Seer against the alternatives at equal budgets, on a built-in model's held-out requests.

Every method is a policy of the one denoising loop (`seer.diffusion.loop`), set through
`SamplingParams` / a window policy, never a copy of the sampler:

  baseline         the full window, `steps` = gen_length / k (k tokens per step); also at
                   k = 16, 32 as the fewer-steps references for the equal-NFE comparison
  seer             the model's Seer defaults (seer.json): cut at step 0, steps follow the window
  stop             the library's stop option (`SamplingParams.stop` = the end tokens): once an
                   end token is revealed, only masks before it are denoised (batch 1 only: the
                   engine takes no stop words)
  blocks8          baseline with semi-AR blocks of 8 (the reference of the block methods)
  early-stop       dInfer's early stop (inclusionAI/dInfer `BlockWiseDiffusionLLM`): blocks of 8,
                   a row ends once a filled block holds [EOS]
  prefix           Fast-dLLM's prefix KV cache (`generate_with_prefix_cache`), blocks of 8
  dual             Fast-dLLM's dual KV cache (NVlabs/Fast-dLLM `generate_with_dual_cache`),
                   blocks of 8
  threshold        Fast-dLLM parallel decoding (`get_transfer_index` with `threshold`), one block
  dual+threshold   Fast-dLLM's full recipe: dual cache, blocks of 8, threshold 0.9
  seer+X           Seer composed with X (cut at step 0, then X over the kept window)
  oracle           cut at the baseline answer's true end (same bucket rounding): the best any
                   window policy could do
  dpad             (`--dpad`) DPad's suffix dropout (`seer.diffusion.alternatives.SuffixDropout`,
                   a sliding window of 16 suffix positions) with its early termination, blocks of
                   8 (batch 1 only: the engine takes no custom cache policy)
  daedal           (`--daedal`) DAEDAL (Li-Jinsong/DAEDAL, `seer.diffusion.daedal`): the window
                   starts short, grows by end-token confidence, and grows inside at unsure
                   masks, capped at gen_length; `official` = the official script's settings
                   (initial 64 = the whole 64-token window here: no sizing, no insertion);
                   `i16` / `i8` = scaled to this window (initial 16 / 8, blocks of 8, end
                   confidence over 8 positions). Seer does not compose with it (both set the
                   length)

Requests: `seer.data.load_examples(source, part="eval")` — unique held-out requests, disjoint
from the calibration side of the split and from the draw the shipped seer.json was tuned on
(asserted here as well). `--data` takes any `seer.data` source, `parallelbench:ROOT/TASK`
included (a chat's in-context turns go through the model's chat template); an answer is correct
when `seer.data.score` gives it 1 (the task's own metric for ParallelBench, else exact match of
the stripped texts), and every request must be scorable. Greedy decoding, gen_length from
seer.json (64).

Batch 1: each request is encoded once (timed: tokenizer, and for images the vision tower and
splicing), then every method runs on it, `--repeats` times, interleaved (method order within a
repeat is fixed; the machine is shared and noisy, so the median per call is kept; with
`--repeats 1` each time is one call, and the mean over the requests does the smoothing).
Reported per method: exact-match accuracy with a bootstrap 95 % interval (2000 resamples of the
requests), the accuracy difference to the reference and to the full-window baseline of nearest
NFE with paired bootstrap intervals (the same resampled requests for both), answers shorter than
the reference's (the baseline with the same k, or k = 1 for the confidence-driven methods),
window cuts (the final window is shorter than gen_length and holds no end token: an answer cut
by its window), mean NFE, loop time (the denoising loop) and end-to-end time (prompt encoding +
loop) per request, the loop speedup over the reference with a paired bootstrap interval. Batch
32: the first `--engine-n` requests through the engine (`seer.engine.Engine`, max_batch 32),
wall time per request (end to end: the engine encodes the prompts), median over
`--engine-repeats`.

Raw per-request results go to `--raw` (JSON Lines, one line per request, then one per engine
method); a run with the same settings resumes from it, at any `--n` (the pool of n requests is
a prefix of the pool of n + 1). Resume is per config: a method added after a finished run
(`--daedal`, say) is run on the recorded requests beside the anchors (`--anchors`, default the
full-window baselines), and its times are multiplied by the anchors' first-pass / later-pass
time ratio (per request; the record keeps both times). Outputs: a table, a Pareto plot of
accuracy against time (`--plot`), the README's tables (`--markdown`) and a last-line JSON
record.

    python benchmarks/bench_compare.py --model builtin --n 100 --repeats 1 --dpad --daedal \
        --skip blocks8,prefix,seer+prefix --engine-n 32 --engine-repeats 3   # the README's run
    python benchmarks/bench_compare.py --model builtin-vqa --n 32 --repeats 3 --dpad --daedal
    python benchmarks/bench_compare.py --model builtin --n 4 --repeats 1 --budgets 4 --quick
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

import seer
from seer.boundary.truncation import FixedWindowPolicy, resolve, round_window

BOOT = 2000


@dataclass(slots=True)
class Config:
    """One method at one budget."""

    method: str  # family name (baseline, seer, seer+dual, ...)
    budget: str  # "k=4" (tokens per step) or "t=0.9" (threshold)
    params: dict  # SamplingParams overrides
    seer: bool = False  # Seer's window policy (model defaults)
    oracle: bool = False  # fixed window at the baseline answer's end
    engine: bool = True  # also run at batch 32 through the engine
    ref: str = ""  # name of the reference config (answers shorter than its answers)
    dpad: int | None = None  # DPad's scratchpad (suffix positions kept after the block)

    @property
    def name(self) -> str:
        return f"{self.method}@{self.budget}"


def build_configs(lm, g: int, budgets: list[int], quick: bool, dpad: bool = False,
                  daedal: bool = False) -> list[Config]:  # fmt: skip
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
        out += [
            Config("blocks8", b, b8, ref=ref),
            Config("early-stop", b, dict(b8, early_stop=True), ref=ref),
            Config("seer+early-stop", b, dict(b8, early_stop=True), seer=True, ref=ref),
            Config("prefix", b, dict(b8, cache="prefix"), ref=ref),
            Config("seer+prefix", b, dict(b8, cache="prefix"), seer=True, ref=ref),
            Config("dual", b, dict(b8, cache="dual"), ref=ref),
            Config("seer+dual", b, dict(b8, cache="dual"), seer=True, ref=ref),
        ]
        if dpad:
            es = dict(b8, early_stop=True)
            out += [
                Config("dpad", b, es, engine=False, ref=ref, dpad=16),
                Config("seer+dpad", b, es, seer=True, engine=False, ref=ref, dpad=16),
            ]
    ref1 = f"baseline@k={budgets[0]}"
    for k in (16, 32) if not quick else ():  # fewer-steps references for equal NFE
        out.append(Config("baseline", f"k={k}", dict(steps=g // k), ref=ref1))
    for t in (0.9, 0.7, 0.5) if not quick else (0.9,):
        out += [
            Config("threshold", f"t={t}", dict(threshold=t), ref=ref1),
            Config("seer+threshold", f"t={t}", dict(threshold=t), seer=True, ref=ref1),
        ]
    if not quick:
        dt = dict(block_length=8, cache="dual", threshold=0.9)
        out += [
            Config("dual+threshold", "t=0.9", dt, ref=ref1),
            Config("seer+dual+threshold", "t=0.9", dt, seer=True, ref=ref1),
        ]
    if daedal:  # its own length and reveal rule: compared with the k = 1 baseline
        scaled = dict(daedal=True, daedal_block=8, daedal_eos_tokens=8)
        out += [
            Config("daedal", "official", dict(daedal=True), ref=ref1),
            Config("daedal", "i16", dict(scaled, daedal_initial=16), ref=ref1),
            Config("daedal", "i8", dict(scaled, daedal_initial=8), ref=ref1),
        ]
    return out


# -- data ----------------------------------------------------------------------------------------


def held_out(source: str, n: int, seed: int):
    """`n` unique evaluation-side requests, checked disjoint from calibration and tuning, each
    one scorable."""
    from seer.data import example_key, in_calibration, load_examples, unscorable
    from seer.errors import SeerError

    examples = load_examples(source, n=n, part="eval", seed=seed)
    why = next((f"{e.id}: {unscorable(e)}" for e in examples if unscorable(e)), None)
    if why is not None:
        raise SeerError(f"{source}: every request must be scorable; {why}")
    keys = [example_key(e) for e in examples]
    assert len(set(keys)) == len(keys), "held-out requests are not unique"
    assert not any(in_calibration(e) for e in examples), "a held-out request is in calibration"
    try:
        from seer.data.builtin import task_of, tuned_keys

        tuned = tuned_keys(task_of(source)) if source in ("builtin", "builtin-vqa") else set()
    except ImportError:  # pragma: no cover - older seer.data
        tuned = set()
    assert not set(keys) & set(tuned), "a held-out request is in the seer.json tuning draw"
    return examples


def correct(ex, text: str) -> bool:
    """The answer scores 1 (`seer.data.score`: the task's metric, else exact match)."""
    from seer.data import score

    return score(ex, text) == 1.0


def encode(lm, ex):
    """A request's prompt, encoded once: its text (and image), or a whole chat's ids."""
    from seer.calibration import encoder

    return encoder(lm)(lm, ex)


def request(lm, ex, params, seer_cfg, **kw):
    """An engine request of `ex` (a chat through the chat template), as `seer batch` makes it."""
    import dataclasses

    from seer.batch import request_for

    return dataclasses.replace(request_for(lm, ex, params, seer_cfg), **kw)


def load_model(name: str, device: str = "cpu"):
    """`seer.load(name)`; the built-in names fall back to the package's asset folders (where
    `seer.load` does not know them yet)."""
    folder = Path(seer.__file__).parent / "assets" / name
    if name in ("builtin", "builtin-vqa") and folder.is_dir():
        return seer.load(folder, device=device)
    return seer.load(name, device=device)


# -- runs ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Run:
    text: str
    tokens: int
    window: int
    nfe: int
    seconds: float
    ids_hash: int


def run_one(lm, q, cfg: Config, g: int, seer_cfg, refs: dict) -> Run:
    kw = dict(cfg.params, gen_length=g)
    policy = None
    if cfg.oracle:
        base = refs[f"baseline@{cfg.budget}"]
        policy = FixedWindowPolicy([round_window(base.tokens + 1, g, seer_cfg.bucket)])
    if cfg.dpad is not None:  # a cache policy object: through the loop itself
        from seer.boundary.truncation import SeerPolicy
        from seer.diffusion.alternatives import SuffixDropout

        p = lm.sampling(**kw)
        policy = policy or (SeerPolicy(seer_cfg, lm.tokens) if cfg.seer else None)
        res = lm.loop.run(lm.canvas(q, p), p, policy, cache=SuffixDropout(cfg.dpad))
        row = res.answer[0].tolist()
        n = lm.tokens.answer_length(row)
        text = lm.decode(row[:n])
        return Run(text, n, int(res.window[0]), res.nfe, res.seconds, hash(tuple(row)))
    out = lm.generate(q, seer=seer_cfg if cfg.seer else None, policy=policy, **kw)
    s = out.stats
    return Run(out.text, s.tokens, s.window, s.nfe, s.seconds, hash(tuple(out.token_ids)))


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
    if not raw.exists():
        return out
    for line in raw.read_text().splitlines():
        rec = json.loads(line)
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


ANCHORS: tuple[str, ...] = ()  # config names (--anchors); empty: every full-window baseline


def is_anchor(cfg: Config) -> bool:
    """The configs re-run beside configs added to a finished request, so that the added configs'
    times can be put on the first pass's scale (the machine's load changes): the full-window
    baselines, or those named by `--anchors` (cheaper: a later pass then costs less)."""
    return cfg.name in ANCHORS if ANCHORS else cfg.method == "baseline"


def timed(lm, q, todo, g, seer_cfg, repeats, refs0: dict) -> tuple[dict, dict]:
    """`todo` interleaved, `repeats` times: first results and median seconds per config."""
    results: dict[str, Run] = {}
    secs: dict[str, list[float]] = {c.name: [] for c in todo}
    for r in range(repeats):
        refs = dict(refs0)
        for cfg in todo:
            run = run_one(lm, q, cfg, g, seer_cfg, refs)
            refs[cfg.name] = run
            secs[cfg.name].append(run.seconds)
            if r == 0:
                results[cfg.name] = run
            elif run.ids_hash != results[cfg.name].ids_hash:
                raise AssertionError(f"{cfg.name}: a repeat gave other tokens (not greedy?)")
    return results, {k: statistics.median(v) for k, v in secs.items()}


def batch1(lm, examples, configs, g, seer_cfg, repeats, raw: Path, settings: dict, progress):
    """Every request through every config; per-request records appended to `raw`.

    A request recorded with fewer configs (a method added after the run) gets only the missing
    configs, run interleaved with the anchors (`is_anchor`); the added configs' times are scaled
    by (anchors' time in the first pass) / (anchors' time now), and the record keeps both."""
    done = recorded(raw, settings, len(examples), "request")
    rows = []
    for i, ex in enumerate(examples):
        have = done.get(i)
        if have is not None:
            assert have["id"] == ex.id, "raw records of other data"
            missing = [c for c in configs if c.name not in have["results"]]
            if not missing:
                rows.append(have)
                continue
        prompt_s, q = [], None
        for _ in range(repeats):
            t0 = time.perf_counter()
            q = encode(lm, ex)
            prompt_s.append(time.perf_counter() - t0)
        if have is None:
            results, secs = timed(lm, q, configs, g, seer_cfg, repeats, {})
            rec = {
                "settings": settings,
                "request": i,
                "id": ex.id,
                "family": ex.family,
                "answer": ex.answer,
                "prompt_seconds": statistics.median(prompt_s),
                "results": {
                    name: dict(asdict(run), seconds=secs[name]) for name, run in results.items()
                },
            }
            line = rec
        else:
            names = {c.name for c in missing}
            anchors = [c for c in configs if is_anchor(c) and c.name not in names]
            todo = [c for c in configs if c.name in names or c in anchors]
            results, secs = timed(lm, q, todo, g, seer_cfg, repeats, {})
            old = sum(have["results"][c.name]["seconds"] for c in anchors)
            scale = old / sum(secs[c.name] for c in anchors) if anchors else 1.0
            added = {
                name: dict(asdict(results[name]), seconds=secs[name] * scale,
                           seconds_measured=secs[name], scale=scale)
                for name in names
            }  # fmt: skip
            line = {
                "settings": settings, "request": i, "id": ex.id, "added": sorted(names),
                "scale": scale, "results": added,
                "anchors": {c.name: dict(asdict(results[c.name]), seconds=secs[c.name])
                            for c in anchors},
            }  # fmt: skip
            for c in anchors:  # the anchors must give the same tokens as in the first pass
                if results[c.name].ids_hash != have["results"][c.name]["ids_hash"]:
                    raise AssertionError(f"{c.name}: other tokens than the recorded run")
            rec = have
            rec["results"].update(added)
        with raw.open("a") as f:
            f.write(json.dumps(line) + "\n")
        rows.append(rec)
        progress(i + 1, len(examples))
    return rows


def batch32(lm, examples, configs, g, seer_cfg, repeats, rows, raw: Path, settings: dict, progress):
    """Each engine config over the requests at max_batch 32 (wall time, end to end).

    Configs added after a finished engine run are timed beside a re-run of the cheapest anchor
    (the baseline at the largest tokens per step) and scaled like `batch1`'s."""
    from seer.engine import Engine, EngineConfig, Request

    fields = getattr(Request, "__dataclass_fields__", {})
    done = recorded(raw, settings, len(examples), "engine")
    done = {k: v for k, v in done.items() if v["settings"].get("engine_n") == settings["engine_n"]}

    def wall_of(cfg):
        p = lm.sampling(gen_length=g, **cfg.params)  # the model's defaults under the options
        reqs = []
        for i, ex in enumerate(examples):
            kw = {}
            if cfg.oracle:
                base = rows[i]["results"][f"baseline@{cfg.budget}"]
                kw["window"] = round_window(base["tokens"] + 1, g, seer_cfg.bucket)
            reqs.append(request(lm, ex, p, seer_cfg if cfg.seer else None, **kw))
        walls, cpus, results = [], [], None
        for _ in range(repeats):
            eng = Engine(lm, EngineConfig(max_batch=32))
            t0, c0 = time.perf_counter(), time.process_time()
            res = eng.generate(reqs)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            results = results or res
        return statistics.median(walls), results, statistics.median(cpus)

    runnable = [c for c in configs if c.engine and not (c.oracle and "window" not in fields)]
    scale = 1.0
    if done and any(c.name not in done for c in runnable):
        anchor = [c for c in runnable if is_anchor(c) and c.name in done]
        if anchor:
            a = max(anchor, key=lambda c: float(c.budget.split("=")[1]))
            scale = done[a.name]["wall_seconds"] / wall_of(a)[0]
    out = {}
    for cfg in runnable:
        if cfg.name in done:
            out[cfg.name] = done[cfg.name]
            continue
        wall, results, cpu = wall_of(cfg)
        ok = [correct(ex, r.text) for r, ex in zip(results, examples, strict=True)]
        same = [r.text == rows[i]["results"][cfg.name]["text"] for i, r in enumerate(results)]
        rec = {
            "settings": settings,
            "engine": cfg.name,
            "wall_seconds": wall * scale,
            "cpu_seconds": cpu,  # the process's CPU time: less hit by the machine's other load
            "correct": ok,
            "same_text_as_batch1": sum(same) / len(same),
            "nfe": [r.nfe for r in results],
            "windows": [r.window for r in results],
        }
        if done:
            rec.update(wall_measured=wall, scale=scale)
        with raw.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        out[cfg.name] = rec
        progress(f"engine {cfg.name}")
    return out


# -- statistics ----------------------------------------------------------------------------------


def bootstrap(xs: list[bool], seed: int = 0, ys: list[bool] | None = None) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of the mean of `xs`, or (with `ys`, paired: the same
    resampled requests for both) of the difference of the means, mean(xs) - mean(ys)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.tensor(xs, dtype=torch.float64)
    if ys is not None:
        t = t - torch.tensor(ys, dtype=torch.float64)
    idx = torch.randint(0, len(xs), (BOOT, len(xs)), generator=g)
    means = t[idx].mean(dim=1).sort().values
    return float(means[int(0.025 * BOOT)]), float(means[int(0.975 * BOOT) - 1])


def bootstrap_ratio(num: list[float], den: list[float], seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of sum(num) / sum(den), the requests resampled paired
    (a speedup: the reference's time over the method's, on the same requests)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.tensor(num, dtype=torch.float64)
    b = torch.tensor(den, dtype=torch.float64)
    idx = torch.randint(0, len(num), (BOOT, len(num)), generator=g)
    r = (a[idx].sum(dim=1) / b[idx].sum(dim=1)).sort().values
    return float(r[int(0.025 * BOOT)]), float(r[int(0.975 * BOOT) - 1])


def summarise(rows, eng, configs, g, examples) -> dict:
    """Per config: accuracy (`correct` on each row's example), intervals, costs, speedups."""
    out = {}
    n = len(rows)
    for cfg in configs:
        res = [r["results"][cfg.name] for r in rows]
        ref = [r["results"][cfg.ref] for r in rows]
        ok = [correct(ex, x["text"]) for x, ex in zip(res, examples, strict=True)]
        ref_ok = [correct(ex, x["text"]) for x, ex in zip(ref, examples, strict=True)]
        lo, hi = bootstrap(ok)
        loop_s = sum(x["seconds"] for x in res) / n
        e2e_s = loop_s + sum(r["prompt_seconds"] for r in rows) / n
        pairs = list(zip(res, ref, strict=True))
        rec = {
            "method": cfg.method,
            "budget": cfg.budget,
            "accuracy": sum(ok) / n,
            "ci95": [lo, hi],
            "shorter_than_ref": sum(x["tokens"] < y["tokens"] for x, y in pairs),
            "differs_from_ref": sum(x["ids_hash"] != y["ids_hash"] for x, y in pairs),
            "window_cuts": sum(x["window"] < g and x["tokens"] >= x["window"] for x in res),
            "mean_window": sum(x["window"] for x in res) / n,
            "nfe": sum(x["nfe"] for x in res) / n,
            "loop_ms": 1000 * loop_s,
            "e2e_ms": 1000 * e2e_s,
            "ref": cfg.ref,
            "accuracy_minus_ref": (sum(ok) - sum(ref_ok)) / n,
            "ci95_minus_ref": list(bootstrap(ok, ys=ref_ok)),
            "later_pass": sum("scale" in x for x in res),
            "loop_speedup_vs_ref_ci95": list(
                bootstrap_ratio([y["seconds"] for y in ref], [x["seconds"] for x in res])
            ),
            "correct": ok,
        }  # fmt: skip
        if cfg.name in eng:
            e = eng[cfg.name]
            ne = len(e["correct"])
            rec["b32_n"] = ne
            rec["b32_wall_ms"] = 1000 * e["wall_seconds"] / ne
            # the time compared (plots, front, speedups): the process's CPU time where recorded
            rec["b32_clock"] = "cpu" if "cpu_seconds" in e else "wall"
            rec["b32_ms"] = 1000 * e.get("cpu_seconds", e["wall_seconds"]) / ne
            rec["b32_accuracy"] = sum(e["correct"]) / ne
            rec["b32_same_as_b1"] = e["same_text_as_batch1"]
            rec["b32_nfe"] = sum(e["nfe"]) / ne
            rec["b32_later_pass"] = "scale" in e
        out[cfg.name] = rec
    base = out[f"baseline@k={configs[0].budget.split('=')[1]}"] if configs else {}
    for rec in out.values():
        rec["loop_speedup_vs_k1"] = base["loop_ms"] / rec["loop_ms"]
        ref = out[rec["ref"]]
        rec["loop_speedup_vs_ref"] = ref["loop_ms"] / rec["loop_ms"]
        if "b32_ms" in rec and "b32_ms" in ref:
            rec["b32_speedup_vs_ref"] = ref["b32_ms"] / rec["b32_ms"]
    # equal NFE: the full-window baseline whose mean NFE is nearest
    bases = [r for r in out.values() if r["method"] == "baseline"]
    for rec in out.values():
        near = min(bases, key=lambda b: (abs(math.log(b["nfe"] / rec["nfe"])), b["nfe"]))
        rec["equal_nfe_baseline"] = f"baseline@{near['budget']}"
        rec["accuracy_minus_equal_nfe_baseline"] = rec["accuracy"] - near["accuracy"]
        rec["ci95_minus_equal_nfe_baseline"] = list(bootstrap(rec["correct"], ys=near["correct"]))
        rec["loop_speedup_vs_equal_nfe_baseline"] = near["loop_ms"] / rec["loop_ms"]
    for rec in out.values():
        del rec["correct"]
    return out


def pareto(points: list[tuple[float, float, str]]) -> set[str]:
    """Names of the points no other point beats on both time (lower) and accuracy (higher)."""
    front = set()
    for t, a, name in points:
        if not any((t2 <= t and a2 >= a) and (t2 < t or a2 > a) for t2, a2, _ in points):
            front.add(name)
    return front


def mark_frontier(out: dict) -> None:
    b1 = pareto([(r["loop_ms"], r["accuracy"], k) for k, r in out.items()])
    b32 = pareto([(r["b32_ms"], r["accuracy"], k) for k, r in out.items() if "b32_ms" in r])
    for k, r in out.items():
        r["pareto_b1"] = k in b1
        r["pareto_b32"] = k in b32 if "b32_ms" in r else None


# -- output --------------------------------------------------------------------------------------


def show(record: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    c = Console(width=200)
    t = Table(
        title=f"{record['model']}: {record['n']} unique held-out requests, gen_length "
        f"{record['gen_length']}, greedy; times per request, median of {record['repeats']} "
        "(shared 2-core CPU, 1 thread: noisy, compare ratios)"
    )
    cols = ("method", "budget", "acc", "95% CI", "shorter", "cuts", "window", "NFE",
            "loop ms", "e2e ms", "x ref", "b32 cpu ms", "b32 x ref", "eq-NFE base", "d acc",
            "front")  # fmt: skip
    for col in cols:
        t.add_column(col, justify="right")
    for r in record["results"].values():
        lo, hi = r["ci95"]
        front = ("1" if r["pareto_b1"] else "") + ("/32" if r.get("pareto_b32") else "")
        t.add_row(
            r["method"], r["budget"], f"{r['accuracy']:.1%}", f"{lo:.0%}-{hi:.0%}",
            str(r["shorter_than_ref"]), str(r["window_cuts"]), f"{r['mean_window']:.1f}",
            f"{r['nfe']:.1f}", f"{r['loop_ms']:.0f}", f"{r['e2e_ms']:.0f}",
            f"{r['loop_speedup_vs_ref']:.2f}x",
            f"{r['b32_ms']:.1f}" if "b32_ms" in r else "-",
            f"{r['b32_speedup_vs_ref']:.2f}x" if "b32_speedup_vs_ref" in r else "-",
            r["equal_nfe_baseline"].split("@")[1],
            f"{100 * r['accuracy_minus_equal_nfe_baseline']:+.1f}", front,
        )  # fmt: skip
    c.print(t)
    c.print(
        "x ref: loop-time speedup over the reference (the baseline with the same k; k=1 for the "
        "threshold methods). shorter: answers with fewer tokens than the reference's. cuts: "
        "answers cut by their window. eq-NFE base / d acc: the full-window baseline of nearest "
        "mean NFE and the accuracy difference to it (points). front: on the accuracy-vs-time "
        "Pareto front at batch 1 / batch 32."
    )


def markdown(record: dict) -> str:
    """The README's tables from the record: the grid (method x tokens per step) and every config
    against the 64-step baseline, with intervals."""
    res, g = record["results"], record["gen_length"]
    ks = sorted({int(r["budget"][2:]) for r in res.values() if r["budget"].startswith("k=")})
    grid = [k for k in ks if any(r["method"] != "baseline" and r["budget"] == f"k={k}"
                                 for r in res.values())]  # fmt: skip
    methods = list(dict.fromkeys(r["method"] for r in res.values() if r["budget"] in
                                 {f"k={k}" for k in grid}))  # fmt: skip
    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
    out = [
        f"{record['model']}, n = {record['n']} (batch 32: first {_b32n(res)} requests). Cell: "
        "accuracy % · mean NFE · loop speedup over the baseline with the same k at batch 1 / "
        "the same at batch 32 (engine, end to end, CPU time).",
        "",
        "| method | " + " | ".join(f"k={k} ({g // k} steps)" for k in grid) + " |",
        "|---" * (len(grid) + 1) + "|",
    ]
    for m in methods:
        cells = []
        for k in grid:
            r = res.get(f"{m}@k={k}")
            if r is None:
                cells.append("")
                continue
            b32 = f"{r['b32_speedup_vs_ref']:.1f}×" if "b32_speedup_vs_ref" in r else "—"
            cells.append(f"{pct(r['accuracy'])} · {r['nfe']:.1f} · "
                         f"{r['loop_speedup_vs_ref']:.1f}× / {b32}")  # fmt: skip
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    base = res[f"baseline@k={ks[0]}"]
    out += [
        "",
        f"Every config against the {g // ks[0]}-step baseline (accuracy {pct(base['accuracy'])} %"
        f"), sorted by batch-1 loop time. Δ acc: paired bootstrap 95 % interval (points); "
        "shorter / cuts: answers shorter than the reference's / cut by their window; front: on the "
        "accuracy-vs-time Pareto front (point estimates) at batch 1 / batch 32.",
        "",
        "| config | accuracy % [95 % CI] | Δ acc vs ref [CI] | Δ acc vs equal-NFE baseline [CI] "
        f"| shorter | cuts | NFE | loop ms | e2e ms | loop × ref [CI] | vs {g // ks[0]} steps "
        f"| b32 CPU ms | vs {g // ks[0]} steps | front |",
        "|---" * 14 + "|",
    ]
    for name, r in sorted(res.items(), key=lambda kv: -kv[1]["loop_ms"]):
        lo, hi = r["ci95"]
        dlo, dhi = r["ci95_minus_ref"]
        elo, ehi = r["ci95_minus_equal_nfe_baseline"]
        slo, shi = r["loop_speedup_vs_ref_ci95"]
        ref = r["ref"].split("@")[1]
        eq = r["equal_nfe_baseline"].split("@")[1]
        b32 = f"{r['b32_ms']:.0f}" if "b32_ms" in r else "—"
        b32x = f"{base['b32_ms'] / r['b32_ms']:.1f}×" if "b32_ms" in r and "b32_ms" in base else "—"
        front = ("b1" if r["pareto_b1"] else "") + (" b32" if r.get("pareto_b32") else "")
        later = "¹" if r.get("later_pass") else ""
        out.append(
            f"| {name}{later} | {pct(r['accuracy'])} [{pct(lo)}, {pct(hi)}] | "
            f"{100 * r['accuracy_minus_ref']:+.1f} [{100 * dlo:+.1f}, {100 * dhi:+.1f}] ({ref}) | "
            f"{100 * r['accuracy_minus_equal_nfe_baseline']:+.1f} [{100 * elo:+.1f}, "
            f"{100 * ehi:+.1f}] ({eq}) | {r['shorter_than_ref']} | {r['window_cuts']} | "
            f"{r['nfe']:.1f} | {r['loop_ms']:.0f} | {r['e2e_ms']:.0f} | "
            f"{r['loop_speedup_vs_ref']:.2f}× [{slo:.2f}, {shi:.2f}] | "
            f"{base['loop_ms'] / r['loop_ms']:.1f}× | {b32} | {b32x} | {front.strip()} |"
        )
    if any(r.get("later_pass") for r in res.values()):
        out += [
            "",
            "¹ added after the first pass: run in a later pass beside the anchors (`--anchors`), "
            "its times scaled by the anchors' first-pass / later-pass time ratio (per request).",
        ]
    return "\n".join(out) + "\n"


def _b32n(res: dict) -> int:
    return max((r.get("b32_n", 0) for r in res.values()), default=0)


def plot(record: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = record["results"]
    methods = sorted({r["method"] for r in res.values()})
    cmap = plt.get_cmap("tab20")
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.5))
    for ax, key, title in (
        (axes[0], "loop_ms", "batch 1: denoising loop ms / request"),
        (axes[1], "b32_ms", "batch 32 (engine): end-to-end CPU ms / request"),
    ):
        for i, m in enumerate(methods):
            pts = [r for r in res.values() if r["method"] == m and key in r]
            if not pts:
                continue
            pts.sort(key=lambda r: r[key])
            x = [r[key] for r in pts]
            y = [100 * r["accuracy"] for r in pts]
            err = [[100 * (r["accuracy"] - r["ci95"][0]) for r in pts],
                   [100 * (r["ci95"][1] - r["accuracy"]) for r in pts]]  # fmt: skip
            marker = "o" if m.startswith("seer") else ("*" if m == "oracle" else "s")
            ax.errorbar(x, y, yerr=err, fmt=marker + "-", color=cmap(i % 20), label=m,
                        capsize=2, lw=1, ms=6, alpha=0.85)  # fmt: skip
            for r in pts:
                ax.annotate(r["budget"], (r[key], 100 * r["accuracy"]), fontsize=6,
                            xytext=(3, 3), textcoords="offset points")  # fmt: skip
        front = sorted(
            (r[key], 100 * r["accuracy"]) for r in res.values()
            if key in r and r["pareto_b1" if key == "loop_ms" else "pareto_b32"]
        )  # fmt: skip
        if front:
            ax.step(*zip(*front, strict=True), where="post", color="k", lw=0.8, ls=":",
                    label="Pareto front")  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel(title)
        ax.set_ylabel("exact-match accuracy % (bootstrap 95 % CI)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()  # batch 1 has every method
    fig.legend(handles, labels, loc="lower center", ncol=9, fontsize=7)
    fig.suptitle(
        f"{record['model']}: accuracy vs time, {record['n']} held-out requests, "
        f"gen_length {record['gen_length']} (k = tokens per step, t = threshold)"
    )
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="builtin", help="builtin | builtin-vqa | a folder")
    ap.add_argument(
        "--data",
        default=None,
        help="data source, e.g. parallelbench:ROOT/TASK (default: the model's built-in)",
    )
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0, help="draw of the held-out requests")
    ap.add_argument("--repeats", type=int, default=3, help="timing repeats (median)")
    ap.add_argument("--engine-repeats", type=int, default=None, help="default: --repeats")
    ap.add_argument("--budgets", default="1,2,4,8", help="tokens per step")
    ap.add_argument("--no-engine", action="store_true", help="skip the batch-32 engine runs")
    ap.add_argument(
        "--engine-n",
        type=int,
        default=None,
        help="the engine runs take the first N requests (default: all)",
    )
    ap.add_argument(
        "--anchors",
        default="",
        help="configs re-run beside configs added to a finished run, to scale their times "
        "(comma-separated names, e.g. baseline@k=8; default: every full-window baseline)",
    )
    ap.add_argument("--progress", type=Path, default=None, help="also append progress lines here")
    ap.add_argument("--quick", action="store_true", help="baseline, seer, stop, oracle only")
    ap.add_argument("--dpad", action="store_true", help="add DPad (suffix dropout) and seer+DPad")
    ap.add_argument("--daedal", action="store_true", help="add DAEDAL (variable-length denoising)")
    ap.add_argument("--skip", default="", help="methods to leave out (comma-separated)")
    ap.add_argument("--raw", type=Path, default=None, help="per-request JSON Lines (resumable)")
    ap.add_argument("--plot", type=Path, default=None, help="Pareto PNG")
    ap.add_argument("--markdown", type=Path, default=None, help="the README's tables (Markdown)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    global ANCHORS
    ANCHORS = tuple(a for a in args.anchors.split(",") if a)
    t0 = time.time()
    lm = load_model(args.model, args.device)
    multimodal = getattr(lm, "multimodal", False)
    source = args.data or ("builtin-vqa" if multimodal else "builtin")
    g = lm.meta.get("seer", {}).get("gen_length", 64)
    budgets = [int(k) for k in args.budgets.split(",")]
    examples = held_out(source, args.n, args.seed)
    seer_cfg = resolve(lm, True)
    configs = build_configs(lm, g, budgets, args.quick, args.dpad, args.daedal)
    skip = {m for m in args.skip.split(",") if m}
    if skip - {c.method for c in configs}:
        ap.error(f"--skip: no method named {', '.join(sorted(skip - {c.method for c in configs}))}")
    configs = [c for c in configs if c.method not in skip]
    unknown = set(ANCHORS) - {c.name for c in configs}
    if unknown:
        ap.error(f"--anchors: no config named {', '.join(sorted(unknown))}")
    settings = {"model": args.model, "source": source, "n": args.n, "seed": args.seed,
                "repeats": args.repeats, "budgets": budgets, "quick": args.quick,
                "configs": [c.name for c in configs], "threads": args.threads}  # fmt: skip
    raw = args.raw or Path(f"/tmp/bench_compare_{Path(str(args.model)).name}.jsonl")
    raw.parent.mkdir(parents=True, exist_ok=True)
    q = encode(lm, examples[0])  # warm the tower and every shape
    for w in range(seer_cfg.bucket, g + 1, seer_cfg.bucket):
        lm.generate(q, gen_length=w, steps=w)

    def progress(i, n=None):
        what = f"request {i}/{n}" if n else i
        line = f"[bench_compare] {args.model}: {what} ({time.time() - t0:.0f} s)"
        print(line, flush=True)
        if args.progress:
            with args.progress.open("a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    rows = batch1(lm, examples, configs, g, seer_cfg, args.repeats, raw, settings, progress)
    eng = {}
    if not args.no_engine:
        er = args.engine_repeats or args.repeats
        en = min(args.engine_n or len(rows), len(rows))
        eng = batch32(lm, examples[:en], configs, g, seer_cfg, er, rows[:en], raw,
                      dict(settings, engine_repeats=er, engine_n=en, engine_clock="wall+cpu"),
                      progress)  # fmt: skip
    results = summarise(rows, eng, configs, g, examples)
    mark_frontier(results)
    record = {
        "bench": "compare",
        "model": lm.name or args.model,
        "source": source,
        "n": len(rows),
        "gen_length": g,
        "repeats": args.repeats,
        "seer_config": asdict(seer_cfg),
        "machine": f"{platform.machine()} {platform.processor() or ''} threads={args.threads}",
        "torch": torch.__version__,
        "results": results,
        "wall_seconds": round(time.time() - t0, 1),
    }
    show(record)
    if args.plot:
        plot(record, args.plot)
        print(f"[bench_compare] wrote {args.plot}")
    if args.markdown:
        args.markdown.write_text(markdown(record))
        print(f"[bench_compare] wrote {args.markdown}")
    print(json.dumps(record))
    return record


if __name__ == "__main__":
    main()
