"""Forwards per engine tick on the `--trace` traffic of `bench_serving.py`, through the engine
alone (no HTTP; counts, the same for one command line: the mixed trace's unseeded sampled
requests draw from torch's generator, which every case starts at `--seed`; with `--time` the
wall of each grouping).

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

Steady state: with more requests than clients, `steady_*` count only the ticks from the first
answer to the tick the trace ran dry (every client busy, the first synchronised arrivals
over), so that a run of many requests is read apart from its start and its tail.

Predicted GPU throughput (`--gpu`, `--gpu-model`; default LLaDA-8B on an H100): every recorded
model forward (its rows x columns, as the forward hook sees them) is priced by the simulator's
roofline (`seer.roofline.cost`, the validated efficiencies, no graph captures: a warm engine) as if
the model were `--gpu-model`; `predicted_row_steps_per_s` and `predicted_tokens_per_s` are
row-steps and answer tokens over the summed seconds. A prediction, printed with the
simulator's median error on its test set of published GPU figures.

Padding-waste bases (`--waste window computed`): every grouping runs under each basis of
`EngineConfig.waste` (the paper's rho over the answer windows, or the positions the forward
computes, with adjacent bucket groups merged within `tau_pad`), in one process; `waste_verdicts`
holds each basis's predicted GPU seconds per (model, grouping, traffic, concurrency) over the
first basis's, and the rule, stated before the first request, by which the second basis would
become the default: lower summed predicted seconds on every (model, traffic), and no case
higher by more than `NOISE`.

Cost-aware merging (`--merge-on none h100:llada-8b`): every (grouping, waste basis) also runs
under each value of `EngineConfig.merge_on` (none: off; a GPU profile: adjacent bucket groups
merge when one forward of both is predicted to cost no more than two), in one process;
`merge_verdicts` holds each value's predicted seconds per case over the first's, and the rule,
stated before the first request: the later value replaces the first as the recommended setting
for GPU serving only if its predicted seconds never rise by more than `NOISE` in any case. The
rule prices forwards with the same simulator that scores them here, so its predicted gain is
not independent evidence: a prediction, with the simulator's validation error.

Work-normalised decomposition (in `ratios`, per case): the predicted mixed/uniform row-steps
per second = (uniform's computed positions per row-step / mixed's) x (mixed's computed
positions per predicted second / uniform's): the first factor is the mixed requests' own extra
work (Seer-off rows compute full windows), the second how well their forwards batch on the GPU.
Computed positions: every recorded forward's rows x columns (a packed row counts its slots).

Every case starts from the same state of torch's generator (`--seed`), so the unseeded sampled
requests of the mixed trace draw the same numbers whatever ran before them.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from collections.abc import Callable

import torch

import seer
from seer.data import load_examples
from seer.engine import Engine, EngineConfig, Request
from seer.engine.config import GROUPINGS, WASTES
from seer.errors import SeerError
from seer.roofline import cost
from seer.sim import gpu, load_shape, validation
from seer.sim.report import efficiency
from seerbench import runs
from seerbench.traffic import trace

MARGIN = 0.9  # target: mixed traffic keeps this share of uniform traffic's rows per forward
NOISE = 0.01  # waste bases, merge_on: a case's predicted seconds may rise by this share and
# still pass
OFF = "none"  # --merge-on's name for merge_on=None


def requests(lm, examples, kind: str, name: str, seed: int) -> list[Request]:
    """The trace's chat requests as engine requests (the server's mapping of the fields)."""
    out = []
    for e, b in zip(examples, trace(examples, kind, name, seed), strict=True):
        o = {k: b[k] for k in ("temperature", "seed", "steps", "threshold") if k in b}
        o["gen_length"] = b["max_tokens"]
        out.append(Request(e.prompt, lm.sampling(**o), seer=b.get("seer", True), image=e.image))
    return out


Forward = tuple[int, int, int]  # one model forward: rows, columns, logit positions per row
Price = Callable[[Forward, str], float]  # predicted seconds of a forward by its path


def serve(
    lm,
    reqs: list[Request],
    c: int,
    cfg: EngineConfig,
    fwd: list[Forward],
    price: Price,
    seed: int = 0,
) -> dict:
    """`reqs` through an engine by `c` closed-loop clients: counts, steady-state counts and
    the predicted GPU seconds of the recorded forwards (`price`). torch's generator starts at
    `seed` (the unseeded sampled requests draw from it)."""
    torch.manual_seed(seed)
    eng, log = Engine(lm, cfg), []  # (tick, label, path, rows, first forward, end forward)
    pre, run = eng.runner.prefill, eng.runner.run

    def prefill(seqs, began=None):
        n0 = len(fwd)
        s = pre(seqs, began)
        log.append((eng._tick, f"p{len(seqs)}", "eager", len(seqs), n0, len(fwd)))
        return s

    def step(plan, seqs):
        n0 = len(fwd)
        out = run(plan, seqs)
        what = f"d{len(seqs)}/{plan.path[0]}{plan.bucket}"
        log.append((eng._tick, what, plan.path, len(seqs), n0, len(fwd)))
        return out

    eng.runner.prefill, eng.runner.run = prefill, step  # type: ignore[method-assign]
    fwd.clear()
    nxt, res = min(c, len(reqs)), []
    first, dry = None, -1 if nxt == len(reqs) else None  # steady: ticks first + 1 .. dry
    for r in reqs[:nxt]:
        eng.submit(r)
    while eng.has_unfinished():
        done = eng.step()
        res += done
        first = eng._tick - 1 if done and first is None else first
        for _ in done:
            if nxt < len(reqs):
                eng.submit(reqs[nxt])
                nxt += 1
                dry = eng._tick - 1 if nxt == len(reqs) else dry
    ticks: dict[int, list[str]] = collections.defaultdict(list)
    for t, what, _, _, a, b in log:
        ticks[t] += [f"{what}:{fwd[k][0]}x{fwd[k][1]}" for k in range(a, b)]
    steps = sum(r.nfe for r in res)
    out = {
        "ticks": eng.stats.ticks,
        "forwards": len(fwd),
        "rows_per_forward": steps / len(fwd),  # requests' rows: every row-step is in one
        "model_rows_per_forward": sum(f[0] for f in fwd) / len(fwd),  # the batch dim (varlen:
        # packed rows)
        "row_steps": steps,
        "computed_positions": sum(f[0] * f[1] for f in fwd),  # rows x columns, padding in
        "answer_tokens": sum(r.tokens for r in res),
        "step0_apart": sum(b - a for _, w, _, _, a, b in log if w[0] == "p"),
        "bound": steps / eng.stats.ticks,
        "longest_nfe": max(r.nfe for r in res),
        **_steady(log, first, dry),
        **_predicted(log, fwd, price, steps, sum(r.tokens for r in res)),
        "per_tick": " ".join(f"{t}:[{','.join(v)}]" for t, v in sorted(ticks.items())),
    }
    return out


def _steady(log: list, first: int | None, dry: int | None) -> dict:
    """Counts over the steady ticks: from the one after the first answer to the one after
    which the trace ran dry (None where there are none: every request in flight at once)."""
    if first is None or dry is None or dry <= first:
        return {"steady_ticks": 0, "steady_rows_per_forward": None, "steady_bound": None}
    inside = [e for e in log if first < e[0] <= dry]
    rows, forwards = sum(e[3] for e in inside), sum(e[5] - e[4] for e in inside)
    return {
        "steady_ticks": dry - first,
        "steady_rows_per_forward": rows / forwards,
        "steady_bound": rows / (dry - first),
    }


def _predicted(log: list, fwd: list[Forward], price: Price, steps: int, tokens: int) -> dict:
    """The recorded forwards priced on the GPU (`price`): predicted seconds and rates."""
    t = sum(price(fwd[k], path) for _, _, path, _, a, b in log for k in range(a, b))
    return {
        "predicted_seconds": t,
        "predicted_row_steps_per_s": steps / t,
        "predicted_tokens_per_s": tokens / t,
    }


def pricer(model: str, hw: str) -> Price:
    """Seconds of a recorded forward (rows x columns, its logit positions) as `model` on `hw`
    by the simulator's roofline (`seer.roofline.cost`; every row a dense canvas of its columns, a
    packed row a dense block mask, as the engine computes them)."""
    shape, dev, eff = load_shape(model), gpu(hw), efficiency()

    def price(f: Forward, path: str) -> float:
        rows, cols, logits = f
        w = cost.Work(rows * cols, rows * cols * cols, rows * logits, rows * cols)
        return cost.seconds(shape, dev, eff, w, path)

    return price


def merge_value(text: str) -> str:
    """An argparse type: `none`, or a value `EngineConfig.merge_on` accepts (one line if not)."""
    if text.lower() in ("auto", "off"):  # auto is off on this CPU: a verdict would be 1.000
        raise argparse.ArgumentTypeError(
            f"{text!r}: name a GPU profile (e.g. h100:llada-8b), or none for off"
        )
    if text != OFF:
        try:
            EngineConfig(merge_on=text)
        except SeerError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["builtin", "builtin-vqa"])
    runs.add_arguments(ap, n=24, skip=("repeats", "data"))
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--groupings", nargs="+", default=["policy-apart", "layout"], choices=GROUPINGS)
    ap.add_argument(
        "--waste",
        nargs="+",
        default=["window"],
        choices=WASTES,
        help="padding-waste bases compared (EngineConfig.waste); each one's predicted GPU "
        "seconds over the first's",
    )
    ap.add_argument(
        "--merge-on",
        nargs="+",
        default=[OFF],
        type=merge_value,
        metavar="GPU[:MODEL]",
        help="EngineConfig.merge_on values compared (none: off); each one's predicted GPU "
        "seconds over the first's",
    )
    ap.add_argument(
        "--time",
        type=int,
        default=0,
        metavar="R",
        help="also time every case R times, the groupings interleaved, and report "
        "each grouping's median wall over the first's (0: counts only)",
    )
    ap.add_argument("--gpu", default="h100", help="GPU the forwards are priced on (predicted)")
    ap.add_argument("--gpu-model", default="llada-8b", help="model shape they are priced as")
    args = ap.parse_args(argv)
    session = runs.Session("trace_ticks", args)
    price, err = pricer(args.gpu_model, args.gpu), validation()["median_abs_error_held_out"]
    target = stated_target(args, err)
    print(target, flush=True)
    results = []
    for name in args.models:
        lm = seer.load(name)
        fwd: list[Forward] = []

        def count(module, a, k, fwd=fwd) -> None:
            x = a[0] if a and a[0] is not None else k["inputs_embeds"]
            at = k.get("logits_positions")  # eager: the answer columns; packed: the slots
            logits = at.stop - at.start if isinstance(at, slice) else x.shape[1]
            fwd.append((int(x.shape[0]), int(x.shape[1]), int(logits)))

        lm.model.register_forward_pre_hook(count, with_kwargs=True)
        examples = load_examples(name, n=args.n, part="eval", seed=args.seed)[: args.n]
        traces = {
            k: requests(lm, examples, k, lm.name or name, args.seed) for k in ("uniform", "mixed")
        }
        results += cases(args, lm, name, traces, fwd, price)
        if args.time:
            timing(args, lm, name, traces, fwd, price, results)
    verdicts, by_waste = ratios(results), waste_verdicts(results, args.waste)
    by_merge = merge_verdicts(results, args.merge_on)
    summary(results, verdicts, args.gpu, err)
    session.finish(
        results,
        model=",".join(args.models),
        target=target,
        margin=MARGIN,
        primary="mixed / uniform rows per forward, grouping=layout",
        gpu=args.gpu,
        gpu_model=args.gpu_model,
        prediction_error=err,
        ratios=verdicts,
        noise=NOISE,
        waste_verdicts=by_waste,
        merge_verdicts=by_merge,
        merge_passes=all(v["passes"] for v in by_merge.values()) if by_merge else None,
        # the merges and the verdict are priced by the same roofline: not independent evidence
        merge_verdict_circular=bool(by_merge),
        meets=all(v["meets"] for k, v in verdicts.items() if "/layout/" in k),
    )
    return 0


def stated_target(args, err: float) -> str:
    """The target and the rules of the compared settings, printed before the first request."""
    target = (
        f"target (stated before the first request): under grouping=layout, at every concurrency,"
        f" mixed traffic keeps >= {MARGIN}x uniform traffic's rows per forward (all ticks, and"
        f" the steady ticks where there are any); predicted {args.gpu} throughput of the same "
        f"forwards as {args.gpu_model} is reported beside it (simulator's median error on its "
        f"test set: {err:.0%}, target 30 %: {'met' if err <= 0.30 else 'missed'})"
    )
    if len(args.waste) > 1:
        target += (
            f"; waste basis {args.waste[1]} replaces {args.waste[0]} as the default only if, "
            f"per grouping, its predicted {args.gpu} seconds summed over the concurrencies are "
            f"lower for every (model, traffic) and no case's are higher by more than {NOISE:.0%}"
        )
    for m in args.merge_on[1:]:
        target += (
            f"; merge_on {m} replaces {args.merge_on[0]} as the recommended setting for GPU "
            f"serving only if predicted seconds never rise by more than {NOISE:.0%} in any case. "
            f"The rule prices forwards with the roofline that scores them here (seer.roofline), so "
            f"its predicted gain is not independent evidence: predicted, median "
            f"error {err:.0%} on batch-1 text, batched forwards untested"
        )
    return target


def cases(args, lm, name: str, traces: dict, fwd: list[Forward], price: Price) -> list[dict]:
    """Every (grouping, waste basis, merge_on, traffic, concurrency) case of one model."""
    out = []
    for grouping, waste, merge in configs(args):
        cfg = engine_config(args, grouping, waste, merge)
        for kind, reqs in traces.items():
            for c in args.concurrency:
                r = {"model": name, "grouping": grouping, "waste": waste, "merge_on": merge}
                r["traffic"], r["concurrency"] = kind, c
                r.update(serve(lm, reqs, c, cfg, fwd, price, args.seed))
                steady = r["steady_rows_per_forward"]
                print(
                    f"{name:<12} {grouping:<12} {waste:<8} {merge:<13} {kind:<8} c={c:<3} ticks"
                    f" {r['ticks']:>4}"
                    f" forwards {r['forwards']:>5} (step 0 apart {r['step0_apart']:>3})"
                    f" rows/fwd {r['rows_per_forward']:5.2f} steady"
                    f" {'-' if steady is None else f'{steady:5.2f}'} ({r['steady_ticks']} ticks)"
                    f" row-steps {r['row_steps']:>5} bound {r['bound']:5.2f} longest nfe"
                    f" {r['longest_nfe']} predicted {args.gpu} row-steps/s"
                    f" {r['predicted_row_steps_per_s']:7.1f}",
                    flush=True,
                )
                print(f"  {r['per_tick']}", flush=True)
                out.append(r)
    return out


Config = tuple[str, str, str]  # (grouping, waste basis, merge_on or OFF)


def configs(args) -> list[Config]:
    """The (grouping, waste basis, merge_on) triples compared, the first the timings' reference."""
    return [(g, w, m) for g in args.groupings for w in args.waste for m in args.merge_on]


