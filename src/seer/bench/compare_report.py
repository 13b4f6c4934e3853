"""The summary of a comparison run (`seer.bench.compare`): per config, accuracy with its interval,
the paired differences and tests, answers changed, window cuts, NFE, batch-1 and batch-32 times
with their speedup intervals, detection's share of the loop, the Pareto fronts; then the table,
the README's Markdown tables and the plot of accuracy difference against speed-up.

Accuracy is the mean of `seer.data.score` (the source's own metric: ParallelBench's metrics, the
v2 families' checkers, exact match otherwise). Batch-1 speedup intervals resample requests and
repeats (`stats.bootstrap_ratio`); batch 32 is one engine call per round, so its speedup comes
with the range of the per-round ratios.
"""

from __future__ import annotations

from pathlib import Path

from seer.bench import stats
from seer.data import parallelbench
from seer.errors import SeerError


def _seconds(x: dict) -> list[float]:
    return x.get("seconds_repeats") or [x["seconds"]]


def _b32(rec: dict, e: dict, ref_e: dict | None) -> None:
    ne = len(e["correct"])
    rec["b32_n"] = ne
    rec["b32_sample"] = e.get("sample", "first")  # old records: the first engine_n requests
    rec["b32_repeats"] = e.get("repeats", len(e.get("cpu_repeats", [])) or None)
    rec["b32_wall_ms"] = 1000 * e["wall_seconds"] / ne
    # the time compared (plots, front, speedups): the process's CPU time where recorded
    rec["b32_clock"] = "cpu" if "cpu_seconds" in e else "wall"
    rec["b32_ms"] = 1000 * e.get("cpu_seconds", e["wall_seconds"]) / ne
    rec["b32_accuracy"] = sum(e["correct"]) / ne
    rec["b32_ci95"] = list(stats.bootstrap(e["correct"]))
    rec["b32_same_as_b1"] = e["same_text_as_batch1"]
    rec["b32_nfe"] = sum(e["nfe"]) / ne
    rec["b32_later_pass"] = "scale" in e
    if ref_e is not None and "hashes" in e and "hashes" in ref_e:
        rec["b32_changed"] = sum(a != b for a, b in zip(e["hashes"], ref_e["hashes"], strict=True))
    if ref_e is not None and e.get("cpu_repeats") and ref_e.get("cpu_repeats"):
        ratios = [a / b for a, b in zip(ref_e["cpu_repeats"], e["cpu_repeats"], strict=False)]
        rec["b32_speedup_vs_ref_range"] = [min(ratios), max(ratios)]


