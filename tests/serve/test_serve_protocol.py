"""The server's pure parts, without a server: request bodies -> options, streamed text deltas."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")  # the serve extra
from pydantic import ValidationError  # noqa: E402

from seer.engine.request import Deltas  # noqa: E402
from seer.serve.protocol import ChatRequest, CompletionRequest  # noqa: E402

HI = [{"role": "user", "content": "hi"}]


def test_options_map_openai_fields_to_sampling_and_leave_defaults_out():
    body = ChatRequest(
        model="m",
        messages=HI,
        max_tokens=32,
        temperature=0.5,
        top_p=0.9,
        seed=3,
        steps=16,
        block_length=8,
        threshold=0.9,
    )
    assert body.options() == {
        "gen_length": 32,
        "temperature": 0.5,
        "top_p": 0.9,
        "seed": 3,
        "steps": 16,
        "block_length": 8,
        "threshold": 0.9,
    }
    assert ChatRequest(model="m", messages=HI).options() == {}  # the model's defaults
    assert ChatRequest(model="m", messages=HI, max_completion_tokens=8).options() == {
        "gen_length": 8
    }
    assert CompletionRequest(model="m", prompt=[1, 2, 3]).prompt == [1, 2, 3]


def test_daedal_and_early_stop_options_as_the_cli_takes_them():
    body = ChatRequest(model="m", messages=HI, daedal_initial=8, daedal_low=0.2, early_stop=True)
    assert body.options() == {
        "daedal": True,
        "daedal_initial": 8,
        "daedal_low": 0.2,
        "early_stop": True,
    }  # a daedal_* option turns it on
    assert ChatRequest(model="m", messages=HI, daedal=True).options() == {"daedal": True}
    with pytest.raises(ValueError, match="daedal false"):
        ChatRequest(model="m", messages=HI, daedal=False, daedal_initial=8).options()
    with pytest.raises(ValidationError):
        ChatRequest(model="m", messages=HI, daedal_high=1.5)


@pytest.mark.parametrize(
    "extra",
    [
        {"stepz": 3},
        {"n": 2},
        {"logprobs": True},
        {"presence_penalty": 0.5},
        {"max_tokens": 0},
        {"top_p": 0},
        {"temperature": -1},
    ],
)
def test_bad_or_unsupported_fields_are_refused(extra):
    with pytest.raises(ValidationError):
        ChatRequest(model="m", messages=HI, **extra)


def test_image_parts_and_roles_are_checked():
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    ok = ChatRequest(model="m", messages=[{"role": "user", "content": [part]}])
    assert ok.messages[0].content[0].image_url.url.startswith("data:")
    with pytest.raises(ValidationError):
        ChatRequest(model="m", messages=[{"role": "user", "content": [{"type": "video"}]}])
    with pytest.raises(ValidationError):
        ChatRequest(model="m", messages=[{"role": "robot", "content": "x"}])


def test_deltas_concatenate_to_the_final_text():
    d = Deltas()
    sent = [d.push("hel"), d.push("hello wor"), d.push("hello world ")]  # trailing space held
    sent.append(d.push("hello world \ufffd"))  # half a multi-byte character: held
    sent.append(d.finish("hello world é"))
    assert sent == ["hel", "lo wor", "ld", "", " é"]
    assert "".join(sent) == "hello world é"
    d = Deltas()
    assert d.push("ab") == "ab" and d.push("a") == ""  # never un-sends text
    assert d.finish("abc") == "c"
