"""How many intra-op threads pay for a model of a given size on this CPU.

    OMP_NUM_THREADS= python benchmarks/bench_threads.py --out docs/results/threads.txt

For the shipped models and random LLaDA models of growing width (the built-in tokenizer, random
weights: the speed of a forward does not depend on the values), one `generate` of a fixed
prompt (window 64, 16 steps, greedy) runs with 1 thread and with every core, alternately, each
`--repeats` times; the table gives the fastest of each and the speed-up of every core over one
thread (below 1: every core is slower). `seer.threads.SMALL_MODEL`
(the size below which Seer picks one thread) is read off this table: the smallest model where
every core is faster than one thread by more than the noise. Prints a table and one JSON record
as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

import seer
from seer.models.factory import make_random_checkpoint

SIZES = ((256, 4), (512, 4), (768, 6), (1024, 8))  # (width, layers) of the random models


def timed(lm, threads: int, repeats: int) -> float:
    """The fastest of `repeats` generates at `threads` intra-op threads."""
    torch.set_num_threads(threads)
    p = lm.sampling(gen_length=64, steps=16)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        lm.generate("add 4 and 5", p)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    record = {
        "bench": "threads",
        "cores": cores,
        "torch": torch.__version__,
        "rows": [],
        "machine": platform.machine(),
        "load_before": os.getloadavg()[0],
    }
    lines = [
        f"{'model':<22} {'params':>10} {'1 thread s':>11} {f'{cores} threads s':>12} "
        f"{'all cores x':>11}"
    ]
    with tempfile.TemporaryDirectory() as tmp:
        models = [("builtin", "builtin"), ("builtin-vqa", "builtin-vqa")]
        for width, layers in SIZES:
            folder = Path(tmp) / f"w{width}"
            make_random_checkpoint("llada", folder, layers=layers, width=width)
            models.append((f"llada w{width} x{layers}", str(folder)))
        for name, path in models:
            lm = seer.load(path, threads=1)
            n = sum(t.numel() for t in lm.model.parameters())
            timed(lm, 1, 1)  # warm-up
            one = many = float("inf")
            for _ in range(args.repeats):  # alternate, so machine noise hits both alike
                one = min(one, timed(lm, 1, 1))
                many = min(many, timed(lm, cores, 1))
            ratio = one / many
            record["rows"].append(
                {
                    "model": name,
                    "params": n,
                    "one": round(one, 4),
                    "all": round(many, 4),
                    "speedup": round(ratio, 3),
                }
            )
            lines.append(f"{name:<22} {n:>10,} {one:>11.3f} {many:>12.3f} {ratio:>10.2f}x")
            print(lines[-1], file=sys.stderr, flush=True)
    record["load_after"] = os.getloadavg()[0]
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n" + json.dumps(record) + "\n")
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
