"""`seer bench`: batched serving throughput and latency with and without Seer and routing
(the body is `seer.throughput`, shared with `benchmarks/bench_engine.py`)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from seer.commands import options

if TYPE_CHECKING:
    from seer.lm import DiffusionLM


def add_parser(sub) -> None:
    p = sub.add_parser(
        "bench", help="batched serving: throughput and latency with and without Seer and routing"
    )
    options.add_model(p, default="builtin", help="model folder (default: builtin)", threads=False)
    p.add_argument(
        "--n",
        type=options.POSITIVE,
        default=64,
        help="held-out prompts (>= the largest batch, and >= 16: each batch size "
        "runs at least 16 requests)",
    )
    p.add_argument(
        "--batches", type=options.POSITIVE, nargs="+", default=[8, 32, 64], help="batch sizes"
    )
    options.add_sampling_flags(p, "gen_length")
    options.add_engine(p, ("tau_pad",))
    p.add_argument("--threads", type=options.POSITIVE, default=1, help="torch CPU threads")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the synthetic workload's answer lengths (the held-out requests are the shipped ones)",
    )
    p.add_argument("--json", action="store_true", help="also print the JSON record")
    p.set_defaults(func=main)


def main(args) -> int:
    import torch

    from seer import progress, throughput
    from seer.errors import SeerError
    from seer.throughput import MIN_REQUESTS

    need = max(*args.batches, MIN_REQUESTS)
    if args.n < need:  # before the model loads
        raise SeerError(
            f"--n {args.n} is too small: each batch size runs at least "
            f"max(--batches, {MIN_REQUESTS}) = {need} requests; give --n {need} "
            "or more"
        )
    torch.set_num_threads(args.threads)
    lm = options.load(args)
    n = args.n
    with progress.one_line_per_kind():  # a warning repeated per row shows once, then a count
        record = _run(args, lm, n)
    throughput.show(record)
    if args.json:
        print(json.dumps(record))
    return 0


def _run(args, lm: DiffusionLM, n: int) -> dict:
    from seer import throughput

    return throughput.run(
        lm,
        n=n,
        batches=tuple(args.batches),
        gen_length=args.gen_length or lm.sampling().gen_length,
        tau_pad=options.engine_options(args)["tau_pad"],
        seed=args.seed,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
