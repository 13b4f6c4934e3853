"""Calibration, the run behind `seer calibrate`: choose a model's Seer defaults on the user's
own prompts (the CLI only parses the flags and prints the report this returns).

The dataset (`seer.data`: JSON Lines, CSV, Parquet, a `save_to_disk` folder, a built-in
model's name for its own task) is de-duplicated and split by content into a calibration and an
evaluation side (`seer.data.split`: disjoint, `--calib-fraction`, `--seed`). No reference
answers are needed: the baseline's own answer (full window) says where each answer ends. On the
calibration side every signal is measured on the step-0 profiles (`seer.calibrate.sweep`:
sparsity per tensor / layer / theta under the paper's SNR rule and the change-point rule, the
end probability, the combined signal); the fastest settings of each family become candidates,
each with a fallback window for rows where it finds no boundary (the calibration answers' 95th
percentile). The oracle window (each answer cut right after its own end) answers the calibration
requests first, then the candidates, cheapest predicted window first, for real with the guard on
(`seer.calibrate.trials`): cost (answer positions x forwards), the guard's regrowths and their
cost, answers changed and the data's score against the full window. A candidate stops as soon as
it can no longer pass, and one whose predicted window is no smaller than a passing candidate's
final window is not run (it cannot be cheaper). The choice is the cheapest candidate within the
accuracy margin (`--margin`, default 2 points: the one-sided 95 % lower bound of the paired
difference); `--max-over` optionally limits the share of answers a candidate's window may cut
before the guard. When none passes, the calibration says "Seer is not recommended for this model
on this data" with the oracle window's own loss (a fixed window of the fallback's size is tried
and named when it passes), and chooses nothing. The evaluation side reports the choice and the
oracle window on requests the choice never saw, and how the best setting of each signal and the
paper's defaults do on its profiles. Writes to `--out`: report.json (every figure, the split's
ids), sparsity_aligned.png, sparsity_aligned_best.png and end_prob_aligned.png (the report's
"wrote" lists them). With `--write`, the choice goes into the model's seer.json (other keys
kept), which `seer.load` reads; a built-in model's folder inside the package is never changed
(a copy under `--out` gets the seer.json), and nothing is written when nothing was chosen or,
unless `--force`, when the choice fails its held-out check.

torch and the library are imported inside the functions: `seer --help` stays fast.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from seer.calibrate.report import (
    RULE,
    build_report,
    chosen_config,
    draw_figures,
    held_out_summary,
    verdict,
    write_defaults,
)

if TYPE_CHECKING:
    from seer.calibrate.trials import Trial


def data_for(model, data: str | None) -> str:
    """`--data`, or the built-in model's own task when it is one of the built-in models."""
    if data is not None:
        return data
    from seer.models.loader import BUILTIN

    if str(model) in BUILTIN:
        return str(model)
    from seer.errors import SeerError

    raise SeerError(
        "give --data FILE (your prompts: .jsonl, .csv, .parquet or a save_to_disk "
        "folder; a built-in model's name; or parallelbench:ROOT/TASK)"
    )


