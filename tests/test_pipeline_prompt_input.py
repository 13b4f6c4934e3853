"""`generate` / `canvas` take `PromptInput`s from `lm.prompt(...)`: a prompt encoded once
(image features included) answers like the text + image it was made from."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import seer
from seer import Generation, SeerError
from seer.models.factory import make_random_checkpoint


def _image(seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((40, 60, 3)) * 255).astype("uint8"))


@pytest.fixture(scope="module")
def lavida(tmp_path_factory):
    return seer.load(
        make_random_checkpoint("lavida-llada", tmp_path_factory.mktemp("lv"), layers=2)
    )


@pytest.fixture(scope="module")
def llada(tmp_path_factory):
    return seer.load(make_random_checkpoint("llada", tmp_path_factory.mktemp("l")))


def test_an_encoded_image_prompt_answers_like_text_plus_image(lavida):
    kw = dict(gen_length=16, steps=8)
    q0, q1 = lavida.prompt("what colour ?", _image(0)), lavida.prompt("what colour ?", _image(1))
    one = lavida.generate(q0, **kw)
    assert isinstance(one, Generation)  # a single PromptInput answers like a single prompt
    assert one.token_ids == lavida.generate("what colour ?", image=_image(0), **kw).token_ids
    both = lavida.generate([q0, q1], **kw)
    direct = lavida.generate(["what colour ?"] * 2, image=[_image(0), _image(1)], **kw)
    assert [g.token_ids for g in both] == [g.token_ids for g in direct]
    c = lavida.canvas([q0, q1], seer.SamplingParams(gen_length=16))
    assert c.prompt_embeds is not None and c.prompt_embeds.shape[0] == 2
    assert lavida.generate(q0, **kw).token_ids == one.token_ids  # reusable


def test_an_encoded_text_prompt_answers_like_its_text(llada):
    q = llada.prompt("spell cat")
    assert q.embeds is None
    a = llada.generate(q, gen_length=16)
    assert a.token_ids == llada.generate("spell cat", gen_length=16).token_ids
    assert llada.canvas([q], seer.SamplingParams(gen_length=16)).prompt_embeds is None


def test_a_prompt_input_takes_no_second_image(lavida):
    q = lavida.prompt("what colour ?", _image(0))
    with pytest.raises(SeerError, match="already holds its image"):
        lavida.generate(q, image=_image(1), gen_length=8)
