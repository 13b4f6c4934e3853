"""Serving benchmark of the engine alone (no HTTP): Poisson arrivals at several rates.

    python benchmarks/bench_serving.py --plot docs/results/figures/serving_latency.png  # 2 models
    python benchmarks/bench_serving.py --models builtin --n 12 --rates 1 4

Methods, each with and without Seer (same prompts, same `lm.sampling(...)` params, temperature 0):
  one-at-a-time   `max_batch=1`: requests are served in arrival order, one by one
  static          today's static batches: when the engine is idle it takes every request that
                  has arrived (up to `--max-batch`) and runs that batch to the end; requests that
                  arrive meanwhile wait for the whole batch (rows still leave when done)
  fcfs            the step-level engine: requests join at the next tick, rows leave at once,
                  admitted in arrival order within the token budget (`--budget`)
  shortest_first  the same, admitting by Seer's predicted remaining work (with aging)
Arrivals: a Poisson process per rate, in requests per second of a *virtual clock*: busy time is
measured wall time, idle gaps are skipped (when nothing runs, the clock jumps to the next
arrival), so low rates cost no waiting. Rates are multiples of the measured capacity of
one-at-a-time with Seer (1 / its mean service time); the last one saturates every method.
Prompts: `seer.data.load_examples(model, part="eval")` — unique held-out requests the shipped
models were not tuned on.
Reported per case: throughput (answer tokens before the end token, per second, over first
arrival -> last finish), p50 / p99 latency (arrival -> result), p50 time to the first final block
(arrival -> first block; one block = the whole window unless `--block`), and the peak bytes the
running rows' canvases and KV caches held (the model's own activations are not counted).
The machine is shared and noisy: compare ratios inside one run, not across runs. The last line
of stdout is the JSON record (`seerbench.runs`; results: one row per case);
`--plot` writes the latency-vs-rate figure.

`--trace`: mixed against uniform OpenAI-style traffic through the HTTP server instead
(`seerbench.traffic`), at each `--concurrency`, under each engine `--groupings` (`params`: rows
share a forward only when all their options agree, the engine before mixed batching; `layout`:
when the forward's layout does, and an arrival with no window policy takes its step 0 in the
running rows' forward; `apart`: the same, but every arrival's step 0 is a forward of its kind,
the engine before those joins). Reported per case: model forwards and mean rows per forward
(a forward hook), throughput (answer tokens/s, and row-steps/s: every request's forwards per
second, the work whatever the answers' lengths), p50 / p99 latency, and how many fixed answers
(greedy, or seeded) equal the answers at concurrency 1 (each request alone).

    python benchmarks/bench_serving.py --trace --n 24 --concurrency 1 8 32
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from pathlib import Path

import torch

import seer
from seer.batch import request_for
from seer.engine import Engine, EngineConfig
from seerbench import runs
from synthetic.pool import load as load_examples  # a built-in source: any seed

METHODS = ("one-at-a-time", "static", "fcfs", "shortest_first")


def engine_for(lm, method: str, args) -> Engine:
    if method == "one-at-a-time":
        return Engine(lm, EngineConfig(max_batch=1))
    if method == "static":
        return Engine(lm, EngineConfig(max_batch=args.max_batch))
    budget = args.budget or None
    cfg = EngineConfig(max_batch=args.max_batch, max_tokens_per_step=budget, policy=method)
    return Engine(lm, cfg)


def run_case(lm, examples, params, method: str, use_seer: bool, rate: float, args) -> dict:
    """Serve `examples` arriving at `rate` (req/s, Poisson) with `method`; the case's figures."""
    rng = random.Random(args.seed)
    gaps = [rng.expovariate(rate) if math.isfinite(rate) else 0.0 for _ in examples]
    arrivals = [sum(gaps[: i + 1]) - gaps[0] for i in range(len(gaps))]
    eng = engine_for(lm, method, args)
    start, skipped = time.perf_counter(), 0.0

    def now() -> float:
        return time.perf_counter() - start + skipped

    added, added_at, done, first = 0, {}, {}, {}
    results = []
    while len(results) < len(examples):
        idle = not eng.has_unfinished()
        if idle and added < len(examples) and arrivals[added] > now():
            skipped += arrivals[added] - now()  # nothing runs: jump to the next arrival
        if method != "static" or idle:
            while added < len(examples) and arrivals[added] <= now():
                if method == "static" and added - len(results) >= args.max_batch:
                    break
                req = request_for(lm, examples[added], params, True if use_seer else None)
                rid = eng.submit(req)
                added_at[rid] = (added, now())
                added += 1
        for res in eng.step():
            i, t_add = added_at[res.request_id]
            done[i] = now()
            first[i] = t_add + res.first_block_latency
            results.append(res)
    lat = sorted(done[i] - arrivals[i] for i in done)
    ttfb = sorted(first[i] - arrivals[i] for i in first)
    tokens = sum(r.tokens for r in results)
    span = max(done.values()) - arrivals[0]
    return {
        "method": method,
        "seer": use_seer,
        "rate": rate,
        "throughput": tokens / span,
        "p50": _pct(lat, 50),
        "p99": _pct(lat, 99),
        "mean": statistics.fmean(lat),
        "ttfb_p50": _pct(ttfb, 50),
        "peak_kib": eng.stats.peak_bytes / 1024,
        "tokens": tokens,
        "mean_window": statistics.fmean(r.window for r in results),
    }


