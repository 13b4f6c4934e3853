"""LLaDA-V's embedding resize against the official loader itself (tests/fixtures/golden/
llada_v_resize, from tools/goldens/make_llada_v_goldens.py --resize-out).

The checkpoint is shaped like the release: config.json says vocab_size = len(tokenizer) + 16 (the
release: 126464 and 126349) and the 16 extra head rows are large, so a model that kept them
would propose their ids everywhere. The official `load_pretrained_model` resizes the embeddings
and the head to len(tokenizer); the golden holds the logits of that model on a text prompt plus
masks and two greedy generations through the official `generate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import seer
from seer.models.llada_v import official_sampling

FIXTURE = Path(__file__).parents[1] / "fixtures" / "golden" / "llada_v_resize"


@pytest.fixture(scope="module")
def golden():
    return json.loads((FIXTURE / "golden.json").read_text()), load_file(
        FIXTURE / "golden.safetensors"
    )


@pytest.fixture(scope="module")
def lm():
    return seer.load(FIXTURE)


def test_rows_are_cut_to_the_tokenizer_as_the_official_loader_does(lm, golden):
    meta = golden[0]["meta"]
    raw = json.loads((FIXTURE / "config.json").read_text())
    assert raw["vocab_size"] == meta["config_vocab_size"] > meta["tokenizer_len"]
    assert len(lm.tokenizer) == meta["tokenizer_len"] == meta["rows_after_load"]
    assert lm.model.get_input_embeddings().num_embeddings == meta["rows_after_load"]
    assert lm.model.lm_head.weight.shape[0] == meta["rows_after_load"]


def test_logits_match_the_official_resized_model(lm, golden):
    meta, g = golden
    n = meta["meta"]["n_logit_masks"]
    ids = torch.cat([g["input_ids"], torch.full((1, n), lm.tokens.mask)], dim=1)
    assert g["input_ids"][0].tolist() == lm.prompt(meta["question"]).ids  # the chat template
    with torch.no_grad():
        logits = lm.model(input_ids=ids).logits.float()
    assert logits.shape == g["logits"].shape
    torch.testing.assert_close(logits, g["logits"], rtol=0, atol=1e-4)


@pytest.mark.parametrize("case", range(2))
def test_generation_matches_the_official_resized_model(lm, golden, case):
    meta, g = golden
    gen = meta["generations"][case]
    p = official_sampling(lm.tokenizer, **gen["kwargs"])
    out = lm.generate(g["input_ids"][0].tolist(), p)
    official = gen["output_ids"]
    assert out.token_ids[: len(official)] == official
    assert max(out.token_ids) < meta["meta"]["tokenizer_len"]
    assert out.stats.nfe == gen["forwards"]
