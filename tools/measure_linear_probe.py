"""Measure the linear probe on step-0 hidden states against the step-0 end probability.

On a model (default: the built-in one) and its data, the baseline answers (`lm.generate` at the
model's defaults) give each row's end index; step 0 (`seer.boundary.probe.step0`) gives every
layer's window hidden states and the end probability. A probe per layer is fitted on the
calibration part and scored on the evaluation part (disjoint): the position AUC of P(padding),
and for each threshold rule the share of rows kept whole (L* >= end + 1, or no boundary) and the
mean L* (no boundary counts as the whole window). The end probability is scored on the same
rows by the same rules.

    python tools/measure_linear_probe.py --n 48 --save /tmp/lp.pt      # generate and measure
    python tools/measure_linear_probe.py --load /tmp/lp.pt --l2 0.01   # measure again

A human table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import seer
from seer.boundary.detector import ThresholdRule
from seer.boundary.linear import LinearProbe, padding_labels
from seer.boundary.probe import n_layers, step0
from seer.data import load_examples

RULES = (ThresholdRule(0.5, 1), ThresholdRule(0.9, 2))


def collect(lm, examples, batch: int) -> dict:
    """Baseline end indices, every layer's step-0 window hidden states and end probability."""
    p = lm.sampling()
    layers = tuple(range(n_layers(lm.model)))
    ends, hidden, end_prob = [], {k: [] for k in layers}, []
    for i in range(0, len(examples), batch):
        t0 = time.perf_counter()
        inputs = [lm.prompt(e.prompt, e.image) for e in examples[i : i + batch]]
        ends += [g.stats.tokens for g in lm.generate(inputs, p)]
        prof = step0(lm, inputs, params=p, layers=(), hidden=layers)
        for k in layers:
            hidden[k].append(prof.hidden[k])
        end_prob.append(prof.end_prob)
        print(
            f"  {i + len(inputs)}/{len(examples)} rows ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
    return {
        "ids": [e.id for e in examples],
        "ends": ends,
        "hidden": {k: torch.cat(v) for k, v in hidden.items()},
        "end_prob": torch.cat(end_prob),
    }


def auc(score: np.ndarray, label: np.ndarray) -> float:
    """Position AUC (Mann-Whitney, ties halved): P(a padding position outscores an answer's)."""
    order = np.argsort(score, kind="mergesort")
    _, inverse, counts = np.unique(score[order], return_inverse=True, return_counts=True)
    ranks = np.empty(len(score))
    ranks[order] = (np.cumsum(counts) - (counts - 1) / 2)[inverse]
    pos = label.sum()
    neg = len(label) - pos
    return float((ranks[label].sum() - pos * (pos + 1) / 2) / (pos * neg))


def scores(profile: torch.Tensor, ends: list[int]) -> dict:
    """AUC and, per rule, the share of rows kept whole and the mean L* of (N, W) profiles."""
    n, w = profile.shape
    labels = padding_labels(ends, w).numpy().reshape(-1)
    out = {"auc": auc(profile.numpy().reshape(-1).astype(np.float64), labels)}
    target = np.minimum(np.asarray(ends) + 1, w)  # keep the end token (or the whole window)
    for rule in RULES:
        index = rule.find_all(profile)
        length = np.where(index >= 0, index + 1, w)
        key = f"tau{rule.tau}_run{rule.run}"
        out[key] = {
            "whole": float((length >= target).mean()),
            "mean_len": float(length.mean()),
            "found": float((index >= 0).mean()),
        }
    return out


def measure(calib: dict, evaluation: dict, l2: float) -> dict:
    rows = {}
    for k, h in calib["hidden"].items():
        t0 = time.perf_counter()
        probe = LinearProbe.fit(h, calib["ends"], layer=k, l2=l2)
        fit_s = time.perf_counter() - t0
        train = scores(probe.profile(h), calib["ends"])["auc"]
        rows[f"linear@L{k}"] = {
            **scores(probe.profile(evaluation["hidden"][k]), evaluation["ends"]),
            "train_auc": train,
            "fit_s": fit_s,
        }
    rows["end_prob"] = scores(evaluation["end_prob"].float(), evaluation["ends"])
    return rows


def table(rows: dict, n_calib: int, n_eval: int, width: int, ends: list[int]) -> str:
    head = f"{'signal':<12} {'AUC':>6} {'trainAUC':>8}"
    for rule in RULES:
        head += f" | tau {rule.tau} run {rule.run}: {'whole':>5} {'mean L*':>7} {'found':>5}"
    lines = [
        f"fit on {n_calib} calibration rows, scored on {n_eval} evaluation rows; window {width}; "
        f"evaluation answers: mean end {np.mean(ends):.1f}, mean end + 1 {np.mean(ends) + 1:.1f}",
        head,
    ]
    for name, r in rows.items():
        train = f"{r['train_auc']:8.4f}" if "train_auc" in r else f"{'-':>8}"
        line = f"{name:<12} {r['auc']:6.4f} {train}"
        for rule in RULES:
            s = r[f"tau{rule.tau}_run{rule.run}"]
            pad = " " * len(f" | tau {rule.tau} run {rule.run}:")
            line += f"{pad} {s['whole']:5.3f} {s['mean_len']:7.1f} {s['found']:5.3f}"
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="builtin")
    ap.add_argument("--data", default="builtin")
    ap.add_argument("--n", type=int, default=48, help="rows per part (calibration, evaluation)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--save", help="write the collected states here (torch.save)")
    ap.add_argument("--load", help="read collected states from here instead of generating")
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.load:
        data = torch.load(args.load)
    else:
        lm = seer.load(args.model)
        data = {}
        for part in ("calib", "eval"):
            examples = load_examples(args.data, n=args.n, part=part)
            print(f"{part}: {len(examples)} rows", flush=True)
            data[part] = collect(lm, examples, args.batch)
        if args.save:
            torch.save(data, args.save)
    calib, evaluation = data["calib"], data["eval"]
    assert not set(calib["ids"]) & set(evaluation["ids"]), "the parts overlap"
    rows = measure(calib, evaluation, args.l2)
    width = evaluation["end_prob"].shape[1]
    print(table(rows, len(calib["ids"]), len(evaluation["ids"]), width, evaluation["ends"]))
    n_calib, n_eval = len(calib["ids"]), len(evaluation["ids"])
    record = {
        "model": args.model,
        "data": args.data,
        "l2": args.l2,
        "width": width,
        "n_calib": n_calib,
        "n_eval": n_eval,
        "rows": rows,
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
