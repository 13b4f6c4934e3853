"""`seer calibrate`: choose a model's Seer defaults on the user's own prompts.

    seer calibrate --model DIR --data prompts.jsonl --out calib/ [--write]
    seer calibrate --model builtin --data builtin          # the built-in synthetic tasks

This module parses the flags and prints the report; the run (data, split, measurement, choice,
report.json, plots, seer.json) is `seer.calibration.run_calibration`.
torch, rich and the library are imported inside the functions: `seer --help` stays fast.
"""

from __future__ import annotations

from seer.commands import options


def add_parser(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure every step-0 signal on your prompts and choose the model's Seer defaults",
    )
    options.add_model(p, "builtin")
    p.add_argument("--data", default=None, help="prompts: .jsonl / .csv / .parquet / a "
                   "save_to_disk folder, builtin / builtin-vqa / builtin-v1 / builtin-vqa-v1 (also "
                   "builtin-v2 / builtin-vqa2 for the first two), or "
                   "parallelbench:ROOT/TASK "
                   "(default: the built-in model's own task)")  # fmt: skip
    p.add_argument("--n", type=options.POSITIVE, default=None,
                   help="use the first N rows (builtin: draw N requests; default 300)")  # fmt: skip
    p.add_argument("--calib-fraction", type=options.number(float, 0, 1, open_lo=True),
                   default=0.5, help="share of the unique rows used to choose (the rest "
                   "evaluates the choice)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of the calibration/evaluation split")
    p.add_argument("--gen-length", type=options.POSITIVE, default=None,
                   help="answer window (default: the model's)")  # fmt: skip
    p.add_argument("--out", default="calibration", help="folder for the report and plots")
    p.add_argument("--write", action="store_true", help="store the choice in the model's seer.json")
    p.add_argument("--max-over", type=options.number(float, 0, 1), default=0.0,
                   help="share of calibration answers it may cut short (default 0)")  # fmt: skip
    p.set_defaults(func=main)


def main(args) -> int:
    from seer.calibration import chosen_config, run_calibration
    from seer.models.loader import model_folder

    report = run_calibration(args.model, args.n, args.out, args.write, args.max_over,
                             data=args.data, calib_fraction=args.calib_fraction, seed=args.seed,
                             gen_length=args.gen_length,
                             load=lambda folder: options.load(args, folder))  # fmt: skip
    _show(report)
    if args.write:
        path = model_folder(str(args.model or "builtin")) / "seer.json"
        _console().print(f"wrote {path}: {chosen_config(report)}")
    return 0


def _console():
    from seer import progress

    return progress.console()


def _show(report: dict) -> None:
    from rich.table import Table

    n = report["n"]
    title = f"{report['model']}: Seer detectors, chosen on {n['calibration']} requests, "
    table = Table(title=title + f"evaluated on {n['evaluation']} others")
    for col in ("detector", "setting", "calib cut", "calib window", "eval cut", "eval window",
                "eval found", "eval MAE"):  # fmt: skip
        table.add_column(col, overflow="fold")
    names = {"chosen": "chosen", "paper_defaults": "paper's defaults",
             "best_sparsity_snr": "sparsity, SNR rule", "best_sparsity": "sparsity, best rule",
             "best_eos_prob": "end probability", "best_combined": "combined"}  # fmt: skip
    for key, label in names.items():
        ev = report["evaluation"].get(key)
        if ev is None:
            continue
        cal_s = report["chosen"] if key == "chosen" else report["calibration"][key]
        setting = ", ".join(f"{k}={v}" for k, v in ev["setting"].items() if k != "signal")
        table.add_row(
            label, f"{ev['setting']['signal']}: {setting}", f"{cal_s['cut']}/{cal_s['n']}",
            f"{cal_s['mean_window']:.1f}", f"{ev['cut']}/{ev['n']}", f"{ev['mean_window']:.1f}",
            f"{ev['detected']:.0%}", f"{ev['mae']:.1f}",
        )  # fmt: skip
    console = _console()
    console.print(table)
    em = report.get("baseline_score") or report["baseline_exact_match"]
    if em["calibration"] is not None and em["evaluation"] is not None:
        auc = report["auc"]["end_prob"]
        console.print(f"baseline score (the data's metric, seer.data.score): calibration "
                      f"{em['calibration']:.1%}, evaluation {em['evaluation']:.1%}; "
                      f"end-probability AUC {auc:.3f}")  # fmt: skip
