"""`seer serve` under pressure and at shutdown: 429 when the queue is full, SIGTERM drains.

The server runs the built-in text model with one row per batch and one waiting slot, so a long
request in the engine makes the queue's state certain: the next request waits, the one after is
refused. Then SIGTERM: new requests get 503, the running one is answered in full, exit status 0.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest
from serve_helpers import Server, httpx, metrics, total

MODEL = "builtin-v1"
LONG = {
    "model": MODEL,
    "prompt": "spell sun",
    "max_tokens": 128,
    "steps": 128,
    "block_length": 32,
    "stream": True,
}
SHORT = {"model": MODEL, "prompt": "spell sun", "max_tokens": 8}


@pytest.fixture(scope="module")
def server():
    srv = Server("--model", MODEL, "--no-seer", "--max-batch", "1", "--max-queue", "1")
    yield srv.wait()
    srv.stop()


class Streamer(threading.Thread):
    """A streamed request read to its end in the background; `started` once the engine took it."""

    def __init__(self, url: str, body: dict) -> None:
        super().__init__(daemon=True)
        self.url, self.body = url, body
        self.started = threading.Event()
        self.lines: list[str] = []
        self.status = None

    def run(self) -> None:
        with httpx.stream("POST", f"{self.url}/v1/completions", json=self.body, timeout=120) as r:
            self.status = r.status_code
            for line in r.iter_lines():
                if line:
                    self.lines.append(line)
                self.started.set()
        self.started.set()


def _post(server, body):
    return httpx.post(f"{server.url}/v1/completions", json=body, timeout=120)


def test_image_on_a_text_model_is_400(server):
    from serve_helpers import data_uri

    from seer.demo import sample_images

    uri = data_uri(sample_images()[0]["file"])
    parts = [{"type": "text", "text": "what ?"}, {"type": "image_url", "image_url": {"url": uri}}]
    body = {"model": MODEL, "messages": [{"role": "user", "content": parts}]}
    r = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 400 and "text model" in r.json()["error"]["message"]


def test_queue_full_is_429_and_the_waiting_request_is_answered(server):
    long = Streamer(server.url, LONG)
    long.start()
    assert long.started.wait(60) and long.status == 200
    waiting = threading.Thread(target=lambda: results.append(_post(server, SHORT)))
    results: list[httpx.Response] = []
    waiting.start()
    deadline = time.monotonic() + 30
    while total(metrics(server.url), "seer_queue_depth") < 1:  # the short one waits
        assert time.monotonic() < deadline
        time.sleep(0.02)
    refused = _post(server, SHORT)
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == "1"  # the openai client waits, then retries
    assert refused.json()["error"]["type"] == "rate_limit_error"
    waiting.join(120)
    long.join(120)
    assert results[0].status_code == 200 and long.lines[-1] == "data: [DONE]"


def test_sigterm_drains_running_requests_and_refuses_new_ones(server):
    long = Streamer(server.url, LONG)
    long.start()
    assert long.started.wait(60) and long.status == 200
    server.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    while httpx.get(f"{server.url}/health", timeout=10).status_code != 503:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    refused = _post(server, SHORT)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "shutting_down"
    assert total(metrics(server.url), "seer_requests_total", status="503") == 1
    long.join(120)
    assert long.lines[-1] == "data: [DONE]"  # answered in full after SIGTERM
    assert server.proc.wait(60) == 0
