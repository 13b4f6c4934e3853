"""The multimodal model v2's realism criteria (issue 20) on a checkpoint, per family.

On unique held-out requests of `synthetic.vqa2` (`--n` per family, seed `--seed`), greedy,
batched (`--batch` requests per call), all scored with `synthetic.vqa2.score` (the
any-order and same-colour checkers included):

* accuracy per family at 1 token per step (steps = the 128 window: LaViDa's evaluation setting)
  and at 2, 4, 8 tokens per step (`--tokens-per-step`), with the drop from 1 to each k on the mix
  and its paired bootstrap 95 % interval (the same requests resampled for both);
* Seer (the model's `seer.json` detector; `--signal` overrides it) against the 1-token-per-step
  baseline, per family, with paired intervals: does cutting the [EOS] suffix change accuracy?
* the median reference answer and the median generated answer (tokens), as a share of the window;
* the issue's checks: no family below 20 % and reading >= 50 % at one token per step, >= 10
  points lost at 8 tokens per step, median answer <= 25 % of the window.

    python benchmarks/bench_vqa2.py --model runs/builtin-vqa2/export --n 10

A human table, then the JSON record on the last line (`seerbench.runs`; results:
per mode, the mix's accuracy and its drop from k=1). Seed fixed; no warm-up is needed because
nothing is timed (accuracy only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch

import seer
from seer.boundary.config import SeerConfig
from seerbench import runs, stats
from synthetic import vqa2

READING = ("read", "number", "chart", "table")


def paired_interval(a: list[float], b: list[float], seed: int = 0, n: int = 2000):
    """Mean of a - b and its percentile bootstrap 95 % interval (pairs resampled together)."""
    if not a:
        return 0.0, (0.0, 0.0)
    mean = (sum(a) - sum(b)) / len(a)
    return mean, stats.bootstrap(a, seed=seed, ys=b, reps=n)


@torch.inference_mode()
def answer_all(lm, examples, batch: int, **kw) -> list:
    out = []
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        out += lm.generate([e.question for e in chunk], image=[e.image() for e in chunk], **kw)
    return out


def per_family(examples, scores: list[float]) -> dict:
    fam: dict[str, list[float]] = {}
    for e, s in zip(examples, scores, strict=True):
        fam.setdefault(e.family, []).append(s)
    out = {f: sum(v) / len(v) for f, v in sorted(fam.items())}
    out["all"] = sum(scores) / len(scores)
    return out


def run(args) -> dict:
    torch.manual_seed(0)
    lm = seer.load(args.model)
    window = args.window
    n = args.n * len(vqa2.FAMILIES)
    examples = vqa2.generate_examples(n, args.seed, "heldout", unique=True)
    results: dict[str, list] = {}
    for k in args.tokens_per_step:
        gens = answer_all(lm, examples, args.batch, gen_length=window, steps=window // k)
        results[f"k={k}"] = gens
    seer_cfg = SeerConfig(signal=args.signal) if args.signal else True
    results["seer"] = answer_all(
        lm, examples, args.batch, gen_length=window, steps=window, seer=seer_cfg
    )
    scores = {
        m: [vqa2.score(e, g.text) for e, g in zip(examples, gens, strict=True)]
        for m, gens in results.items()
    }
    base = scores[f"k={args.tokens_per_step[0]}"]
    record: dict = {"model": str(args.model), "n": n, "seed": args.seed, "window": window}
    record["accuracy"] = {m: per_family(examples, s) for m, s in scores.items()}
    record["drop"] = {}
    for m, s in scores.items():
        mean, ci = paired_interval(base, s)
        record["drop"][m] = {"points": 100 * mean, "ci": [100 * ci[0], 100 * ci[1]]}
    seer_vs = {}
    for f in (*vqa2.FAMILIES, "all"):
        idx = [i for i, e in enumerate(examples) if f in ("all", e.family)]
        mean, ci = paired_interval([scores["seer"][i] for i in idx], [base[i] for i in idx])
        seer_vs[f] = {"delta_points": 100 * mean, "ci": [100 * ci[0], 100 * ci[1]]}
    record["seer_minus_baseline"] = seer_vs
    ref_len = [len(lm.tokenizer(e.answer, add_special_tokens=False)["input_ids"]) for e in examples]
    gen_len = [g.stats.tokens for g in results[f"k={args.tokens_per_step[0]}"]]
    record["median_answer"] = {
        "reference": statistics.median(ref_len),
        "generated": statistics.median(gen_len),
    }
    record["seer_mean_window"] = statistics.mean(g.stats.window for g in results["seer"])
    acc1 = record["accuracy"][f"k={args.tokens_per_step[0]}"]
    k8 = f"k={max(args.tokens_per_step)}"
    record["criteria"] = {
        "no_family_below_20": min(v for f, v in acc1.items() if f != "all") >= 0.2,
        "reading_at_least_50": statistics.mean(acc1[f] for f in READING) >= 0.5,
        "loses_10_points_at_max_k": record["drop"][k8]["points"] >= 10,
        "median_answer_within_quarter": record["median_answer"]["reference"] <= window / 4,
    }
    return record


def show(record: dict) -> None:
    methods = list(record["accuracy"])
    fams = list(record["accuracy"][methods[0]])
    print(f"{'family':<10}" + "".join(f"{m:>9}" for m in methods) + "   seer - k=1 (95 % CI)")
    for f in fams:
        row = "".join(f"{100 * record['accuracy'][m].get(f, 0):9.1f}" for m in methods)
        s = record["seer_minus_baseline"][f]
        print(f"{f:<10}{row}   {s['delta_points']:+.1f} [{s['ci'][0]:+.1f}, {s['ci'][1]:+.1f}]")
    for m, d in record["drop"].items():
        print(f"drop k=1 -> {m}: {d['points']:+.1f} points [{d['ci'][0]:+.1f}, {d['ci'][1]:+.1f}]")
    ma = record["median_answer"]
    print(
        f"median answer: reference {ma['reference']} tokens, generated {ma['generated']} "
        f"(window {record['window']}); Seer's mean window {record['seer_mean_window']:.1f}"
    )
    print("criteria:", json.dumps(record["criteria"]))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a v2 checkpoint folder (LaViDa layout)")
    runs.add_arguments(
        ap, n=20, skip=("data", "repeats"), help={"n": "held-out requests per family"}
    )
    ap.add_argument("--window", type=int, default=vqa2.WINDOW)
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument(
        "--tokens-per-step", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8]
    )
    ap.add_argument("--signal", default=None, help="Seer's signal (default: the model's)")
    args = ap.parse_args(argv)
    if any(k < 1 or args.window % k for k in args.tokens_per_step):
        sys.exit("every tokens-per-step must divide the window")
    session = runs.Session("vqa2", args)
    rec = run(args)
    show(rec)
    results = {
        m: {"accuracy": acc["all"], "drop_points": rec["drop"][m]["points"]}
        for m, acc in rec["accuracy"].items()
    }
    fields = {k: v for k, v in rec.items() if k not in ("model", "n", "seed")}
    return session.finish(results, model=rec["model"], source="builtin-vqa2", n=rec["n"], **fields)


if __name__ == "__main__":
    main()
