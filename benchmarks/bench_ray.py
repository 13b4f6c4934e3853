"""Ray Data scaling for `seer batch`: rows per second of the single-process batch against Ray
with 1 and 2 actors on one local cluster, and what Ray adds per row.

    python benchmarks/bench_ray.py --n 64 --repeats 2

Every method answers the same `--n` unique held-out requests of the built-in text model
(`seer.data` source ``builtin``, Seer on with the model's defaults, greedy, engine batch
`--max-batch`), one torch thread per process; the methods are interleaved over `--repeats`
rounds and the median is reported. For every run: wall time from the call to the last row
written (for Ray: actor start-up and each actor's model load included), rows/s over it, the time
to the first written row, and the busy time: the seconds spent answering (the single process:
its wall time; Ray: the actors' time inside their calls, summed over actors) with rows per busy
second, the engine's own speed in each process. Ray's cost per row is measured apart: the same
rows through the same pipeline (items, a 1-actor pool, `iter_rows`) with a model-free actor that
echoes them.
The single process's model load is timed apart (it happens once, before its runs).
Every run's output is checked: each input id exactly once, in input order, the same answers.
Fixed seed, a warm-up of the single-process engine, a human table and one JSON record last.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

import seer
from seer.batch import run_batch
from seer.data import load_examples
from seer.distributed import batch as ray_batch
from seer.distributed.batch import _local_env


def _answers(path: Path) -> list[tuple[str, str]]:
    return [(r["id"], r["answer"]) for r in map(json.loads, path.read_text().splitlines())]


def _timing(t0: float, stamps: list[float], s) -> dict:
    """Wall time, time to the first written row, and compute rows/s: rows over the time spent
    answering (the single process: its wall time; Ray: the actors' summed busy time)."""
    busy = getattr(s, "actor_seconds", s.seconds)
    return {"seconds": s.seconds, "rows_per_s": s.rows / s.seconds, "tokens": s.tokens,
            "first_row_s": stamps[0] - t0, "busy_s": busy,
            "busy_rows_per_s": s.rows / busy}  # fmt: skip


def _single(lm, examples, out: Path, max_batch: int) -> dict:
    stamps: list[float] = []
    t0 = time.perf_counter()
    s = run_batch(lm, examples, out, seer=True, max_batch=max_batch,
                  progress=lambda rows, tokens: stamps.append(time.perf_counter()))  # fmt: skip
    return _timing(t0, stamps, s)


def _ray(examples, out: Path, actors: int, max_batch: int) -> dict:
    stamps: list[float] = []
    t0 = time.perf_counter()
    s = ray_batch("builtin", examples, out, actors=actors, seer=True, max_batch=max_batch,
                  progress=lambda rows, tokens: stamps.append(time.perf_counter()))  # fmt: skip
    return _timing(t0, stamps, s)


class _Echo:
    """A model-free actor: what Ray Data alone costs for the same rows (the plumbing)."""

    def __call__(self, batch: dict) -> dict:
        return {"index": batch["index"], "row": batch["example"]}


def _plumbing(ray, examples, max_batch: int) -> dict:
    """Seconds per row of the same pipeline (items, actor pool, iter_rows) with no model."""
    from seer.distributed.batch import _encode

    items = [{"index": i, "example": _encode(ex)} for i, ex in enumerate(examples)]
    t0 = time.perf_counter()
    ds = ray.data.from_items(items, override_num_blocks=max(1, -(-len(items) // max_batch)))
    ds = ds.map_batches(_Echo, batch_size=max_batch, num_cpus=1,
                        compute=ray.data.ActorPoolStrategy(size=1))  # fmt: skip
    stamps = [time.perf_counter() for _ in ds.iter_rows()]
    first = stamps[0]
    return {"seconds": stamps[-1] - t0, "first_row_s": first - t0,
            "per_row_s": (stamps[-1] - first) / max(1, len(stamps) - 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64, help="held-out requests")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--max-batch", type=int, default=16)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    _local_env()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    t0 = time.perf_counter()
    lm = seer.load("builtin")
    load_s = time.perf_counter() - t0
    examples = load_examples("builtin", n=args.n)
    runs: dict[str, list[dict]] = {"single": [], "ray-1": [], "ray-2": [], "ray-echo": []}
    reference = None
    with tempfile.TemporaryDirectory() as tmp:
        _single(lm, examples[: args.max_batch], Path(tmp) / "warm.jsonl", args.max_batch)
        for rep in range(args.repeats):
            for name in runs:
                out = Path(tmp) / f"{name}-{rep}.jsonl"
                if name == "ray-echo":
                    runs[name].append(_plumbing(ray, examples, args.max_batch))
                    print(f"round {rep}: {name:8s} {runs[name][-1]['seconds']:.1f} s", flush=True)
                    continue
                if name == "single":
                    runs[name].append(_single(lm, examples, out, args.max_batch))
                else:
                    runs[name].append(_ray(examples, out, int(name[-1]), args.max_batch))
                got = _answers(out)
                assert [i for i, _ in got] == [e.id for e in examples], f"{name}: ids"
                reference = reference or got
                assert got == reference, f"{name}: answers differ from the first run"
                print(f"round {rep}: {name:8s} {runs[name][-1]['seconds']:.1f} s", flush=True)
    ray.shutdown()
    med = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()
    }
    single_rate = med["single"]["rows_per_s"]
    head = f"seer batch on {args.n} built-in requests (Seer on), engine batch {args.max_batch}"
    print(f"\n{head}, median of {args.repeats}; model load {load_s:.1f} s (once)")
    print(f"{'method':8s} {'wall s':>7s} {'rows/s':>7s} {'vs single':>9s} {'first row s':>11s} "
          f"{'busy s':>7s} {'rows/busy s':>11s}")  # fmt: skip
    for name in ("single", "ray-1", "ray-2"):
        m = med[name]
        print(f"{name:8s} {m['seconds']:7.1f} {m['rows_per_s']:7.2f} "
              f"{m['rows_per_s'] / single_rate:8.2f}x {m['first_row_s']:11.1f} "
              f"{m['busy_s']:7.1f} {m['busy_rows_per_s']:11.2f}")  # fmt: skip
    echo = med["ray-echo"]
    overhead = echo["per_row_s"]
    print(
        f"Ray Data alone (model-free actor, same rows): {overhead * 1000:.2f} ms per row, "
        f"{echo['first_row_s']:.1f} s to the first row"
    )
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(),
               "torch": torch.__version__, "ray": ray.__version__}  # fmt: skip
    record = {"bench": "ray", "n": args.n, "max_batch": args.max_batch, "repeats": args.repeats,
              "model_load_s": load_s, "median": med, "ray_overhead_per_row_s": overhead,
              "runs": runs, "machine": machine}  # fmt: skip
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
