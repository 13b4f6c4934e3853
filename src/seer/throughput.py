"""The engine benchmark (`seer bench`, `benchmarks/bench_engine.py`): throughput and latency of
batched serving with and without Seer and routing, on two workloads.

Methods (every request greedy, steps = gen_length, one engine tick per `batch` requests):
  no-trunc       the full window for every row (static at gen_length)
  seer-naive     Seer's windows, all rows padded to the longest (the paper's "naive pad")
  seer-routed    Seer's windows, hybrid routing (static / varlen / eager by padding waste)
  oracle-routed  the true end (reference answer + 1, bucket-rounded), hybrid routing
Workloads:
  heldout    the model's own built-in task, held-out requests of its evaluation part
             (`seer.data`: unique, disjoint from the calibration part; a chat's turns and a
             picture as `seer batch` sends them); the reference answer is the full-window
             answer of each request, computed first
  synthetic  the same prompts with answer lengths drawn from a long-tailed (log-normal) mix like
             the paper's Figure 3a, given to the engine as fixed windows (so "seer-*" rows use
             the drawn L* in place of a detector's, and oracle-routed is seer-routed)
Throughput counts *valid answer tokens*: the reference answer's tokens (heldout) or the drawn
L* (synthetic), the same numerator for every method, over the wall time of `generate`, which
encodes the requests too (the tokenizer; a picture's vision tower), as a server would.
Latency is per request, from the call until its group finished. The time breakdown follows the
paper's Table 11: model compute (forwards and token selection), boundary detection, routing,
compaction.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from seer.boundary.config import SeerConfig
from seer.boundary.truncation import round_window
from seer.data import builtin_examples
from seer.data.builtin import source_for
from seer.engine import Engine, EngineConfig, Request
from seer.engine.request import seer_config as resolve
from seer.sampling import SamplingParams

if TYPE_CHECKING:
    from seer.lm import DiffusionLM

METHODS = ("no-trunc", "seer-naive", "seer-routed", "oracle-routed")


@dataclass(slots=True)
class Workload:
    """Prompts with their reference answer lengths."""

    name: str  # heldout | synthetic
    base: list[Request]  # the requests as `seer batch` makes them (a chat's turns, an image)
    valid: list[int]  # valid answer tokens per request (reference length or drawn L*)
    fixed: list[int] | None  # synthetic: the drawn windows given to the engine


def seer_config(lm: DiffusionLM) -> SeerConfig:
    """The model's stored Seer defaults; without them the end-probability signal, which finds
    the boundary in our small model where the sparsity jump does not."""
    if lm.meta.get("seer", {}).get("config"):
        return resolve(lm, True)
    return SeerConfig(signal="eos_prob")


def requests(w: Workload, method: str, p: SamplingParams, cfg: SeerConfig) -> list[Request]:
    def at(q: Request, **kw) -> Request:
        return dataclasses.replace(q, **{"params": p, "seer": None, "window": None, **kw})

    if method == "no-trunc":
        return [at(q) for q in w.base]
    if w.fixed is not None:  # synthetic: the drawn L* stands for the detector's
        return [at(q, window=n) for q, n in zip(w.base, w.fixed, strict=True)]
    if method == "oracle-routed":
        wins = [round_window(n + 1, p.gen_length, cfg.bucket) for n in w.valid]
        return [at(q, window=n) for q, n in zip(w.base, wins, strict=True)]
    return [at(q, seer=cfg) for q in w.base]


def engine_config(method: str, batch: int, tau_pad: float) -> EngineConfig:
    routing = "naive" if method == "seer-naive" else "hybrid"
    # merge_on off: the cost merge would replace the tau_pad merge on a GPU, and this compares
    # routings and tau_pad alone
    return EngineConfig(max_batch=batch, routing=routing, tau_pad=tau_pad, merge_on="none")


def run_case(lm: DiffusionLM, w: Workload, method: str, batch: int, p, cfg, tau_pad: float) -> dict:
    eng = Engine(lm, engine_config(method, batch, tau_pad))
    reqs = requests(w, method, p, cfg)
    t0 = time.perf_counter()
    out = eng.generate(reqs)
    wall = time.perf_counter() - t0
    lat = sorted(o.latency for o in out)
    s = eng.stats
    return {
        "tok_s": sum(w.valid) / wall,
        "seconds": wall,
        "p50": statistics.median(lat),
        "p95": lat[min(len(lat) - 1, math.ceil(0.95 * len(lat)) - 1)],
        "paths": dict(sorted(s.rows.items())),
        "rho": [round(pl.rho, 3) for pl in s.plans],
        "computed": sum(pl.computed_tokens for pl in s.plans),
        "time": {"model": s.model, "detect": s.detect, "route": s.route, "compact": s.compact},
        "answers": [o.token_ids for o in out],
        # per request (prompt positions, window, NFE, answer tokens): what `seer.sim` replays
        "shapes": [[o.prompt_tokens, o.window, o.nfe, o.tokens] for o in out],
    }


def heldout(lm: DiffusionLM, n: int, p: SamplingParams) -> Workload:
    """The evaluation part of the model's own task (the first `n` of the shipped unique held-out
    requests, disjoint from calibration's; with their pictures for a multimodal model), as
    `seer batch` makes them."""
    from seer.batch import request_for

    source = source_for(lm.name, lm.multimodal)
    reqs = [request_for(lm, e, p, None) for e in builtin_examples(source, n, part="eval")]
    ref = Engine(lm, EngineConfig(max_batch=64)).generate(reqs)
    return Workload("heldout", reqs, [max(1, o.tokens) for o in ref], None)


def synthetic(held: Workload, gen_length: int, seed: int) -> Workload:
    g = torch.Generator().manual_seed(seed)
    # log-normal, median 8 tokens, long right tail (the longest ~10x the short ones)
    draw = torch.exp(math.log(8) + 0.9 * torch.randn(len(held.base), generator=g))
    lengths = [int(min(gen_length, max(1, round(float(x))))) for x in draw]
    return Workload("synthetic", held.base, lengths, lengths)


MIN_REQUESTS = 16  # requests each batch size runs at least (smaller batches run several)


def run(
    lm: DiffusionLM,
    *,
    n: int,
    batches: tuple[int, ...],
    gen_length: int,
    tau_pad: float,
    seed: int,
    progress=print,
) -> dict:
    """All workloads x batch sizes x methods; returns the JSON-ready record."""
    torch.manual_seed(seed)
    p = lm.sampling(gen_length=gen_length, steps=gen_length, temperature=0.0)  # greedy
    cfg = seer_config(lm)
    held = heldout(lm, n, p)
    loads = [held, synthetic(held, gen_length, seed)]
    for w in loads:  # warm-up: every method once on a small batch
        small = Workload(w.name, w.base[:8], w.valid[:8], w.fixed and w.fixed[:8])
        for m in METHODS:
            run_case(lm, small, m, 8, p, cfg, tau_pad)
    results = []
    for w in loads:
        base: list = []  # the no-trunc answers (METHODS runs it first)
        for b in batches:
            k = max(b, MIN_REQUESTS)
            sub = Workload(w.name, w.base[:k], w.valid[:k], w.fixed and w.fixed[:k])
            for m in METHODS:
                if w.fixed is not None and m == "oracle-routed":
                    continue  # identical to seer-routed on the synthetic mix
                r = run_case(lm, sub, m, b, p, cfg, tau_pad)
                if m == "no-trunc":
                    base = r["answers"]
                same = sum(a == x for a, x in zip(r.pop("answers"), base, strict=True))
                r.update(workload=w.name, batch=b, method=m, requests=k, same=same / k)
                results.append(r)
                progress(f"{w.name:9s} batch {b:3d} {m:13s} {r['tok_s']:8.1f} tok/s")
    return {
        "bench": "engine",
        "model": lm.name,
        "gen_length": gen_length,
        "tau_pad": tau_pad,
        "seer_config": {k: getattr(cfg, k) for k in ("signal", "layer", "bucket", "guard")},
        "machine": f"{platform.machine()} {platform.processor() or ''} "
        f"threads={torch.get_num_threads()}",
        "torch": torch.__version__,
        "results": results,
    }


def show(record: dict) -> None:
    from rich.table import Table

    from seer.progress import console

    c = console()
    t = Table(
        title=f"Engine on {record['model']}: gen_length {record['gen_length']}, "
        f"tau_pad {record['tau_pad']}, {record['machine']}"
    )
    cols = (
        "workload",
        "batch",
        "method",
        "valid tok/s",
        "speedup",
        "p50 s",
        "p95 s",
        "computed",
        "paths (rows)",
        "rho groups",
        "same",
        "% model/det/route/pack",
    )
    for col in cols:
        t.add_column(col, justify="right")
    base: dict = {}
    for r in record["results"]:
        key = (r["workload"], r["batch"])
        base.setdefault(key, r["tok_s"])
        tm = r["time"]
        total = sum(tm.values()) or 1.0
        share = "/".join(
            f"{100 * tm[k] / total:.1f}" for k in ("model", "detect", "route", "compact")
        )
        rho = r["rho"]
        rho_s = f"{len(rho)}: {min(rho):.2f}-{max(rho):.2f}" if rho else "-"
        t.add_row(
            r["workload"],
            str(r["batch"]),
            r["method"],
            f"{r['tok_s']:.1f}",
            f"{r['tok_s'] / base[key]:.2f}x",
            f"{r['p50']:.2f}",
            f"{r['p95']:.2f}",
            str(r["computed"]),
            " ".join(f"{k}:{v}" for k, v in r["paths"].items()),
            rho_s,
            f"{r['same']:.0%}",
            share,
        )
    c.print(t)
    c.print(
        "valid tok/s: reference answer tokens (heldout) or drawn L* (synthetic) per second; "
        "computed: positions per forward summed over groups; same: answers equal to "
        "no-trunc's; time shares in %."
    )
