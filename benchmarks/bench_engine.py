"""Batched serving benchmark: no truncation vs Seer with naive padding vs Seer with routing vs
oracle truncation with routing, at several batch sizes, on the built-in model's held-out split and
a synthetic long-tailed length mix (see `seer.throughput` for the definitions).

    nice python benchmarks/bench_engine.py --n 64 --batches 8 32 64

Fixed seed, a warm-up of every method, a human table, and the JSON record as the last
line (`seerbench.runs`).
"""

from __future__ import annotations

import argparse

import seer
from seer import throughput
from seerbench import runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: the built-in model)")
    runs.add_arguments(
        ap, n=64, skip=("data", "repeats"), help={"n": "held-out prompts (>= the largest batch)"}
    )
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--gen-length", type=int, default=64)
    ap.add_argument("--tau-pad", type=float, default=0.4)
    args = ap.parse_args(argv)
    session = runs.Session("engine", args)
    lm = seer.load(args.model or "builtin")
    n = max(args.n, *args.batches, 16)
    record = throughput.run(
        lm,
        n=n,
        batches=tuple(args.batches),
        gen_length=args.gen_length,
        tau_pad=args.tau_pad,
        seed=args.seed,
    )
    throughput.show(record)
    session.emit(session.adopt(dict(record, source="builtin")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
