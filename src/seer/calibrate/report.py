"""The calibration's report: what `run_calibration` returns and writes (report.json, the three
step-0 figures, the chosen defaults in seer.json), and the one-line verdict of a calibration that
recommends nothing."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seer.lm import DiffusionLM


def verdict(report: dict) -> str:
    """The one-line answer of a calibration that recommends nothing ("" when it chose)."""
    if report["recommended"]:
        return ""
    o = report["oracle"]
    text = (
        f"Seer is not recommended for this model on this data: no setting kept the margin "
        f"of {report['margin']:g} points, and even the oracle window (each answer cut right "
        f"after its own end) scored {o['diff']:+.1f} points [lower {o['lower']:+.1f}] "
        f"against the full window on {o['n']} calibration requests"
    )
    st = report.get("static_window")
    if st is not None and st["passes"]:
        text += (
            f"; a fixed window of {report['fallback']} positions kept it "
            f"({st['diff']:+.1f} points [lower {st['lower']:+.1f}]): "
            f"--gen-length {report['fallback']} without Seer"
        )
    return text


RULE = (
    "the cheapest setting (answer positions x forwards, the guard on) whose paired score "
    "difference against the full window has a one-sided 95 % lower bound >= -{margin:g} "
    "points (on fewer than {small} scored requests: at most {margin:g} % of them made "
    "worse)"
)


def held_out_summary(trials: dict, samples) -> dict:
    """The held-out trials, rounded for the report, with the rows' true ends beside them."""
    out = {
        k: {f: (round(v, 4) if isinstance(v, float) else v) for f, v in asdict(t).items()}
        for k, t in trials.items()
    }
    out["answer_length"] = {
        "mean": float(sum(s.true_len for s in samples) / max(1, len(samples))),
        "max": max((s.true_len for s in samples), default=0),
    }
    return out


def chosen_config(report: dict) -> dict:
    """The Seer options a report chose, as seer.json's "config" stores them ({}: none)."""
    if report.get("chosen") is None:
        return {}
    return {k: v for k, v in report["chosen"]["setting"].items() if k != "margin"}


def build_report(
    lm: DiffusionLM, data, g: int, samples: dict, scores, max_over, sides, chosen: dict | None
) -> dict:
    from seer.calibrate import sweep

    cal_s, ev_s = samples["calibration"], samples["evaluation"]
    level = max_over or 0.0
    best = {
        "best_sparsity_snr": sweep.choose(
            [s for s in scores if "rule" not in s.setting and s.setting["signal"] == "sparsity"],
            None,
            level,
        ),
        "best_sparsity": sweep.choose(scores, "sparsity", level),
        "best_eos_prob": sweep.choose(scores, "eos_prob", level),
        "best_combined": sweep.choose(scores, "combined", level),
    }
    paper = sweep.paper_score(scores)
    if paper is not None:
        best["paper_defaults"] = paper
    on_cal = None if chosen is None else sweep.evaluate(chosen, cal_s, g)
    on_eval: dict[str, dict | None] = {
        k: asdict(sweep.evaluate(s.setting, ev_s, g)) for k, s in best.items()
    }
    on_eval["chosen"] = None if chosen is None else asdict(sweep.evaluate(chosen, ev_s, g))
    n_layers = cal_s[0].sparsity.shape[1]
    return {
        "model": lm.name,
        "data": data,
        "gen_length": g,
        "max_over": max_over,
        "split": {
            "calibration_ids": [e.id for e in sides[0]],
            "evaluation_ids": [e.id for e in sides[1]],
        },
        "n": {"calibration": len(cal_s), "evaluation": len(ev_s)},
        "baseline_exact_match": {side: _accuracy(s) for side, s in samples.items()},
        "baseline_score": {side: _mean_score(s) for side, s in samples.items()},
        "auc": {
            "thetas": list(sweep.THETAS),
            **{
                t: [
                    [
                        sweep.separation(cal_s, lambda s, ti=ti, k=k, h=h: s.sparsity[ti, k, h])
                        for h in range(len(sweep.THETAS))
                    ]
                    for k in range(n_layers)
                ]
                for ti, t in enumerate(("down", "gate"))
            },
            "end_prob": sweep.separation(cal_s, lambda s: s.end_prob),
        },
        "chosen": None if on_cal is None else asdict(on_cal),
        "calibration": {k: asdict(s) for k, s in best.items()},
        "evaluation": on_eval,
    }


def _accuracy(samples) -> float | None:
    known = [s.correct for s in samples if s.correct is not None]
    return sum(known) / len(known) if known else None


def _mean_score(samples) -> float | None:
    known = [s.score for s in samples if s.score is not None]
    return sum(known) / len(known) if known else None


def draw_figures(lm: DiffusionLM, samples, report: dict, out: Path) -> list[str]:
    """Draws the three step-0 figures into `out`; returns their paths."""
    from seer import plots, progress
    from seer.calibrate import sweep

    k, n_layers = 8, samples[0].sparsity.shape[1]
    theta = sweep.THETAS.index(1e-3)
    with progress.status("drawing the plots"):
        curves = {
            f"layer {i}": sweep.aligned_mean(samples, lambda s, i=i: s.sparsity[0, i, theta], k)
            for i in range(n_layers)
        }
        plots.aligned(
            curves,
            out / "sparsity_aligned.png",
            f"{lm.name}: step-0 sparsity (down input, θ=1e-3) around the true end",
            "fraction |a| < 1e-3",
        )
        best = report["calibration"]["best_sparsity"]["setting"]
        ti, hi = ("down", "gate").index(best["tensor"]), sweep.THETAS.index(best["theta"])
        curves = {
            f"layer {i}": sweep.aligned_mean(samples, lambda s, i=i: s.sparsity[ti, i, hi], k)
            for i in range(n_layers)
        }
        plots.aligned(
            curves,
            out / "sparsity_aligned_best.png",
            f"step-0 sparsity ({best['tensor']}, θ={best['theta']:g}) around the true end",
            "sparsity",
        )
        plots.aligned(
            {"P(end token)": sweep.aligned_mean(samples, lambda s: s.end_prob, k)},
            out / "end_prob_aligned.png",
            "step-0 P(end token) around the true end",
            "probability",
        )
    names = ("sparsity_aligned.png", "sparsity_aligned_best.png", "end_prob_aligned.png")
    return [str(out / name) for name in names]


def write_defaults(folder: Path, g: int, config: dict, sparsity: dict, calibration: dict) -> Path:
    """Store the calibrated defaults in folder/seer.json, keeping the keys it sets nothing for."""
    path = folder / "seer.json"
    meta = json.loads(path.read_text()) if path.is_file() else {}
    meta.update(gen_length=g, config=config, sparsity_config=sparsity, calibration=calibration)
    path.write_text(json.dumps(meta, indent=2) + "\n")
    return path
