"""The summary of a comparison run (`seerbench.compare`): per config, accuracy with its interval,
the paired differences and tests, the non-inferiority verdict at the run's margin, answers
changed, window cuts, NFE, batch-1 and batch-32 times on four clocks with the speed-up
intervals, detection's share of the loop, the Pareto fronts; then the table, the README's
Markdown tables and the plot of accuracy difference against speed-up.

Accuracy is the mean of `seer.data.score` (the source's own metric: ParallelBench's metrics, the
v2 families' checkers, exact match otherwise).

One clock (`CLOCKS`, the run's `--clock`) is compared everywhere and named in every table and
plot; the record keeps all four per config and batch size (`b1`, `b32`: ms per request).

"At the baseline's accuracy" is non-inferiority at a margin stated before the run (`--margin`,
points): a config passes when the one-sided 95 % lower bound of its paired accuracy difference
to the reference (percentile bootstrap over requests, `stats.noninferior`) is >= -margin. The
headline names the fastest config that passes and how often it is the fastest when the requests
are redrawn and the selection is done again in each redraw (`select_fastest`); below
`CLEAR` it says that no config is clearly the fastest. Batch-1 speed-up intervals resample
requests and repeats (`stats.bootstrap_ratio`); batch 32 is one engine call per round, so its
speed-up comes with the range of the per-round ratios.

Records written before the clocks and the margin (no "clock" key) still render: they are
labelled as the old format (batch 1: loop wall time; batch 32: end-to-end CPU time; the
interval-reaches-0 rule).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from seer.data import parallelbench
from seer.errors import SeerError
from seerbench import stats

CLOCKS = {  # name: what it times (per request)
    "e2e_cpu": "end to end, CPU time",
    "e2e_wall": "end to end, wall time",
    "loop_cpu": "denoising loop, CPU time",
    "loop_wall": "denoising loop, wall time",
}
DEFAULT_CLOCK = "e2e_cpu"  # what a user pays, and what other load inflates least (`runs`)
MARGIN = 3.0  # points: the default non-inferiority margin
CLEAR = 0.5  # the fastest config is "clear" when it is the fastest in this share of redraws
SELECT_REPS = 1000  # request redraws of the selection
MIN_B32_ROUNDS = 3  # a batch-32 speed-up in a headline: timed in this many rounds, at least
ALPHA = 0.05  # family-wise error of the selection (Holm over the candidate set)
SEEDS = 20  # bootstrap seeds over which a verdict must hold (else "borderline")
SELECTION = (
    "Holm over the candidate set: every config but the reference and the oracles is tested "
    f"for non-inferiority at the margin (one-sided bootstrap p-value over requests), Holm's "
    f"step-down at {ALPHA:g} family-wise; a config passes when it passes under each of {SEEDS} "
    "bootstrap seeds, is borderline (never the winner) when its verdict, with or without "
    "Holm, flips with the seed; the winner is the fastest that passes"
)
OLD = "old format: batch 1 loop wall time, batch 32 end-to-end CPU time; no margin"


def _seconds(x: dict) -> list[float]:
    return x.get("seconds_repeats") or [x["seconds"]]


def b1_repeats(x: dict, row: dict, clock: str) -> list[float]:
    """A batch-1 entry's seconds per repeat on `clock` (entries without the call's times, from
    before the clocks, give the loop's wall time on every clock)."""
    loop = _seconds(x)
    if clock == "loop_wall" or "call_cpu_repeats" not in x:
        return loop
    if clock == "loop_cpu":
        return x["call_cpu_repeats"]
    if clock == "e2e_wall":
        return [row["prompt_seconds"] + s for s in x["call_wall_repeats"]]
    return [row.get("prompt_cpu_seconds", 0.0) + s for s in x["call_cpu_repeats"]]


B32_KEYS = {"e2e_wall": "wall", "e2e_cpu": "cpu", "loop_wall": "loop_wall", "loop_cpu": "loop_cpu"}


def b32_repeats(e: dict, clock: str) -> list[float]:
    """An engine record's seconds per round on `clock` (the whole call, every request)."""
    key = B32_KEYS[clock]
    reps = e.get(f"{key}_repeats")
    if reps:
        return reps
    return [e.get(f"{key}_seconds", e.get("cpu_seconds", e["wall_seconds"]))]


def one_clock_entry(e: dict) -> bool:
    """Whether an engine record was timed in the first pass of the reference's process (not in
    a later pass, `scale` in records from before the scaling was removed, nor by a second
    process side by side)."""
    return not ("scale" in e or e.get("later_pass") or e.get("other_process"))


def _b32(rec: dict, e: dict, ref_e: dict | None, clock: str) -> None:
    ne = len(e["correct"])
    rec["b32_n"] = ne
    rec["b32_sample"] = e.get("sample", "first")  # old records: the first engine_n requests
    rec["b32_repeats"] = e.get("repeats", len(e.get("cpu_repeats", [])) or None)
    rec["b32_wall_ms"] = 1000 * e["wall_seconds"] / ne
    rec["b32"] = {
        c: 1000 * stats.median(b32_repeats(e, c)) / ne
        for c in CLOCKS
        if f"{B32_KEYS[c]}_seconds" in e
    }
    rec["b32_clock"] = clock
    rec["b32_ms"] = 1000 * stats.median(b32_repeats(e, clock)) / ne
    rec["b32_round_ms"] = [1000 * s / ne for s in b32_repeats(e, clock)]
    rec["b32_accuracy"] = sum(e["correct"]) / ne
    rec["b32_correct"] = list(e["correct"])
    rec["b32_ci95"] = list(stats.bootstrap(e["correct"]))
    rec["b32_same_as_b1"] = e["same_text_as_batch1"]
    rec["b32_nfe"] = sum(e["nfe"]) / ne
    rec["b32_later_pass"] = "scale" in e or bool(e.get("later_pass"))
    rec["b32_other_process"] = bool(e.get("other_process"))  # `compare._mark_processes`
    if "round_orders" in e:  # records before the rotation ran one fixed order every round
        rec["b32_round_orders"] = e["round_orders"]
    if ref_e is not None and "hashes" in e and "hashes" in ref_e:
        rec["b32_changed"] = sum(a != b for a, b in zip(e["hashes"], ref_e["hashes"], strict=True))
    if ref_e is not None and one_clock_entry(e) and one_clock_entry(ref_e):
        mine, theirs = b32_repeats(e, clock), b32_repeats(ref_e, clock)
        ratios = [a / b for a, b in zip(theirs, mine, strict=False)]
        rec["b32_speedup_vs_ref_range"] = [min(ratios), max(ratios)]


def correct(ex, text: str) -> float:
    """The answer's score (`seer.data.score`: the source's own metric, else exact match)."""
    from seer.data import score

    return score(ex, text)


def score_of(entry: dict, ex) -> float:
    """An entry's score: recorded (a raw file without text), else scored from its text."""
    return entry["score"] if "score" in entry else correct(ex, entry["text"])


def reference_of(configs) -> str:
    """The reference every speed-up and verdict is over: the full-window baseline at the first
    budget (`baseline@k=1`: the 128-step baseline on the built-in models)."""
    return f"baseline@k={configs[0].budget.split('=')[1]}" if configs else ""