def run_calibration(
    model,
    n,
    out,
    write: bool,
    max_over: float | None = None,
    *,
    data=None,
    calib_fraction: float = 0.5,
    seed: int = 0,
    gen_length=None,
    margin: float | None = None,
    load=None,
    force: bool = False,
) -> dict:
    """Calibrate `model` on `data` (see the module docstring); returns the report. `max_over`:
    the share of calibration answers a setting's window may cut (None: no such constraint, the
    guard regrows them); `margin`: points of the data's score the choice may lose (default
    `trials.MARGIN`). `load(folder)` loads the model (default: `seer.load` under a spinner).
    `write`: store the choice in the model's seer.json (a built-in model's: in a copy of its
    folder under `out`), unless nothing is recommended, or (without `force`) the choice fails
    its held-out check: the report's "not_written" says why, "seer_json" where it went."""
    from seer import progress
    from seer.calibrate import trials as tr
    from seer.data import load_examples, split
    from seer.models.loader import model_folder

    model = str(model or "builtin")
    margin = tr.MARGIN if margin is None else margin
    data = data_for(model, data)
    folder = Path(model_folder(model))
    if write and not packaged(folder) and not os.access(folder, os.W_OK):
        from seer.errors import SeerError

        raise SeerError(
            f"--write: cannot write into {folder}; copy the model folder somewhere "
            "writable and calibrate the copy"
        )
    with progress.status(f"reading {data}"):  # a bad data file is an error before the model loads
        examples = load_examples(data, n=n)
        calib, evaluation = split(examples, calib_fraction, seed)
    lm = load(str(folder)) if load else _load(folder)
    sides = _Sides(lm, lm.sampling(gen_length=gen_length), calib, evaluation)
    g = sides.params.gen_length
    with progress.status("scoring every detector setting on the profiles"):
        scores = sides.sweep(max_over)
    c = _choose(sides, scores, max_over, margin)
    report = build_report(
        lm,
        data,
        g,
        sides.samples,
        scores,
        max_over,
        (calib, evaluation),
        c.best.setting if c.best else None,
    )
    report["split"].update(calib_fraction=calib_fraction, seed=seed)
    report.update(
        margin=margin,
        fallback=c.fallback,
        rule=RULE.format(margin=margin, small=tr.SMALL),
        recommended=c.best is not None,
        trials=[asdict(t) for t in c.trials],
        skipped=c.skipped,
        oracle=asdict(c.oracle),
        static_window=None if c.static is None else asdict(c.static),
        chosen_trial=None if c.best is None else asdict(c.best),
        held_out=held_out_summary(c.held_out, sides.samples["evaluation"]) if c.held_out else {},
    )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report["wrote"] = draw_figures(lm, sides.samples["calibration"], report, out)
    report["wrote"].insert(0, str(out / "report.json"))
    target = None
    if write:
        report["not_written"] = _refusal(report, force)
        if report["not_written"] is None:
            target = _writable_copy(folder, out) if packaged(folder) else folder
            report["seer_json"] = str(target / "seer.json")
    (out / "report.json").write_text(json.dumps(report, indent=2))
    if target is not None:
        assert c.best is not None  # a refusal otherwise
        calibration = _provenance(
            report, c.best, c.oracle, sides, data, seed, calib_fraction, margin
        )
        sparsity = report["calibration"]["best_sparsity"]["setting"]
        write_defaults(target, g, chosen_config(report), dict(sparsity), calibration)
    return report


def packaged(folder: Path) -> bool:
    """Whether `folder` is inside the installed package (a built-in model's own files)."""
    from importlib import resources

    assets = Path(str(resources.files("seer") / "assets")).resolve()
    return Path(folder).resolve().is_relative_to(assets)


def _writable_copy(folder: Path, out: Path) -> Path:
    """A copy of a built-in model's folder under `out` (the package's files are never
    changed): `seer.load(copy)` then reads the calibrated seer.json."""
    import shutil

    target = out / folder.name
    shutil.copytree(folder, target, dirs_exist_ok=True)
    return target


def _refusal(report: dict, force: bool) -> str | None:
    """Why `--write` stores nothing (None: it may write)."""
    if not report["recommended"]:
        return f"--write: nothing written: {verdict(report)}"
    ho = report["held_out"]["chosen"]
    if not ho["passes"] and not force:
        return (
            f"--write: nothing written: the choice fails its held-out check (score "
            f"{ho['diff']:+.1f} points [lower {ho['lower']:+.1f}] against the full window on "
            f"{ho['n']} requests, margin {report['margin']:g}); more data may help, or "
            "--force writes it anyway"
        )
    return None


class _Sides:
    """The calibration and evaluation requests, each encoded once, with their full-window
    baseline answers and step-0 profiles (`samples`); `trial` answers one side for real with a
    setting (or given windows) and the guard on."""

    def __init__(self, lm, params, calib: list, evaluation: list) -> None:
        from seer import progress
        from seer.batch import encoder
        from seer.calibrate import sweep

        self.lm, self.params = lm, params
        self.rows = {"calibration": calib, "evaluation": evaluation}
        encode = encoder(lm)
        self.inputs, self.samples = {}, {}
        for side, rows in self.rows.items():
            self.inputs[side] = [encode(lm, e) for e in rows]  # the baseline, probe and trials
            known = {id(e): q for e, q in zip(rows, self.inputs[side], strict=True)}
            with progress.bar(f"{side}: baseline answers + step-0 profiles", len(rows)) as bar:
                self.samples[side] = sweep.collect(
                    lm,
                    rows,
                    params.gen_length,
                    progress=bar,
                    score=_score,
                    encode=lambda lm, e, known=known: known[id(e)],
                )

    def sweep(self, max_over: float | None):
        """Every detector setting scored on the calibration side's profiles."""
        from seer.calibrate import sweep

        g = self.params.gen_length
        return sweep.sweep(self.samples["calibration"], g, max_over=max_over or 0.0)

    def trial(self, side: str, name: str, setting=None, windows=None, margin=None):
        """One setting (or fixed `windows`) answers one side with the guard on; `margin`:
        stop once it cannot pass (`trials.run`)."""
        from seer import progress
        from seer.calibrate import trials as tr

        rows = self.rows[side]
        with progress.bar(f"{side}: {name} with the guard", len(rows)) as advance:
            return tr.run(
                self.lm,
                self.inputs[side],
                self.samples[side],
                setting,
                name,
                params=self.params,
                score=_score,
                examples=rows,
                windows=windows,
                progress=advance,
                margin=margin,
                batch=TRIAL_BATCH,
            )

    def oracle(self, side: str):
        """The oracle window (each answer's true end) on one side, with the guard on."""
        from seer.calibrate import trials as tr

        windows = tr.oracle_windows(self.samples[side], self.params.gen_length, _bucket())
        return self.trial(side, "oracle window", None, windows)


