"""Seer's gain against the answer window: comparison records of one model and data at several
windows (`bench_compare.py --gen-length`), side by side.

Per window: the full-window baseline's accuracy and time, Seer's, threshold decoding's and Seer +
threshold's speed-ups over it (batch 1 and batch 32, the records' own clock), what Seer adds to
threshold decoding (interval over requests and repeats), the accuracy differences, the mean kept
window against the oracle's, and how many of the baseline's answers differ from its answers at
the first (shortest) window on the requests both runs hold (read from the raw files beside the
records: compared by text, else by the hash of the answer ids before the end token, else — raw
files from before that hash, kept without text — a lower bound: the answers whose length
differs). A Pareto-free picture: one line per method, speed-up against the window (`--plot`).

    python benchmarks/window_gain.py docs/results/compare/shipped/compare-builtin.json \\
        docs/results/compare/windows/compare-builtin-g256.json \\
        docs/results/compare/windows/compare-builtin-g512.json --out docs/results/compare/windows

The last line is the JSON record (`seerbench.runs` schema, bench "window_gain").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from seer.errors import SeerError
from seerbench import records, runs
from seerbench.machine import machine_info

BASE = "baseline@k=1"
BLOCK = "dual+threshold/b64@t=0.9"  # Fast-dLLM's recipe at its best block size (the sweep)
ROWS = (
    ("seer", "seer@k=1"),
    ("threshold", "threshold@t=0.9"),
    ("seer+threshold", "seer+threshold@t=0.9"),
    ("dual+threshold/b64", BLOCK),
    ("seer+dual+threshold/b64", "seer+" + BLOCK),
)
ADDS = (("threshold", "seer+threshold@t=0.9"), ("dual+threshold/b64", "seer+" + BLOCK))


def raw_path(record_path: Path) -> Path:
    """The raw per-request file bench_compare writes beside a record (compare-T.json ->
    raw-T.jsonl)."""
    return record_path.with_name("raw-" + record_path.stem.removeprefix("compare-") + ".jsonl")


def baseline_answers(raw: Path, config: str = BASE) -> dict[str, tuple]:
    """Request id -> the config's answer as (text, answer hash, length in tokens), each None
    where the file does not keep it; the first record of a request wins, as in bench_compare's
    resume."""
    out: dict[str, tuple] = {}
    raw = records.path_of(raw)
    if not raw.is_file():
        return out
    for line in records.read_text(raw).splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a stopped run
        res = (rec.get("results") or {}).get(config)
        if "request" not in rec or res is None or rec.get("id") is None:
            continue
        out.setdefault(str(rec["id"]), (res.get("text"), res.get("answer_hash"), res.get("tokens")))
    return out


def changed(first: dict[str, tuple], other: dict[str, tuple]) -> dict:
    """Answers of the baseline that differ between two windows, over the requests both hold:
    by text, else by answer hash (`by`); with neither, `changed` is None and `at_least` counts
    the answers whose length differs (None where the lengths are not kept either)."""
    common = sorted(set(first) & set(other))
    for k, by in ((0, "text"), (1, "answer ids")):
        if all(first[i][k] is not None and other[i][k] is not None for i in common):
            return {
                "common": len(common),
                "changed": sum(first[i][k] != other[i][k] for i in common),
                "by": by,
            }
    lengths = all(first[i][2] is not None and other[i][2] is not None for i in common)
    at_least = sum(first[i][2] != other[i][2] for i in common) if lengths else None
    return {"common": len(common), "changed": None, "at_least": at_least}


def row_of(path: Path, record: dict) -> dict:
    """One window's figures from its record."""
    res = record["results"]
    if BASE not in res:
        raise SeerError(f"{path}: no {BASE} in the record (run bench_compare with --budgets 1)")
    base = res[BASE]
    row = {
        "window": record.get("gen_length"),
        "n": record.get("n"),
        "record": str(path),
        "baseline_accuracy": base["accuracy"],
        "baseline_ms": base.get("b1_ms"),
        "baseline_b32_ms": base.get("b32_ms"),
        "oracle_window": (res.get("oracle@k=1") or {}).get("mean_window"),
    }
    for label, name in ROWS:
        r = res.get(name)
        if r is None:
            row[label] = None
            continue
        row[label] = {
            "accuracy": r["accuracy"],
            "minus_baseline": r.get("accuracy_minus_ref")
            if r.get("ref") == BASE
            else round(r["accuracy"] - base["accuracy"], 4),
            "b1": r.get("b1_speedup_vs_k1") or r.get("b1_speedup_vs_ref"),
            "b32": r.get("b32_speedup_vs_ref") if r.get("ref") == BASE else _b32_over(r, base),
            "ci95_minus_baseline": r.get("ci95_minus_baseline") or r.get("ci95_minus_ref"),
            "mean_window": r.get("mean_window"),
            "nfe": r.get("nfe"),
        }
    row["seer_adds"] = {label: _adds(res.get(name)) for label, name in ADDS}
    return row


def _adds(r: dict | None) -> dict | None:
    """What Seer adds to a method: its Seer config's `seer_adds` (speed-up with its interval,
    accuracy difference with its interval)."""
    adds = (r or {}).get("seer_adds")
    if not adds:
        return None
    return {
        "b1": adds.get("b1_speedup"),
        "b1_ci95": adds.get("b1_speedup_ci95"),
        "b32": adds.get("b32_speedup"),
        "accuracy_difference": adds.get("accuracy_difference"),
        "ci95": adds.get("ci95"),
    }


def _b32_over(r: dict, base: dict) -> float | None:
    """Batch-32 speed-up over the baseline from the two configs' batch-32 times."""
    if r.get("b32_ms") and base.get("b32_ms"):
        return base["b32_ms"] / r["b32_ms"]
    return None


