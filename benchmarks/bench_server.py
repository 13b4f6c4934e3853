"""Load test of `seer serve` on loopback: N concurrent streaming clients, M requests, with and
without Seer, on a built-in model's held-out requests.

    python benchmarks/bench_server.py --model builtin-vqa --n 48 --concurrency 1 4 16

It starts `seer serve` on a free 127.0.0.1 port (Seer on by default; the "full" method sends
`"seer": false`), loads the same model here for the offline answers (`DiffusionLM.generate`, one
request at a time), warms both methods up, then for each concurrency runs the methods
interleaved: M requests through the official `openai` client, streamed (each semi-AR block is
sent when it is final). Per point: throughput (requests/s, answer tokens/s), latency p50/p99
(until `[DONE]`), time to the first content chunk p50/p99, and the checks that nothing was lost
(every request answered exactly once, status 200: `lost` counts the others; each answer equal
to its offline answer, the same request run alone: `wrong` counts the others). `--methods seer`
runs Seer alone.
Every request has a timeout and the server is stopped at the end: the run stops by itself.
A human table, then the JSON record as the last line (`seerbench.runs`; results:
one point per concurrency and method).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai

import seer
from seer.data.builtin import source_for
from seerbench import runs
from synthetic.pool import load as load_examples  # a built-in source: any seed

METHODS = ("seer", "full")  # Seer's window vs the full gen_length window


def data_uri(image) -> str:
    if isinstance(image, (str, Path)) and not str(image).startswith("data:"):
        raw = Path(image).read_bytes()
    elif isinstance(image, str):
        return image
    else:
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        raw = buf.getvalue()
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def messages(ex) -> list[dict]:
    if ex.image is None:
        return [{"role": "user", "content": ex.prompt}]
    parts = [
        {"type": "text", "text": ex.prompt},
        {"type": "image_url", "image_url": {"url": data_uri(ex.image)}},
    ]
    return [{"role": "user", "content": parts}]


def start_server(model: str, log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SEER_NO_PROGRESS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "seer.cli",
        "serve",
        "--model",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


def wait_ready(proc, url: str, log: Path, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"seer serve exited:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("seer serve did not start in time")


async def one(client, model, ex, method, gen_length, timeout, block_length=None):
    """Stream one request: (text, completion tokens, latency, time to first content)."""
    t0 = time.perf_counter()
    first = None
    pieces, usage = [], None
    stream = await client.chat.completions.create(
        model=model,
        messages=messages(ex),
        max_tokens=gen_length,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"seer": method == "seer", "block_length": block_length},
        timeout=timeout,
    )
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                first = first or time.perf_counter() - t0
                pieces.append(choice.delta.content)
    latency = time.perf_counter() - t0
    return "".join(pieces), usage.completion_tokens, latency, first or latency


async def run_point(url, model, examples, method, concurrency, gen_length, timeout, block=None):
    sem = asyncio.Semaphore(concurrency)
    results: list = [None] * len(examples)

    async def worker(i, ex, client):
        async with sem:
            try:
                results[i] = await one(client, model, ex, method, gen_length, timeout, block)
            except Exception as e:  # counted as lost, reported below
                results[i] = e

    async with openai.AsyncOpenAI(
        base_url=f"{url}/v1",
        api_key="none",
        max_retries=0,
        http_client=httpx.AsyncClient(
            limits=httpx.Limits(max_connections=concurrency + 4), timeout=timeout
        ),
    ) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(i, ex, client) for i, ex in enumerate(examples)))
        wall = time.perf_counter() - t0
    return results, wall


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def summarize(results, wall, offline) -> dict:
    ok = [r for r in results if not isinstance(r, Exception) and r is not None]
    errors = [repr(r) for r in results if isinstance(r, Exception)]
    wrong = [
        i
        for i, (r, ref) in enumerate(zip(results, offline, strict=True))
        if not isinstance(r, Exception) and r is not None and r[0] != ref
    ]
    lat = [r[2] for r in ok]
    ttfc = [r[3] for r in ok]
    tokens = sum(r[1] for r in ok)
    return {
        "answered": len(ok),
        "lost": len(results) - len(ok),
        "wrong": len(wrong),
        "wrong_requests": wrong,  # indices of the answers that differ from their solo run
        "errors": errors[:3],
        "wall_s": round(wall, 3),
        "req_per_s": round(len(ok) / wall, 3),
        "tok_per_s": round(tokens / wall, 2),
        "p50_s": round(statistics.median(lat), 4) if lat else None,
        "p99_s": round(pct(lat, 0.99), 4) if lat else None,
        "ttfc_p50_s": round(statistics.median(ttfc), 4) if ttfc else None,
        "ttfc_p99_s": round(pct(ttfc, 0.99), 4) if ttfc else None,
    }


def show(record: dict) -> None:
    print(
        f"seer serve load test: {record['model']}, {record['requests']} requests per point, "
        f"gen_length {record['gen_length']}, block_length {record['block_length'] or 'default'}, "
        "streaming"
    )
    head = (
        f"{'conc':>4} {'method':<6} {'req/s':>7} {'tok/s':>7} {'p50 s':>7} {'p99 s':>7} "
        f"{'ttfc50':>7} {'ttfc99':>7} {'lost':>4} {'wrong':>5}"
    )
    print(head)
    print("-" * len(head))
    for p in record["points"]:
        print(
            f"{p['concurrency']:>4} {p['method']:<6} {p['req_per_s']:>7.2f} "
            f"{p['tok_per_s']:>7.1f} {p['p50_s']:>7.3f} {p['p99_s']:>7.3f} "
            f"{p['ttfc_p50_s']:>7.3f} {p['ttfc_p99_s']:>7.3f} {p['lost']:>4} "
            f"{p['wrong']:>5}"
        )
    for c, ratio in record["speedup"].items():
        print(f"concurrency {c}: Seer / full throughput = {ratio:.2f}x")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="builtin-vqa", help="a built-in model's name or a folder")
    runs.add_arguments(
        ap,
        n=48,
        skip=("repeats", "threads"),
        help={
            "n": "requests per point (M)",
            "data": "requests (default: the model's built-in task)",
        },
    )
    ap.add_argument(
        "--requests",
        dest="n",
        type=runs.positive,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )  # the old name of --n
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS,
        default=list(METHODS),
        help="seer: Seer's window; full: the whole window",
    )
    ap.add_argument("--gen-length", type=int, default=64, help="max_tokens of every request")
    ap.add_argument(
        "--block-length",
        type=int,
        default=None,
        help="semi-AR block (default: the model's; smaller blocks stream sooner)",
    )
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    ap.add_argument("--log", default="bench_server.log", help="the server's output")
    args = ap.parse_args(argv)
    args.threads = 1
    session = runs.Session("server", args)

    log = Path(args.log)
    proc, url = start_server(args.model, log)
    try:
        lm = seer.load(args.model)
        data = args.data or source_for(args.model, lm.multimodal)  # images for an image model
        examples = load_examples(data, n=args.n, part="eval", seed=args.seed)
        t0 = time.perf_counter()
        offline = {
            m: [
                lm.generate(
                    ex.prompt,
                    lm.sampling(gen_length=args.gen_length, block_length=args.block_length),
                    seer=True if m == "seer" else None,
                    image=ex.image,
                ).text
                for ex in examples
            ]
            for m in args.methods
        }
        offline_s = time.perf_counter() - t0
        wait_ready(proc, url, log)
        name = lm.name
        for m in args.methods:  # warm-up: a few requests of each method
            asyncio.run(
                run_point(
                    url, name, examples[:4], m, 4, args.gen_length, args.timeout, args.block_length
                )
            )
        points = []
        for c in args.concurrency:
            for m in args.methods:  # interleaved, so both see the same machine load
                results, wall = asyncio.run(
                    run_point(
                        url, name, examples, m, c, args.gen_length, args.timeout, args.block_length
                    )
                )
                points.append(
                    {"concurrency": c, "method": m, **summarize(results, wall, offline[m])}
                )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    speedup = {}
    for c in args.concurrency:
        by = {p["method"]: p for p in points if p["concurrency"] == c}
        if len(by) < len(METHODS):
            continue
        speedup[str(c)] = round(by["seer"]["req_per_s"] / by["full"]["req_per_s"], 3)
    record = session.record(
        points,
        model=args.model,
        source=data,
        n=len(examples),
        requests=len(examples),
        gen_length=args.gen_length,
        block_length=args.block_length,
        offline_seconds=round(offline_s, 2),
        points=points,
        speedup=speedup,
        nothing_lost=all(p["lost"] == 0 and p["wrong"] == 0 for p in points),
    )
    show(record)
    session.emit(record)
    return 0 if record["nothing_lost"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
