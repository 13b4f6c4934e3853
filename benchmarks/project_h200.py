"""A comparison record's table projected to LLaDA-8B and LaViDa on one H200 (a projection, not a
measurement: `seerbench.costmodel`): per config, ms per request at batch 1 and 64 and the
speed-up over its reference, from the record's measured windows, NFE and prompt lengths.

    python benchmarks/project_h200.py docs/results/compare/compare-builtin.json
    python benchmarks/project_h200.py RECORD --prompt-tokens 200 --batches 1,64
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seer.errors import SeerError
from seerbench import costmodel, runs


def show_projection(record: dict, prompt: float | None = None, batches=(1, 64)) -> None:
    print("\n".join(costmodel.projection_lines(record, batches=batches, prompt=prompt)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("record", type=Path, help="a compare record (bench_compare's JSON)")
    ap.add_argument(
        "--prompt-tokens",
        type=float,
        default=None,
        help="the large model's prompt length (default: the record's)",
    )
    ap.add_argument("--batches", default="1,64", help="rows per forward (comma-separated)")
    args = ap.parse_args(argv)
    try:
        batches = tuple(runs.positive(b) for b in args.batches.split(","))
    except argparse.ArgumentTypeError as e:
        ap.error(f"--batches: {e}")
    record = runs.read_bench(args.record, "compare")
    show_projection(record, args.prompt_tokens, batches)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SeerError as e:
        sys.exit(f"error: {e}")
