"""`seer batch`: answer every row of a dataset, one JSON line per row, in input order.

    seer batch --model DIR --data prompts.jsonl --out answers.jsonl [--seer] [--resume]
    seer batch --model DIR --data prompts.jsonl --out answers.jsonl --ray 2 [--ray-address A]

`--data`: a .jsonl / .csv / .parquet / .arrow file, a datasets.save_to_disk folder, a built-in
source (builtin, builtin-vqa, builtin-v1, builtin-vqa-v1; builtin-v2, builtin-vqa2: other names
of the first two), or parallelbench:ROOT[/GROUP[/TASK]]
(`seer.data`). Rows are appended as they finish (`seer.batch`); `--resume` skips the ids
already in `--out`, once `<out>.meta.json` shows the same model weights, settings and data
(`seer.provenance`; anything else is refused in one line). `--ray N` runs N Ray actors
(`seer.distributed.ray_batch`, extra seer[ray]). At the end, a table of the rows and the mean
score per family (task) of the whole output, resumed rows included (`seer.data.score`: a
ParallelBench task's own metric, else exact match), and why the families without a score have
none.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from seer.commands import options

if TYPE_CHECKING:
    from seer.batch import BatchSummary
    from seer.distributed.ray_batch import RaySummary


def add_parser(sub) -> None:
    p = sub.add_parser("batch", help="answer every row of a dataset (JSON Lines out)")
    options.add_model(p, default=None)
    p.add_argument(
        "--data",
        required=True,
        help="dataset: .jsonl, .csv, .parquet, .arrow, a save_to_disk folder, "
        "builtin / builtin-vqa / builtin-v1 / builtin-vqa-v1 (also builtin-v2 / "
        "builtin-vqa2 for the first two), or "
        "parallelbench:ROOT[/GROUP[/TASK]] (a ParallelBench checkout's test "
        "files)",
    )
    p.add_argument(
        "--out",
        required=True,
        type=options.file_out,
        help="output file (.jsonl; .parquet with --ray)",
    )
    p.add_argument("--n", type=options.POSITIVE, default=None, help="only the first N rows")
    p.add_argument("--resume", action="store_true", help="skip the ids already in --out")
    options.add_engine(p, ("max_batch",))  # rows per engine batch (and per Ray actor call)
    g = p.add_argument_group("Ray (the ray extra)")
    g.add_argument(
        "--ray",
        type=options.POSITIVE,
        default=None,
        metavar="N",
        help="run N Ray actors, each with its own model and engine",
    )
    g.add_argument(
        "--ray-address", default=None, help="join this Ray cluster (default: start a local one)"
    )
    options.add_sampling(p)
    options.add_seer(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from pathlib import Path

    from seer import extras, progress
    from seer.batch import check_paths, done_ids
    from seer.data import load_examples
    from seer.errors import SeerError

    max_batch = options.engine_options(args)["max_batch"]
    s: BatchSummary | RaySummary
    if args.ray_address and not args.ray:
        raise SeerError("--ray-address needs --ray N (the number of actors)")
    out = Path(args.out)
    check_paths(out, args.data, parquet=bool(args.ray))  # before the data and the model
    if not args.resume and out.is_file() and out.stat().st_size > 0:
        raise SeerError(f"{out} exists; pass --resume to continue it or choose another --out")
    if args.ray:
        extras.require("ray", "seer batch --ray")
        if options.sampling(args).get("cache") == "prefix_lm":
            import seer
            from seer.engine.request import check_cache

            skeleton = seer.load(args.model, weights=False)  # refused before the actors start
            check_cache(skeleton, skeleton.sampling(**options.sampling(args)))
    with progress.status(f"reading {args.data}"):
        examples = load_examples(args.data, n=args.n)
    skipped = len(set(done_ids(out)) & {ex.id for ex in examples}) if args.resume else 0
    lm = None
    if not args.ray:
        from seer import provenance

        # a resume with other settings is refused before the (slow) model load
        provenance.check_resume(
            out,
            skipped,
            args.model,
            options.sampling(args),
            options.seer(args),
            args.dtype,
            args.data,
        )
        lm = options.load(args)  # its own line: what loads, from where
    tokens, t0 = 0, time.perf_counter()
    with (
        progress.one_line_per_kind(),  # a warning repeated per row shows once, then a count
        progress.bar(f"batch → {out.name}", total=len(examples)) as advance,
    ):
        advance(skipped)

        def on_rows(rows: int, n_tokens: int) -> None:
            nonlocal tokens
            tokens += n_tokens
            advance(rows, info=f"{tokens / (time.perf_counter() - t0):.0f} tok/s")

        if args.ray:
            from seer.distributed import batch

            device = args.device or "cpu"
            s = batch(
                options.model_path(args.model),
                examples,
                out,
                actors=args.ray,
                sampling=options.sampling(args),
                seer=options.seer(args),
                resume=args.resume,
                max_batch=max_batch,
                address=args.ray_address,
                gpus_per_actor=1 if device.startswith("cuda") else 0,
                device=device,
                dtype=args.dtype,
                progress=on_rows,
                data=args.data,
            )
        else:
            from seer.batch import run_batch

            assert lm is not None
            s = run_batch(
                lm,
                examples,
                out,
                params=options.params(lm, args),
                seer=options.seer(args),
                resume=args.resume,
                max_batch=max_batch,
                progress=on_rows,
                data=args.data,
                partial=lambda rows: advance(0, partial=rows),
            )
    rate = f"{s.rows / s.seconds:.2f} rows/s, {s.tokens / s.seconds:.1f} tok/s" if s.seconds else ""
    n_failed = getattr(s, "failed", 0)  # a Ray batch writes no error rows
    failed = f", {n_failed} could not be answered" if n_failed else ""
    print(
        f"{s.rows} rows ({s.skipped} already in {out}{failed}), {s.tokens} tokens in "
        f"{s.seconds:.1f} s ({rate}) -> {out}",
        file=sys.stderr,
    )
    if options.seer(args):
        _no_boundary(out, {ex.id for ex in examples})
    print_scores(examples, out)
    return 0


def _no_boundary(out, ids: set) -> None:
    """One line on this run's rows where Seer found no boundary (nothing when it always did)."""
    from seer.batch import read_rows
    from seer.boundary.detector import BoundaryReport, summary

    rows = [r for r in read_rows(out) if r.get("id") in ids and r.get("answer") is not None]
    reports = [
        BoundaryReport(
            r.get("detected"), None, None, None, "", r.get("window", 0), bool(r.get("fallback"))
        )
        for r in rows
    ]
    if (line := summary(reports)) is not None:
        print(line, file=sys.stderr)


def print_scores(examples, out) -> None:
    """The per-family score table of `out` on stderr (nothing when no row has a family or a
    score), then one line per family that cannot be scored, saying why."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from seer.batch import family_scores, read_rows
    from seer.data import unscorable

    summary = family_scores(examples, read_rows(out))
    if not any(s.scored for s in summary) and all(s.family in ("-", "all") for s in summary):
        return
    table = Table(title=f"scores in {out.name}", box=box.SIMPLE_HEAD)
    for name in ("family", "rows", "scored", "mean score"):
        table.add_column(name, justify="left" if name == "family" else "right")
    for s, after in zip(summary, [*summary[1:], None], strict=True):
        mean = "-" if s.mean is None else f"{s.mean:.3f}"
        last = after is not None and after.family == "all"
        table.add_row(s.family, str(s.rows), str(s.scored), mean, end_section=last)
    Console(stderr=True).print(table)
    why: dict[str, str] = {}
    for ex in examples:
        reason = unscorable(ex)
        if reason is not None:
            why.setdefault(ex.family or "-", reason)
    for family, reason in why.items():
        print(f"{family}: not scored: {reason}", file=sys.stderr)