def engine_config(args, grouping: str, waste: str, merge: str) -> EngineConfig:
    return EngineConfig(
        max_batch=args.max_batch,
        grouping=grouping,
        waste=waste,
        merge_on=None if merge == OFF else merge,
    )


def timing(args, lm, name: str, traces: dict, fwd: list[Forward], price: Price, results) -> None:
    """Every case timed `args.time` times, the configurations interleaved; each one's median
    wall over the first's, into the results."""
    triples = configs(args)
    for kind, reqs in traces.items():
        for c in args.concurrency:
            walls: dict[Config, list[float]] = {gw: [] for gw in triples}
            for _ in range(args.time):
                for gwm in triples:
                    cfg = engine_config(args, *gwm)
                    t0 = time.perf_counter()
                    serve(lm, reqs, c, cfg, fwd, price, args.seed)
                    walls[gwm].append(time.perf_counter() - t0)
            first = statistics.median(walls[triples[0]])
            for r in results:
                if (r["model"], r["traffic"], r["concurrency"]) == (name, kind, c):
                    r["walls"] = walls[r["grouping"], r["waste"], r["merge_on"]]
                    r["wall_over_first"] = statistics.median(r["walls"]) / first
            print(
                f"{name:<12} {kind:<8} c={c:<3} median wall, each grouping over "
                f"{'/'.join(triples[0])}: "
                + ", ".join(
                    f"{'/'.join(gw)} {statistics.median(w) / first:.3f}" for gw, w in walls.items()
                ),
                flush=True,
            )


