"""Calibration, the run behind `seer calibrate`: choose a model's Seer defaults on the user's
own prompts (the CLI only parses the flags and prints the report this returns).

The dataset (`seer.data`: JSON Lines, CSV, Parquet, a `save_to_disk` folder, a built-in
model's name for its own task) is de-duplicated and split by content into a calibration and an
evaluation side (`seer.data.split`: disjoint, `--calib-fraction`, `--seed`). No reference
answers are needed: the baseline's own answer (full window) says where each answer ends. On the
calibration side every signal is measured on the step-0 profiles (`seer.boundary.sweep`:
sparsity per tensor / layer / theta under the paper's SNR rule and the change-point rule, the
end probability, the combined signal); the fastest settings of each family become candidates,
each with a fallback window for rows where it finds no boundary (the calibration answers' 95th
percentile). Each candidate then answers the calibration requests for real with the guard on
(`seer.boundary.trials`): its cost (answer positions x forwards), the guard's regrowths and their
cost, answers changed and the data's score against the full window. The choice is the cheapest
candidate within the accuracy margin (`--margin`, default 2 points: the one-sided 95 % lower
bound of the paired difference); `--max-over` optionally limits the share of answers a
candidate's window may cut before the guard. The evaluation side reports the choice and the
oracle window (cut at each answer's true end) on requests the choice never saw, and how the best
setting of each signal and the paper's defaults do on its profiles. Writes to `--out`:
report.json (every figure, the split's ids), sparsity_aligned.png, sparsity_aligned_best.png
and end_prob_aligned.png; with `--write`, the choice goes into the model's seer.json (other keys
kept), which `seer.load` reads.

torch and the library are imported inside the functions: `seer --help` stays fast.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seer.lm import DiffusionLM


def data_for(model, data: str | None) -> str:
    """`--data`, or the built-in model's own task when it is one of the built-in models."""
    if data is not None:
        return data
    from seer.models.loader import BUILTIN

    if str(model) in BUILTIN:
        return str(model)
    from seer.errors import SeerError

    raise SeerError("give --data FILE (your prompts: .jsonl, .csv, .parquet or a save_to_disk "
                    "folder; a built-in model's name; or parallelbench:ROOT/TASK)")  # fmt: skip


def run_calibration(model, n, out, write: bool, max_over: float | None = None, *, data=None,
                    calib_fraction: float = 0.5, seed: int = 0, gen_length=None,
                    margin: float | None = None, load=None) -> dict:  # fmt: skip
    """Calibrate `model` on `data` (see the module docstring); returns the report. `max_over`:
    the share of calibration answers a setting's window may cut (None: no such constraint, the
    guard regrows them); `margin`: points of the data's score the choice may lose (default
    `trials.MARGIN`). `load(folder)` loads the model (default: `seer.load` under a spinner)."""
    from seer import progress
    from seer.boundary import trials as tr
    from seer.data import load_examples, split
    from seer.models.loader import model_folder

    model = str(model or "builtin")
    margin = tr.MARGIN if margin is None else margin
    data = data_for(model, data)
    folder = Path(model_folder(model))
    with progress.status(f"reading {data}"):  # a bad data file is an error before the model loads
        examples = load_examples(data, n=n)
        calib, evaluation = split(examples, calib_fraction, seed)
    lm = load(str(folder)) if load else _load(folder)
    sides = _Sides(lm, lm.sampling(gen_length=gen_length), calib, evaluation)
    g = sides.params.gen_length
    with progress.status("scoring every detector setting on the profiles"):
        scores = sides.sweep(max_over)
    fallback, best, trials, oracle, held_out = _choose(sides, scores, max_over, margin)
    report = _report(lm, data, g, sides.samples, scores, max_over, (calib, evaluation),
                     best.setting)  # fmt: skip
    report["split"].update(calib_fraction=calib_fraction, seed=seed)
    report.update(
        margin=margin,
        fallback=fallback,
        rule=_RULE.format(margin=margin, small=tr.SMALL),
        trials=[asdict(t) for t in trials],
        oracle=asdict(oracle),
        chosen_trial=asdict(best),
        held_out=_held_out(held_out, sides.samples["evaluation"]),
    )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _plots(lm, sides.samples["calibration"], report, out)
    (out / "report.json").write_text(json.dumps(report, indent=2))
    if write:
        calibration = _provenance(report, best, oracle, sides, data, seed, calib_fraction, margin)
        sparsity = report["calibration"]["best_sparsity"]["setting"]
        write_defaults(folder, g, chosen_config(report), dict(sparsity), calibration)
    return report