def summarise(
    rows, eng, configs, g, examples, clock: str = DEFAULT_CLOCK, margin: float = MARGIN
) -> dict:
    """Per config: accuracy (`seer.data.score` of each row's example, or the score a raw file
    without text recorded), intervals, tests, the non-inferiority verdict at `margin` points
    against the first baseline and against its own reference, costs, times on every clock and
    speed-ups on `clock`, answers changed against its reference and against the first
    baseline."""
    if clock not in CLOCKS:
        raise SeerError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    out = {}
    n = len(rows)
    m = margin / 100
    first = reference_of(configs)
    scores = {
        c.name: [score_of(r["results"][c.name], ex) for r, ex in zip(rows, examples, strict=True)]
        for c in configs
    }
    for cfg in configs:
        res = [r["results"][cfg.name] for r in rows]
        ref = [r["results"][cfg.ref] for r in rows]
        base = [r["results"][first] for r in rows] if first in scores else ref
        ok, ref_ok = scores[cfg.name], scores[cfg.ref]
        base_ok = scores.get(first, ref_ok)
        per = {
            c: [stats.median(b1_repeats(x, r, c)) for x, r in zip(res, rows, strict=True)]
            for c in CLOCKS
        }
        loop_s = sum(x["seconds"] for x in res) / n
        pairs = list(zip(res, ref, strict=True))
        ni, lo = stats.noninferior(ok, base_ok, m)
        ni_ref, lo_ref = stats.noninferior(ok, ref_ok, m)
        rec = {
            "method": cfg.method,
            "family": cfg.family,
            "budget": cfg.budget,
            "block": cfg.block,
            "cache": cfg.params.get("cache", "none"),
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.params.items()},
            "seer": cfg.seer,
            "accuracy": sum(ok) / n,
            "ci95": list(stats.bootstrap(ok)),
            "changed": sum(x["ids_hash"] != y["ids_hash"] for x, y in pairs),
            "changed_vs_baseline": sum(
                x["ids_hash"] != y["ids_hash"] for x, y in zip(res, base, strict=True)
            ),
            "shorter_than_ref": sum(x["tokens"] < y["tokens"] for x, y in pairs),
            "window_cuts": sum(x["window"] < g and x["tokens"] >= x["window"] for x in res),
            "mean_window": sum(x["window"] for x in res) / n,
            "prompt_tokens": sum(x.get("prompt_tokens", 0) for x in res) / n,
            "nfe": sum(x["nfe"] for x in res) / n,
            "loop_ms": 1000 * loop_s,  # the loop's wall time (as before the clocks)
            "e2e_ms": 1000 * (loop_s + sum(r["prompt_seconds"] for r in rows) / n),
            "b1": {c: 1000 * sum(v) / n for c, v in per.items()},
            "b1_clock": clock,
            "b1_ms": 1000 * sum(per[clock]) / n,
            "b1_request_ms": [1000 * t for t in per[clock]],
            "repeats": min(len(_seconds(x)) for x in res),
            "ref": cfg.ref,
            "accuracy_minus_ref": (sum(ok) - sum(ref_ok)) / n,
            "ci95_minus_ref": list(stats.bootstrap(ok, ys=ref_ok)),
            "p_vs_ref": stats.paired_test(ok, ref_ok),
            "ci95_minus_baseline": list(stats.bootstrap(ok, ys=base_ok)),
            "margin": margin,
            "noninferior": ni,  # vs the first baseline, at the margin
            "ni_lower": lo,  # one-sided 95 % lower bound of the difference to it
            "noninferior_vs_ref": ni_ref,
            "ni_lower_vs_ref": lo_ref,
            "later_pass": sum("scale" in x for x in res),
            "correct": ok,
        }
        rec["b1_speedup_vs_ref_ci95"] = list(
            _speedup_ci(
                [b1_repeats(y, r, clock) for y, r in zip(ref, rows, strict=True)],
                [b1_repeats(x, r, clock) for x, r in zip(res, rows, strict=True)],
            )
        )
        if cfg.seer:  # detection (and the cut) as a share of this config's loop time
            det = [x.get("detect", 0.0) for x in res]
            rec["detect_ms"] = 1000 * sum(det) / n
            rec["detect_share"] = sum(det) / (loop_s * n) if loop_s > 0 else 0.0
            rec["full_window"] = sum(x["window"] >= g for x in res)  # no boundary, or at the end
        if cfg.name in eng:
            _b32(rec, eng[cfg.name], eng.get(cfg.ref), clock)
            ref_e = eng.get(first)
            if ref_e is not None:
                rec["b32_noninferior"], rec["b32_ni_lower"] = stats.noninferior(
                    eng[cfg.name]["correct"], ref_e["correct"], m
                )
        out[cfg.name] = rec
    base = out.get(first)
    for rec in out.values():
        if base is not None:
            rec["b1_speedup_vs_k1"] = base["b1_ms"] / rec["b1_ms"]
        against = out[rec["ref"]]
        rec["b1_speedup_vs_ref"] = against["b1_ms"] / rec["b1_ms"]
        if _both_b32(rec, against):
            rec["b32_speedup_vs_ref"] = against["b32_ms"] / rec["b32_ms"]
    # equal NFE: the full-window baseline whose mean NFE is nearest
    bases = [r for r in out.values() if r["method"] == "baseline"]
    for rec in out.values():
        near = min(bases, key=lambda b: (abs(math.log(b["nfe"] / rec["nfe"])), b["nfe"]))
        rec["equal_nfe_baseline"] = f"baseline@{near['budget']}"
        rec["accuracy_minus_equal_nfe_baseline"] = rec["accuracy"] - near["accuracy"]
        rec["ci95_minus_equal_nfe_baseline"] = list(
            stats.bootstrap(rec["correct"], ys=near["correct"])
        )
        rec["b1_speedup_vs_equal_nfe_baseline"] = near["b1_ms"] / rec["b1_ms"]
    _seer_adds(out, rows, scores, clock)
    return out


def _without_seer(name: str) -> str:
    """seer+dual/b8@k=1 -> dual/b8@k=1; seer@k=4 and seer-eos@k=4 -> baseline@k=4;
    seer-eos+threshold@t=0.9 -> threshold@t=0.9."""
    method, budget = name.split("@", 1)
    head, _, rest = method.partition("+")
    return f"{rest or 'baseline'}@{budget}" if head.startswith("seer") else name


def _seer_adds(out: dict, rows, scores: dict, clock: str) -> None:
    """What Seer adds to each method a user would run anyway: for every Seer config, the same
    config without Seer, the paired batch-1 speed-up on `clock` (requests and repeats) and
    accuracy difference, the answers changed, and the batch-32 speed-up."""
    for name, rec in out.items():
        if not rec["seer"]:
            continue
        other = _without_seer(name)
        if other not in out:
            continue
        mine = [b1_repeats(r["results"][name], r, clock) for r in rows]
        theirs = [b1_repeats(r["results"][other], r, clock) for r in rows]
        adds = {
            "config": other,
            "b1_speedup": out[other]["b1_ms"] / rec["b1_ms"],
            "b1_speedup_ci95": list(_speedup_ci(theirs, mine)),
            "accuracy_difference": rec["accuracy"] - out[other]["accuracy"],
            "ci95": list(stats.bootstrap(scores[name], ys=scores[other])),
            "p": stats.paired_test(scores[name], scores[other]),
            "changed": sum(
                r["results"][name]["ids_hash"] != r["results"][other]["ids_hash"] for r in rows
            ),
        }
        if _both_b32(rec, out[other]):
            adds["b32_speedup"] = out[other]["b32_ms"] / rec["b32_ms"]
        rec["seer_adds"] = adds


def select_fastest(
    scores: dict,
    times: dict,
    reference: str,
    margin: float,
    reps: int = SELECT_REPS,
    seed: int = 0,
    per_request: bool = True,
    rule: str = "holm",
) -> dict:
    """How often each config is the fastest that passes the margin when the requests are
    redrawn (with replacement) and the selection is done again in each redraw (`rule`
    "holm": Holm's step-down over the candidates in each redraw, as `verdicts`; "unadjusted":
    each config at 5 % on its own).

    `scores`: name -> a score per request (the same requests for every name, `reference`
    among them); `times`: name -> seconds per request (`per_request`), or per timing round
    (batch 32: one whole-batch time per round; a redraw then draws one round for every
    config alike). In each redraw a config passes when the one-sided 95 % lower bound of its
    paired difference to the reference (normal approximation over the redrawn requests: the
    nested bootstrap would cost a thousand times more) is >= -margin points; the fastest that
    passes wins (the reference always passes). Returns {name: share of redraws}, largest first."""
    names = list(scores)
    if reference not in names:
        raise SeerError(f"select_fastest: no reference {reference!r} among the scores")
    s = np.asarray([scores[k] for k in names], dtype=float)  # (C, n)
    d = s - s[names.index(reference)]
    t = np.asarray([times[k] for k in names], dtype=float)  # (C, n) or (C, R)
    n = d.shape[1]
    rng = np.random.default_rng(seed)
    wins = np.zeros(len(names))
    for start in range(0, reps, 100):  # chunks: (C, 100, n) at a time
        k = min(100, reps - start)
        idx = rng.integers(0, n, (k, n))
        dd = d[:, idx]
        sd = dd.std(axis=2, ddof=1) if n > 1 else np.zeros(dd.shape[:2])
        mean = dd.mean(axis=2)
        lb = mean - 1.6449 * sd / math.sqrt(n)
        ok = lb >= -margin / 100 - 1e-12
        if rule == "holm":
            ok = _holm_redraws(mean, sd / math.sqrt(n), margin / 100, names.index(reference))
        tt = t[:, idx].sum(axis=2) if per_request else t[:, rng.integers(0, t.shape[1], k)]
        best = np.where(ok, tt, np.inf).argmin(axis=0)
        wins += np.bincount(best, minlength=len(names))
    share = {names[i]: float(w / reps) for i, w in enumerate(wins) if w}
    return dict(sorted(share.items(), key=lambda kv: -kv[1]))


