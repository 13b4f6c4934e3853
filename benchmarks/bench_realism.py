"""Does a model lose accuracy under parallel decoding as real diffusion LMs do? Per family.

Runs one data source through the engine under each decoding setting and scores every answer
with `seer.data.score` (the family's checker, ParallelBench's official metric for
`parallelbench:` sources):

  k=1, 2, 4, 8    the full window, `steps` = gen_length / k (k tokens per step), low-confidence
                  remasking (the model's own rule), greedy
  thr0.9, thr0.7  Fast-dLLM's threshold decoding (one block)
  dpad            DPad's suffix dropout (cache="dpad", window 16, blocks of 8)
  seer            Seer with the model's seer.json defaults, one token per step

and reports accuracy per family with bootstrap 95 % intervals, the points lost against k=1
with paired intervals, how many answers changed, and the lengths of the k=1 answers (median,
90th percentile and maximum as a share of the window). `--plot` draws accuracy against tokens
per step, per family group, and for the list families with a closed form (copy, shuffle,
random replace: `seerbench.marginals`) the model beside the accuracy of a perfect model at the
same list lengths (ParallelBench's analysis: one item per token, low-confidence remasking).
`--from-raw` re-reads a `--raw` file of an earlier run (the same `--data`, `--n`, `--seed`) and
reports and plots it without generating.

`--n` keeps a seeded random sample of a task (`seerbench.draws.permuted`; a built-in source is
already a seeded draw), never its first rows.

    python benchmarks/bench_realism.py --model builtin --data builtin --n 380
    python benchmarks/bench_realism.py --model builtin \
        --data parallelbench:/path/to/ParallelBench/waiting_line --n 400 --configs k=1,k=2,k=4,k=8
    python benchmarks/bench_realism.py --model builtin \
        --from-raw docs/builtin-v2/realism_k_raw.jsonl --plot docs/builtin-v2/realism_k.png

Last line: the JSON record (`seerbench.runs`): results per config (all families:
n, accuracy, interval, changed, seconds), configs per config and family, lengths.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from seerbench import runs
from seerbench.stats import bootstrap

CONFIGS = ("k=1", "k=2", "k=4", "k=8", "thr0.9", "thr0.7", "dpad", "seer")


def settings(name: str, window: int) -> tuple[dict, bool]:
    """(SamplingParams overrides, Seer on) of a config name."""
    if name.startswith("k="):
        return {"steps": window // int(name[2:])}, False
    if name.startswith("thr"):
        return {"threshold": float(name[3:])}, False
    if name == "dpad":
        return {"cache": "dpad", "dpad_window": 16, "block_length": 8}, False
    if name == "seer":
        return {}, True
    raise SystemExit(f"bench_realism: error: unknown config {name!r}; choose from {CONFIGS}")


def run_config(lm, examples, name: str, window: int, batch: int) -> dict[str, dict]:
    """Per example id: the answer text, its score, NFE and answer length in tokens."""
    from seer.batch import answers
    from seer.data import score

    overrides, seer_on = settings(name, window)
    params = lm.sampling(gen_length=window, **overrides)
    out = {}
    for ex, res in answers(lm, examples, params, True if seer_on else None, max_batch=batch):
        out[ex.id] = {
            "text": res.text,
            "score": score(ex, res.text),
            "nfe": getattr(res, "nfe", None),
            "length": len(lm.tokenizer(res.text, add_special_tokens=False)["input_ids"]),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="builtin")
    runs.add_arguments(
        ap,
        data="builtin",
        skip=("repeats",),
        help={"n": "a seeded random sample of n (default: all)"},
    )
    ap.add_argument("--window", type=int, default=None, help="gen_length (default: the model's)")
    ap.add_argument(
        "--configs",
        default=None,
        help=f"comma-separated (default: {','.join(CONFIGS)}; with --from-raw: the file's)",
    )
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--raw", type=Path, default=None, help="per-request results (JSON Lines)")
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--from-raw", type=Path, default=None, help="report an earlier --raw file")
    args = ap.parse_args(argv)
    session = runs.Session("realism", args)

    import seer
    from seerbench.draws import is_builtin, permuted
    from synthetic.pool import load as load_examples  # a built-in source: any seed

    lm = seer.load(args.model)
    window = args.window or lm.sampling().gen_length
    if is_builtin(args.data):  # already a seeded draw of unique requests
        examples = load_examples(args.data, n=args.n, seed=args.seed)
    else:
        examples = permuted(load_examples(args.data), args.seed)[: args.n]
    if args.configs is None:
        args.configs = ",".join(raw_configs(args.from_raw) if args.from_raw else CONFIGS)
    names = [c for c in args.configs.split(",") if c]
    for c in names:
        settings(c, window)
    print(f"{len(examples)} requests of {args.data}, model {args.model}, window {window}")
    if args.from_raw:
        results, seconds = read_raw(args.from_raw, examples, names), {c: None for c in names}
    else:
        results, seconds = generate(lm, examples, names, window, args.batch)
    if args.raw and not args.from_raw:
        with args.raw.open("w") as f:
            for ex in examples:
                row = {"id": ex.id, "family": ex.family}
                row.update({c: results[c][ex.id] for c in names})
                f.write(json.dumps(row) + "\n")
    rep = report(examples, names, results, window, seconds)
    rep["closed_form"] = closed_forms(examples, names)
    if args.plot:
        plot(rep, args.plot)
    summary = {c: dict(rep["configs"][c]["ALL"], seconds=seconds[c]) for c in names}
    session.finish(summary, model=args.model, source=args.data, n=len(examples), **rep)


def generate(lm, examples, names, window, batch) -> tuple[dict, dict]:
    """Every config over the examples, timed: (results per config, seconds per config)."""
    results, seconds = {}, {}
    warm = examples[: min(2, len(examples))]  # every config's code path once, untimed
    runs.warm(lambda c: run_config(lm, warm, c, window, batch), names)
    for c in names:
        with runs.Timer() as t:
            results[c] = run_config(lm, examples, c, window, batch)
        seconds[c] = t.wall
        acc = statistics.mean(r["score"] for r in results[c].values())
        print(f"  {c:8s} {100 * acc:5.1f} %  ({seconds[c]:.0f} s)", flush=True)
    return results, seconds


def raw_configs(path: Path) -> list[str]:
    """The configs a `--raw` file's first record holds (every key but id and family)."""
    try:
        first = json.loads(path.read_text().splitlines()[0])
        return [k for k in first if k not in ("id", "family")]
    except (OSError, IndexError, ValueError, AttributeError):
        raise SystemExit(f"bench_realism: error: {path} is not a --raw file") from None