TRIAL_BATCH = 16  # rows a trial answers between two checks of whether it can still pass


@dataclass(slots=True)
class _Choice:
    """What `_choose` ran and chose."""

    fallback: int  # the candidates' fallback window (calibration answers' 95th percentile)
    best: Trial | None  # the cheapest candidate within the margin (None: Seer not recommended)
    trials: list[Trial]  # the candidates run on the calibration side, in the order run
    skipped: list[str]  # candidates not run: their predicted window cannot beat the choice
    oracle: Trial  # the oracle window on the calibration side
    static: Trial | None  # the fallback window alone, for every row (run when nothing passed)
    held_out: dict  # the choice and the oracle on the evaluation side (empty: nothing chosen)


def _choose(sides: _Sides, scores, max_over: float | None, margin: float) -> _Choice:
    """The oracle window first (the bound on what a cut can keep), then the shortlist's
    candidates on the calibration side, cheapest predicted window first, each stopped once it
    cannot pass the margin and skipped once its predicted window is no smaller than a passing
    one's final window; the choice is the cheapest that passes (none: Seer is not recommended,
    and the fallback window alone is tried as a fixed window); then the choice and the oracle
    on the evaluation side."""
    from seer.calibrate import sweep
    from seer.calibrate import trials as tr
    from seer.errors import SeerError

    g, cal = sides.params.gen_length, sides.samples["calibration"]
    fallback = tr.fallback_window(cal, g, _bucket())
    candidates = sweep.shortlist(scores, fallback, max_over)
    if not candidates:
        raise SeerError(
            f"no detector setting cuts at most {max_over:g} of the calibration "
            "answers; raise --max-over or leave it out (the guard regrows a cut "
            "answer)"
        )
    oracle = sides.oracle("calibration")
    tr.pick([oracle], margin)
    predicted = {name: sweep.evaluate(st, cal, g).mean_window for name, st in candidates}
    trials: list[Trial] = []
    skipped: list[str] = []
    best: Trial | None = None
    for name, setting in sorted(candidates, key=lambda c: predicted[c[0]]):
        if best is not None and predicted[name] >= best.final_window:
            skipped.append(name)
            continue
        trials.append(sides.trial("calibration", name, setting, margin=margin))
        best = tr.pick(trials, margin)
    static = None
    if best is None:
        static = sides.trial(
            "calibration", f"fixed window {fallback}", None, [fallback] * len(cal), margin=margin
        )
        static.passes = tr.passes(static, margin) and not static.stopped
        return _Choice(fallback, None, trials, skipped, oracle, static, {})
    held_out = {
        "chosen": sides.trial("evaluation", best.name, best.setting),
        "oracle": sides.oracle("evaluation"),
    }
    tr.pick(list(held_out.values()), margin)
    return _Choice(fallback, best, trials, skipped, oracle, None, held_out)


def _provenance(
    report: dict,
    best,
    oracle,
    sides: _Sides,
    data: str,
    seed: int,
    calib_fraction: float,
    margin: float,
) -> dict:
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
        "evaluation": {
            k: ev[k]
            for k in ("cost_ratio", "window", "no_boundary", "regrown", "changed", "diff", "lower")
        },
    }


def _bucket() -> int:
    """The window's bucket (SeerConfig's default): windows are rounded up to a multiple of it."""
    from seer.boundary.config import SeerConfig

    return SeerConfig().bucket


def _load(folder: Path):
    import seer
    from seer import progress

    with progress.status(f"loading {folder.name}"):
        return seer.load(folder)


def _score(example, text: str) -> float | None:
    """`seer.data.score` (the data's own metric: ParallelBench's, a v2 family's checker, exact
    match otherwise), None for a row it cannot score."""
    from seer.data import scorable, score

    return score(example, text) if scorable(example) else None
