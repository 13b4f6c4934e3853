"""The Monte-Carlo log-likelihood against the official LLaDA estimator's values (goldens)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from seer.errors import SeerError
from seer.likelihood import log_likelihood, mask_counts
from seer.models.loader import load_model

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
CASES = json.loads((GOLDEN / "likelihood" / "golden.json").read_text())["cases"]


@pytest.fixture(scope="module")
def models():
    return {kind: load_model(GOLDEN / kind) for kind in ("llada", "dream")}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_official_estimator(models, case):
    value = log_likelihood(
        models[case["checkpoint"]],
        case["prompt"],
        case["answer"],
        mask_id=case["mask_id"],
        mc_num=case["mc_num"],
        batch_size=case["batch_size"],
        cfg_scale=case["cfg_scale"],
        generator=torch.Generator().manual_seed(case["seed"]),
    )
    assert value == pytest.approx(case["log_likelihood"], rel=1e-5, abs=1e-4)


def test_dream_needs_its_shift(models):
    """Without the shift the Dream numbers differ: the golden would catch a missing shift."""
    case = next(c for c in CASES if c["checkpoint"] == "dream")
    model = models["dream"]
    model.logits_shift = 0  # instance attribute over the class's 1
    try:
        value = log_likelihood(
            model,
            case["prompt"],
            case["answer"],
            mask_id=case["mask_id"],
            mc_num=case["mc_num"],
            batch_size=case["batch_size"],
            generator=torch.Generator().manual_seed(case["seed"]),
        )
    finally:
        del model.logits_shift
    assert abs(value - case["log_likelihood"]) > 1e-2


def test_mask_counts_cover_the_answer():
    for n in (1, 3, 7, 20):
        for b in (1, 4, 8, 16):
            for k in range(1, n + 1):
                c = mask_counts(k, n, b)
                assert c.shape == (b,) and int(c.min()) >= 1 and int(c.max()) <= n
                assert int(c[0]) == k  # the first row masks k positions


def test_bad_arguments(models):
    with pytest.raises(SeerError, match="multiple"):
        log_likelihood(models["llada"], [1, 2], [3], mask_id=310, mc_num=6, batch_size=4)
    with pytest.raises(SeerError, match="empty"):
        log_likelihood(models["llada"], [1, 2], [], mask_id=310, mc_num=4, batch_size=4)