def read_raw(path: Path, examples, names) -> dict:
    """Results per config from a `--raw` file, checked against the examples of this run (the
    same requests; the scores are the file's, as its run computed them)."""
    if not path.is_file():
        raise SystemExit(f"bench_realism: error: no raw file {path}")
    rows = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            row = json.loads(line)
            rows[row["id"]] = row
            row["family"]
        except (ValueError, KeyError, TypeError):
            raise SystemExit(
                f"bench_realism: error: {path}:{n} is not a --raw record "
                "(JSON: id, family, a result per config)"
            ) from None
        missing = [c for c in names if c not in row]
        if missing:
            raise SystemExit(f"bench_realism: error: {path}:{n} has no config {missing[0]}")
    want = {ex.id: ex.family for ex in examples}
    got = {i: r["family"] for i, r in rows.items()}
    if got != want:
        raise SystemExit(
            f"bench_realism: error: {path} holds other requests than --data / --n / "
            f"--seed give ({len(got)} rows, {len(want)} requests)"
        )
    return {c: {i: r[c] for i, r in rows.items()} for c in names}


def list_size(ex) -> int | None:
    """The number of items in a list request's line (None for other requests)."""
    ref = ex.reference
    if isinstance(ref, dict) and isinstance(ref.get("input"), list):
        return len(ref["input"])
    if isinstance(ref, str) and ref.startswith("["):
        try:
            return len(json.loads(ref))
        except ValueError:
            return None
    return None