def summarise(rows, eng, configs, g, examples) -> dict:
    """Per config: accuracy (`seer.data.score` of each row's example), intervals, tests, costs,
    speedups, answers changed against its reference and against the first baseline."""
    from seer.bench.compare import correct

    out = {}
    n = len(rows)
    first = f"baseline@k={configs[0].budget.split('=')[1]}" if configs else ""
    scores = {c.name: [correct(ex, r["results"][c.name]["text"]) for r, ex in
                       zip(rows, examples, strict=True)] for c in configs}  # fmt: skip
    for cfg in configs:
        res = [r["results"][cfg.name] for r in rows]
        ref = [r["results"][cfg.ref] for r in rows]
        base = [r["results"][first] for r in rows] if first in scores else ref
        ok, ref_ok = scores[cfg.name], scores[cfg.ref]
        loop_s = sum(x["seconds"] for x in res) / n
        e2e_s = loop_s + sum(r["prompt_seconds"] for r in rows) / n
        pairs = list(zip(res, ref, strict=True))
        rec = {
            "method": cfg.method,
            "budget": cfg.budget,
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.params.items()},
            "seer": cfg.seer,
            "accuracy": sum(ok) / n,
            "ci95": list(stats.bootstrap(ok)),
            "changed": sum(x["ids_hash"] != y["ids_hash"] for x, y in pairs),
            "changed_vs_baseline": sum(x["ids_hash"] != y["ids_hash"]
                                       for x, y in zip(res, base, strict=True)),  # fmt: skip
            "shorter_than_ref": sum(x["tokens"] < y["tokens"] for x, y in pairs),
            "window_cuts": sum(x["window"] < g and x["tokens"] >= x["window"] for x in res),
            "mean_window": sum(x["window"] for x in res) / n,
            "nfe": sum(x["nfe"] for x in res) / n,
            "loop_ms": 1000 * loop_s,
            "e2e_ms": 1000 * e2e_s,
            "repeats": min(len(_seconds(x)) for x in res),
            "ref": cfg.ref,
            "accuracy_minus_ref": (sum(ok) - sum(ref_ok)) / n,
            "ci95_minus_ref": list(stats.bootstrap(ok, ys=ref_ok)),
            "p_vs_ref": stats.paired_test(ok, ref_ok),
            "ci95_minus_baseline": list(stats.bootstrap(ok, ys=scores.get(first, ref_ok))),
            "later_pass": sum("scale" in x for x in res),
            "correct": ok,
        }  # fmt: skip
        rec["loop_speedup_vs_ref_ci95"] = list(
            _speedup_ci([_seconds(y) for y in ref], [_seconds(x) for x in res])
        )
        if cfg.seer:  # detection (and the cut) as a share of this config's loop time
            det = [x.get("detect", 0.0) for x in res]
            rec["detect_ms"] = 1000 * sum(det) / n
            rec["detect_share"] = sum(det) / (loop_s * n) if loop_s > 0 else 0.0
            rec["full_window"] = sum(x["window"] >= g for x in res)  # no boundary, or at the end
        if cfg.name in eng:
            _b32(rec, eng[cfg.name], eng.get(cfg.ref))
        out[cfg.name] = rec
    base = out.get(first)
    for rec in out.values():
        if base is not None:
            rec["loop_speedup_vs_k1"] = base["loop_ms"] / rec["loop_ms"]
        ref = out[rec["ref"]]
        rec["loop_speedup_vs_ref"] = ref["loop_ms"] / rec["loop_ms"]
        if "b32_ms" in rec and "b32_ms" in ref:
            rec["b32_speedup_vs_ref"] = ref["b32_ms"] / rec["b32_ms"]
    # equal NFE: the full-window baseline whose mean NFE is nearest
    import math

    bases = [r for r in out.values() if r["method"] == "baseline"]
    for rec in out.values():
        near = min(bases, key=lambda b: (abs(math.log(b["nfe"] / rec["nfe"])), b["nfe"]))
        rec["equal_nfe_baseline"] = f"baseline@{near['budget']}"
        rec["accuracy_minus_equal_nfe_baseline"] = rec["accuracy"] - near["accuracy"]
        rec["ci95_minus_equal_nfe_baseline"] = list(
            stats.bootstrap(rec["correct"], ys=near["correct"])
        )
        rec["loop_speedup_vs_equal_nfe_baseline"] = near["loop_ms"] / rec["loop_ms"]
    _seer_adds(out, rows, scores, eng)
    for rec in out.values():
        del rec["correct"]
    return out


def _without_seer(name: str) -> str:
    """seer+dual@k=1 -> dual@k=1; seer@k=4 -> baseline@k=4."""
    method, budget = name.split("@", 1)
    rest = method.removeprefix("seer+") if method != "seer" else "baseline"
    return f"{rest}@{budget}"


def _seer_adds(out: dict, rows, scores: dict, eng: dict) -> None:
    """What Seer adds to each method a user would run anyway: for every Seer config, the same
    config without Seer, the paired loop speedup (requests and repeats) and accuracy difference,
    the answers changed, and the batch-32 speedup."""
    for name, rec in out.items():
        if not rec["seer"]:
            continue
        other = _without_seer(name)
        if other not in out:
            continue
        mine = [_seconds(r["results"][name]) for r in rows]
        theirs = [_seconds(r["results"][other]) for r in rows]
        adds = {
            "config": other,
            "loop_speedup": out[other]["loop_ms"] / rec["loop_ms"],
            "loop_speedup_ci95": list(_speedup_ci(theirs, mine)),
            "accuracy_difference": rec["accuracy"] - out[other]["accuracy"],
            "ci95": list(stats.bootstrap(scores[name], ys=scores[other])),
            "p": stats.paired_test(scores[name], scores[other]),
            "changed": sum(
                r["results"][name]["ids_hash"] != r["results"][other]["ids_hash"] for r in rows
            ),  # fmt: skip
        }
        if "b32_ms" in rec and "b32_ms" in out[other]:
            adds["b32_speedup"] = out[other]["b32_ms"] / rec["b32_ms"]
        rec["seer_adds"] = adds


