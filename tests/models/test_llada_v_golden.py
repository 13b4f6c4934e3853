"""LLaDA-V end to end against goldens of the official code (tests/fixtures/golden/llada_v).

Every stage of a request is compared with what the official LLaDA-V code produced for the tiny
checkpoint (see the README's LLaDA-V section): the anyres tiles and SigLIP pixels, the prompt
string and ids (`llava_llada` template, `tokenizer_image_token`), the tower output, the spliced
prompt embeddings, the answer logits, and three greedy generations (stop word, semi-AR blocks,
generation suffix), which must reproduce token for token through `DiffusionLM.generate` with
the options `official_sampling` derives from the official keyword arguments.

How generations are compared: the official `generate` returns the answer cut before the stop
word (or the whole answer), with the suffix ids appended. Seer's `Generation.token_ids` always
holds gen_length answer ids: the official answer ids first, then [EOS] from the stop position on
(the stop word is not part of the answer); the suffix ids are `SamplingParams.suffix`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

import seer
from seer.models.llada_v import LLADA_V_SYSTEM, official_sampling
from seer.models.vision import IMAGE_TOKEN_INDEX

FIXTURE = Path(__file__).parents[1] / "fixtures" / "golden" / "llada_v"
IMAGE = FIXTURE / "test.png"


@pytest.fixture(scope="module")
def golden():
    return json.loads((FIXTURE / "golden.json").read_text()), load_file(
        FIXTURE / "golden.safetensors"
    )


@pytest.fixture(scope="module")
def lm():
    return seer.load(FIXTURE)


@pytest.fixture(scope="module")
def question(golden):
    meta, _ = golden
    image_tag, text = meta["question"].split("\n", 1)
    assert image_tag == "<image>"
    return text


@pytest.fixture(scope="module")
def prompt(lm, question):
    return lm.prompt(question, image=IMAGE)


def official_pixels() -> torch.Tensor:
    """The official (N, 3, 384, 384) pixels from their uint8 codes (README: pixel_values)."""
    u8 = np.asarray(Image.open(FIXTURE / "pixel_values.png").convert("RGB"))
    n = u8.shape[0] // 384
    x = u8.reshape(n, 384, 384, 3).transpose(0, 3, 1, 2).astype(np.float64) * (1 / 255)
    x = x.astype(np.float32)
    return torch.from_numpy((x - np.float32(0.5)) / np.float32(0.5))


def test_pixels_match_official(lm, golden):
    meta, _ = golden
    tiles, size = lm.processor.images(Image.open(IMAGE))
    assert list(size) == meta["image_sizes"][0]
    gw, gh = meta["anyres_grid_wh"]
    assert tiles.shape == (1 + gw * gh, 3, 384, 384)
    assert torch.equal(tiles, official_pixels())  # bit for bit


def test_prompt_and_ids_match_official(lm, golden, question):
    meta, g = golden
    assert lm.processor.system == meta["system"] == LLADA_V_SYSTEM
    text = lm.processor.prompt_text(question, image=True, chat=True)
    assert text == meta["prompt"]
    ids = lm.processor.token_ids(text)
    assert ids == g["input_ids"][0].tolist()
    assert ids.index(IMAGE_TOKEN_INDEX) == meta["image_token_position"]


def test_tower_and_spliced_embeds_match_official(lm, golden, prompt):
    meta, g = golden
    with torch.no_grad():
        tower = lm.model.model.vision_tower(official_pixels()[:1])  # (1, 729, C_v)
    torch.testing.assert_close(tower, g["vision_tower_out_base"], rtol=1e-5, atol=1e-5)
    ref = g["inputs_embeds"][0]  # (Lp, D)
    assert prompt.embeds.shape == ref.shape == (meta["prompt_embed_len"], ref.shape[1])
    at, n_img = meta["image_token_position"], meta["num_image_tokens"]
    text = torch.ones(ref.shape[0], dtype=torch.bool)
    text[at : at + n_img] = False
    assert torch.equal(prompt.embeds[text], ref[text])  # token embeddings: exact
    # image rows: float32 rounding (max 5e-5) of sums of values up to ~140; float64 is as far
    # from the official float32 as this is
    torch.testing.assert_close(prompt.embeds, ref, rtol=1e-5, atol=1e-4)


def test_logits_from_our_prompt_match_official(lm, golden, prompt):
    meta, g = golden
    n = meta["meta"]["n_logit_masks"]
    mask = lm.model.get_input_embeddings()(torch.tensor([lm.tokens.mask]))  # (1, D)
    x = torch.cat([prompt.embeds[None], mask[None].expand(1, n, -1)], dim=1)
    with torch.no_grad():
        logits = lm.model(inputs_embeds=x).logits.float()
    torch.testing.assert_close(logits[:, -n:], g["logits_answer"], rtol=0, atol=1e-4)


def test_banned_ids_are_the_named_special_tokens(lm):
    vocab = lm.tokenizer.get_vocab()
    names = ("<|endoftext|>", "<|startoftext|>", "<|start_header_id|>", "<|end_header_id|>")
    assert lm.tokens.banned == tuple(vocab[n] for n in names)
    assert lm.tokens.eot == vocab["<|eot_id|>"] and lm.tokens.eot not in lm.tokens.banned


@pytest.mark.parametrize("case", range(3))
def test_generation_matches_official(lm, golden, prompt, case):
    meta, _ = golden
    gen = meta["generations"][case]
    p = official_sampling(lm.tokenizer, **gen["kwargs"])
    out = lm.generate(prompt, p)
    official = gen["output_ids"]
    answer = official[: len(official) - len(p.suffix)]
    assert official[len(answer) :] == list(p.suffix)
    assert out.token_ids[: len(answer)] == answer
    if p.stop:  # cut before the stop word: the rest of Seer's window is [EOS]
        assert len(answer) < p.gen_length
        assert out.token_ids[len(answer) :] == [lm.tokens.eos] * (p.gen_length - len(answer))
        assert out.stats.tokens == len(answer)
    else:
        assert len(answer) == p.gen_length == len(out.token_ids)
    assert out.stats.nfe == gen["forwards"]  # early exits included


def test_generate_from_image_path_and_text(lm, golden, question):
    """The public path: question + image file -> the official answer (case a)."""
    meta, _ = golden
    gen = meta["generations"][0]
    p = official_sampling(lm.tokenizer, **gen["kwargs"])
    out = lm.generate(question, p, image=str(IMAGE))
    assert out.token_ids[: len(gen["output_ids"])] == gen["output_ids"]
    assert out.text == lm.tokenizer.decode(gen["output_ids"], skip_special_tokens=True).strip()


def test_official_sampler_precision(lm):
    assert lm.loop.confidence_dtype is torch.float64  # softmax(logits.to(float64)) officially
