"""Mixed-traffic serving: an OpenAI-style trace through the HTTP server, rows per model forward.

A *trace* is a list of chat requests over held-out prompts. `mixed` draws each request's options
as varied clients send them: temperature 0 / 0.7 / 1.0, a seed on half of them, `max_tokens`
from a spread (steps = max_tokens / 2), Seer on for most (`"seer": false` for the others),
Fast-dLLM's threshold for some; on a multimodal model every request carries its image.
`uniform` sends the same prompts with one set of options (greedy, the spread's middle length,
Seer on). A server (the app `seer serve` runs, `seer.serve.build`, in this process so that a
forward hook on the model counts the rows of every forward) answers a trace at a concurrency
(that many clients, each sending its next request when its answer is back), once per grouping:
`params` (rows share a forward only when every option and the window policy agree: the engine
before mixed batching) and `layout` (rows share a forward when its layout agrees).
"""

from __future__ import annotations

import base64
import io
import random
import socket
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

LENGTHS = (32, 48, 64)  # the max_tokens spread of the mixed trace (steps: half of it)
TEMPERATURES = (0.0, 0.7, 1.0)


@dataclass(slots=True)
class Forwards:
    """Rows of every forward of a model (a forward pre-hook), while `on`."""

    rows: list[int] = field(default_factory=list)  # batch rows of each forward
    on: bool = False

    def attach(self, model) -> None:
        def count(module, args, kwargs):
            if self.on:
                x = args[0] if args and args[0] is not None else kwargs["inputs_embeds"]
                self.rows.append(int(x.shape[0]))

        model.register_forward_pre_hook(count, with_kwargs=True)


def data_uri(image) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def trace(examples, kind: str, model: str, seed: int) -> list[dict]:
    """The chat requests of a `mixed` or `uniform` trace over `examples` (module docstring)."""
    rng, out = random.Random(seed), []
    for ex in examples:
        content: object = ex.prompt
        if ex.image is not None:
            content = [
                {"type": "image_url", "image_url": {"url": data_uri(ex.image)}},
                {"type": "text", "text": ex.prompt},
            ]
        body: dict = {"model": model, "messages": [{"role": "user", "content": content}]}
        if kind == "uniform":
            body.update(temperature=0.0, max_tokens=LENGTHS[1], steps=LENGTHS[1] // 2)
        else:
            n = rng.choice(LENGTHS)
            body.update(temperature=rng.choice(TEMPERATURES), max_tokens=n, steps=n // 2)
            if rng.random() < 0.5:
                body["seed"] = rng.randrange(2**31)
            if rng.random() < 0.25:
                body["seer"] = False
            if rng.random() < 0.25:
                body["threshold"] = 0.9
        out.append(body)
    return out


def deterministic(body: dict) -> bool:
    """Whether the request's answer is fixed (greedy, or sampled with a seed)."""
    return body.get("temperature", 0.0) == 0 or "seed" in body


class Server:
    """`seer.serve.build(lm, ...)` under uvicorn on a free 127.0.0.1 port, in a thread."""

    def __init__(self, lm, **build) -> None:
        import uvicorn

        from seer.serve import build as build_app

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        app = build_app(lm, **build)
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            loop="asyncio",
            http="h11",
            ws="none",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)


def serve_trace(url: str, bodies: list[dict], concurrency: int, forwards: Forwards) -> dict:
    """Send `bodies` with `concurrency` closed-loop clients; the case's figures and answers."""
    import httpx

    answers: list[list[int] | str | None] = [None] * len(bodies)
    latency, tokens, nfe = [0.0] * len(bodies), [0] * len(bodies), [0] * len(bodies)
    nxt, lock = iter(range(len(bodies))), threading.Lock()

    def client() -> None:
        with httpx.Client(base_url=url, timeout=600) as http:
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                t0 = time.perf_counter()
                r = http.post("/v1/chat/completions", json=bodies[i])
                latency[i] = time.perf_counter() - t0
                r.raise_for_status()
                got = r.json()
                answers[i] = got["choices"][0]["message"]["content"]
                tokens[i] = got["usage"]["completion_tokens"]
                nfe[i] = got["choices"][0]["seer"]["nfe"]

    forwards.rows.clear()
    forwards.on = True
    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(client) for _ in range(concurrency)]:
            f.result()
    wall = time.perf_counter() - t0
    forwards.on = False
    lat = sorted(latency)
    return {
        "requests": len(bodies),
        "forwards": len(forwards.rows),
        "rows_per_forward": statistics.fmean(forwards.rows),
        "wall_s": wall,
        "tokens_per_s": sum(tokens) / wall,
        "row_steps_per_s": sum(nfe) / wall,  # each request's forwards, per second: its work
        "requests_per_s": len(bodies) / wall,
        "p50_s": lat[len(lat) // 2],
        "p99_s": lat[min(len(lat) - 1, round(0.99 * len(lat)))],
        "answers": answers,
    }