def _pct(xs: list[float], q: float) -> float:
    return xs[min(len(xs) - 1, math.ceil(q / 100 * len(xs)) - 1)]


def capacity(lm, examples, params) -> float:
    """Requests per second one-at-a-time with Seer serves (after a warm-up of every shape)."""
    for use in (None, True):
        for ex in examples[:2]:
            lm.generate(ex.prompt, params, image=ex.image, seer=use)
    t0 = time.perf_counter()
    k = min(4, len(examples))
    for ex in examples[:k]:
        lm.generate(ex.prompt, params, image=ex.image, seer=True)
    return k / (time.perf_counter() - t0)


def bench_model(name: str, args) -> tuple[list[dict], dict]:
    lm = seer.load(name, dtype=args.dtype, device=args.device)
    data = args.data or name  # a model folder (e.g. a random LLaDA) takes --data's prompts
    examples = load_examples(data, n=args.n, part="eval", seed=args.seed)[: args.n]
    params = lm.sampling(gen_length=args.gen_length, steps=args.steps, block_length=args.block)
    cap = capacity(lm, examples, params)
    rates = [f * cap for f in args.rates] + ([math.inf] if args.all_at_once else [])
    rows = []
    for rate in rates:
        for use_seer in (False, True):
            for method in METHODS:
                row = run_case(lm, examples, params, method, use_seer, rate, args)
                row["model"] = name
                rows.append(row)
                print(_line(row), flush=True)
    return rows, {"model": name, "capacity_rps": cap, "params": repr(params), "n": len(examples)}


def _line(r: dict) -> str:
    rate = "inf" if math.isinf(r["rate"]) else f"{r['rate']:.2f}"
    return (
        f"{r['model']:<12} {rate:>6} {'seer' if r['seer'] else 'full':<5} {r['method']:<15}"
        f"{r['throughput']:>9.1f} {r['p50']:>8.2f} {r['p99']:>8.2f} {r['mean']:>8.2f}"
        f" {r['ttfb_p50']:>8.2f} {r['peak_kib']:>9.0f}"
    )


def verdicts(rows: list[dict]) -> dict:
    """At the largest (saturating) rate: step-level fcfs vs static (throughput ratio, p99), and
    shortest_first vs fcfs (mean latency), per model and Seer setting."""
    out = {}
    for r in rows:
        top = max(x["rate"] for x in rows if x["model"] == r["model"])
        if r["rate"] != top or r["method"] != "fcfs":
            continue
        same = {
            x["method"]: x
            for x in rows
            if (x["model"], x["seer"], x["rate"]) == (r["model"], r["seer"], top)
        }
        st, sf = same["static"], same["shortest_first"]
        key = f"{r['model']}/{'seer' if r['seer'] else 'full'}"
        out[key] = {
            "fcfs_over_static_throughput": r["throughput"] / st["throughput"],
            "fcfs_p99_lower_than_static": r["p99"] < st["p99"],
            "sf_over_fcfs_mean_latency": sf["mean"] / r["mean"],
            "sf_over_fcfs_throughput": sf["throughput"] / r["throughput"],
        }
    return out


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = sorted({r["model"] for r in rows})
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4), squeeze=False)
    for ax, m in zip(axes[0], models, strict=True):
        finite = sorted({r["rate"] for r in rows if r["model"] == m and math.isfinite(r["rate"])})
        xs = {rate: k for k, rate in enumerate(finite + [math.inf])}
        for method in METHODS:
            for use in (False, True):
                pts = [
                    r
                    for r in rows
                    if r["model"] == m and r["method"] == method and r["seer"] == use
                ]
                ax.plot(
                    [xs[r["rate"]] for r in pts],
                    [r["p50"] for r in pts],
                    marker="o",
                    linestyle="-" if use else ":",
                    label=f"{method}{' +Seer' if use else ''}",
                )
        ax.set_xticks(list(xs.values()), [f"{r:.1f}" for r in finite] + ["all at 0"])
        ax.set_xlim(-0.3, len(finite) - 0.7 + any(math.isinf(r["rate"]) for r in rows))
        ax.set_yscale("log")
        ax.set_xlabel("arrival rate (requests/s, virtual clock)")
        ax.set_ylabel("p50 latency (s)")
        ax.set_title(m)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


