"""Ray scaling: `seer batch` (Ray Data) and, with `--serve`, `seer serve` (Ray Serve).

    python benchmarks/bench_ray.py --n 64 --repeats 2
    python benchmarks/bench_ray.py --serve --requests 96 --concurrency 8 --repeats 5 [--full-window]

Serving (`--serve`, see `serve_main`): requests per second of `seer serve` against
`seer serve --replicas 1` and `--replicas 2`, and the latency Ray Serve's proxy adds per request.

Batch:

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
from seer.distributed.ray_batch import _local_env
from seerbench import runs
from seerbench.draws import held_out


def _answers(path: Path) -> list[tuple[str, str]]:
    return [(r["id"], r["answer"]) for r in map(json.loads, path.read_text().splitlines())]


def _timing(t0: float, stamps: list[float], s) -> dict:
    """Wall time, time to the first written row, and compute rows/s: rows over the time spent
    answering (the single process: its wall time; Ray: the actors' summed busy time)."""
    busy = getattr(s, "actor_seconds", s.seconds)
    return {
        "seconds": s.seconds,
        "rows_per_s": s.rows / s.seconds,
        "tokens": s.tokens,
        "first_row_s": stamps[0] - t0,
        "busy_s": busy,
        "busy_rows_per_s": s.rows / busy,
    }


def _single(lm, examples, out: Path, max_batch: int) -> dict:
    stamps: list[float] = []
    t0 = time.perf_counter()
    s = run_batch(
        lm,
        examples,
        out,
        seer=True,
        max_batch=max_batch,
        progress=lambda rows, tokens: stamps.append(time.perf_counter()),
    )
    return _timing(t0, stamps, s)


def _ray(examples, out: Path, actors: int, max_batch: int) -> dict:
    stamps: list[float] = []
    t0 = time.perf_counter()
    s = ray_batch(
        "builtin",
        examples,
        out,
        actors=actors,
        seer=True,
        max_batch=max_batch,
        progress=lambda rows, tokens: stamps.append(time.perf_counter()),
    )
    return _timing(t0, stamps, s)


class _Echo:
    """A model-free actor: what Ray Data alone costs for the same rows (the plumbing)."""

    def __call__(self, batch: dict) -> dict:
        return {"index": batch["index"], "row": batch["example"]}


def _plumbing(ray, examples, max_batch: int) -> dict:
    """Seconds per row of the same pipeline (items, actor pool, iter_rows) with no model."""
    from seer.distributed.ray_batch import _encode

    items = [{"index": i, "example": _encode(ex)} for i, ex in enumerate(examples)]
    t0 = time.perf_counter()
    ds = ray.data.from_items(items, override_num_blocks=max(1, -(-len(items) // max_batch)))
    ds = ds.map_batches(
        _Echo, batch_size=max_batch, num_cpus=1, compute=ray.data.ActorPoolStrategy(size=1)
    )
    stamps = [time.perf_counter() for _ in ds.iter_rows()]
    first = stamps[0]
    return {
        "seconds": stamps[-1] - t0,
        "first_row_s": first - t0,
        "per_row_s": (stamps[-1] - first) / max(1, len(stamps) - 1),
    }


def main(argv: list[str] | None = None) -> int:
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if "--serve" in argv:
        return serve_main([a for a in argv if a != "--serve"])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    runs.add_arguments(
        ap, n=64, repeats=2, skip=("data", "threads"), help={"n": "held-out requests"}
    )
    ap.add_argument("--max-batch", type=int, default=16)
    args = ap.parse_args(argv)
    args.threads = 1  # one torch thread per process (the driver and each actor)
    session = runs.Session("ray", args)
    _local_env()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    t0 = time.perf_counter()
    lm = seer.load("builtin")
    load_s = time.perf_counter() - t0
    examples = held_out("builtin", args.n, args.seed)
    times: dict[str, list[dict]] = {"single": [], "ray-1": [], "ray-2": [], "ray-echo": []}
    reference = None
    with tempfile.TemporaryDirectory() as tmp:
        _single(lm, examples[: args.max_batch], Path(tmp) / "warm.jsonl", args.max_batch)
        for rep in range(args.repeats):
            for name in times:
                out = Path(tmp) / f"{name}-{rep}.jsonl"
                if name == "ray-echo":
                    times[name].append(_plumbing(ray, examples, args.max_batch))
                    print(f"round {rep}: {name:8s} {times[name][-1]['seconds']:.1f} s", flush=True)
                    continue
                if name == "single":
                    times[name].append(_single(lm, examples, out, args.max_batch))
                else:
                    times[name].append(_ray(examples, out, int(name[-1]), args.max_batch))
                got = _answers(out)
                assert [i for i, _ in got] == [e.id for e in examples], f"{name}: ids"
                reference = reference or got
                assert got == reference, f"{name}: answers differ from the first run"
                print(f"round {rep}: {name:8s} {times[name][-1]['seconds']:.1f} s", flush=True)
    ray.shutdown()
    med = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in times.items()
    }
    single_rate = med["single"]["rows_per_s"]
    head = f"seer batch on {args.n} built-in requests (Seer on), engine batch {args.max_batch}"
    print(f"\n{head}, median of {args.repeats}; model load {load_s:.1f} s (once)")
    print(
        f"{'method':8s} {'wall s':>7s} {'rows/s':>7s} {'vs single':>9s} {'first row s':>11s} "
        f"{'busy s':>7s} {'rows/busy s':>11s}"
    )
    for name in ("single", "ray-1", "ray-2"):
        m = med[name]
        print(
            f"{name:8s} {m['seconds']:7.1f} {m['rows_per_s']:7.2f} "
            f"{m['rows_per_s'] / single_rate:8.2f}x {m['first_row_s']:11.1f} "
            f"{m['busy_s']:7.1f} {m['busy_rows_per_s']:11.2f}"
        )
    echo = med["ray-echo"]
    overhead = echo["per_row_s"]
    print(
        f"Ray Data alone (model-free actor, same rows): {overhead * 1000:.2f} ms per row, "
        f"{echo['first_row_s']:.1f} s to the first row"
    )
    session.finish(
        med,
        model="builtin",
        source="builtin",
        max_batch=args.max_batch,
        model_load_s=load_s,
        ray=ray.__version__,
        ray_overhead_per_row_s=overhead,
        runs=times,
    )
    return 0


# -- serving: seer serve against seer serve --replicas N ------------------------------------------
class _Server:
    """`seer serve --model builtin ARGS` on a free 127.0.0.1 port, one torch thread per process."""

    def __init__(self, name: str, *args: str) -> None:
        import socket
        import subprocess
        import sys

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.name, self.url = name, f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SEER_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
        cmd = [
            sys.executable,
            "-m",
            "seer.cli",
            "serve",
            "--model",
            "builtin",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "warning",
            *args,
        ]
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed in stop)
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait(self, httpx, timeout: float = 600) -> float:
        """Seconds from the start until /health answers 200."""
        while time.perf_counter() - self.t0 < timeout:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"{self.name} exited: {self.log.read()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return time.perf_counter() - self.t0
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not start in {timeout} s")

    def stop(self) -> int:
        import signal
        import subprocess

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def _load(httpx, url: str, prompts: list[str], concurrency: int, seer: bool) -> dict:
    """All `prompts` as chat requests from `concurrency` client threads: wall time, answers."""
    import threading

    answers: dict[int, str] = {}
    todo = list(enumerate(prompts))
    lock = threading.Lock()
    errors: list[str] = []

    def client() -> None:
        with httpx.Client(timeout=600) as c:
            while True:
                with lock:
                    if not todo:
                        return
                    i, p = todo.pop(0)
                body = {
                    "model": "builtin",
                    "messages": [{"role": "user", "content": p}],
                    "seer": seer,
                }
                r = c.post(f"{url}/v1/chat/completions", json=body)
                if r.status_code != 200:
                    errors.append(f"{r.status_code} {r.text[:200]}")
                    continue
                answers[i] = r.json()["choices"][0]["message"]["content"]

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - t0
    assert not errors, errors[:3]
    return {
        "seconds": seconds,
        "rps": len(prompts) / seconds,
        "answers": [answers[i] for i in range(len(prompts))],
    }


def _overhead(httpx, url: str, n: int) -> float:
    """Median seconds of `n` sequential GET /v1/models (no engine work: the HTTP path only)."""
    times = []
    with httpx.Client(timeout=60) as c:
        for _ in range(n):
            t0 = time.perf_counter()
            c.get(f"{url}/v1/models").raise_for_status()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def serve_main(argv: list[str]) -> int:
    """`--serve`: `seer serve` against `seer serve --replicas 1` and `--replicas 2`.

    The three servers run at once (each its own process; each Ray one its own local cluster,
    one CPU and one torch thread per replica, like the plain server's one thread), so the rounds
    can interleave them. Per round and server: `--requests` held-out built-in chat requests
    (Seer on unless `--full-window`, greedy, the model's defaults) from `--concurrency` client
    threads; requests/s over the wall time; every server's answers must equal the plain
    server's. Ray's cost per request is the median latency of sequential GET /v1/models (the
    HTTP path, no engine) minus the plain server's. Medians over `--repeats` rounds, after a
    warm-up round."""
    import httpx

    ap = argparse.ArgumentParser(description=serve_main.__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pings", type=int, default=200, help="sequential GETs for the overhead")
    ap.add_argument(
        "--full-window",
        action="store_true",
        help='requests send "seer": false (the whole 64-token window: more compute)',
    )
    args = ap.parse_args(argv)
    seer = not args.full_window
    prompts = [ex.prompt for ex in load_examples("builtin", n=args.requests)]
    servers = {
        "serve": _Server("serve"),
        "replicas-1": _Server("replicas-1", "--replicas", "1"),
        "replicas-2": _Server("replicas-2", "--replicas", "2"),
    }
    times: dict[str, list[dict]] = {name: [] for name in servers}
    try:
        ready = {name: s.wait(httpx) for name, s in servers.items()}
        print("ready after " + ", ".join(f"{n} {t:.0f} s" for n, t in ready.items()), flush=True)
        for name, s in servers.items():  # warm-up, and the reference answers
            ref = _load(httpx, s.url, prompts, args.concurrency, seer)["answers"]
            if name == "serve":
                reference = ref
            assert ref == reference, f"{name}: answers differ from seer serve's"
        for rep in range(args.repeats):
            for name, s in servers.items():
                r = _load(httpx, s.url, prompts, args.concurrency, seer)
                assert r.pop("answers") == reference, f"{name}: answers differ"
                r["ping_s"] = _overhead(httpx, s.url, args.pings)
                times[name].append(r)
                print(
                    f"round {rep}: {name:10s} {r['seconds']:6.1f} s {r['rps']:6.2f} req/s "
                    f"ping {r['ping_s'] * 1000:.1f} ms",
                    flush=True,
                )
    finally:
        codes = {name: s.stop() for name, s in servers.items()}
    med = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for n, rs in times.items()}
    base = med["serve"]
    what = "Seer on" if seer else "full window"
    print(
        f"\nseer serve vs Ray Serve replicas: {args.requests} built-in chat requests ({what}, "
        f"greedy), {args.concurrency} client threads, median of {args.repeats}"
    )
    print(
        f"{'server':12s} {'ready s':>7s} {'wall s':>7s} {'req/s':>7s} {'vs serve':>8s} "
        f"{'GET ms':>7s} {'+Ray ms':>7s}"
    )
    for name, m in med.items():
        print(
            f"{name:12s} {ready[name]:7.0f} {m['seconds']:7.1f} {m['rps']:7.2f} "
            f"{m['rps'] / base['rps']:7.2f}x {m['ping_s'] * 1000:7.1f} "
            f"{(m['ping_s'] - base['ping_s']) * 1000:7.1f}"
        )
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "load": os.getloadavg(),
    }
    overhead = {n: m["ping_s"] - base["ping_s"] for n, m in med.items()}
    record = {
        "bench": "ray_serve",
        "seer": seer,
        "requests": args.requests,
        "concurrency": args.concurrency,
        "repeats": args.repeats,
        "ready_s": ready,
        "median": med,
        "runs": times,
        "ray_overhead_per_request_s": overhead,
        "exit_codes": codes,
        "machine": machine,
    }
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
