"""Our models and loop against goldens recorded with the official code (tests/fixtures/golden)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.models.loader import load_model
from seer.sampling import SamplingParams, TokenIds

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden"
TOKENS = TokenIds(mask=310, eos=300, pad=300)


def _cases(arch: str) -> list[dict]:
    data = json.loads((GOLDEN / arch / "golden.json").read_text())
    return [c for c in data["generations"] if c["kwargs"].get("alg") != "origin"]


@pytest.fixture(scope="module", params=["llada", "dream"])
def arch_model(request):
    return request.param, load_model(GOLDEN / request.param)


def test_logits_match_official(arch_model):
    arch, model = arch_model
    g = load_file(GOLDEN / arch / "golden.safetensors")
    with torch.no_grad():
        logits = model(g["logits_input_ids"]).logits
    torch.testing.assert_close(logits, g["logits"], rtol=1e-5, atol=2e-5)


def _params(arch: str, kw: dict) -> SamplingParams:
    if arch == "llada":
        return SamplingParams(
            gen_length=kw["gen_length"],
            steps=kw["steps"],
            block_length=kw["block_length"],
            temperature=kw["temperature"],
            cfg_scale=kw["cfg_scale"],
            remasking=kw["remasking"],
        )
    return SamplingParams(
        gen_length=kw["max_new_tokens"],
        steps=kw["steps"],
        temperature=kw["temperature"],
        remasking=kw["alg"],
        alg_temp=kw["alg_temp"],
        top_p=kw["top_p"],
        top_k=kw["top_k"],
        eps=kw["eps"],
    )


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_generation_matches_official(arch):
    model = load_model(GOLDEN / arch)
    loop = DenoisingLoop(model, TOKENS)
    for case in _cases(arch):
        p = _params(arch, case["kwargs"])
        canvas = make_canvas(case["prompt_ids"], p.gen_length, TOKENS, "cpu")
        out = loop.run(canvas, p)
        got = torch.cat([canvas.x[:, : canvas.prompt_len], out.answer], dim=1)
        assert got.tolist() == case["output_ids"], case["name"]