def _holm_redraws(mean: np.ndarray, se: np.ndarray, margin: float, ref: int) -> np.ndarray:
    """(C, k) passes of Holm's step-down per redraw (column), the one-sided p-value of each
    config's non-inferiority from the normal approximation; the reference always passes."""
    import torch

    with np.errstate(divide="ignore", invalid="ignore"):
        z = (mean + margin) / se
    z = np.where(se > 0, z, np.where(mean >= -margin - 1e-12, np.inf, -np.inf))
    p = torch.special.ndtr(torch.from_numpy(-z)).numpy()
    p[ref] = -1.0  # sorted first, never counted among the m tests
    m = p.shape[0] - 1
    order = np.argsort(p, axis=0, kind="stable")
    ps = np.take_along_axis(p, order, axis=0)
    thr = np.concatenate([[np.inf], ALPHA / (m - np.arange(m))])[:, None]
    ok_sorted = np.cumprod(ps <= thr, axis=0).astype(bool)
    ok = np.empty_like(ok_sorted)
    np.put_along_axis(ok, order, ok_sorted, axis=0)
    return ok


def verdicts(
    scores: dict, reference: str, margin: float, seeds: int = SEEDS, alpha: float = ALPHA
) -> dict:
    """The selection's verdict per candidate (every name of `scores` but `reference`; scores
    per request, the same requests for all): `p` (one-sided non-inferiority p-value at
    `margin` points, seed 0: `stats.noninferior_p`), `unadjusted` (p <= alpha at seed 0: the
    lower-bound rule), `seed_share` / `holm_share` (the share of `seeds` bootstrap seeds under
    which it passes alone / under Holm's step-down over all candidates) and `verdict`: "pass"
    (Holm at every seed), "borderline" (either share strictly between 0 and 1) or "fail"."""
    import torch

    names = [k for k in scores if k != reference]
    if not names:
        return {}
    ref = np.asarray(scores[reference], dtype=float)
    d = torch.tensor(np.asarray([scores[k] for k in names], dtype=float) - ref)
    alone, adjusted, p0 = np.zeros(len(names)), np.zeros(len(names)), []
    for seed in range(seeds):
        p = stats.noninferior_p(d, margin / 100, seed)
        p0 = p0 or p
        alone += np.asarray(p) <= alpha
        adjusted += np.asarray(stats.holm(p, alpha))
    out = {}
    for i, k in enumerate(names):
        a, h = alone[i] / seeds, adjusted[i] / seeds
        verdict = "pass" if h == 1 else ("borderline" if 0 < a < 1 or 0 < h < 1 else "fail")
        out[k] = {
            "p": p0[i],
            "unadjusted": p0[i] <= alpha,
            "seed_share": a,
            "holm_share": h,
            "verdict": verdict,
        }
    return out


def one_clock_b32(r: dict) -> bool:
    """Whether a config's batch-32 time is on the first pass's clock: not when a second process
    timed it (`b32_other_process`; `b32_part_scale` in records written when such times were
    scaled) or a later pass did (`b32_later_pass`). Its batch-32 time is then shown as measured
    ("‡"), with no speed-up over the first pass's configs, and is never a headline."""
    return not (r.get("b32_later_pass") or r.get("b32_other_process") or "b32_part_scale" in r)


def _b32_ratio(res: dict, r: dict) -> bool:
    """A config's batch-32 speed-up over its reference is on one clock (records written when
    other processes' times were scaled keep a ratio the report no longer shows)."""
    return "b32_speedup_vs_ref" in r and r["ref"] in res and _both_b32(r, res[r["ref"]])


def _plotted(r: dict, clock: str) -> bool:
    """A config on the plot's panel of `clock`: batch 32 only on the first pass's clock."""
    return clock in r and (clock != "b32_ms" or one_clock_b32(r))


def _both_b32(a: dict, b: dict) -> bool:
    """Both configs timed at batch 32 on one clock: a batch-32 ratio of the two is given."""
    return "b32_ms" in a and "b32_ms" in b and one_clock_b32(a) and one_clock_b32(b)


def b32_measured_ms(r: dict) -> float:
    """A config's batch-32 ms per request as its process measured it (records written when a
    second process's times were scaled keep the ratio, `b32_part_scale`: divided back out)."""
    ratio = (r.get("b32_part_scale") or {}).get(B32_KEYS.get(r.get("b32_clock", ""), ""), 1.0)
    return r["b32_ms"] / ratio


def headline(
    results: dict,
    reference: str,
    margin: float | None = None,
    reps: int = SELECT_REPS,
    untimed: frozenset[str] = frozenset(),
) -> dict:
    """The user's question: among the configs not worse than the `reference` (the first
    baseline, one token per step by default) by more than the margin (`noninferior`), which is
    fastest at batch 1 and at batch 32 on the run's clock, how often it is the fastest when the
    requests are redrawn (`select_fastest`), and what Seer adds to the fastest config with
    Seer. The oracles (they know each answer's end) are bounds, not methods: never chosen.
    `untimed`: configs whose batch-1 times are not on the reference's clock (an older record's
    later pass carried through another config, `carried_anchor`): in Holm's family (their
    scores are exact) but never chosen at batch 1."""
    ref = results.get(reference)
    if ref is None:
        return {}
    margin = ref.get("margin", MARGIN) if margin is None else margin
    runnable = {k: r for k, r in results.items() if not r["method"].startswith("oracle")}
    ok = {k: r for k, r in runnable.items() if r.get("noninferior")}
    out: dict = {
        "reference": reference,
        "margin": margin,
        "equal_accuracy": sorted(ok),
        "clock": ref.get("b1_clock", DEFAULT_CLOCK),
    }
    out["selection"] = SELECTION
    for key in ("b1", "b32"):
        clock, flag = f"{key}_ms", ("noninferior" if key == "b1" else "b32_noninferior")
        correct = "correct" if key == "b1" else "b32_correct"
        # the candidates: Holm's family; `have`: those whose times may win (on the run's clock)
        cands = {
            k: r for k, r in runnable.items() if clock in r and (key == "b1" or one_clock_b32(r))
        }
        have = {k: r for k, r in cands.items() if key == "b32" or k not in untimed}
        if clock not in ref or not all(correct in r for r in cands.values()):
            continue
        v = verdicts({k: r[correct] for k, r in cands.items()}, reference, margin)
        unadjusted = [k for k, r in have.items() if r.get(flag) or k == reference]
        passed = [k for k in have if k == reference or v[k]["verdict"] == "pass"]
        best = min(passed, key=lambda k: have[k][clock])
        x = {
            "fastest": best,
            "ms": have[best][clock],
            "speedup_vs_reference": ref[clock] / have[best][clock],
            "rule": "holm",
            "passed": sorted(passed),
            "borderline": {
                k: {f: v[k][f] for f in ("seed_share", "holm_share")}
                for k in sorted(have, key=lambda k: have[k][clock])
                if k in v and v[k]["verdict"] == "borderline" and have[k][clock] < have[best][clock]
            },
            "fastest_unadjusted": min(unadjusted, key=lambda k: have[k][clock]),
        }
        timed = {k: have[k] for k in passed}
        if key == "b1" and all("b1_request_ms" in r for r in cands.values()):
            never = [math.inf] * len(ref["b1_request_ms"])  # an untimed config never wins
            x["shares"] = select_fastest(
                {k: r["correct"] for k, r in cands.items()},
                {k: r["b1_request_ms"] if k in have else never for k, r in cands.items()},
                reference,
                margin,
                reps,
            )
        elif key == "b32" and all("b32_round_ms" in r for r in have.values()):
            rounds = min(len(r["b32_round_ms"]) for r in have.values())
            x["shares"] = select_fastest(
                {k: r["b32_correct"] for k, r in have.items()},
                {k: r["b32_round_ms"][:rounds] for k, r in have.items()},
                reference,
                margin,
                reps,
                per_request=False,
            )
        if "shares" in x:
            x["share"] = x["shares"].get(best, 0.0)
            x["clear"] = x["share"] >= CLEAR
            x["shares"] = dict(list(x["shares"].items())[:5])
        seer = {k: r for k, r in timed.items() if r["seer"]}
        if seer:
            best_seer = min(seer, key=lambda k: seer[k][clock])
            x["fastest_with_seer"] = best_seer
            x["seer_adds"] = seer[best_seer].get("seer_adds")
        out[key] = x
    return out


def _speedup_ci(ref: list[list[float]], res: list[list[float]]) -> tuple[float, float]:
    """Paired interval of sum(ref) / sum(res) over requests and repeats (rows whose repeat
    counts differ, as after a resume with other --repeats, fall back to their medians)."""
    if len({len(x) for x in ref + res}) == 1:
        return stats.bootstrap_ratio(ref, res)
    med = lambda xs: [stats.median(x) for x in xs]  # noqa: E731
    return stats.bootstrap_ratio(med(ref), med(res))