def headline(results: dict, reference: str) -> dict:
    """The user's question: among the configs whose accuracy is not below the `reference`'s
    (the first baseline, one token per step by default) by more than chance (the paired
    interval of the difference reaches 0), which is fastest at batch 1 and at batch 32, and
    what Seer adds to the fastest config with Seer."""
    ref = results.get(reference)
    if ref is None:
        return {}
    # the oracle knows each answer's end: a bound, not a method a user can run
    ok = {k: r for k, r in results.items() if _not_worse(r) and r["method"] != "oracle"}
    out: dict = {"reference": reference, "equal_accuracy": sorted(ok)}
    for key, clock in (("b1", "loop_ms"), ("b32", "b32_ms")):
        timed = {k: r for k, r in ok.items() if clock in r}
        if not timed:
            continue
        best = min(timed, key=lambda k: timed[k][clock])
        out[key] = {"fastest": best, "ms": timed[best][clock],
                    "speedup_vs_reference": ref.get(clock, 0) / timed[best][clock]}  # fmt: skip
        seer = {k: r for k, r in timed.items() if r["seer"]}
        if seer:
            best_seer = min(seer, key=lambda k: seer[k][clock])
            out[key]["fastest_with_seer"] = best_seer
            out[key]["seer_adds"] = seer[best_seer].get("seer_adds")
    return out


def _not_worse(r: dict) -> bool:
    """Not below the first baseline's accuracy by more than the paired interval allows."""
    return r["ci95_minus_baseline"][1] >= 0


def _speedup_ci(ref: list[list[float]], res: list[list[float]]) -> tuple[float, float]:
    """Paired interval of sum(ref) / sum(res) over requests and repeats (rows whose repeat
    counts differ, as after a resume with other --repeats, fall back to their medians)."""
    if len({len(x) for x in ref + res}) == 1:
        return stats.bootstrap_ratio(ref, res)
    med = lambda xs: [stats.median(x) for x in xs]  # noqa: E731
    return stats.bootstrap_ratio(med(ref), med(res))


def detection(results: dict) -> dict:
    """Seer's detection overhead per Seer config: its share of the loop's time, and ms."""
    return {k: {"share": r["detect_share"], "detect_ms": r["detect_ms"], "loop_ms": r["loop_ms"]}
            for k, r in results.items() if "detect_share" in r}  # fmt: skip


