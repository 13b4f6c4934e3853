"""Seer on an uncalibrated checkpoint: each signal's default settings on the built-in models with
their calibration removed, to choose what `seer=True` uses on a model without seer.json.

Each built-in model is copied to a temporary folder whose seer.json keeps only what is not Seer's
calibration (the multimodal model's `system_prompt`: it was trained without one), so `seer.load`
sees an uncalibrated model. Every candidate (`CANDIDATES`: each signal with SeerConfig's defaults,
guard on) answers the held-out requests of `seer.data` (evaluation side) at batch 1, greedy,
steps = window, interleaved request by request with the baseline (full window). Per candidate:

  cut       answers shorter than the baseline's (fewer tokens before the end token): what a user
            loses; the guard cannot see an answer that ended early inside a too-short window
  differ    answers whose tokens differ from the baseline's
  fired     requests where the guard had to grow the window (a cut it caught, paid in time)
  found     requests where the detector found a boundary
  window    mean final window; NFE; loop seconds (sum) and speedup over the baseline
  accuracy  mean `seer.data.score` (each family's metric, exact match otherwise)

The choice for unknown checkpoints is the candidate with the fewest cut answers summed over both
models, then the shortest total loop time. Every candidate runs once on the first request,
untimed, before any timing. Last line: the JSON record (`seerbench.runs`).

    python benchmarks/bench_uncalibrated.py --n 60
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import seer
from seer.boundary.config import SeerConfig
from seer.commands.options import model_path
from seer.data import score
from seerbench import runs
from seerbench.draws import held_out

MODELS = ("builtin", "builtin-vqa")
CANDIDATES = {
    "sparsity-snr": {"signal": "sparsity"},  # the paper's: layer 3, theta 1e-3, SNR rule
    "sparsity-changepoint": {"signal": "sparsity", "rule": "changepoint"},
    "eos_prob": {"signal": "eos_prob"},
    "combined": {"signal": "combined"},
}
CALIBRATION_KEYS = ("gen_length", "config", "sparsity_config", "calibration")


def uncalibrated_copy(name: str, into: Path) -> Path:
    """A copy of a built-in model without Seer's calibration in its seer.json."""
    folder = into / name
    shutil.copytree(model_path(name), folder)
    path = folder / "seer.json"
    if path.is_file():
        meta = {k: v for k, v in json.loads(path.read_text()).items() if k not in CALIBRATION_KEYS}
        path.write_text(json.dumps(meta))
        if not meta:
            path.unlink()
    return folder


def run_model(name: str, n: int, tmp: Path, seed: int = 0) -> dict:
    lm = seer.load(uncalibrated_copy(name, tmp))
    assert not lm.defaults.seer.config, "the copy must be uncalibrated"
    g = lm.sampling().gen_length
    configs = {k: SeerConfig.from_dict(v) for k, v in CANDIDATES.items()}
    examples = held_out(name, n, seed)
    prompts = [lm.prompt(e.prompt, e.image) for e in examples]  # encoded once
    runs.warm_windows(lm, prompts[0], g, 8)  # every window shape, before any timing
    runs.warm(lambda c: lm.generate(prompts[0], gen_length=g, seer=c), configs.values())
    stats = {
        k: dict.fromkeys(("cut", "differ", "fired", "found", "window", "nfe", "seconds"), 0)
        for k in ("baseline", *configs)
    }
    correct = dict.fromkeys(stats, 0)
    for ex, q in zip(examples, prompts, strict=True):
        base = lm.generate(q, gen_length=g)
        answers = {"baseline": base}
        for key, cfg in configs.items():
            answers[key] = lm.generate(q, gen_length=g, seer=cfg)
        for key, gen in answers.items():
            s = stats[key]
            s["cut"] += gen.stats.tokens < base.stats.tokens
            s["differ"] += gen.token_ids != base.token_ids
            s["fired"] += gen.stats.grown > 0
            s["found"] += gen.boundary is not None and gen.boundary.length is not None
            s["window"] += gen.stats.window
            s["nfe"] += gen.stats.nfe
            s["seconds"] += gen.stats.seconds
            correct[key] += score(ex, gen.text)
    out = {}
    for key, s in stats.items():
        out[key] = {
            **{k: s[k] for k in ("cut", "differ", "fired", "found")},
            "mean_window": s["window"] / n,
            "nfe": s["nfe"] / n,
            "seconds": s["seconds"],
            "speedup": stats["baseline"]["seconds"] / s["seconds"],
            "accuracy": correct[key] / n,
        }
    return {"gen_length": g, "n": n, "results": out}


def choose(results: dict) -> str:
    """Fewest cut answers over every model, then the shortest total loop time."""

    def cost(key):
        rows = [res["results"][key] for res in results.values()]
        return sum(r["cut"] for r in rows), sum(r["seconds"] for r in rows)

    return min(CANDIDATES, key=cost)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    runs.add_arguments(
        ap, n=60, skip=("data", "repeats"), help={"n": "held-out requests per model"}
    )
    args = ap.parse_args()
    session = runs.Session("uncalibrated", args)
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: run_model(name, args.n, Path(tmp), args.seed) for name in MODELS}
    head = (
        "model",
        "method",
        "cut",
        "differ",
        "fired",
        "found",
        "window",
        "NFE",
        "loop s",
        "speedup",
        "acc",
    )
    print(
        "{:12s} {:21s} {:>4s} {:>6s} {:>5s} {:>5s} {:>6s} {:>5s} {:>7s} {:>7s} {:>6s}".format(*head)
    )
    for name, res in results.items():
        for key, r in res["results"].items():
            print(
                f"{name:12s} {key:21s} {r['cut']:4d} {r['differ']:6d} {r['fired']:5d} "
                f"{r['found']:5d} {r['mean_window']:6.1f} {r['nfe']:5.1f} {r['seconds']:7.2f} "
                f"{r['speedup']:6.2f}x {r['accuracy']:6.1%}"
            )
    chosen = choose(results)
    print(f"safest default for an unknown checkpoint: {chosen} {CANDIDATES[chosen]}")
    session.finish(
        results,
        model=",".join(MODELS),
        source=",".join(MODELS),
        candidates=CANDIDATES,
        chosen=chosen,
    )


if __name__ == "__main__":
    main()