def detection(results: dict) -> dict:
    """Seer's detection overhead per Seer config: its share of the loop's time, and ms."""
    return {
        k: {"share": r["detect_share"], "detect_ms": r["detect_ms"], "loop_ms": r["loop_ms"]}
        for k, r in results.items()
        if "detect_share" in r
    }


def mark_frontier(out: dict) -> None:
    b1 = stats.pareto([(r["b1_ms"], r["accuracy"], k) for k, r in out.items()])
    b32 = stats.pareto(  # the batch-32 accuracy: the same requests as its time; one clock
        [(r["b32_ms"], r["b32_accuracy"], k) for k, r in out.items() if _b32_here(r)]
    )
    for k, r in out.items():
        r["pareto_b1"] = k in b1
        r["pareto_b32"] = k in b32 if _b32_here(r) else None


def _b32_here(r: dict) -> bool:
    return "b32_ms" in r and one_clock_b32(r)


def normalise(record: dict) -> dict:
    """A record of any format as the current one: a record from before the clocks and the
    margin gets its batch-1 loop wall time as `b1_ms`, its speed-ups renamed, and the clock
    label `OLD` (its verdicts were the interval-reaches-0 rule: no margin)."""
    if record.get("clock"):
        return record
    rec = dict(record, clock="old", results={})
    for k, r in record["results"].items():
        r = dict(r)
        r.setdefault("b1_ms", r["loop_ms"])
        r.setdefault("family", r["method"])
        r.setdefault("cache", (r.get("params") or {}).get("cache", "none"))
        r.setdefault("block", (r.get("params") or {}).get("block_length"))
        for old, new in (
            ("loop_speedup_vs_ref", "b1_speedup_vs_ref"),
            ("loop_speedup_vs_ref_ci95", "b1_speedup_vs_ref_ci95"),
        ):
            if old in r:
                r.setdefault(new, r[old])
        r["seer_adds"] = _old_adds(r.get("seer_adds"))
        rec["results"][k] = r
    h = dict(record.get("headline") or {})
    for key in ("b1", "b32"):
        if key in h:
            h[key] = dict(h[key], seer_adds=_old_adds(h[key].get("seer_adds")))
    rec["headline"] = h
    return rec


def carried_anchor(record: dict) -> str | None:
    """The config(s) a record's later pass was timed beside when that was not the reference
    baseline (`--anchors threshold@t=0.9` in an older record): its later-pass configs' batch-1
    times reached the baseline only through that config's ratio, so the report gives them no
    batch-1 speed-up. None for a record without a later pass or timed beside the baseline."""
    named = [a for a in str((record.get("settings") or {}).get("anchors") or "").split(",") if a]
    ref = (record.get("headline") or {}).get("reference")
    other = [a for a in named if a != ref]
    later = any(r.get("later_pass") for r in record["results"].values())
    return ", ".join(other) if other and later else None


def carried_later(record: dict) -> frozenset[str]:
    """The later-pass configs of a record whose later pass was carried through another config
    (`carried_anchor`): their batch-1 times are on no clock the reference shares."""
    if not carried_anchor(record):
        return frozenset()
    return frozenset(k for k, r in record["results"].items() if r.get("later_pass"))


def b1_front(record: dict) -> set[str]:
    """The configs on the batch-1 accuracy-vs-time Pareto front (`mark_frontier`'s flags), the
    front taken again without the carried configs (`carried_later`) where a record has them."""
    res, carried = record["results"], carried_later(record)
    if not carried:
        return {k for k, r in res.items() if r.get("pareto_b1")}
    return stats.pareto(
        [(r["b1_ms"], r["accuracy"], k) for k, r in res.items() if k not in carried]
    )


def _b1x(name: str, text: str, untimed: frozenset[str]) -> str:
    """A batch-1 cell, or "—" for a config whose batch-1 time is on no clock the reference
    shares (`carried_later`)."""
    return "—" if name in untimed else text


def _old_adds(a: dict | None) -> dict | None:
    if a and "loop_speedup" in a:
        return dict(a, b1_speedup=a["loop_speedup"], b1_speedup_ci95=a["loop_speedup_ci95"])
    return a


def clock_label(record: dict, key: str = "b1") -> str:
    """The clock a record's tables show, in words."""
    clock = record.get("clock") or "old"
    if clock == "old":
        return "loop, wall time (old format)" if key == "b1" else "end to end, CPU time (old)"
    return CLOCKS[clock]


# -- output --------------------------------------------------------------------------------------