def mark_frontier(out: dict) -> None:
    b1 = stats.pareto([(r["loop_ms"], r["accuracy"], k) for k, r in out.items()])
    b32 = stats.pareto(  # the batch-32 accuracy: the same requests as its time
        [(r["b32_ms"], r["b32_accuracy"], k) for k, r in out.items() if "b32_ms" in r]
    )
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
    cols = ("method", "budget", "acc", "95% CI", "changed", "shorter", "cuts", "window", "NFE",
            "loop ms", "e2e ms", "x ref", "b32 cpu ms", "b32 x ref", "eq-NFE base", "d acc",
            "front")  # fmt: skip
    for col in cols:
        t.add_column(col, justify="right")
    for r in record["results"].values():
        lo, hi = r["ci95"]
        front = ("1" if r["pareto_b1"] else "") + ("/32" if r.get("pareto_b32") else "")
        t.add_row(
            r["method"], r["budget"], f"{r['accuracy']:.1%}", f"{lo:.0%}-{hi:.0%}",
            str(r["changed"]), str(r["shorter_than_ref"]), str(r["window_cuts"]),
            f"{r['mean_window']:.1f}",
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
        "threshold methods). changed / shorter: answers that differ from / have fewer tokens "
        "than the reference's. cuts: "
        "answers cut by their window. eq-NFE base / d acc: the full-window baseline of nearest "
        "mean NFE and the accuracy difference to it (points). front: on the accuracy-vs-time "
        "Pareto front at batch 1 / batch 32 (batch 32: its own accuracy over "
        f"{_b32n(record['results'])} requests, {_b32sample(record['results'])})."
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
        f"{record['model']}, n = {record['n']} (batch 32: {_b32n(res)} requests, "
        f"{_b32sample(res)}). Cell: "
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
        "changed / shorter / cuts: answers that differ from / are shorter than the reference's, "
        "answers cut by their window; p: paired sign-flip test against the reference; b32 acc: "
        "the batch-32 accuracy over its own requests; front: on the accuracy-vs-time Pareto "
        "front (point estimates) at batch 1 / batch 32.",
        "",
        "| config | accuracy % [95 % CI] | Δ acc vs ref [CI] | p | Δ acc vs equal-NFE baseline "
        f"[CI] | changed | shorter | cuts | NFE | loop ms | e2e ms | loop × ref [CI] | vs "
        f"{g // ks[0]} steps | b32 acc % | b32 CPU ms | vs {g // ks[0]} steps | front |",
        "|---" * 18 + "|",
    ]
    for name, r in sorted(res.items(), key=lambda kv: -kv[1]["loop_ms"]):
        lo, hi = r["ci95"]
        dlo, dhi = r["ci95_minus_ref"]
        elo, ehi = r["ci95_minus_equal_nfe_baseline"]
        slo, shi = r["loop_speedup_vs_ref_ci95"]
        ref = r["ref"].split("@")[1]
        eq = r["equal_nfe_baseline"].split("@")[1]
        b32 = f"{r['b32_ms']:.0f}" if "b32_ms" in r else "—"
        b32a = pct(r["b32_accuracy"]) if "b32_accuracy" in r else "—"
        b32x = f"{base['b32_ms'] / r['b32_ms']:.1f}×" if "b32_ms" in r and "b32_ms" in base else "—"
        front = ("b1" if r["pareto_b1"] else "") + (" b32" if r.get("pareto_b32") else "")
        later = "¹" if r.get("later_pass") else ""
        out.append(
            f"| {name}{later} | {pct(r['accuracy'])} [{pct(lo)}, {pct(hi)}] | "
            f"{100 * r['accuracy_minus_ref']:+.1f} [{100 * dlo:+.1f}, {100 * dhi:+.1f}] ({ref}) | "
            f"{r.get('p_vs_ref', float('nan')):.2g} | "
            f"{100 * r['accuracy_minus_equal_nfe_baseline']:+.1f} [{100 * elo:+.1f}, "
            f"{100 * ehi:+.1f}] ({eq}) | {r.get('changed', '—')} | {r['shorter_than_ref']} | "
            f"{r['window_cuts']} | "
            f"{r['nfe']:.1f} | {r['loop_ms']:.0f} | {r['e2e_ms']:.0f} | "
            f"{r['loop_speedup_vs_ref']:.2f}× [{slo:.2f}, {shi:.2f}] | "
            f"{base['loop_ms'] / r['loop_ms']:.1f}× | {b32a} | {b32} | {b32x} | {front.strip()} |"
        )
    if any(r.get("later_pass") for r in res.values()):
        out += [
            "",
            "¹ added after the first pass: run in a later pass beside the anchors (`--anchors`), "
            "its times scaled by the anchors' first-pass / later-pass time ratio (per request).",
        ]
    out += _adds_table(record)
    det = record.get("detection") or {}
    if det:
        out += [
            "",
            "Seer's detection (the window policy at step 0: probe, detector, cut) as a share of "
            "each Seer config's denoising loop: "
            + "; ".join(
                f"{k} {100 * d['share']:.1f} % ({d['detect_ms']:.1f} ms)" for k, d in det.items()
            )  # fmt: skip
            + ".",
        ]
    return "\n".join(out) + "\n"


def _adds_table(record: dict) -> list[str]:
    """What Seer adds to each method: Seer + X against X, paired, and the headline."""
    res = record["results"]
    rows = [(k, r["seer_adds"]) for k, r in res.items() if r.get("seer_adds")]
    if not rows:
        return []
    out = ["", "What Seer adds to each method (Seer + X against X on the same requests; speedup "
           "interval over requests and repeats, accuracy difference paired, points):", "",
           "| Seer + X | X | loop speedup [CI] | Δ acc [CI] | p | changed | b32 speedup |",
           "|---" * 7 + "|"]  # fmt: skip
    for k, a in rows:
        lo, hi = a["loop_speedup_ci95"]
        dlo, dhi = a["ci95"]
        b32 = f"{a['b32_speedup']:.2f}×" if "b32_speedup" in a else "—"
        out.append(
            f"| {k} | {a['config']} | {a['loop_speedup']:.2f}× [{lo:.2f}, {hi:.2f}] | "
            f"{100 * a['accuracy_difference']:+.1f} [{100 * dlo:+.1f}, {100 * dhi:+.1f}] | "
            f"{a['p']:.2g} | {a['changed']} | {b32} |"
        )
    h = record.get("headline") or {}
    for key, label in (("b1", "batch 1"), ("b32", "batch 32")):
        if key in h:
            x = h[key]
            line = (f"At the accuracy of {h['reference']} (paired interval reaching 0), the "
                    f"fastest config at {label} is {x['fastest']} ({x['speedup_vs_reference']:.1f}×"
                    f" faster than {h['reference']})")  # fmt: skip
            if x.get("fastest_with_seer"):
                line += f"; the fastest with Seer is {x['fastest_with_seer']}"
                a = x.get("seer_adds")
                if a and key == "b1":
                    line += f", {a['loop_speedup']:.2f}× over {a['config']} at batch 1"
                elif a and "b32_speedup" in a:
                    line += f", {a['b32_speedup']:.2f}× over {a['config']} at batch 32"
            out += ["", line + "."]
    return out


