"""The engine takes only resolved requests (`seer.engine.request.resolve`), and each front end
resolves a request exactly once: `Engine.add` refuses one that is not resolved in one line;
`Engine.submit` and `Engine.generate` resolve a request as built, once; the server, `seer
batch`, `DiffusionLM.generate` / `stream` and the page each resolve once and never again below.
`resolve` is counted wherever it was imported (under any name)."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

import seer
from seer.engine import Engine, EngineConfig, Request
from seer.engine import request as request_module
from seer.errors import SeerError


@pytest.fixture(scope="module")
def lm():
    return seer.load("builtin")


@pytest.fixture()
def resolves(monkeypatch) -> list:
    """The requests `resolve` is called on, from anywhere (every module's name for it)."""
    real, calls = request_module.resolve, []
    assert seer.engine.resolve is real  # the package's lazy name is bound now, and patched below

    def counted(lm, request, **kw):
        calls.append(request)
        return real(lm, request, **kw)

    for module in list(sys.modules.values()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            if value is real:
                monkeypatch.setattr(module, name, counted)
    return calls


def test_add_refuses_a_request_not_resolved_in_one_line(lm):
    engine = Engine(lm, EngineConfig())
    p = lm.sampling(gen_length=8, steps=8)
    for req in (Request("hi", p), Request("hi", None, resolved=True)):
        with pytest.raises(SeerError) as e:
            engine.add(req)
        assert str(e.value).startswith("resolve the request first: ")
        assert "seer.engine.request.resolve(lm, request)" in str(e.value)
        assert "\n" not in str(e.value)
    assert not engine.has_unfinished() and engine.waiting == []  # nothing reached the scheduler
    rid = engine.add(seer.engine.resolve(lm, Request("hi", p)))
    assert [q.id for q in engine.waiting] == [rid]


def test_submit_and_generate_resolve_a_request_as_built_once(lm, resolves):
    p = lm.sampling(gen_length=8, steps=8)
    engine = Engine(lm, EngineConfig())
    engine.submit(Request("hi", p, seer=True))
    assert len(resolves) == 1 and engine.waiting[-1].request.resolved
    engine.submit(seer.engine.resolve(lm, Request("hi", p)))  # resolved already: not again
    assert len(resolves) == 2
    resolves.clear()
    built, done = Request("hi", p), seer.engine.resolve(lm, Request("hello", p))
    resolves.clear()
    out = Engine(lm, EngineConfig()).generate([built, done])
    assert len(out) == 2 and resolves == [built]


def test_the_library_resolves_once_per_call(lm, resolves):
    lm.generate(["add 1 and 2", "add 3 and 4", "add 5 and 6"], gen_length=8, steps=8, seer=True)
    assert len(resolves) == 1  # the batch's settings, once; the rows share them
    resolves.clear()
    chunks = list(lm.stream("add 1 and 2", gen_length=8, steps=8))
    assert chunks[-1].result is not None and len(resolves) == 1


def test_seer_batch_resolves_the_runs_settings_once(tmp_path, resolves, capsys):
    from seer.cli import main

    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"r{i}", "prompt": f"add {i} and 2"}) + "\n" for i in range(3))
    )
    argv = [
        "--quiet",
        "batch",
        "--model",
        "builtin",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "o.jsonl"),
        "--gen-length",
        "8",
        "--steps",
        "8",
        "--seer",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 3
    assert len(resolves) == 1


def test_the_server_resolves_each_request_once(lm, resolves):
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from seer.serve import build

    with TestClient(build(lm)) as client:
        for body in ({"prompt": "add 1 and 2"}, {"prompt": "add 3 and 4", "seer": {}}):
            got = client.post("/v1/completions", json={"model": "builtin", "max_tokens": 8, **body})
            assert got.status_code == 200, got.text
        chat = {
            "model": "builtin",
            "max_tokens": 8,
            "stream": True,
            "messages": [{"role": "user", "content": "add 5 and 6"}],
        }
        with client.stream("POST", "/v1/chat/completions", json=chat) as got:
            assert got.status_code == 200 and "[DONE]" in got.read().decode()
    assert len(resolves) == 3


def test_the_page_resolves_each_side_once(lm, resolves):
    pytest.importorskip("gradio", reason="the ui extra is not installed")
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from seer.serve import build
    from seer.ui import page

    app = build(lm)
    with TestClient(app):
        blocks = page.build(lm, app.state.service)
        run = next(f for f in blocks.fns.values() if f.fn.__name__ == "run").fn

        async def click():
            async for _ in run(
                "add 1 and 2", None, 8, 8, 0, None, 0, "none", "eos_prob", True, True, 0.0
            ):
                pass

        asyncio.run(asyncio.wait_for(click(), 120))
    assert len(resolves) == 2  # the baseline and Seer