Case = tuple[str, str, str, str, str, int]  # model, grouping, waste, merge_on, traffic, c


def _by_case(results: list[dict]) -> dict[Case, dict]:
    """Each result under its (model, grouping, waste, merge_on, traffic, concurrency)."""
    return {
        (
            r["model"],
            r["grouping"],
            r["waste"],
            r.get("merge_on", OFF),
            r["traffic"],
            r["concurrency"],
        ): r
        for r in results
    }


def _label(m: str, g: str, w: str, mo: str) -> str:
    """A setting's name in the record (merge_on named only when it is on)."""
    return f"{m}/{g}/{w}" + ("" if mo == OFF else f"/{mo}")


def ratios(results: list[dict]) -> dict:
    """Mixed over uniform traffic per (model, grouping, waste basis, merge_on, concurrency):
    rows per forward (all ticks and steady), the one-forward-per-tick bound, the predicted GPU
    rates, and the work-normalised decomposition of the predicted row-steps per second."""
    at = _by_case(results)
    out = {}
    for (m, g, w, mo, t, c), r in at.items():
        u = at.get((m, g, w, mo, "uniform", c))
        if t != "mixed" or u is None:
            continue
        rpf = r["rows_per_forward"] / u["rows_per_forward"]
        steady = None
        if r["steady_rows_per_forward"] and u["steady_rows_per_forward"]:
            steady = r["steady_rows_per_forward"] / u["steady_rows_per_forward"]
        v = {
            "mixed_over_uniform_rows_per_forward": rpf,
            "mixed_over_uniform_steady_rows_per_forward": steady,
            "mixed_over_uniform_bound": r["bound"] / u["bound"],
            "predicted_mixed_over_uniform_row_steps_per_s": r["predicted_row_steps_per_s"]
            / u["predicted_row_steps_per_s"],
            "predicted_mixed_over_uniform_tokens_per_s": r["predicted_tokens_per_s"]
            / u["predicted_tokens_per_s"],
            **decomposition(r, u),
            "meets": rpf >= MARGIN and (steady is None or steady >= MARGIN),
        }
        out[f"{_label(m, g, w, mo)}/c{c}"] = v
        print(
            f"{_label(m, g, w, mo)}/c{c}: mixed/uniform rows per forward {rpf:.3f}, steady "
            f"{'-' if steady is None else f'{steady:.3f}'}, one-forward-per-tick bound "
            f"{v['mixed_over_uniform_bound']:.3f}; predicted GPU row-steps/s "
            f"{v['predicted_mixed_over_uniform_row_steps_per_s']:.3f} = work "
            f"{v['work_factor']:.3f} x rate {v['rate_factor']:.3f}, tokens/s "
            f"{v['predicted_mixed_over_uniform_tokens_per_s']:.3f}",
            flush=True,
        )
    return out


