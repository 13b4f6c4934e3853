"""A shutdown past `--drain-timeout`: every request still running gets a clean OpenAI-style
error (503 `shutting_down`; a stream a last chunk with it, then `[DONE]`), read here with the
official `openai` client, and the server's log has one line per request and no traceback.

`--drain-timeout 0`: SIGTERM ends at once whatever runs, so the test needs no timing beyond
"the requests are in the engine": three long requests (448-token windows, 448 steps, one
streamed block every 32 steps) are sent and SIGTERM follows once /metrics shows all three
denoising. Every wait is bounded.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest
from serve_helpers import Server, httpx, metrics, total

openai = pytest.importorskip("openai")

MODEL = "builtin-v1"
LONG = dict(
    model=MODEL, prompt="spell sun", max_tokens=448, extra_body={"steps": 448, "block_length": 32}
)


def _client(url: str):
    return openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=60)


class Call(threading.Thread):
    """One request in the background; `error` / `chunks` / `lines` say how it ended."""

    def __init__(self, fn) -> None:
        super().__init__(daemon=True)
        self.fn, self.error, self.chunks, self.lines = fn, None, [], []

    def run(self) -> None:
        try:
            self.fn(self)
        except Exception as e:  # what the client raised is the result
            self.error = e


def _stream(call: Call, url: str) -> None:
    for chunk in _client(url).completions.create(stream=True, **LONG):
        call.chunks.append(chunk)


def _plain(call: Call, url: str) -> None:
    call.chunks.append(_client(url).completions.create(**LONG))


def _raw_stream(call: Call, url: str) -> None:
    body = {
        "model": MODEL,
        "prompt": "spell sun",
        "max_tokens": 448,
        "steps": 448,
        "block_length": 32,
        "stream": True,
    }
    with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=60) as r:
        call.lines.extend(line for line in r.iter_lines() if line)


def test_sigterm_past_the_drain_timeout_ends_every_request_cleanly():
    srv = Server(
        "--model",
        MODEL,
        "--no-seer",
        "--max-batch",
        "4",
        "--drain-timeout",
        "0",
        "--log-level",
        "info",
    )
    try:
        srv.wait()
        calls = [Call(lambda c, f=f: f(c, srv.url)) for f in (_stream, _plain, _raw_stream)]
        for c in calls:
            c.start()
        deadline = time.monotonic() + 60
        while total(metrics(srv.url), "seer_running_rows") < 3:
            assert time.monotonic() < deadline, "the three requests did not reach the engine"
            time.sleep(0.02)
        srv.proc.send_signal(signal.SIGTERM)
        for c in calls:
            c.join(60)
            assert not c.is_alive()
        assert srv.proc.wait(60) == 0
    finally:
        srv.stop()
    stream, plain, raw = calls
    # the openai client: a stream ends with the server's error (not a protocol error) ...
    assert isinstance(stream.error, openai.APIError), repr(stream.error)
    assert not isinstance(stream.error, openai.APIConnectionError)
    assert "shutting down" in stream.error.message and stream.chunks  # it had started
    # ... and a plain request gets the 503 with its code
    assert isinstance(plain.error, openai.InternalServerError), repr(plain.error)
    assert plain.error.status_code == 503 and plain.error.code == "shutting_down"
    # on the wire: the error chunk, then [DONE]
    assert raw.error is None and raw.lines[-1] == "data: [DONE]"
    assert '"code": "shutting_down"' in raw.lines[-2] or '"code":"shutting_down"' in raw.lines[-2]
    log = srv.log.read_text()
    assert "Traceback" not in log and "Exception" not in log, log[-3000:]
    assert log.count("ended by the shutdown (503 shutting_down)") == 3, log[-3000:]
    assert log.count(" 500") == 0