def _x(v) -> str:
    return "-" if v is None else f"{v:.2f}×"


def _pts(v) -> str:
    return "-" if v is None else f"{100 * v:+.1f}"


def table(rows: list[dict]) -> list[str]:
    """The Markdown tables of the record's rows: every method at every window, then what Seer
    adds to each method it composes with and how the baseline's answers moved."""
    out = [
        "| window | method | accuracy % | Δ vs baseline [95 % CI] | × b1 | × b32 | kept window "
        "| NFE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ms = "-" if r["baseline_ms"] is None else f"{r['baseline_ms']:.0f} ms"
        b32 = "1×" if r.get("baseline_b32_ms") else "-"  # "-": no batch-32 run at this window
        out.append(
            f"| {r['window']} | baseline (n = {r['n']}, {ms} b1) | "
            f"{100 * r['baseline_accuracy']:.1f} | | 1× | {b32} | {r['window']} | "
            f"{r['window']} |"
        )
        for label, _ in ROWS:
            m = r[label]
            if m is None:
                continue
            win = "-" if not m.get("mean_window") else f"{m['mean_window']:.1f}"
            if label == "seer" and r.get("oracle_window"):
                win += f" (oracle {r['oracle_window']:.1f})"
            nfe = "-" if m.get("nfe") is None else f"{m['nfe']:.1f}"
            out.append(
                f"| {r['window']} | {label} | {100 * m['accuracy']:.1f} | "
                f"{_pts(m.get('minus_baseline'))}{_ci(m.get('ci95_minus_baseline'))} | "
                f"{_x(m.get('b1'))} | {_x(m.get('b32'))} | {win} | {nfe} |"
            )
    out += [
        "",
        "| window | Seer adds to threshold 0.9: × b1 [CI] (b32), Δ acc | Seer adds to "
        "dual + threshold/b64 | baseline answers changed vs first window |",
        "|---|---|---|---|",
    ]
    for r in rows:
        cells = [_add(r["seer_adds"].get(label)) for label, _ in ADDS]
        ch = r.get("changed_vs_first")
        if ch is None:
            chs = "-"
        elif ch["changed"] is not None:
            chs = f"{ch['changed']} of {ch['common']}"
        elif ch.get("at_least") is not None:
            chs = f"≥ {ch['at_least']} of {ch['common']} (lengths differ; no text kept)"
        else:
            chs = "no text kept"
        out.append(f"| {r['window']} | {' | '.join(cells)} | {chs} |")
    return out


def _ci(ci) -> str:
    return "" if not ci else f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]"


def _add(a: dict | None) -> str:
    if not a or not a.get("b1"):
        return "-"
    lo, hi = a.get("b1_ci95") or (None, None)
    s = f"{a['b1']:.2f}×" + (f" [{lo:.2f}, {hi:.2f}]" if lo else "")
    if a.get("b32"):
        s += f" ({a['b32']:.2f}×)"
    return s + f", {_pts(a.get('accuracy_difference'))}{_ci(a.get('ci95'))}"


def plot(rows: list[dict], path: Path) -> None:
    """Speed-up over each window's baseline against the window, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [r["window"] for r in rows]
    for label, _ in ROWS:
        ys = [(r[label] or {}).get("b1") for r in rows]
        if any(y is not None for y in ys):
            ax.plot(xs, [y if y is not None else float("nan") for y in ys], "o-", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # speed-ups from a few times to hundreds
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("answer window (positions)")
    ax.set_ylabel("speed-up over the full-window baseline (batch 1)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", type=Path, nargs="+", help="compare records (bench_compare's JSON)")
    ap.add_argument(
        "--out", type=Path, default=None, help="write window_gain-<tag>.json / .md / .png here"
    )
    args = ap.parse_args(argv)
    rows, models = [], set()
    for path in args.records:
        record = runs.read_bench(path, "compare")
        models.add((record.get("model"), (record.get("settings") or {}).get("data")))
        rows.append(row_of(path, record) | {"_answers": baseline_answers(raw_path(path))})
    if len(models) > 1:
        raise SeerError(
            "the records are of different models or data: "
            + ", ".join(f"{m} on {d or 'its own task'}" for m, d in sorted(models, key=str))
        )
    rows.sort(key=lambda r: r["window"])
    if len({r["window"] for r in rows}) < len(rows):
        raise SeerError("two records of the same window")
    first = rows[0].pop("_answers")
    rows[0]["changed_vs_first"] = None
    for r in rows[1:]:
        answers = r.pop("_answers")
        r["changed_vs_first"] = changed(first, answers) if first and answers else None
    lines = table(rows)
    print("\n".join(lines))
    model, data = models.pop()
    record = {
        "bench": "window_gain",
        "model": model,
        "source": data or model,
        "n": min(r["n"] or 0 for r in rows),
        "seed": None,
        "repeats": None,
        "threads": None,
        "machine": machine_info(),
        "settings": {"records": [str(p) for p in args.records]},
        "results": rows,
        "wall_seconds": 0.0,
    }
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        tag = runs.tag(model, data)
        (args.out / f"window_gain-{tag}.md").write_text(
            f"{model}: Seer's gain against the window (each record's own clock; "
            f"`python benchmarks/window_gain.py {' '.join(map(str, args.records))}`)\n\n"
            + "\n".join(lines)
            + "\n"
        )
        plot(rows, args.out / f"window_gain-{tag}.png")
        runs.write(record, args.out, tag)
        print(f"[window_gain] wrote {args.out}/window_gain-{tag}.*", flush=True)
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SeerError as e:
        sys.exit(f"error: {e}")