def decomposition(mixed: dict, uniform: dict) -> dict:
    """Predicted mixed/uniform row-steps per second = work factor x rate factor: work, uniform's
    computed positions per row-step over mixed's (below 1: the mixed rows compute more per
    step, e.g. Seer-off rows their full windows); rate, mixed's computed positions per
    predicted second over uniform's (below 1: their forwards batch worse on the GPU)."""

    def per_step(r: dict) -> float:
        return r["computed_positions"] / r["row_steps"]

    def rate(r: dict) -> float:
        return r["computed_positions"] / r["predicted_seconds"]

    return {
        "positions_per_row_step": per_step(mixed),
        "positions_per_row_step_uniform": per_step(uniform),
        "work_factor": per_step(uniform) / per_step(mixed),
        "rate_factor": rate(mixed) / rate(uniform),
    }


def against_first(results: list[dict], field: str, values: list[str]) -> dict:
    """Each later value of setting `field` (waste or merge_on) against the first, the other
    settings equal: predicted GPU seconds and rows per forward per (traffic, concurrency), and
    their sums over concurrencies per traffic."""
    at = _by_case(results)
    pos = {"waste": 2, "merge_on": 3}[field]
    out: dict = {}
    for key, r in sorted(at.items()):
        first = (*key[:pos], values[0], *key[pos + 1 :])
        base = at.get(first)  # type: ignore[arg-type]
        if key[pos] == values[0] or base is None:
            continue
        m, g, w, mo, t, c = key
        v = out.setdefault(_label(m, g, w, mo), {"cases": {}, "sums": {}})
        sec, rpf = r["predicted_seconds"], r["rows_per_forward"]
        v["cases"][f"{t}/c{c}"] = {
            "predicted_seconds_over_first": sec / base["predicted_seconds"],
            "rows_per_forward_over_first": rpf / base["rows_per_forward"],
            "forwards": r["forwards"],
            "forwards_first": base["forwards"],
        }
        s = v["sums"].setdefault(t, {"predicted_seconds": 0.0, "predicted_seconds_first": 0.0})
        s["predicted_seconds"] += sec
        s["predicted_seconds_first"] += base["predicted_seconds"]
        print(
            f"{m}/{g} {t} c={c}: {key[pos]} over {values[0]}: predicted seconds {sec:.3f} / "
            f"{base['predicted_seconds']:.3f} = {sec / base['predicted_seconds']:.3f}, forwards "
            f"{r['forwards']} / {base['forwards']}, rows per forward {rpf:.2f} / "
            f"{base['rows_per_forward']:.2f}",
            flush=True,
        )
    for v in out.values():
        v["worst_case_over_first"] = max(
            k["predicted_seconds_over_first"] for k in v["cases"].values()
        )
    return out