def show(record: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    record = normalise(record)
    c = Console(width=200)
    t = Table(
        title=f"{record['model']}: {record['n']} unique held-out requests, gen_length "
        f"{record['gen_length']}, greedy; times per request ({clock_label(record)} at batch 1, "
        f"{clock_label(record, 'b32')} at batch 32), median of {record['repeats']} "
        "(shared CPU: noisy, compare ratios)"
    )
    cols = (
        "config",
        "acc",
        "95% CI",
        "NI",
        "changed",
        "shorter",
        "cuts",
        "window",
        "NFE",
        "b1 ms",
        "x ref",
        "model x",
        "b32 ms",
        "b32 x ref",
        "eq-NFE base",
        "d acc",
        "front",
    )
    for col in cols:
        t.add_column(col, justify="right")
    for name, r in record["results"].items():
        lo, hi = r["ci95"]
        front = ("1" if r["pareto_b1"] else "") + ("/32" if r.get("pareto_b32") else "")
        ni = "-" if "noninferior" not in r else ("yes" if r["noninferior"] else "no")
        t.add_row(
            name,
            f"{r['accuracy']:.1%}",
            f"{lo:.0%}-{hi:.0%}",
            ni,
            str(r["changed"]),
            str(r["shorter_than_ref"]),
            str(r["window_cuts"]),
            f"{r['mean_window']:.1f}",
            f"{r['nfe']:.1f}",
            f"{r['b1_ms']:.0f}",
            f"{r['b1_speedup_vs_ref']:.2f}x",
            _model(r, "b1"),
            f"{b32_measured_ms(r):.1f}" if "b32_ms" in r else "-",
            f"{r['b32_speedup_vs_ref']:.2f}x" if _b32_ratio(record["results"], r) else "-",
            r["equal_nfe_baseline"].split("@")[1],
            f"{100 * r['accuracy_minus_equal_nfe_baseline']:+.1f}",
            front,
        )
    c.print(t)
    c.print(
        "NI: not worse than the first baseline by more than the margin (one-sided 95 % lower "
        "bound of the paired difference). x ref: speed-up over the reference (the baseline "
        "with the same k; k=1 for the threshold methods); model x: the cost model's "
        "fit of it on this run's own times (in-sample, not a prediction; its residual). "
        "changed / shorter: answers that differ from / have fewer tokens than the reference's. "
        "cuts: answers cut by their window. eq-NFE base / d acc: the full-window baseline of "
        "nearest mean NFE and the accuracy difference to it (points). front: on the "
        "accuracy-vs-time Pareto front at batch 1 / batch 32."
    )
    for line in headline_lines(record):
        c.print(line)


def _model(r: dict, key: str) -> str:
    """The cost model's speed-up over the reference fitted on the run's own times (in-sample),
    with its residual."""
    x = r.get(f"model_{key}_speedup_vs_ref")
    if x is None:
        return "-"
    return f"{x:.2f}x ({100 * r[f'model_{key}_error']:+.0f} %)"


def best_settings(res: dict, grid_k: str | None = None) -> dict:
    """Each method family's row: its fastest setting (block size) that passes the margin
    against its reference (`grid_k`: among the configs at that budget) or, at no budget,
    against the first baseline; else its most accurate setting, flagged. {family: (name,
    passed)}."""
    fams: dict[str, list[str]] = {}
    for k, r in res.items():
        if grid_k is None or r["budget"] == grid_k:
            fams.setdefault(r.get("family", r["method"]), []).append(k)
    key = "noninferior_vs_ref" if grid_k else "noninferior"
    out = {}
    for fam, names in fams.items():
        ok = [k for k in names if res[k].get(key)]
        if ok:
            out[fam] = (min(ok, key=lambda k: res[k]["b1_ms"]), True)
        else:
            out[fam] = (max(names, key=lambda k: (res[k]["accuracy"], -res[k]["b1_ms"])), False)
    return out


FLOOR = 0.30  # a baseline below this accuracy is "near the floor"


def baseline_words(accuracy: float, margin: float | None) -> str:
    """The baseline's accuracy in words beside a speed-up: "51.7 %; the 3-point margin is a 6 %
    relative loss", "near the floor" below `FLOOR` (a margin of points is a larger relative loss
    there: 3 points at 12 % is 25 %)."""
    out = f"{100 * accuracy:.1f} %" + (" — near the floor" if accuracy < FLOOR else "")
    if margin is not None and accuracy > 0:
        out += f"; the {margin:g}-point margin is a {margin / accuracy:.0f} % relative loss"
    return out


PRIMARY = ("seer+threshold@t=0.9", "threshold@t=0.9")  # Seer + the strongest alternative
# (Fast-dLLM's parallel decoding at its official threshold) against that alternative alone


def primary_of(names) -> tuple[str, str] | None:
    """The default primary comparison among config `names`: `PRIMARY` where the run has both,
    else Seer alone against the baseline at the first budget (None: no Seer config)."""
    names = list(names)
    if all(n in names for n in PRIMARY):
        return PRIMARY
    seer = next((n for n in names if n.startswith("seer@")), None)
    return (seer, f"baseline@{seer.split('@', 1)[1]}") if seer else None


def preregistration(record: dict) -> tuple[str, bool]:
    """(how the record's margin, primary comparison and selection rule were fixed, in words;
    post hoc?). A record holds `preregistered` when bench_compare wrote the plan into its raw
    file before the first request; a record without it predates that (its margin was given on
    the command line, which no file kept); a margin other than the plan's, or a plan written
    after requests had run, makes the tables post hoc."""
    plan = record.get("preregistered")
    margin = (record.get("headline") or {}).get("margin", record.get("margin"))
    if not plan:
        return (
            "margin not pre-registered in this record (given on the command line; the "
            "record predates pre-registration)",
            False,
        )
    if plan.get("requests_done"):
        return (
            f"post hoc: the plan was written after {plan['requests_done']} requests had run",
            True,
        )
    if margin is not None and abs(float(plan["margin"]) - float(margin)) > 1e-9:
        return (
            f"post hoc: margin {margin:g} points, not the pre-registered {plan['margin']:g}",
            True,
        )
    return (
        "pre-registered: the margin, the primary comparison and the selection rule were "
        f"written into the raw file before the first request ({plan.get('written', '?')})",
        False,
    )


def primary_result(results: dict, pair: tuple[str, str] | None, reference: str) -> dict | None:
    """The primary comparison's figures: treatment against control (paired speed-up at batch 1
    and 32, accuracy difference) and the treatment's verdict against the `reference`."""
    if not pair or pair[0] not in results or pair[1] not in results:
        return None
    t, c = results[pair[0]], results[pair[1]]
    a = t.get("seer_adds") if (t.get("seer_adds") or {}).get("config") == pair[1] else None
    out = {
        "treatment": pair[0],
        "control": pair[1],
        "b1_speedup": c["b1_ms"] / t["b1_ms"],
        "accuracy_difference": t["accuracy"] - c["accuracy"],
        "noninferior_vs_reference": t.get("noninferior"),
        "ni_lower": t.get("ni_lower"),
        "reference": reference,
    }
    if a:
        out.update(b1_speedup_ci95=a["b1_speedup_ci95"], ci95=a["ci95"])
    if _both_b32(t, c):
        out["b32_speedup"] = c["b32_ms"] / t["b32_ms"]
    return out


def _primary_lines(record: dict) -> list[str]:
    res = record["results"]
    plan = record.get("preregistered") or {}
    ref = (record.get("headline") or {}).get("reference", "the first baseline")
    pair = tuple(plan["primary"]) if plan.get("primary") else primary_of(res)
    p = record.get("primary") or primary_result(res, pair, ref)  # type: ignore[arg-type]
    if not p:
        return []
    how = (
        "named after the run: not pre-registered in this record"
        if not plan
        else f"named after {plan['requests_done']} requests had run: post hoc"
        if plan.get("requests_done")
        else "pre-registered"
    )
    line = (
        f"Primary comparison ({how}): {p['treatment']} against {p['control']}, "
        f"{p['b1_speedup']:.2f}×"
    )
    if p.get("b1_speedup_ci95"):
        line += " [{:.2f}, {:.2f}]".format(*p["b1_speedup_ci95"])
    line += f" at batch 1, accuracy {100 * p['accuracy_difference']:+.1f} points"
    if p.get("ci95"):
        line += " [{:+.1f}, {:+.1f}]".format(*(100 * v for v in p["ci95"]))
    if "b32_speedup" in p:
        line += f"; {p['b32_speedup']:.2f}× at batch 32"
    if p.get("ni_lower") is not None:
        ok = "within" if p["noninferior_vs_reference"] else "not within"
        line += (
            f"; {p['treatment']} is {ok} the margin of {p['reference']} (lower bound "
            f"{100 * p['ni_lower']:+.1f})"
        )
    return ["", line + "."]


def markdown(record: dict) -> str:
    """The README's tables from the record: the grid (method x tokens per step, each method at
    its best block size), every method at its best setting, every config, what Seer adds, the
    headline, the cost model and detection's share."""
    record = normalise(record)
    res, g = record["results"], record["gen_length"]
    old = record["clock"] == "old"
    margin = (record.get("headline") or {}).get("margin")
    ks = sorted({int(r["budget"][2:]) for r in res.values() if r["budget"].startswith("k=")})
    grid = [
        k
        for k in ks
        if any(r["method"] != "baseline" and r["budget"] == f"k={k}" for r in res.values())
    ]
    fams = list(
        dict.fromkeys(
            r.get("family", r["method"])
            for r in res.values()
            if r["budget"] in {f"k={k}" for k in grid}
        )
    )
    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
    b32_run = any("b32_ms" in r for r in res.values())
    clock = f"{clock_label(record)} at batch 1" + (
        f", {clock_label(record, 'b32')} at batch 32" if b32_run else ""
    )
    rule = "none (old format: the paired interval reaching 0)"
    how, post_hoc = preregistration(record)
    if not old:
        rule = (
            f"margin {margin:g} points (one-sided 95 % lower bound of the paired "
            f"difference, bootstrap over requests); {how}"
        )
    out = (
        [
            "**Post hoc** (" + how + "): every verdict below uses a margin not fixed before "
            "the run.",
            "",
        ]
        if post_hoc
        else []
    )
    out += [
        f"{record['model']}, n = {record['n']} "
        + (
            f"(batch 32: {_b32n(res)} requests, {_b32sample(res)}{_b32order(res)})"
            if b32_run
            else "(batch 1 only: no batch-32 pass)"
        )
        + f"; clock: {clock}; non-inferiority: {rule}.",
        "",
        f"Baseline ({g // ks[0]} steps) accuracy: "
        f"{baseline_words(res[f'baseline@k={ks[0]}']['accuracy'], None if old else margin)}.",
        "",
        "Cell: accuracy % · mean NFE · speed-up over the baseline with the same k at batch 1 / "
        "at batch 32; a block method at its fastest block size within the margin of that "
        "baseline (/bN), † where no block size is (then its most accurate).",
        "",
        "| method | " + " | ".join(f"k={k} ({g // k} steps)" for k in grid) + " |",
        "|---" * (len(grid) + 1) + "|",
    ]
    best = {k: best_settings(res, f"k={k}") for k in grid}
    for fam in fams:
        cells = []
        for k in grid:
            pick = best[k].get(fam)
            if pick is None:
                cells.append("")
                continue
            r = res[pick[0]]
            b32 = f"{r['b32_speedup_vs_ref']:.1f}×" if _b32_ratio(res, r) else "—"
            tag = (f" /b{r['block']}" if r.get("block") else "") + ("" if pick[1] or old else " †")
            cells.append(
                f"{pct(r['accuracy'])} · {r['nfe']:.1f} · "
                f"{r['b1_speedup_vs_ref']:.1f}× / {b32}{tag}"
            )
        out.append(f"| {fam} | " + " | ".join(cells) + " |")
    if any("b32_ms" in r and not one_clock_b32(r) for r in res.values()):
        out += [
            "",
            "— at batch 32 beside a config's batch-1 figure: where it was timed by a second "
            "process or in a later pass, no ratio to the first pass's configs is given (two "
            "processes' clocks differ; ‡ in the table of every config).",
        ]
    base = res[f"baseline@k={ks[0]}"]
    out += _primary_lines(record) if not old else []
    out += _best_table(record, base) if not old else []
    out += _sweep_table(res, margin)
    out += [
        "",
        f"Every config against the {g // ks[0]}-step baseline (accuracy {pct(base['accuracy'])} %"
        f"), sorted by batch-1 time ({clock}). NI: passes the margin against the "
        f"{g // ks[0]}-step baseline (lower bound, points). Δ acc: paired bootstrap 95 % "
        "interval (points); changed / shorter / cuts: answers that differ from / are shorter "
        "than the reference's, answers cut by their window; p: paired sign-flip test against "
        "the reference; model ×: the cost model's speed-up over the reference fitted on this "
        "run's own times (in-sample, not a prediction; its residual); b32 acc: the batch-32 "
        "accuracy over its own requests; front: on the accuracy-vs-time Pareto front (point "
        "estimates) at batch 1 / batch 32.",
        "",
        "| config | accuracy % [95 % CI] | NI [lower] | Δ acc vs ref [CI] | p | Δ acc vs "
        f"equal-NFE baseline [CI] | changed | shorter | cuts | NFE | b1 ms | × ref [CI] | "
        f"model × | vs {g // ks[0]} steps | b32 acc % | b32 ms | b32 × ref | model × | vs "
        f"{g // ks[0]} steps | front |",
        "|---" * 20 + "|",
    ]
    carried, untimed, front_b1 = carried_anchor(record), carried_later(record), b1_front(record)
    for name, r in sorted(res.items(), key=lambda kv: -kv[1]["b1_ms"]):
        lo, hi = r["ci95"]
        dlo, dhi = r["ci95_minus_ref"]
        elo, ehi = r["ci95_minus_equal_nfe_baseline"]
        slo, shi = r["b1_speedup_vs_ref_ci95"]
        ref = r["ref"].split("@")[1]
        eq = r["equal_nfe_baseline"].split("@")[1]
        ni = (
            "—"
            if "noninferior" not in r
            else (f"{'yes' if r['noninferior'] else 'no'} [{100 * r['ni_lower']:+.1f}]")
        )
        b32 = f"{b32_measured_ms(r):.0f}" if "b32_ms" in r else "—"
        b32a = pct(r["b32_accuracy"]) if "b32_accuracy" in r else "—"
        b32r = f"{r['b32_speedup_vs_ref']:.2f}×" if _b32_ratio(res, r) else "—"
        b32x = f"{base['b32_ms'] / r['b32_ms']:.1f}×" if _both_b32(r, base) else "—"
        if "b32_ms" in r and not one_clock_b32(r):
            b32 += "‡"  # as measured by another process: no ratio
        front = ("b1" if name in front_b1 else "") + (" b32" if r.get("pareto_b32") else "")
        b1ms = _b1x(name, f"{r['b1_ms']:.0f}", untimed)
        b1r = _b1x(name, f"{r['b1_speedup_vs_ref']:.2f}× [{slo:.2f}, {shi:.2f}]", untimed)
        b1m = _b1x(name, _model(r, "b1"), untimed)
        b1x = _b1x(name, f"{base['b1_ms'] / r['b1_ms']:.1f}×", untimed)
        other = r.get("b32_other_process") or "b32_part_scale" in r
        later = ("¹" if r.get("later_pass") else "") + ("²" if other else "")
        out.append(
            f"| {name}{later} | {pct(r['accuracy'])} [{pct(lo)}, {pct(hi)}] | {ni} | "
            f"{100 * r['accuracy_minus_ref']:+.1f} [{100 * dlo:+.1f}, {100 * dhi:+.1f}] ({ref}) | "
            f"{r.get('p_vs_ref', float('nan')):.2g} | "
            f"{100 * r['accuracy_minus_equal_nfe_baseline']:+.1f} [{100 * elo:+.1f}, "
            f"{100 * ehi:+.1f}] ({eq}) | {r.get('changed', '—')} | {r['shorter_than_ref']} | "
            f"{r['window_cuts']} | {r['nfe']:.1f} | {b1ms} | {b1r} | {b1m} | {b1x} | "
            f"{b32a} | {b32} | {b32r} | {_model(r, 'b32')} | "
            f"{b32x} | {front.strip()} |"
        )
    if carried:
        out += [
            "",
            f"¹ added after the first pass: run in a later pass beside {carried}, not beside the "
            "reference baseline: its batch-1 times reach the baseline only through that "
            "config's first-pass / later-pass ratio, so neither its batch-1 time nor its "
            "speed-ups are given (—); its accuracy is exact.",
        ]
    elif any(r.get("later_pass") for r in res.values()):
        out += [
            "",
            "¹ added after the first pass: run in a later pass beside the reference baseline "
            "re-run, its batch-1 times scaled by one ratio per pass and clock: the baseline's "
            "first-pass / later-pass time on that clock, summed over the pass's requests (its "
            "speed-up over the baseline is its time over the baseline's in that pass, the prompt's "
            "encoding aside)"
            + (
                ". At batch 32 it was timed in a pass of its own: its time is as measured (‡), "
                "with no speed-up over the first pass's configs (the machine's load changes "
                "CPU time too, by ~10 % between passes)"
                if any(r.get("b32_later_pass") for r in res.values())
                else ""
            )
            + ".",
        ]
    if any(r.get("b32_other_process") or "b32_part_scale" in r for r in res.values()):
        out += [
            "",
            "² timed at batch 32 by a second process of the run, side by side with the first "
            "(the batch-32 pass split over the cores): its batch-32 time is as that process "
            "measured it (‡), with no speed-up over the first process's configs: two processes "
            "timed the same baselines up to 9 % apart, and no one ratio carries one's clock to "
            "the other's.",
        ]
    out += _adds_table(record)
    out += _cost_lines(record)
    det = record.get("detection") or {}
    if det:
        out += [
            "",
            "Seer's detection (the window policy at step 0: probe, detector, cut) as a share of "
            "each Seer config's denoising loop (wall time): "
            + "; ".join(
                f"{k} {100 * d['share']:.1f} % ({d['detect_ms']:.1f} ms)" for k, d in det.items()
            )
            + ".",
        ]
    return "\n".join(out) + "\n"


def _sweep_table(res: dict, margin: float | None) -> list[str]:
    """The block sweep: each block method (with and without Seer) at each budget, one column
    per block size; cell: accuracy % · speed-up over its reference at batch 1 · the lower bound
    of the paired difference to the first baseline (✓ within the margin)."""
    sizes = sorted({r["block"] for r in res.values() if r.get("block")})
    if len(sizes) < 2:
        return []
    rows: dict[tuple[str, str], dict[int, dict]] = {}
    for name, r in res.items():
        if r.get("block"):
            method = name.split("@")[0].replace(f"/b{r['block']}", "")
            rows.setdefault((method, r["budget"]), {})[r["block"]] = r
    out = [
        "",
        "The block sweep: each block method at every block size (cell: accuracy % · speed-up "
        "over its reference at batch 1 · one-sided lower bound of the paired difference to the "
        f"first baseline, points; ✓ within the {margin:g}-point margin):"
        if margin is not None
        else "The block sweep: each block method at every block size (cell: accuracy % · "
        "speed-up over its reference at batch 1):",
        "",
        "| method | budget | " + " | ".join(f"blocks of {b}" for b in sizes) + " |",
        "|---|---" + "|---" * len(sizes) + "|",
    ]
    for (method, budget), by in sorted(rows.items()):
        cells = []
        for b in sizes:
            r = by.get(b)
            if r is None:
                cells.append("")
                continue
            cell = f"{100 * r['accuracy']:.1f} · {r['b1_speedup_vs_ref']:.1f}×"
            if "ni_lower" in r:
                cell += f" · {100 * r['ni_lower']:+.1f}" + (" ✓" if r["noninferior"] else "")
            cells.append(cell)
        out.append(f"| {method} | {budget} | " + " | ".join(cells) + " |")
    return out


def _best_table(record: dict, base: dict) -> list[str]:
    """Every method family at its fastest setting within the margin of the first baseline."""
    res = record["results"]
    out = [
        "",
        "Each method at its fastest setting (budget, block size) within the margin of "
        f"{(record.get('headline') or {}).get('reference', 'the first baseline')}; † none "
        "is within it (its most accurate setting shown):",
        "",
        "| method | setting | accuracy % | NI lower | b1 × | b32 × |",
        "|---" * 6 + "|",
    ]
    for fam, (name, ok) in best_settings(res).items():
        r = res[name]
        b32 = f"{base['b32_ms'] / r['b32_ms']:.2f}×" if _both_b32(r, base) else "—"
        b1 = _b1x(name, f"{base['b1_ms'] / r['b1_ms']:.2f}×", carried_later(record))
        out.append(
            f"| {fam} | {name}{'' if ok else ' †'} | {100 * r['accuracy']:.1f} | "
            f"{100 * r['ni_lower']:+.1f} | {b1} | {b32} |"
        )
    return out


def _cost_lines(record: dict) -> list[str]:
    cm = record.get("cost_model")
    if not cm:
        return []
    out = [
        "",
        "Cost model (time = r + Σ over forwards (a + b·q + c·q·kv), least squares on this "
        "run's own times; `seerbench.costmodel`): ",
    ]
    res = record.get("results", {})
    for key, label in (("b1", "batch 1"), ("b32", "batch 32")):
        f = cm.get(key)
        if not f:
            continue
        out[-1] += f"{label}: {f['n']} observations, relative RMS error {100 * f['rel_rmse']:.0f} %"
        # what the tables use: each config's fitted (in-sample) speed-up over its reference
        errs = {
            n: r[f"model_{key}_error"]
            for n, r in res.items()
            if f"model_{key}_error" in r and r.get("ref", n) != n
        }
        if errs:
            worst = max(errs, key=lambda n: abs(errs[n]))
            rms = math.sqrt(sum(e * e for e in errs.values()) / len(errs))
            out[-1] += (
                f", its speed-ups over the reference {100 * rms:.0f} % RMS from the "
                f"measured over {len(errs)} configs (largest {worst} "
                f"{100 * errs[worst]:+.0f} %)"
            )
        out[-1] += "; "
    out[-1] = out[-1].rstrip("; ") + "."
    return out


def headline_lines(record: dict) -> list[str]:
    """The headline in words: the fastest config within the margin at each batch size, how
    often it is the fastest over redraws of the requests, and what Seer adds."""
    h = record.get("headline") or {}
    res = record.get("results") or {}
    out = []
    for key, label in (("b1", "batch 1"), ("b32", "batch 32")):
        if key not in h:
            continue
        x = h[key]
        if "margin" in h and x.get("rule") == "holm":
            rule = (
                f"within {h['margin']:g} points of {h['reference']} (one-sided 95 % bound, "
                "Holm-corrected over the candidates)"
            )
        elif "margin" in h:
            rule = f"within {h['margin']:g} points of {h['reference']} (one-sided 95 % bound)"
        else:
            rule = f"at the accuracy of {h['reference']} (old rule: paired interval reaching 0)"
        clock = clock_label(record, key)
        if x["fastest"] == h["reference"]:  # no other config passes the margin
            line = f"{rule}, no config but {h['reference']} itself passes at {label} ({clock})"
            if "share" in x:
                others = {k: v for k, v in x["shares"].items() if k != h["reference"]}
                rest = 100 * (1 - x["share"])
                line += f"; another config passes in {rest:.0f} % of request redraws"
                if others:  # the most frequent few: "…" where they are not all
                    more = sum(others.values()) < 1 - x["share"] - 0.005
                    line += f" ({_shares(others)}{', …' if more else ''})"
            out.append(line[0].upper() + line[1:] + _unselected(x) + ".")
            continue
        line = (
            f"{rule}, the fastest config at {label} ({clock}) is {x['fastest']} "
            f"({x['speedup_vs_reference']:.1f}× faster than {h['reference']})"
        )
        line = line[0].upper() + line[1:]
        if "share" in x:
            line += f"; it is the fastest in {100 * x['share']:.0f} % of request redraws"
            if not x["clear"]:
                line += f": no config is clearly the fastest ({_shares(x['shares'])})"
        if x.get("fastest_with_seer"):
            line += f"; the fastest with Seer is {x['fastest_with_seer']}"
            a = x.get("seer_adds")
            if a and key == "b1":
                line += f", {a['b1_speedup']:.2f}× over {a['config']} at batch 1"
            elif (
                a
                and "b32_speedup" in a
                and _both_b32(res.get(x["fastest_with_seer"], {}), res.get(a["config"], {}))
            ):
                line += f", {a['b32_speedup']:.2f}× over {a['config']} at batch 32"
        out.append(line + _unselected(x) + ".")
    return out


def _unselected(x: dict) -> str:
    """The faster configs the multiplicity-aware rule did not pick: borderline ones (their
    verdict flips with the bootstrap seed) and the one the unadjusted rule would have named."""
    out = ""
    border = x.get("borderline") or {}
    if border:
        each = [
            f"{k} (passes alone under {100 * b['seed_share']:.0f} % of {SEEDS} seeds, under "
            f"Holm {100 * b['holm_share']:.0f} %)"
            for k, b in list(border.items())[:3]
        ]
        out += "; borderline, not winners (the verdict flips with the bootstrap seed): "
        out += ", ".join(each)
    fu = x.get("fastest_unadjusted")
    if fu and fu != x["fastest"] and fu not in border:
        out += f"; {fu} is faster and passes the margin on its own, but not under Holm's correction"
    return out


def _shares(shares: dict[str, float]) -> str:
    """How often each config is the fastest over redraws: "a 45 %, b 30 %"."""
    return ", ".join(f"{k} {100 * v:.0f} %" for k, v in shares.items())


def _adds_table(record: dict) -> list[str]:
    """What Seer adds to each method: Seer + X against X, paired, and the headline."""
    res = record["results"]
    rows = [(k, r["seer_adds"]) for k, r in res.items() if r.get("seer_adds")]
    if not rows:
        return []
    out = [
        "",
        "What Seer adds to each method (Seer + X against X on the same requests; speed-up "
        "interval over requests and repeats, accuracy difference paired, points):",
        "",
        "| Seer + X | X | b1 speed-up [CI] | Δ acc [CI] | p | changed | b32 speed-up |",
        "|---" * 7 + "|",
    ]
    for k, a in rows:
        lo, hi = a["b1_speedup_ci95"]
        dlo, dhi = a["ci95"]
        one = "b32_speedup" in a and _both_b32(res[k], res[a["config"]])
        b32 = f"{a['b32_speedup']:.2f}×" if one else "—"
        out.append(
            f"| {k} | {a['config']} | {a['b1_speedup']:.2f}× [{lo:.2f}, {hi:.2f}] | "
            f"{100 * a['accuracy_difference']:+.1f} [{100 * dlo:+.1f}, {100 * dhi:+.1f}] | "
            f"{a['p']:.2g} | {a['changed']} | {b32} |"
        )
    for line in headline_lines(record):
        out += ["", line]
    return out


def _b32n(res: dict) -> int:
    return max((r.get("b32_n", 0) for r in res.values()), default=0)


def _b32sample(res: dict) -> str:
    return next((r["b32_sample"] for r in res.values() if "b32_sample" in r), "none")


def _b32order(res: dict) -> str:
    """How the batch-32 rounds ordered the configs, where the record says (records written
    before the order rotated have no `b32_round_orders`: one fixed order every round)."""
    orders = [r["b32_round_orders"] for r in res.values() if "b32_round_orders" in r]
    if not orders:
        return ""
    rounds = {tuple(o) for o in orders[0]}
    return "; rounds in rotated order" if len(rounds) > 1 else "; rounds in one order"


def _relative(r: dict, ref: dict, clock: str) -> tuple[float, float]:
    """(speed-up over `ref`, accuracy difference to `ref` in points) on `clock`'s side: the
    batch 1 (`b1_ms`, accuracy over every request) or batch 32 (`b32_ms`, its sample)."""
    acc = "accuracy" if clock == "b1_ms" else "b32_accuracy"
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

    record = normalise(record)
    res = record["results"]
    ref = res.get((record.get("headline") or {}).get("reference", ""))
    if ref is None:  # the intervals are differences to it: nothing else can stand in
        raise SeerError("compare plot: the record has no baseline reference (its headline)")
    carried = carried_later(record)  # batch-1 times on no clock the reference shares

    def shown(name: str, r: dict, clock: str) -> bool:
        return _plotted(r, clock) and not (clock == "b1_ms" and name in carried)

    k = ref["budget"].removeprefix("k=")
    at = f"the baseline at {k} token{'' if k == '1' else 's'} / step"
    methods = sorted({r["method"] for r in res.values()})
    cmap = plt.get_cmap("tab20")
    clocks = [c for c in ("b1_ms", "b32_ms") if c in ref]  # a panel per batch size measured
    ncol = 9 if len(clocks) == 2 else 6  # legend columns: one panel is 11 inches wide, not 7
    legend_in = 0.25 + 0.17 * -(-(len(methods) + 1) // ncol)  # inches: its rows, below the axes
    height = 5.5 + legend_in
    fig, axes = plt.subplots(
        1, len(clocks), figsize=(max(7 * len(clocks), 11), height), squeeze=False
    )
    for ax, clock in zip(axes[0], clocks, strict=True):
        for i, m in enumerate(methods):
            pts = sorted(
                (r for k, r in res.items() if r["method"] == m and shown(k, r, clock)),
                key=lambda r, c=clock: r[c],
                reverse=True,
            )
            if not pts:
                continue
            x, y = zip(*(_relative(r, ref, clock) for r in pts), strict=True)
            marker = "o" if m.startswith("seer") else ("*" if m == "oracle" else "s")
            style = dict(fmt=marker + "-", color=cmap(i % 20), label=m, lw=1, ms=6, alpha=0.85)
            if clock == "b1_ms":
                lo = [y0 - 100 * r["ci95_minus_baseline"][0] for y0, r in zip(y, pts, strict=True)]
                hi = [100 * r["ci95_minus_baseline"][1] - y0 for y0, r in zip(y, pts, strict=True)]
                ax.errorbar(x, y, yerr=[lo, hi], capsize=2, elinewidth=0.6, **style)
            else:
                ax.errorbar(x, y, **style)
            for r, x0, y0 in zip(pts, x, y, strict=True):
                ax.annotate(
                    r["budget"], (x0, y0), fontsize=6, xytext=(3, 3), textcoords="offset points"
                )
        if clock == "b1_ms":
            on_front = b1_front(record)
        else:
            on_front = {k for k, r in res.items() if shown(k, r, clock) and r["pareto_b32"]}
        front = sorted(_relative(r, ref, clock) for k, r in res.items() if k in on_front)
        if front:
            ax.step(
                *zip(*front, strict=True),
                where="pre",
                color="k",
                lw=0.8,
                ls=":",
                label="Pareto front",
            )
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xscale("log")
        if clock == "b1_ms":
            ax.set_xlabel(f"batch 1: speed-up over {at} ({clock_label(record)})")
            ax.set_ylabel("accuracy − baseline's, points (paired 95 % CI)")
        else:
            n32 = ref.get("b32_n", "")
            ax.set_xlabel(f"batch 32 (engine): speed-up over {at} ({clock_label(record, 'b32')})")
            ax.set_ylabel(f"accuracy − baseline's, points ({n32} requests, no interval)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()  # batch 1 has every method
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7)
    data = str(record.get("source") or "")
    if parallelbench.is_parallelbench(data):  # its task selector, not this machine's path
        data = "parallelbench: " + (parallelbench.label(data) or "every task")
    on = f" on {data}" if data and data != record["model"] else ""
    fig.suptitle(
        f"{record['model']}{on}: {record['n']} held-out requests, gen_length "
        f"{record['gen_length']}, baseline {100 * ref['accuracy']:.1f} % (k = tokens per step, "
        "t = threshold)"
    )
    fig.tight_layout(rect=(0, legend_in / height, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


README_ROWS = (  # the README's first table: (config, label)
    ("baseline@k=1", "baseline, {steps} steps (1 token / step)"),
    ("stop@k=1", "stop at the first end token"),
    ("threshold@t=0.9", "Fast-dLLM threshold 0.9"),
    ("seer@k=1", "**Seer**, {steps} steps"),
    ("seer+threshold@t=0.9", "**Seer** + threshold 0.9"),
    ("oracle@k=1", "oracle window (a bound: knows each end)"),
    ("dual+threshold/b64@t=0.9", "Fast-dLLM dual cache + threshold 0.9, blocks of 64"),
    ("seer+dual+threshold/b64@t=0.9", "**Seer** + dual cache + threshold 0.9, blocks of 64"),
)


def readme_table(record: dict, b32: dict | None = None) -> str:
    """The README's first results table from a comparison record: each `README_ROWS` config it
    has, with its accuracy, the paired difference to the baseline, the margin verdict under the
    headline's rule (Holm over the candidates; "borderline" where it flips with the seed; the
    oracle is a bound), its window and its speed-ups over the baseline at batch 1 and 32.
    The batch-32 column reads `b32` (a record of the same requests re-timed at batch 32), else
    `record`, and shows only a config timed in >= `MIN_B32_ROUNDS` interleaved rounds of one
    pass, beside the baseline, with the range of its per-round ratios; "—" otherwise."""
    res, h = record["results"], record.get("headline") or {}
    ref = res[h["reference"]]
    steps = record["gen_length"] // int(ref["budget"].removeprefix("k="))
    b1 = h.get("b1") or {}
    num = lambda x, f=".1f": format(x, f).replace("-", "−")  # noqa: E731
    sign = lambda x: num(x, "+.1f")  # noqa: E731
    out = [
        f"| config | accuracy % [95 % CI] | Δ vs {steps} steps [95 % CI] | within "
        f"{h['margin']:g} points? (Holm) [lower bound] | window | × {steps} steps, batch 1 "
        f"[95 % CI] | × batch 32 [{MIN_B32_ROUNDS}-round range] |",
        "|---" * 7 + "|",
    ]
    for name, label in README_ROWS:
        r = res.get(name)
        if r is None:
            continue
        lo, hi = r["ci95"]
        row = [
            label.format(steps=steps),
            f"{num(100 * r['accuracy'])} [{num(100 * lo)}, {num(100 * hi)}]",
        ]
        if r is ref:
            row += ["—", "—"]
        else:
            dlo, dhi = r["ci95_minus_baseline"]
            d = 100 * (r["accuracy"] - ref["accuracy"])
            if r["method"].startswith("oracle"):
                verdict = "a bound"
            elif name in b1.get("passed", []):
                verdict = "yes"
            elif name in (b1.get("borderline") or {}):
                verdict = "borderline"
            else:
                verdict = "no"
            row += [
                f"{sign(d)} [{sign(100 * dlo)}, {sign(100 * dhi)}]",
                f"{verdict} [{sign(100 * r['ni_lower'])}]",
            ]
        g = record["gen_length"]
        window = str(g) if r["mean_window"] == g else num(r["mean_window"])
        x1 = ref["b1_ms"] / r["b1_ms"]
        ci = r["b1_speedup_vs_ref_ci95"] if r["ref"] == h["reference"] else None
        x1s = (
            "1.0×" if r is ref else f"{num(x1)}×" + (f" [{num(ci[0])}, {num(ci[1])}]" if ci else "")
        )
        x32 = _b32_cell((b32 or record)["results"], h["reference"], name, num)
        if name.startswith("seer") and r is not ref and verdict == "yes":
            x1s, x32 = f"**{x1s}**", f"**{x32}**" if x32 != "—" else x32
        out.append("| " + " | ".join([*row, window, x1s, x32]) + " |")
    return "\n".join(out) + "\n"


def _b32_cell(res: dict, reference: str, name: str, num) -> str:
    """A config's batch-32 speed-up over `reference` with the range of its per-round ratios,
    where both were timed in >= `MIN_B32_ROUNDS` rounds of one pass, on one clock; else "—"."""
    r, ref = res.get(name), res.get(reference)
    timed = lambda x: len(x.get("b32_round_ms", [])) >= MIN_B32_ROUNDS and one_clock_b32(x)  # noqa: E731
    if r is None or ref is None or not (timed(r) and timed(ref)):
        return "—"
    if r is ref:
        return "1.0×"
    lo, hi = r["b32_speedup_vs_ref_range"]
    return f"{num(ref['b32_ms'] / r['b32_ms'])}× [{num(lo)}, {num(hi)}]"


def rerender(path: Path) -> bool:
    """Re-apply the selection rule to a written record (its per-request scores and times are
    in it: nothing is run again) and rewrite its headline, then its Markdown and plot beside it
    (`<record>.md`, `<record>.png` where there is one). Records of the old format (no clock, no
    margin) are left as written. Returns whether the record was rewritten."""
    import json

    record = json.loads(path.read_text())
    h = record.get("headline") or {}
    if not record.get("clock") or "reference" not in h:
        return False
    record["headline"] = headline(
        record["results"], h["reference"], h.get("margin"), untimed=carried_later(record)
    )
    path.write_text(json.dumps(record, indent=1) + "\n")
    path.with_suffix(".md").write_text(markdown(record))
    if path.with_suffix(".png").exists():
        plot(record, path.with_suffix(".png"))
    return True


def main(argv: list[str] | None = None) -> None:
    """`PYTHONPATH=benchmarks python -m seerbench.compare_report RECORD.json ...`: `rerender`
    each (the committed records: docs/results/compare/**/compare-*.json)."""
    import argparse

    ap = argparse.ArgumentParser(description="re-apply the selection rule to written records")
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument(
        "--readme",
        action="store_true",
        help="print the README's first table of the first record instead (its batch-32 "
        "column from the second, a batch-32 re-timing of the same requests, where given)",
    )
    args = ap.parse_args(argv)
    if args.readme:
        import json

        if len(args.records) > 2:
            ap.error("--readme: one record, and at most one batch-32 record")
        rec, *b32 = (json.loads(p.read_text()) for p in args.records)
        print(readme_table(rec, b32[0] if b32 else None), end="")
        return
    for path in args.records:
        if not path.is_file():
            ap.error(f"{path}: no such record")
        print(f"{path}: {'rewritten' if rerender(path) else 'old format, left as written'}")


if __name__ == "__main__":
    main()
