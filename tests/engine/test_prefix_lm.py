"""cache='prefix_lm' (LaViDa's prompt-LM attention) is refused in one line on any other model,
where the engine resolves a request: the library, the stream, the engine and the server all come
through there. The low-level loop below it still runs the layout (tests/boundary)."""

from __future__ import annotations

import json

import pytest
from conftest import TOKENS, tiny

import seer
from seer.engine import Engine, EngineConfig, Request
from seer.errors import SeerError
from seer.lm import DiffusionLM
from seer.models.factory import make_random_checkpoint

REFUSED = r"cache prefix_lm needs a prompt-LM model \(LaViDa\), and builtin was not trained"


@pytest.fixture(scope="module")
def builtin():
    return seer.load("builtin")


def test_generate_refuses_prefix_lm_on_a_model_that_is_not_a_prompt_lm(builtin):
    with pytest.raises(SeerError, match=REFUSED):
        builtin.generate("hi", gen_length=8, cache="prefix_lm")
    with pytest.raises(SeerError, match=REFUSED):
        builtin.generate("hi", builtin.sampling(gen_length=8, cache="prefix_lm"))


def test_stream_and_the_engine_refuse_it_at_once(builtin):
    with pytest.raises(SeerError, match=REFUSED):
        next(builtin.stream("hi", gen_length=8, cache="prefix_lm"))
    eng = Engine(builtin, EngineConfig(max_batch=1))
    with pytest.raises(SeerError, match=REFUSED):
        eng.submit(Request("hi", builtin.sampling(gen_length=8, cache="prefix_lm")))
    assert not eng.has_unfinished()


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_a_model_built_in_memory_is_named_plainly(arch):
    lm = DiffusionLM(tiny(arch), None, TOKENS)
    with pytest.raises(SeerError, match="and this model was not trained that way"):
        lm.generate([[5, 6, 7]], gen_length=8, cache="prefix_lm")
    assert lm.generate([[5, 6, 7]], gen_length=8, cache="prefix")[0].token_ids  # others run


def test_a_lavida_model_runs_it(tmp_path):
    folder = make_random_checkpoint("lavida-llada", tmp_path, layers=2)
    (folder / "seer.json").write_text(json.dumps({"system_prompt": None}))
    lavida = seer.load(folder)
    g = lavida.generate("describe", gen_length=8, steps=4, cache="prefix_lm")
    assert len(g.token_ids) >= 1


def test_the_server_answers_it_with_one_400_line():
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from seer.serve import build

    lm = seer.load("builtin-v1")
    chat = {"model": "builtin-v1", "messages": [{"role": "user", "content": "spell sun"}]}
    with TestClient(build(lm)) as client:
        for path, body in (
            ("/v1/chat/completions", chat),
            ("/v1/completions", {"model": "builtin-v1", "prompt": "spell sun"}),
        ):
            r = client.post(path, json={**body, "max_tokens": 8, "cache": "prefix_lm"})
            assert r.status_code == 400, r.text
            message = r.json()["error"]["message"]
            assert "\n" not in message
            assert "cache prefix_lm needs a prompt-LM model (LaViDa), and builtin-v1" in message
        assert (
            client.post("/v1/chat/completions", json={**chat, "max_tokens": 8}).status_code == 200
        )