def waste_verdicts(results: list[dict], wastes: list[str]) -> dict:
    """Each later waste basis against the first (`against_first`), and whether it passes the
    rule stated in the target: lower summed seconds per traffic, no case up past `NOISE`."""
    out = against_first(results, "waste", wastes)
    for v in out.values():
        lower = all(
            s["predicted_seconds"] < s["predicted_seconds_first"] for s in v["sums"].values()
        )
        v["passes"] = lower and v["worst_case_over_first"] <= 1 + NOISE
    return out


def merge_verdicts(results: list[dict], merges: list[str]) -> dict:
    """Each later merge_on value against the first (`against_first`), and whether it passes the
    rule stated in the target: no case's predicted seconds up by more than `NOISE`."""
    out = against_first(results, "merge_on", merges)
    for v in out.values():
        v["passes"] = v["worst_case_over_first"] <= 1 + NOISE
    return out


def summary(results: list[dict], verdicts: dict, gpu_name: str, err: float) -> None:
    """Markdown tables: rows per forward and predicted throughput per case, then the
    decomposition of the predicted mixed/uniform ratio."""
    print(
        f"\n| model | grouping | waste | merge_on | traffic | c | rows/fwd | predicted {gpu_name} "
        f"row-steps/s | predicted tok/s (median error {err:.0%}) |\n|---|---|---|---|---|---|---|"
        "---|---|"
    )
    for (m, g, w, mo, t, c), r in _by_case(results).items():
        print(
            f"| {m} | {g} | {w} | {mo} | {t} | {c} | {r['rows_per_forward']:.2f} | "
            f"{r['predicted_row_steps_per_s']:.1f} | {r['predicted_tokens_per_s']:.1f} |"
        )
    print(
        "\n| case | predicted mixed/uniform row-steps/s | = work (positions per row-step, "
        "uniform/mixed) | x rate (positions per predicted s, mixed/uniform) |\n|---|---|---|---|"
    )
    for k, v in verdicts.items():
        print(
            f"| {k} | {v['predicted_mixed_over_uniform_row_steps_per_s']:.3f} | "
            f"{v['work_factor']:.3f} ({v['positions_per_row_step_uniform']:.0f}/"
            f"{v['positions_per_row_step']:.0f}) | {v['rate_factor']:.3f} |"
        )
    print(flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
