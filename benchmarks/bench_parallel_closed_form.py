"""Accuracy against tokens per step on ParallelBench's list tasks: closed forms and our loop.

A perfect model (`seerbench.marginals.MarginalsModel`: the exact conditional marginal of every
masked answer position given the revealed tokens) decoded by our one loop at temperature 1, k
tokens per step over a list of n items (steps = n / k), `--trials` seeded rows per point, scored
with ParallelBench's official metric of the task: copy (list match), shuffle (a permutation that
differs from the input), replace_random (the list with exactly one item replaced by the given
word). The closed forms (lines; derived and checked against an enumeration of every decoding path
in `seerbench.marginals`) are what any correct implementation of parallel decoding must reach;
our loop's rates are the points, with Wilson 95 % intervals. Shuffle and copy are the same under
`random` and `low_confidence` remasking (every confidence is equal); replace_random is not: LLaDA's
low-confidence rule keeps the new word back until it is forced onto several positions at once.

    python benchmarks/bench_parallel_closed_form.py \
        --out docs/results/figures/parallel_closed_form.png \
        | tee docs/results/parallel_closed_form.txt

Points of another model (say a trained one run on ParallelBench's test files elsewhere) go on the
same figure with `--points FILE.json` (repeatable), each file one series:

    {"label": "builtin v2 (low_confidence)",
     "points": [{"task": "shuffle", "n": 12, "k": 2, "correct": 31, "total": 100}, ...]}

or from Python: `figure({n: closed_form_curves(n), ...}, {label: [Point, ...], ...}, path)`.
The table and the last-line JSON record hold every point; `within_4sigma` says whether every
point of our loop lies within 4 standard errors of its closed form.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from seer.errors import SeerError
from seerbench.machine import machine_info
from seerbench.marginals import REMASKING, TASKS, closed_form, measure, step_counts, wilson

ROOT = Path(__file__).resolve().parents[1]
STYLE = {"copy": "tab:green", "shuffle": "tab:red", "replace_random": "tab:blue"}
DASH = {"random": "-", "low_confidence": "--"}


@dataclass(slots=True)
class Point:
    """One measured accuracy: `correct` of `total` answers right at k tokens per step."""

    task: str  # a ParallelBench list task (seerbench.marginals.TASKS)
    n: int  # items per list
    k: int  # tokens per step
    correct: int  # answers the task's official metric scores 1
    total: int  # answers scored

    @property
    def accuracy(self) -> float:
        return self.correct / self.total


def divisors(n: int) -> list[int]:
    """The k that split n items into equal steps (the only k where "k tokens per step" holds)."""
    return [k for k in range(1, n + 1) if n % k == 0]


def closed_form_curves(n: int, tasks=TASKS, rules=REMASKING) -> dict[tuple[str, str], list]:
    """(task, rule) -> [(k, accuracy)] for every divisor k of n; the rules of a task whose
    curves coincide (copy, shuffle) are kept once, under the first rule."""
    curves = {}
    for task in tasks:
        for rule in rules:
            ys = [(k, closed_form(task, step_counts(n, k), rule)) for k in divisors(n)]
            if any(ys == c for (t, _), c in curves.items() if t == task):
                continue
            curves[task, rule] = ys
    return curves


def figure(curves: dict[int, dict], series: dict[str, list[Point]], path: Path) -> Path:
    """One panel per list length n: the closed-form lines (`curves`: n -> `closed_form_curves`)
    and measured points with Wilson 95 % intervals, one marker per series (label -> points;
    points of a length without a panel are left out), accuracy against tokens per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = sorted(curves)
    fig, axes = plt.subplots(1, len(ns), figsize=(6.5 * len(ns), 6), squeeze=False)
    for ax, n in zip(axes[0], ns, strict=True):
        for (task, rule), ys in curves[n].items():
            one = sum(t == task for t, _ in curves[n]) == 1
            label = f"{task}: closed form" + ("" if one else f" ({rule})")
            ax.plot(
                [k for k, _ in ys],
                [a for _, a in ys],
                DASH[rule],
                color=STYLE[task],
                lw=1.2,
                label=label,
            )
        for i, (label, pts) in enumerate(series.items()):
            marker, nudge = "osD^vP*X"[i % 8], 2 ** (0.06 * (i - (len(series) - 1) / 2))
            for task in dict.fromkeys(p.task for p in pts if p.n == n):
                mine = sorted((p for p in pts if p.task == task and p.n == n), key=lambda p: p.k)
                ci = [wilson(p.correct, p.total) for p in mine]
                err = [
                    [p.accuracy - lo for p, (lo, _) in zip(mine, ci, strict=True)],
                    [hi - p.accuracy for p, (_, hi) in zip(mine, ci, strict=True)],
                ]
                ax.errorbar(
                    [p.k * nudge for p in mine],
                    [p.accuracy for p in mine],
                    yerr=err,
                    fmt=marker,
                    color=STYLE.get(task, "k"),
                    mfc="none",
                    ms=6,
                    capsize=2,
                    lw=1,
                    label=f"{task}: {label}",
                )
        ax.set_xscale("log", base=2)
        ax.set_xticks(divisors(n), [str(k) for k in divisors(n)])
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(f"tokens per step k (steps = {n} / k)")
        ax.set_ylabel("accuracy (official metric; points: Wilson 95 %)")
        ax.set_title(f"lists of n = {n} items", fontsize=10)
        ax.grid(alpha=0.3)
    legend = {}  # label -> handle, over every panel (a series may have points on one only)
    for ax in axes[0]:
        legend.update(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
    fig.legend(legend.values(), legend.keys(), loc="lower center", ncol=3, fontsize=7)
    fig.suptitle(
        "Parallel decoding with a perfect model (exact marginals, temperature 1): "
        "ParallelBench list tasks",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.02 + 0.025 * math.ceil(len(legend) / 3), 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def read_points(path: Path) -> tuple[str, list[Point]]:
    """One series from a `--points` JSON file (module docstring); bad files: one clear line."""
    try:
        raw = json.loads(path.read_text())
        pts = [
            Point(str(p["task"]), int(p["n"]), int(p["k"]), int(p["correct"]), int(p["total"]))
            for p in raw["points"]
        ]
        label = str(raw["label"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SeerError(f"--points {path}: not a points file ({type(e).__name__}: {e})") from e
    if any(p.total < 1 or not 0 <= p.correct <= p.total for p in pts):
        raise SeerError(f"--points {path}: every point needs 0 <= correct <= total, total >= 1")
    return label, pts


def run(ns: list[int], trials: int, seed: int, tasks, rules) -> list[dict]:
    """Our loop with the exact-marginals model at every divisor k of each n, per task and rule."""
    rows = []
    for n, task, rule in ((n, t, r) for n in ns for t in tasks for r in rules):
        for k in divisors(n):
            m = measure(task, n, k, trials, seed=seed, remasking=rule)
            p = closed_form(task, step_counts(n, k), rule)
            se = math.sqrt(p * (1 - p) / trials)
            z = 0.0 if se == 0 and m.correct == trials else (m.accuracy - p) / (se or 1e-12)
            rows.append(
                {
                    "n": n,
                    "task": task,
                    "remasking": rule,
                    "k": k,
                    "steps": m.nfe,
                    "closed_form": p,
                    "correct": m.correct,
                    "trials": trials,
                    "accuracy": m.accuracy,
                    "ci95": wilson(m.correct, trials),
                    "z": z,
                }
            )
    return rows


def table(rows: list[dict]) -> str:
    head = f"{'n':>3}  {'task':<15}{'remasking':<16}{'k':>3}{'steps':>6}{'closed form':>13}"
    head += f"{'measured':>10}{'95 % interval':>18}{'z':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lo, hi = r["ci95"]
        lines.append(
            f"{r['n']:>3}  {r['task']:<15}{r['remasking']:<16}{r['k']:>3}{r['steps']:>6}"
            f"{r['closed_form']:>13.4f}{r['accuracy']:>10.4f}"
            f"{f'[{lo:.4f}, {hi:.4f}]':>18}{r['z']:>7.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--n",
        type=int,
        nargs="+",
        default=[6, 12],
        help="items per list (the answer window); one panel each",
    )
    ap.add_argument("--trials", type=int, default=2000, help="seeded rows per point")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    ap.add_argument("--remasking", nargs="+", default=list(REMASKING), choices=REMASKING)
    ap.add_argument(
        "--points",
        type=Path,
        action="append",
        default=[],
        help="a JSON file of another model's points (repeatable; see the docstring)",
    )
    ap.add_argument("--out", type=Path, default=None, help="write the figure here (PNG)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    try:
        if not all(2 <= n <= 31 for n in args.n):
            raise SeerError(f"--n must be in 2..31 (an item pool of 32 tokens), got {args.n}")
        if args.trials < 1:
            raise SeerError(f"--trials must be >= 1, got {args.trials}")
        extra = dict(read_points(p) for p in args.points)
    except SeerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    rows = run(args.n, args.trials, args.seed, args.tasks, args.remasking)
    seconds = time.perf_counter() - t0
    ns = ", ".join(map(str, args.n))
    print(
        f"ParallelBench list tasks, perfect model, n = {ns} items, {args.trials} rows per "
        f"point, seed {args.seed}, temperature 1 ({seconds:.1f} s)"
    )
    print(table(rows))
    within = all(abs(r["z"]) <= 4 for r in rows)
    print(f"every point within 4 standard errors of its closed form: {'yes' if within else 'NO'}")
    if args.out is not None:
        ours = {}
        for r in rows:
            label = f"our loop ({r['remasking']})"
            pt = Point(r["task"], r["n"], r["k"], r["correct"], r["trials"])
            ours.setdefault(label, []).append(pt)
        curves = {n: closed_form_curves(n, args.tasks, args.remasking) for n in args.n}
        print(f"figure: {figure(curves, ours | extra, args.out)}")
    record = {
        "bench": "parallel_closed_form",
        "n": args.n,
        "trials": args.trials,
        "seed": args.seed,
        "seconds": seconds,
        "within_4sigma": within,
        "rows": rows,
        "extra": {k: [asdict(p) for p in v] for k, v in extra.items()},
        "machine": machine_info(),
    }
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