TRACE_MARGIN = 0.9  # target: mixed traffic keeps this share of uniform traffic's figures


def trace_cases(args) -> tuple[list[dict], dict]:
    """Every (model, grouping, traffic, concurrency) case of `--trace`, and the verdicts."""
    from seerbench.traffic import Forwards, Server, deterministic, serve_trace, trace

    rows: list[dict] = []
    for name in args.models:
        lm = seer.load(name, dtype=args.dtype, device=args.device)
        fwd = Forwards()
        fwd.attach(lm.model)
        examples = load_examples(args.data or name, n=args.n, part="eval", seed=args.seed)
        served = lm.name or "seer"
        traces = {k: trace(examples[: args.n], k, served, args.seed) for k in ("uniform", "mixed")}
        solo: dict[str, list] = {}  # each request alone (concurrency 1): the answers to equal
        for grouping in args.groupings:
            with Server(lm, max_batch=args.max_batch, grouping=grouping) as srv:
                for bodies in traces.values():  # warm-up: the first shapes of each trace
                    serve_trace(srv.url, bodies[:4], 4, fwd)
                for kind, bodies in traces.items():
                    for c in args.concurrency:
                        r = serve_trace(srv.url, bodies, c, fwd)
                        answers = r.pop("answers")
                        solo.setdefault(kind, answers if c == 1 else [])
                        fixed = [i for i, b in enumerate(bodies) if deterministic(b)]
                        same = [i for i in fixed if solo[kind] and answers[i] == solo[kind][i]]
                        row = {
                            "model": name,
                            "grouping": grouping,
                            "traffic": kind,
                            "concurrency": c,
                            **r,
                            "fixed": len(fixed),
                            "solo_equal": len(same) if solo[kind] else None,
                        }
                        rows.append(row)
                        print(_trace_line(row), flush=True)
    return rows, trace_verdicts(rows)


def _trace_line(r: dict) -> str:
    eq = "-" if r["solo_equal"] is None else f"{r['solo_equal']}/{r['fixed']}"
    return (
        f"{r['model']:<12} {r['grouping']:<7} {r['traffic']:<8} {r['concurrency']:>4}"
        f" {r['forwards']:>6} {r['rows_per_forward']:>8.2f} {r['tokens_per_s']:>8.1f}"
        f" {r['row_steps_per_s']:>9.1f} {r['p50_s']:>7.2f} {r['p99_s']:>7.2f}"
        f" {eq:>7}"
    )


def trace_verdicts(rows: list[dict]) -> dict:
    """Per model and concurrency > 1: mixed / uniform (rows per forward, row-steps/s, tokens/s,
    and the speed-up over concurrency 1) under each grouping, and layout / params on mixed
    traffic; `meets`: the layout grouping's mixed traffic keeps TRACE_MARGIN of uniform's rows
    per forward and of its speed-up. The speed-up (row-steps/s at c over row-steps/s at 1, each
    trace its own) is the throughput batching buys: the raw ratios also hold what a step of each
    trace costs (the mixed trace's longer windows, a quarter without Seer)."""
    at = {(r["model"], r["grouping"], r["traffic"], r["concurrency"]): r for r in rows}
    out: dict = {}
    for (model, grouping, traffic, c), r in at.items():
        if traffic != "mixed" or c == 1 or (model, grouping, "uniform", c) not in at:
            continue
        u = at[(model, grouping, "uniform", c)]
        v = {
            f"mixed_over_uniform_{k}": r[k] / u[k]
            for k in ("rows_per_forward", "row_steps_per_s", "tokens_per_s")
        }
        m1, u1 = at.get((model, grouping, "mixed", 1)), at.get((model, grouping, "uniform", 1))
        if m1 and u1:
            gain = r["row_steps_per_s"] / m1["row_steps_per_s"]
            v["mixed_over_uniform_speedup"] = gain / (u["row_steps_per_s"] / u1["row_steps_per_s"])
        if grouping == "layout":
            v["meets"] = (
                min(
                    v["mixed_over_uniform_rows_per_forward"],
                    v.get("mixed_over_uniform_speedup", 0.0),
                )
                >= TRACE_MARGIN
            )
            for before in ("params", "apart"):
                old = at.get((model, before, "mixed", c))
                if old is not None:
                    v[f"mixed_layout_over_{before}_rows_per_forward"] = (
                        r["rows_per_forward"] / old["rows_per_forward"]
                    )
                    v[f"mixed_layout_over_{before}_row_steps_per_s"] = (
                        r["row_steps_per_s"] / old["row_steps_per_s"]
                    )
        out[f"{model}/{grouping}/c{c}"] = v
    return out


