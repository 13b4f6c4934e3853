"""`DiffusionLM.stream`: the answer as its blocks become final, on the built-in models."""

from __future__ import annotations

import pytest

import seer
from seer.errors import SeerError


@pytest.fixture(scope="module")
def lm():
    return seer.load("builtin-v1")


@pytest.mark.parametrize("use_seer", [False, True])
def test_the_chunks_concatenate_to_generates_answer(lm, use_seer):
    prompt, opts = (
        "describe : red ball , blue cube , green cup , pink hat",
        {"block_length": 8, "steps": 64},
    )
    want = lm.generate(prompt, seer=use_seer, **opts)
    chunks = list(lm.stream(prompt, seer=use_seer, **opts))
    assert "".join(c.text for c in chunks) == want.text
    assert [c.result is not None for c in chunks] == [False] * (len(chunks) - 1) + [True]
    got = chunks[-1].result
    assert (got.text, got.token_ids, got.window, got.nfe) == (
        want.text,
        want.token_ids,
        want.window,
        want.nfe,
    )
    assert len(chunks) > 2  # the answer came block by block, not all at the end
    answers = [c.answer for c in chunks]
    assert all(a.startswith(b.rstrip()) for a, b in zip(answers[1:], answers[:-1], strict=True))


def test_a_block_as_long_as_the_window_streams_once(lm):
    chunks = list(lm.stream("add 4 and 5"))  # the model's defaults: one block
    assert len(chunks) == 1 and chunks[0].text == lm.generate("add 4 and 5").text


def test_stream_answers_one_prompt(lm):
    with pytest.raises(SeerError, match="one prompt"):
        next(lm.stream(["add 1 and 2", "add 3 and 4"]))


def test_seer_generate_stream_prints_the_same_answer(lm, capsys):
    from seer.cli import main

    argv = ["generate", "--model", "builtin-v1", "--prompt", "add 4 and 5", "--block-length", "8"]
    assert main([*argv, "--stream", "--seer"]) == 0
    out, err = capsys.readouterr()
    assert out == lm.generate("add 4 and 5", block_length=8, seer=True).text + "\n"
    assert "NFE" in err
    assert main([*argv, "--stream", "--json"]) == 2
    assert "pick one" in capsys.readouterr().err
