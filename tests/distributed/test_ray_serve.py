"""`seer serve --replicas 2` end to end: a real `seer serve` process on a local loopback Ray
cluster (2 CPUs) next to a plain `seer serve`; the official `openai` client gets the same answers
from both, `/metrics` sums the replicas, a replica killed mid-request is replaced, and SIGTERM
stops everything.

Bounded: one Ray service for the module (started once, ~40 s on a busy 2-core machine), bounded
waits everywhere; the servers listen on 127.0.0.1 only.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray.serve")
psutil = pytest.importorskip("psutil")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
from serve_helpers import Server, httpx, metrics, total  # noqa: E402

openai = pytest.importorskip("openai")

MODEL = "builtin-v1"
SLOW = {"model": MODEL, "prompt": "hi", "max_tokens": 256, "steps": 256, "seer": False}  # ~4 s


@pytest.fixture(scope="module")
def servers():
    replicated = Server("--model", MODEL, "--replicas", "2")
    plain = Server("--model", MODEL).wait()
    try:
        replicated.wait(timeout=300)
    except Exception:
        plain.stop()
        raise
    yield plain, replicated
    plain.stop()
    family = _descendants(replicated)
    assert family, "the Ray processes should be children of seer serve"
    assert replicated.stop(timeout=90) == 0, replicated.log.read_text()[-3000:]
    _, alive = psutil.wait_procs(family, timeout=30)
    assert not alive, f"left running after SIGTERM: {[p.name() for p in alive]}"


def _descendants(server: Server) -> list:
    return psutil.Process(server.proc.pid).children(recursive=True)


def _replicas(server: Server) -> list:
    return [p for p in _descendants(server) if "ServeReplica" in " ".join(_cmdline(p))]


def _cmdline(p) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _client(server: Server):
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0, timeout=120)


def _dump(obj) -> dict:
    return obj.model_dump(exclude={"id", "created"})  # per-response ids and clock times


def _ask(server: Server) -> list:
    """The same requests (chat, completions, options, streams) as comparable dicts."""
    q = [{"role": "user", "content": "what is 2 + 2 ?"}]
    with _client(server) as c:
        out = [
            _dump(c.chat.completions.create(model=MODEL, messages=q)),
            _dump(
                c.chat.completions.create(
                    model=MODEL, messages=q, max_tokens=24, extra_body={"seer": False}
                )
            ),
            _dump(c.completions.create(model=MODEL, prompt="The capital of", temperature=0)),
        ]
        stream = c.chat.completions.create(
            model=MODEL, messages=q, stream=True, stream_options={"include_usage": True}
        )
        out.append([_dump(chunk) for chunk in stream])
        out.append(
            [_dump(ch) for ch in c.completions.create(model=MODEL, prompt="a b", stream=True)]
        )
    return out


def _errors(server: Server) -> list:
    bodies = [
        {"model": "nope", "messages": [{"role": "user", "content": "x"}]},
        {"model": MODEL, "messages": []},
        {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": 4096},
    ]
    out = []
    for b in bodies:
        r = httpx.post(f"{server.url}/v1/chat/completions", json=b, timeout=60)
        out.append((r.status_code, r.json()))
    return out


def test_two_replicas_answer_the_openai_client_as_plain_seer_serve_does(servers):
    plain, replicated = servers
    want = _ask(plain)
    assert want[0]["choices"][0]["message"]["content"]  # a real answer, not an empty match
    assert _ask(replicated) == want
    errors = _errors(replicated)
    assert [s for s, _ in errors] == [404, 400, 400]
    assert errors == _errors(plain)


def test_metrics_parse_and_sum_over_the_replicas(servers):
    _, replicated = servers
    time.sleep(2.5)  # every replica pushes its figures each second: let the last test's arrive
    before = metrics(replicated.url)  # parsed by prometheus_client
    tokens = 0
    with _client(replicated) as c:
        for i in range(6):
            msg = [{"role": "user", "content": f"count to {i}"}]
            tokens += c.chat.completions.create(model=MODEL, messages=msg).usage.completion_tokens
    time.sleep(2.5)  # every replica pushes its figures each second
    after = metrics(replicated.url)
    ok = {"endpoint": "/v1/chat/completions", "status": "200"}
    assert (
        total(after, "seer_requests_total", **ok) - total(before, "seer_requests_total", **ok) == 6
    )
    got = total(after, "seer_answer_tokens_total") - total(before, "seer_answer_tokens_total")
    assert got == tokens
    assert total(after, "seer_replicas") == 2


def test_a_replica_killed_mid_request_is_replaced_and_the_service_answers_again(servers):
    plain, replicated = servers
    replicas = _replicas(replicated)
    assert len(replicas) == 2
    inflight = {}

    def slow():
        inflight["r"] = httpx.post(f"{replicated.url}/v1/completions", json=SLOW, timeout=120)

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(1.0)
    start = {p.pid: sum(p.cpu_times()[:2]) for p in replicas}
    time.sleep(0.5)
    busy = max(replicas, key=lambda p: sum(p.cpu_times()[:2]) - start[p.pid])  # the one answering
    busy.send_signal(signal.SIGKILL)
    t.join(120)
    assert inflight["r"].status_code == 500  # Ray Serve does not retry a request whose replica died
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the controller starts a replacement, which loads the model
        m = metrics(replicated.url)
        pids = {p.pid for p in _replicas(replicated)}
        if busy.pid not in pids and len(pids) == 2 and total(m, "seer_replicas") == 2:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"no replacement replica: {pids}, {total(m, 'seer_replicas')} reporting")
    assert _ask(replicated)[:3] == _ask(plain)[:3]
