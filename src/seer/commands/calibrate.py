"""`seer calibrate`: choose a model's Seer defaults on the user's own prompts.

    seer calibrate --model DIR --data prompts.jsonl --out calib/ [--write]
    seer calibrate --model builtin --data builtin          # the built-in synthetic tasks

This module parses the flags and prints the report; the run (data, split, measurement, choice,
report.json, plots, seer.json) is `seer.calibrate.run.run_calibration`.
torch, rich and the library are imported inside the functions: `seer --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path

from seer.commands import options


def add_parser(sub) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure every step-0 signal on your prompts and choose the model's Seer defaults",
    )
    options.add_model(p, "builtin")
    p.add_argument(
        "--data",
        default=None,
        help="prompts: .jsonl / .csv / .parquet / a "
        "save_to_disk folder, builtin / builtin-vqa / builtin-v1 / builtin-vqa-v1 (also "
        "builtin-v2 / builtin-vqa2 for the first two), or "
        "parallelbench:ROOT/TASK "
        "(default: the built-in model's own task)",
    )
    p.add_argument(
        "--n",
        type=options.POSITIVE,
        default=None,
        help="use the first N rows (builtin: draw N requests; default 300)",
    )
    p.add_argument(
        "--calib-fraction",
        type=options.number(float, 0, 1, open_lo=True),
        default=0.5,
        help="share of the unique rows used to choose (the rest evaluates the choice)",
    )
    p.add_argument(
        "--seed",
        type=options.number(int),
        default=0,
        help="seed of the calibration/evaluation split",
    )
    options.add_sampling_flags(p, "gen_length")
    p.add_argument(
        "--out",
        default="calibration",
        type=options.folder_out,
        help="folder for the report and plots",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="store the choice in the model's seer.json (a built-in model's: in a "
        "copy of its folder under --out); refused when nothing passed",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with --write: store a choice that fails its held-out check",
    )
    p.add_argument(
        "--margin",
        type=options.number(float, 0, 100),
        default=None,
        help="points of the data's score the choice may lose against the full window "
        "(one-sided 95 %% lower bound; default 2)",
    )
    p.add_argument(
        "--max-over",
        type=options.number(float, 0, 1),
        default=None,
        help="share of calibration answers a setting's window may cut before the "
        "guard regrows them (default: no limit; 0 admits no cut)",
    )
    p.set_defaults(func=main)


def main(args) -> int:
    import sys

    from seer import progress
    from seer.calibrate import chosen_config
    from seer.errors import SeerError

    with progress.one_line_per_kind():  # a warning repeated per row shows once, then a count
        report = _run(args)
    _show(report)
    print(f"wrote {', '.join(report['wrote'])}", file=sys.stderr)
    if args.write:
        if report.get("not_written"):
            raise SeerError(report["not_written"])
        path = report["seer_json"]
        print(f"wrote {path}: {chosen_config(report)}", file=sys.stderr)
        if str(args.model) in options.BUILTIN:
            print(
                f"(a calibrated copy of {args.model}; the package's own folder is unchanged: "
                f"seer.load('{Path(path).parent}') or --model {Path(path).parent})",
                file=sys.stderr,
            )
    return 0


def _run(args) -> dict:
    from seer.calibrate import run_calibration

    return run_calibration(
        args.model,
        args.n,
        args.out,
        args.write,
        args.max_over,
        data=args.data,
        calib_fraction=args.calib_fraction,
        seed=args.seed,
        gen_length=args.gen_length,
        margin=args.margin,
        force=args.force,
        load=lambda folder: options.load(args, folder),
    )


def _console():
    from seer import progress

    return progress.console()


def _show(report: dict) -> None:
    from rich.table import Table

    n, g = report["n"], report["gen_length"]
    console = _console()
    title = (
        f"{report['model']}: Seer settings run with the guard on {n['calibration']} "
        f"calibration requests (window {g}, fallback {report['fallback']})"
    )
    table = Table(title=title)
    for col in (
        "detector",
        "setting",
        "cost",
        "window",
        "no boundary",
        "regrown",
        "changed",
        "worse / better",
        "score diff [95 % low]",
        "within margin",
    ):
        table.add_column(col, overflow="fold")
    chosen = report["chosen_trial"] or {}
    shown = [*report["trials"], report["oracle"]]
    if report.get("static_window"):
        shown.append(report["static_window"])
    for t in shown:
        mark = " (chosen)" if t["setting"] == chosen.get("setting") and t["setting"] else ""
        ok = "yes" if t["passes"] else "no"
        if t.get("stopped"):
            ok = f"no (stopped after {t['n']})"
        table.add_row(
            f"{t['name']}{mark}",
            _setting(t),
            f"{t['cost_ratio']:.2f}x",
            f"{t['window']:.1f}",
            f"{t['no_boundary']}/{t['n']}",
            f"{t['regrown']} ({t['regrowth_cost']:.0%} of cost)",
            str(t["changed"]),
            f"{t['worse']} / {t['better']}",
            f"{t['diff']:+.1f} [{t['lower']:+.1f}]",
            ok,
        )
    console.print(table)
    console.print(
        f"cost: answer positions x forwards against the full window's (1.00x); "
        f"choice: {report['rule']}"
    )
    if report.get("skipped"):
        console.print(
            f"not run (their predicted window cannot beat the choice): "
            f"{', '.join(report['skipped'])}"
        )
    if not report["recommended"]:
        from rich.markup import escape

        from seer.calibrate import verdict

        console.print(f"[bold yellow]{escape(verdict(report))}[/]")  # "[lower ...]" is no tag
    else:
        ho = report["held_out"]
        c, o = ho["chosen"], ho["oracle"]
        console.print(
            f"held out ({n['evaluation']} requests): chosen {c['cost_ratio']:.2f}x of the full "
            f"window's cost, window {c['window']:.1f} (oracle {o['window']:.1f}, "
            f"{o['cost_ratio']:.2f}x), no boundary in {c['no_boundary']}, guard regrew "
            f"{c['regrown']}, {c['changed']} answers changed, score {c['diff']:+.1f} points "
            f"[{c['lower']:+.1f}] against the full window"
            + ("" if c["passes"] else f": [yellow]outside the margin of {report['margin']:g}[/]")
        )
    em = report.get("baseline_score") or report["baseline_exact_match"]
    if em["calibration"] is not None and em["evaluation"] is not None:
        auc = report["auc"]["end_prob"]
        console.print(
            f"full-window score (the data's metric, seer.data.score): calibration "
            f"{em['calibration']:.1%}, evaluation {em['evaluation']:.1%}; "
            f"end-probability AUC {auc:.3f}"
        )


def _setting(trial: dict) -> str:
    setting = trial["setting"]
    if not setting and trial["name"].startswith("fixed window"):
        return "every row's window fixed, without Seer"
    if not setting:
        return "each row cut after its full-window answer's end"
    return f"{setting['signal']}: " + ", ".join(
        f"{k}={v}" for k, v in setting.items() if k != "signal"
    )
