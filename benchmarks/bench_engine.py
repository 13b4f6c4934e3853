"""Batched serving benchmark: no truncation vs Seer with naive padding vs Seer with routing vs
oracle truncation with routing, at several batch sizes, on the built-in model's held-out split and
a synthetic long-tailed length mix (see `seer.bench.throughput` for the definitions).

    nice python benchmarks/bench_engine.py --n 64 --batches 8 32 64

Fixed seed, a warm-up of every method, a human table, and one JSON record as the last line.
"""

from __future__ import annotations

import argparse
import json

import torch

import seer
from seer.bench import throughput


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: the built-in model)")
    ap.add_argument("--n", type=int, default=64, help="held-out prompts (>= the largest batch)")
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64])
    ap.add_argument("--gen-length", type=int, default=64)
    ap.add_argument("--tau-pad", type=float, default=0.4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    lm = seer.load(args.model or "builtin")
    n = max(args.n, *args.batches, 16)
    record = throughput.run(lm, n=n, batches=tuple(args.batches), gen_length=args.gen_length,
                       tau_pad=args.tau_pad, seed=args.seed)  # fmt: skip
    throughput.show(record)
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
