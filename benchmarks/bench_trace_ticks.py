"""Forwards per engine tick on the `--trace` traffic of `bench_serving.py`, through the engine
alone (no HTTP; counts, the same on any machine, and with `--time` the wall of each grouping).

    python benchmarks/bench_trace_ticks.py --concurrency 8 32 --time 3

Each trace (`seerbench.traffic.trace`, its generator and seed unchanged) is served by closed-loop
clients: `c` requests are added at once, and each request that finishes is replaced by the next
one at the following tick. Per (grouping, traffic, concurrency): ticks, model forwards (a forward
hook), row-steps (every request's forwards), rows per forward (row-steps / forwards: requests
per forward; the hook's batch rows, which count a packed varlen row once, are in the record as
`model_rows_per_forward`), the step-0 forwards of arrivals apart from the running rows, and
`bound`: row-steps / ticks, the rows per forward of an engine that ran every row of a tick in
one forward. Ticks are set by the trace: no row takes more than one step per tick, so the
request that arrives last with the most steps runs its last steps alone, whatever the engine
does. One line per tick lists its forwards (`p<rows>`: a step 0 apart; `d<rows>/<path><bucket>`:
running rows, joining arrivals included). `--time R` also times every case R times through the
engine, the groupings interleaved in one process, and reports each grouping's median wall over
the first grouping's (the CPU cost of a grouping; no HTTP).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time

import seer
from seer.data import load_examples
from seer.engine import Engine, EngineConfig, Request
from seerbench import runs
from seerbench.traffic import trace


def requests(lm, examples, kind: str, name: str, seed: int) -> list[Request]:
    """The trace's chat requests as engine requests (the server's mapping of the fields)."""
    out = []
    for e, b in zip(examples, trace(examples, kind, name, seed), strict=True):
        o = {k: b[k] for k in ("temperature", "seed", "steps", "threshold") if k in b}
        o["gen_length"] = b["max_tokens"]
        out.append(Request(e.prompt, lm.sampling(**o), seer=b.get("seer", True), image=e.image))
    return out


def serve(lm, reqs: list[Request], c: int, cfg: EngineConfig, rows: list[int]) -> dict:
    eng, log = Engine(lm, cfg), []
    pre, run = eng.runner.prefill, eng.runner.run

    def prefill(seqs, began=None):
        n0 = len(rows)
        s = pre(seqs, began)
        log.append((eng._tick, f"p{len(seqs)}", len(rows) - n0))
        return s

    def step(plan, seqs):
        n0 = len(rows)
        out = run(plan, seqs)
        log.append((eng._tick, f"d{len(seqs)}/{plan.path[0]}{plan.bucket}", len(rows) - n0))
        return out

    eng.runner.prefill, eng.runner.run = prefill, step
    rows.clear()
    nxt, res = min(c, len(reqs)), []
    for r in reqs[:nxt]:
        eng.submit(r)
    while eng.has_unfinished():
        done = eng.step()
        res += done
        for _ in done:
            if nxt < len(reqs):
                eng.submit(reqs[nxt])
                nxt += 1
    ticks = collections.defaultdict(list)
    for t, what, _ in log:
        ticks[t].append(what)
    steps = sum(r.nfe for r in res)
    return {
        "ticks": eng.stats.ticks,
        "forwards": len(rows),
        "rows_per_forward": steps / len(rows),  # requests' rows: every row-step is in one
        "model_rows_per_forward": sum(rows) / len(rows),  # the batch dim (varlen: packed rows)
        "row_steps": steps,
        "step0_apart": sum(n for _, w, n in log if w[0] == "p"),
        "bound": steps / eng.stats.ticks,
        "longest_nfe": max(r.nfe for r in res),
        "per_tick": " ".join(f"{t}:[{','.join(v)}]" for t, v in sorted(ticks.items())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["builtin", "builtin-vqa"])
    runs.add_arguments(ap, n=24, skip=("repeats", "data"))
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument(
        "--groupings", nargs="+", default=["apart", "layout"], choices=["params", "apart", "layout"]
    )
    ap.add_argument(
        "--time",
        type=int,
        default=0,
        metavar="R",
        help="also time every case R times, the groupings interleaved, and report "
        "each grouping's median wall over the first's (0: counts only)",
    )
    args = ap.parse_args(argv)
    session = runs.Session("trace_ticks", args)
    results = []
    for name in args.models:
        lm = seer.load(name)
        fwd: list[int] = []

        def count(module, a, k, fwd=fwd) -> None:
            fwd.append(int((a[0] if a and a[0] is not None else k["inputs_embeds"]).shape[0]))

        lm.model.register_forward_pre_hook(count, with_kwargs=True)
        examples = load_examples(name, n=args.n, part="eval", seed=args.seed)[: args.n]
        traces = {
            k: requests(lm, examples, k, lm.name or name, args.seed) for k in ("uniform", "mixed")
        }
        for grouping in args.groupings:
            cfg = EngineConfig(max_batch=args.max_batch, grouping=grouping)
            for kind, reqs in traces.items():
                for c in args.concurrency:
                    r = {
                        "model": name,
                        "grouping": grouping,
                        "traffic": kind,
                        "concurrency": c,
                        **serve(lm, reqs, c, cfg, fwd),
                    }
                    print(
                        f"{name:<12} {grouping:<7} {kind:<8} c={c:<3} ticks {r['ticks']:>3}"
                        f" forwards {r['forwards']:>4} (step 0 apart {r['step0_apart']:>3})"
                        f" rows/fwd {r['rows_per_forward']:5.2f} row-steps {r['row_steps']:>4}"
                        f" bound {r['bound']:5.2f} longest nfe {r['longest_nfe']}",
                        flush=True,
                    )
                    print(f"  {r['per_tick']}", flush=True)
                    results.append(r)
        for kind, reqs in traces.items():  # timing: the groupings interleaved, R times
            for c in args.concurrency if args.time else ():
                walls: dict[str, list[float]] = {g: [] for g in args.groupings}
                for _ in range(args.time):
                    for g in args.groupings:
                        cfg = EngineConfig(max_batch=args.max_batch, grouping=g)
                        t0 = time.perf_counter()
                        serve(lm, reqs, c, cfg, fwd)
                        walls[g].append(time.perf_counter() - t0)
                first = statistics.median(walls[args.groupings[0]])
                for r in results:
                    if (r["model"], r["traffic"], r["concurrency"]) == (name, kind, c):
                        r["walls"] = walls[r["grouping"]]
                        r["wall_over_first"] = statistics.median(r["walls"]) / first
                print(
                    f"{name:<12} {kind:<8} c={c:<3} median wall, each grouping over "
                    f"{args.groupings[0]}: "
                    + ", ".join(
                        f"{g} {statistics.median(w) / first:.3f}" for g, w in walls.items()
                    ),
                    flush=True,
                )
    at = {(r["model"], r["grouping"], r["traffic"], r["concurrency"]): r for r in results}
    ratios = {}
    for (m, g, t, c), r in at.items():
        u = at.get((m, g, "uniform", c))
        if t == "mixed" and u is not None:
            rpf = r["rows_per_forward"] / u["rows_per_forward"]
            ratios[f"{m}/{g}/c{c}"] = {
                "mixed_over_uniform_rows_per_forward": rpf,
                "mixed_over_uniform_bound": r["bound"] / u["bound"],
            }
            print(
                f"{m}/{g}/c{c}: mixed/uniform rows per forward "
                f"{rpf:.3f}, one-forward-per-tick "
                f"bound {r['bound'] / u['bound']:.3f}",
                flush=True,
            )
    session.finish(results, model=",".join(args.models), ratios=ratios)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