class _Sides:
    """The calibration and evaluation requests, each encoded once, with their full-window
    baseline answers and step-0 profiles (`samples`); `trial` answers one side for real with a
    setting (or given windows) and the guard on."""

    def __init__(self, lm, params, calib: list, evaluation: list) -> None:
        from seer import progress
        from seer.batch import encoder
        from seer.boundary import sweep

        self.lm, self.params = lm, params
        self.rows = {"calibration": calib, "evaluation": evaluation}
        encode = encoder(lm)
        self.inputs, self.samples = {}, {}
        for side, rows in self.rows.items():
            self.inputs[side] = [encode(lm, e) for e in rows]  # the baseline, probe and trials
            known = {id(e): q for e, q in zip(rows, self.inputs[side], strict=True)}
            with progress.bar(f"{side}: baseline answers + step-0 profiles", len(rows)) as bar:
                self.samples[side] = sweep.collect(
                    lm, rows, params.gen_length, progress=bar, score=_score,
                    encode=lambda lm, e, known=known: known[id(e)],
                )  # fmt: skip

    def sweep(self, max_over: float | None):
        """Every detector setting scored on the calibration side's profiles."""
        from seer.boundary import sweep

        g = self.params.gen_length
        return sweep.sweep(self.samples["calibration"], g, max_over=max_over or 0.0)

    def trial(self, side: str, name: str, setting=None, windows=None):
        from seer import progress
        from seer.boundary import trials as tr

        rows = self.rows[side]
        with progress.bar(f"{side}: {name} with the guard", len(rows)) as advance:
            return tr.run(self.lm, self.inputs[side], self.samples[side], setting, name,
                          params=self.params, score=_score, examples=rows, windows=windows,
                          progress=advance)  # fmt: skip

    def oracle(self, side: str):
        """The oracle window (each answer's true end) on one side, with the guard on."""
        from seer.boundary import trials as tr

        windows = tr.oracle_windows(self.samples[side], self.params.gen_length, _bucket())
        return self.trial(side, "oracle window", None, windows)


def _choose(sides: _Sides, scores, max_over: float | None, margin: float):
    """The shortlist's trials on the calibration side, the choice (the cheapest within the
    margin, else the closest) and the choice and the oracle on the evaluation side."""
    from seer.boundary import sweep
    from seer.boundary import trials as tr
    from seer.errors import SeerError

    fallback = tr.fallback_window(sides.samples["calibration"], sides.params.gen_length,
                                  _bucket())  # fmt: skip
    candidates = sweep.shortlist(scores, fallback, max_over)
    if not candidates:
        raise SeerError(f"no detector setting cuts at most {max_over:g} of the calibration "
                        "answers; raise --max-over or leave it out (the guard regrows a cut "
                        "answer)")  # fmt: skip
    trials = [sides.trial("calibration", name, setting) for name, setting in candidates]
    oracle = sides.oracle("calibration")
    best = tr.pick(trials, margin)
    tr.pick([oracle], margin)
    if best is None:  # nothing within the margin: the closest one, said in the report
        best = max(trials, key=lambda t: (t.lower, -t.cost))
    held_out = {
        "chosen": sides.trial("evaluation", best.name, best.setting),
        "oracle": sides.oracle("evaluation"),
    }
    tr.pick(list(held_out.values()), margin)
    return fallback, best, trials, oracle, held_out


def _provenance(report: dict, best, oracle, sides: _Sides, data: str, seed: int,
                calib_fraction: float, margin: float) -> dict:  # fmt: skip
    """seer.json's "calibration" entry: where the choice came from and how it did held out."""
    ev = report["held_out"]["chosen"]
    return {
        "data": data,
        "n_calibration": len(sides.rows["calibration"]),
        "n_evaluation": len(sides.rows["evaluation"]),
        "split_seed": seed,
        "calib_fraction": calib_fraction,
        "margin": margin,
        "cost_ratio": round(best.cost_ratio, 4),
        "mean_window": round(best.window, 2),
        "oracle_window": round(oracle.window, 2),
        "evaluation": {k: ev[k] for k in ("cost_ratio", "window", "no_boundary", "regrown",
                                          "changed", "diff", "lower")},
    }  # fmt: skip


_RULE = ("the cheapest setting (answer positions x forwards, the guard on) whose paired score "
         "difference against the full window has a one-sided 95 % lower bound >= -{margin:g} "
         "points (on fewer than {small} scored requests: at most {margin:g} % of them made "
         "worse)")  # fmt: skip


def _bucket() -> int:
    """The window's bucket (SeerConfig's default): windows are rounded up to a multiple of it."""
    from seer.boundary.config import SeerConfig

    return SeerConfig().bucket


