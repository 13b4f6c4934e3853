"""Seer on multimodal prompts: the cut and the guard work unchanged after image splicing
(LaViDa: continuous features in the prompt) and with discrete image tokens (MMaDA)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import seer
from seer.boundary.config import SeerConfig
from seer.models.factory import make_random_checkpoint

MMADA = Path(__file__).parents[1] / "fixtures" / "golden" / "mmada"
# a detector that marks every position as padding: the cut keeps one bucket, so the guard must
# grow the window back (random models rarely end their answers)
EAGER_CUT = SeerConfig(signal="eos_prob", eos_tau=0.0, eos_run=1, bucket=4)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = make_random_checkpoint("lavida-llada", tmp_path_factory.mktemp("lv"), layers=2)
    return {"lavida": seer.load(folder), "mmada": seer.load(MMADA)}


def _image(seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.random((24, 20, 3)) * 255).astype("uint8")


@pytest.mark.parametrize("name", ["lavida", "mmada"])
def test_the_cut_reads_the_answer_window_after_the_image(models, name):
    lm = models[name]
    g = lm.generate("what is shown", image=_image(), gen_length=16, steps=16, seer=EAGER_CUT)
    b = g.boundary
    assert b is not None and b.window == 4  # cut at step 0 to one bucket of the answer window
    assert g.stats.grown >= 1  # ... and grown back because the answer had not ended there
    if lm.tokens.answer_length(g.token_ids) == 16:  # no end token: grown to the full window
        assert g.stats.window == 16
    canvas = lm.canvas("what is shown", _params(), _image())
    assert canvas.x.shape[1] - canvas.prompt_len == 16  # the window starts after the image


def _params():
    from seer.sampling import SamplingParams

    return SamplingParams(gen_length=16, steps=16).with_defaults("low_confidence")


@pytest.mark.parametrize("name", ["lavida", "mmada"])
def test_a_guard_that_never_needs_to_fire_leaves_the_answer_as_is(models, name):
    lm = models[name]
    base = lm.generate("what is shown", image=_image(1), gen_length=16, steps=16)
    never = SeerConfig(signal="eos_prob", eos_run=10_000)  # finds no boundary: full window
    same = lm.generate("what is shown", image=_image(1), gen_length=16, steps=16, seer=never)
    assert same.token_ids == base.token_ids and same.stats.grown == 0