def closed_forms(examples, names) -> dict[str, dict[str, float]]:
    """Per list family with a closed form and per k=... config: a perfect model's accuracy at
    the family's list lengths (ParallelBench's analysis: one item per token, k items per step,
    low-confidence remasking), averaged over its requests."""
    from seerbench.marginals import TASKS, closed_form, step_counts

    ks = [int(c[2:]) for c in names if c.startswith("k=")]
    sizes = defaultdict(list)  # family -> list lengths; a ParallelBench family is waiting_line/copy
    for ex in examples:
        if (ex.family or "").rsplit("/", 1)[-1] in TASKS and (n := list_size(ex)):
            sizes[ex.family].append(n)
    return {
        fam: {
            f"k={k}": statistics.mean(
                closed_form(fam.rsplit("/", 1)[-1], step_counts(n, min(k, n)), "low_confidence")
                for n in ns
            )
            for k in ks
        }
        for fam, ns in sizes.items()
    }


def report(examples, names, results, window, seconds) -> dict:
    """Print the per-family table and return the JSON record."""
    families = defaultdict(list)
    for ex in examples:
        families[ex.family or "all"].append(ex.id)
    groups = {**families, "ALL": [ex.id for ex in examples]}
    ref = names[0]
    record: dict = {"window": window, "reference": ref, "configs": {}, "seconds": seconds}
    header = f"{'family':28s} {'n':>4s} " + " ".join(f"{c:>13s}" for c in names)
    print(header)
    for fam, ids in groups.items():
        cells = []
        for c in names:
            xs = [results[c][i]["score"] for i in ids]
            lo, hi = bootstrap(xs)
            acc = sum(xs) / len(xs)
            entry = {"n": len(xs), "accuracy": acc, "interval": [lo, hi]}
            if c != ref:
                diffs = [results[c][i]["score"] - results[ref][i]["score"] for i in ids]
                entry["lost"] = -sum(diffs) / len(diffs)
                entry["lost_interval"] = sorted(-x for x in bootstrap(diffs))
                entry["changed"] = sum(
                    results[c][i]["text"] != results[ref][i]["text"] for i in ids
                )
            record["configs"].setdefault(c, {})[fam] = entry
            cells.append(f"{100 * acc:5.1f} [{100 * lo:3.0f},{100 * hi:3.0f}]")
        print(f"{fam:28s} {len(ids):4d} " + " ".join(f"{x:>13s}" for x in cells))
    lengths = sorted(results[ref][ex.id]["length"] for ex in examples)
    record["lengths"] = {
        "median": statistics.median(lengths) / window,
        "p90": lengths[int(0.9 * (len(lengths) - 1))] / window,
        "max": lengths[-1] / window,
    }
    print(
        "answer lengths (share of the window, {}): median {median:.2f}, p90 {p90:.2f}, "
        "max {max:.2f}".format(ref, **record["lengths"])
    )
    return record


def plot(record: dict, path: Path) -> None:
    """Accuracy against tokens per step, one line per family (the k=... configs only); beside
    it, the list families that have a closed form against a perfect model's accuracy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = sorted(int(c[2:]) for c in record["configs"] if c.startswith("k="))
    closed = record.get("closed_form") or {}
    fig, axes = plt.subplots(
        1, 2 if closed else 1, figsize=(12 if closed else 7, 4.5), squeeze=False
    )
    ax = axes[0][0]
    ax.set_prop_cycle(color=plt.get_cmap("tab20").colors)  # ~20 families, each its own colour
    for fam in record["configs"][f"k={ks[0]}"]:
        ys = [100 * record["configs"][f"k={k}"][fam]["accuracy"] for k in ks]
        ax.plot(ks, ys, marker="o", lw=2.5 if fam == "ALL" else 1, label=fam)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("every family")
    if closed:
        ax = axes[0][1]
        for fam, curve in closed.items():
            model = [100 * record["configs"][f"k={k}"][fam]["accuracy"] for k in ks]
            line = ax.plot(ks, model, marker="o", label=f"{fam}: the model")[0]
            ax.plot(
                ks,
                [100 * curve[f"k={k}"] for k in ks],
                ls="--",
                color=line.get_color(),
                label=f"{fam}: a perfect model (closed form)",
            )
        ax.set_title("list families beside ParallelBench's closed form")
        ax.legend(fontsize=7)
    for ax in axes[0]:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("tokens per step")
        ax.set_ylabel("accuracy (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