def _held_out(trials: dict, samples) -> dict:
    """The held-out trials, rounded for the report, with the rows' true ends beside them."""
    out = {k: {f: (round(v, 4) if isinstance(v, float) else v) for f, v in asdict(t).items()}
           for k, t in trials.items()}  # fmt: skip
    out["answer_length"] = {
        "mean": float(sum(s.true_len for s in samples) / max(1, len(samples))),
        "max": max((s.true_len for s in samples), default=0),
    }
    return out


def chosen_config(report: dict) -> dict:
    """The Seer options a report chose, as seer.json's "config" stores them."""
    return {k: v for k, v in report["chosen"]["setting"].items() if k != "margin"}


def _load(folder: Path):
    import seer
    from seer import progress

    with progress.status(f"loading {folder.name}"):
        return seer.load(folder)


def _report(
    lm: DiffusionLM, data, g: int, samples: dict, scores, max_over, sides, chosen: dict
) -> dict:
    from seer.boundary import sweep

    cal_s, ev_s = samples["calibration"], samples["evaluation"]
    level = max_over or 0.0
    best = {
        "best_sparsity_snr": sweep.choose([s for s in scores if "rule" not in s.setting
                                         and s.setting["signal"] == "sparsity"], None, level),
        "best_sparsity": sweep.choose(scores, "sparsity", level),
        "best_eos_prob": sweep.choose(scores, "eos_prob", level),
        "best_combined": sweep.choose(scores, "combined", level),
    }  # fmt: skip
    paper = sweep.paper_score(scores)
    if paper is not None:
        best["paper_defaults"] = paper
    on_cal = sweep.evaluate(chosen, cal_s, g)
    on_eval = {k: sweep.evaluate(s.setting, ev_s, g) for k, s in best.items()}
    on_eval["chosen"] = sweep.evaluate(chosen, ev_s, g)
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
        },  # fmt: skip
        "chosen": asdict(on_cal),
        "calibration": {k: asdict(s) for k, s in best.items()},
        "evaluation": {k: asdict(s) for k, s in on_eval.items()},
    }


def _accuracy(samples) -> float | None:
    known = [s.correct for s in samples if s.correct is not None]
    return sum(known) / len(known) if known else None


def _score(example, text: str) -> float | None:
    """`seer.data.score` (the data's own metric: ParallelBench's, a v2 family's checker, exact
    match otherwise), None for a row it cannot score."""
    from seer.data import scorable, score

    return score(example, text) if scorable(example) else None


def _mean_score(samples) -> float | None:
    known = [s.score for s in samples if s.score is not None]
    return sum(known) / len(known) if known else None


def _plots(lm: DiffusionLM, samples, report: dict, out: Path) -> None:
    from seer import plots, progress
    from seer.boundary import sweep

    k, n_layers = 8, samples[0].sparsity.shape[1]
    theta = sweep.THETAS.index(1e-3)
    with progress.status("drawing the plots"):
        curves = {
            f"layer {i}": sweep.aligned_mean(samples, lambda s, i=i: s.sparsity[0, i, theta], k)
            for i in range(n_layers)
        }
        plots.aligned(curves, out / "sparsity_aligned.png",
                      f"{lm.name}: step-0 sparsity (down input, θ=1e-3) around the true end",
                      "fraction |a| < 1e-3")  # fmt: skip
        best = report["calibration"]["best_sparsity"]["setting"]
        ti, hi = ("down", "gate").index(best["tensor"]), sweep.THETAS.index(best["theta"])
        curves = {f"layer {i}": sweep.aligned_mean(samples, lambda s, i=i: s.sparsity[ti, i, hi], k)
                  for i in range(n_layers)}  # fmt: skip
        plots.aligned(curves, out / "sparsity_aligned_best.png",
                      f"step-0 sparsity ({best['tensor']}, θ={best['theta']:g}) around the true "
                      "end", "sparsity")  # fmt: skip
        plots.aligned({"P(end token)": sweep.aligned_mean(samples, lambda s: s.end_prob, k)},
                      out / "end_prob_aligned.png",
                      "step-0 P(end token) around the true end", "probability")  # fmt: skip


def write_defaults(folder: Path, g: int, config: dict, sparsity: dict, calibration: dict) -> Path:
    """Store the calibrated defaults in folder/seer.json, keeping the keys it sets nothing for."""
    path = folder / "seer.json"
    meta = json.loads(path.read_text()) if path.is_file() else {}
    meta.update(gen_length=g, config=config, sparsity_config=sparsity, calibration=calibration)
    path.write_text(json.dumps(meta, indent=2) + "\n")
    return path