def _b32n(res: dict) -> int:
    return max((r.get("b32_n", 0) for r in res.values()), default=0)


def _b32sample(res: dict) -> str:
    return next((r["b32_sample"] for r in res.values() if "b32_sample" in r), "none")


def _relative(r: dict, ref: dict, clock: str) -> tuple[float, float]:
    """(speed-up over `ref`, accuracy difference to `ref` in points) on `clock`'s side: the
    batch-1 loop (`loop_ms`, accuracy over every request) or batch 32 (`b32_ms`, its sample)."""
    acc = "accuracy" if clock == "loop_ms" else "b32_accuracy"
    return ref[clock] / r[clock], 100 * (r[acc] - ref[acc])


def plot(record: dict, path: Path) -> None:
    """Accuracy against speed, each relative to the headline's reference (the full-window
    baseline at the run's first budget, one token per step by default): batch 1 with the paired
    95 % interval of the accuracy difference (the intervals of the accuracies themselves are as
    wide as the whole spread of methods on 100 requests), batch 32 over its sample (no interval:
    32 requests). The dotted line is the Pareto front."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = record["results"]
    ref = res.get((record.get("headline") or {}).get("reference", ""))
    if ref is None:  # the intervals are differences to it: nothing else can stand in
        raise SeerError("compare plot: the record has no baseline reference (its headline)")
    k = ref["budget"].removeprefix("k=")
    at = f"the baseline at {k} token{'' if k == '1' else 's'} / step"
    methods = sorted({r["method"] for r in res.values()})
    cmap = plt.get_cmap("tab20")
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.5))
    for ax, clock in ((axes[0], "loop_ms"), (axes[1], "b32_ms")):
        if clock not in ref:
            ax.set_axis_off()
            continue
        for i, m in enumerate(methods):
            pts = sorted((r for r in res.values() if r["method"] == m and clock in r),
                         key=lambda r, c=clock: r[c], reverse=True)  # fmt: skip
            if not pts:
                continue
            x, y = zip(*(_relative(r, ref, clock) for r in pts), strict=True)
            marker = "o" if m.startswith("seer") else ("*" if m == "oracle" else "s")
            style = dict(fmt=marker + "-", color=cmap(i % 20), label=m, lw=1, ms=6, alpha=0.85)
            if clock == "loop_ms":
                lo = [y0 - 100 * r["ci95_minus_baseline"][0] for y0, r in zip(y, pts, strict=True)]
                hi = [100 * r["ci95_minus_baseline"][1] - y0 for y0, r in zip(y, pts, strict=True)]
                ax.errorbar(x, y, yerr=[lo, hi], capsize=2, elinewidth=0.6, **style)
            else:
                ax.errorbar(x, y, **style)
            for r, x0, y0 in zip(pts, x, y, strict=True):
                ax.annotate(r["budget"], (x0, y0), fontsize=6, xytext=(3, 3),
                            textcoords="offset points")  # fmt: skip
        flag = "pareto_b1" if clock == "loop_ms" else "pareto_b32"
        front = sorted(_relative(r, ref, clock) for r in res.values() if clock in r and r[flag])
        if front:
            ax.step(*zip(*front, strict=True), where="pre", color="k", lw=0.8, ls=":",
                    label="Pareto front")  # fmt: skip
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xscale("log")
        if clock == "loop_ms":
            ax.set_xlabel(f"batch 1: denoising-loop speed-up over {at}")
            ax.set_ylabel("accuracy − baseline's, points (paired 95 % CI)")
        else:
            n32 = ref.get("b32_n", "")
            ax.set_xlabel(f"batch 32 (engine): end-to-end speed-up over {at} (CPU time)")
            ax.set_ylabel(f"accuracy − baseline's, points ({n32} requests, no interval)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()  # batch 1 has every method
    fig.legend(handles, labels, loc="lower center", ncol=9, fontsize=7)
    data = str(record.get("source") or "")
    if parallelbench.is_parallelbench(data):  # its task selector, not this machine's path
        data = "parallelbench: " + (parallelbench.label(data) or "every task")
    on = f" on {data}" if data and data != record["model"] else ""
    fig.suptitle(
        f"{record['model']}{on}: {record['n']} held-out requests, gen_length "
        f"{record['gen_length']}, baseline {100 * ref['accuracy']:.1f} % (k = tokens per step, "
        "t = threshold)"
    )
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