def trace_main(args) -> int:
    session = runs.Session("serving", args)
    print(
        f"target (stated before the first request): under grouping=layout, at every "
        f"concurrency > 1, mixed traffic keeps >= {TRACE_MARGIN}x uniform traffic's rows per "
        f"forward and >= {TRACE_MARGIN}x its throughput speed-up over concurrency 1 (row-steps/s "
        "at c / at 1, each trace its own)",
        flush=True,
    )
    print(
        f"{'model':<12} {'group':<7} {'traffic':<8} {'conc':>4} {'fwds':>6} {'rows/fwd':>8}"
        f" {'tok/s':>8} {'rowstep/s':>9} {'p50 s':>7} {'p99 s':>7} {'=solo':>7}"
    )
    rows, verdicts_ = trace_cases(args)
    session.finish(
        rows,
        model=",".join(map(str, args.models)),
        margin=TRACE_MARGIN,
        primary="mixed / uniform traffic, grouping=layout: rows per forward and "
        "speed-up over concurrency 1",
        verdicts=verdicts_,
        meets=all(v["meets"] for v in verdicts_.values() if "meets" in v),
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--models",
        nargs="+",
        default=["builtin", "builtin-vqa"],
        help="built-in names or model folders",
    )
    runs.add_arguments(
        ap,
        n=20,
        skip=("repeats",),
        help={
            "n": "requests per case (unique, held out)",
            "data": "prompt source (default: the model's name)",
        },
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None, help="e.g. bfloat16 (default: the model's)")
    ap.add_argument(
        "--rates",
        type=float,
        nargs="+",
        default=[0.5, 2.0, 8.0],
        help="arrival rates as multiples of one-at-a-time+Seer capacity (the "
        "largest is the saturating one)",
    )
    ap.add_argument("--all-at-once", action="store_true", help="add a case: all arrive at 0")
    ap.add_argument("--gen-length", type=int, default=32)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--block", type=int, default=None)
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument(
        "--budget",
        type=int,
        default=400,
        help="fcfs / shortest_first: tokens per tick, rows x (prompt + window) (0: none)",
    )
    ap.add_argument("--plot", type=Path, default=None, help="write the latency-vs-rate PNG")
    ap.add_argument(
        "--trace",
        action="store_true",
        help="mixed vs uniform OpenAI-style "
        "traffic through the HTTP server (see the module docstring)",
    )
    ap.add_argument(
        "--concurrency",
        type=int,
        nargs="+",
        default=[1, 8, 32],
        help="--trace: clients at once (the first must be 1: the solo answers)",
    )
    ap.add_argument(
        "--groupings",
        nargs="+",
        default=["params", "apart", "layout"],
        choices=["params", "apart", "policy-apart", "layout"],
        help="--trace: the engine's groupings",
    )
    args = ap.parse_args(argv)
    if torch.device(args.device).type != "cpu":
        args.threads = None  # the accelerator's: the session leaves torch's threads alone
    if args.trace:
        if args.concurrency[0] != 1:
            ap.error("--concurrency must start with 1 (each request alone: the solo answers)")
        return trace_main(args)
    session = runs.Session("serving", args)
    print(
        f"{'model':<12} {'rate':>6} {'win':<5} {'method':<15}{'tok/s':>9} {'p50 s':>8}"
        f" {'p99 s':>8} {'mean s':>8} {'ttfb50':>8} {'peak KiB':>9}"
    )
    rows, models = [], []
    for name in args.models:
        r, info = bench_model(name, args)
        rows += r
        models.append(info)
    if args.plot:
        plot(rows, args.plot)
    rows = [{**r, "rate": None if math.isinf(r["rate"]) else r["rate"]} for r in rows]
    session.finish(
        rows, model=",".join(map(str, args.models)), models=models, verdicts=verdicts(rows)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
