"""Truncation arithmetic: windows, step counts, [EOS] suffix, the guard, cut inside step 0."""

from __future__ import annotations

import pytest
import torch
from conftest import TOKENS, tiny

from seer.boundary.config import SeerConfig
from seer.boundary.truncation import FixedWindowPolicy, SeerPolicy
from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.diffusion.schedule import lay_blocks
from seer.errors import SeerError
from seer.sampling import SamplingParams

PROMPTS = [[5, 6, 7, 8], [9, 10]]


def test_steps_follow_the_window_and_blocks_are_laid_over_it():
    assert [(s.start, s.end, s.steps) for s in lay_blocks(0, 20, 64, 64)] == [(0, 20, 20)]
    stages = lay_blocks(0, 20, 8, 4)
    assert [(s.start, s.end, s.steps) for s in stages] == [(0, 8, 4), (8, 16, 4), (16, 20, 2)]
    assert [(s.start, s.end, s.steps) for s in lay_blocks(16, 32, 16, 8)] == [(16, 32, 8)]


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_fixed_window_cut_keeps_shape_eos_suffix_and_scales_nfe(arch):
    loop = DenoisingLoop(tiny(arch), TOKENS)
    p = SamplingParams(gen_length=32, steps=32, remasking="low_confidence")
    canvas = make_canvas(PROMPTS[:1], 32, TOKENS, "cpu")
    out = loop.run(canvas, p, policy=FixedWindowPolicy([8]))
    assert out.answer.shape == (1, 32)
    assert out.nfe == 8  # 32 steps for 32 positions -> 8 for 8
    assert (out.answer[0, 8:] == TOKENS.eos).all()
    assert (out.answer[0, :8] != TOKENS.mask).all()


def test_rows_cut_differently_in_a_batch_match_their_single_runs():
    loop = DenoisingLoop(tiny("llada"), TOKENS)
    p = SamplingParams(gen_length=32, steps=16, block_length=8)
    batch = loop.run(make_canvas(PROMPTS, 32, TOKENS, "cpu"), p, FixedWindowPolicy([8, 24]))
    for r, (q, w) in enumerate(zip(PROMPTS, (8, 24), strict=True)):
        alone = loop.run(make_canvas([q], 32, TOKENS, "cpu"), p, FixedWindowPolicy([w]))
        assert batch.answer[r].tolist() == alone.answer[0].tolist()


def _forced(**kw) -> SeerConfig:
    # theta huge -> a flat profile of 1.0; tau_jump 0 -> position 1 is a "boundary": L* = 2
    return SeerConfig(layer=1, theta=1e9, tau_jump=0.0, bucket=4, **kw)


class EndsAtOnce(torch.nn.Module):
    """Wraps a model so that every position predicts [EOS]: every answer ends at once."""

    def __init__(self, inner) -> None:
        super().__init__()
        self.inner = inner
        self.layers = inner.layers
        self.logits_shift = inner.logits_shift  # the model protocol the loop reads
        self.confidence_dtype = inner.confidence_dtype
        self.compact_topk = inner.compact_topk

    def probe_point(self, layer: int, tensor: str):  # ... and the probe reads
        return self.inner.probe_point(layer, tensor)

    def forward(self, *args, **kw):
        out = self.inner(*args, **kw)
        out.logits[..., TOKENS.eos] += 100.0
        return out


def test_guard_grows_unfinished_answers_up_to_gen_length():
    # a random model never writes an end token, so every cut answer looks unfinished
    loop = DenoisingLoop(tiny("llada"), TOKENS)
    p = SamplingParams(gen_length=32, steps=32)
    policy = SeerPolicy(_forced(), TOKENS)
    out = loop.run(make_canvas(PROMPTS[:1], 32, TOKENS, "cpu"), p, policy)
    rep = out.extras["boundaries"][0]
    assert rep.length == 2 and rep.window == 4
    assert out.window.tolist() == [32]
    assert out.grown.tolist() == [3]  # 4 -> 8 -> 16 -> 32
    assert out.extras["guard_fired"] == 3
    assert out.nfe == 4 + 4 + 8 + 16  # each growth denoises only the new positions
    assert (out.answer != TOKENS.mask).all()


def test_without_guard_the_cut_stands():
    loop = DenoisingLoop(tiny("llada"), TOKENS)
    p = SamplingParams(gen_length=32, steps=32)
    out = loop.run(
        make_canvas(PROMPTS[:1], 32, TOKENS, "cpu"), p, SeerPolicy(_forced(guard=False), TOKENS)
    )
    assert out.window.tolist() == [4] and out.nfe == 4
    assert (out.answer[0, 4:] == TOKENS.eos).all()


def test_guard_does_not_fire_when_the_answer_ended():
    loop = DenoisingLoop(EndsAtOnce(tiny("llada")), TOKENS)
    p = SamplingParams(gen_length=32, steps=32)
    out = loop.run(make_canvas(PROMPTS[:1], 32, TOKENS, "cpu"), p, SeerPolicy(_forced(), TOKENS))
    assert out.grown.tolist() == [0] and out.window.tolist() == [4]
    assert out.answer[0].tolist() == [TOKENS.eos] * 32


def test_cut_inside_step0_gives_the_same_windows_and_valid_answers():
    loop = DenoisingLoop(tiny("llada", layers=3), TOKENS)
    p = SamplingParams(gen_length=32, steps=32)
    after = loop.run(
        make_canvas(PROMPTS, 32, TOKENS, "cpu"), p, SeerPolicy(_forced(guard=False), TOKENS)
    )
    inside = loop.run(
        make_canvas(PROMPTS, 32, TOKENS, "cpu"),
        p,
        SeerPolicy(_forced(guard=False, cut_in_step0=True), TOKENS),
    )
    assert inside.window.tolist() == after.window.tolist()
    assert (inside.answer != TOKENS.mask).all()
    assert inside.answer.shape == after.answer.shape == (2, 32)


def test_config_errors_are_clear():
    with pytest.raises(SeerError, match="signal"):
        SeerConfig(signal="magic")
    with pytest.raises(SeerError, match="cut_in_step0"):
        SeerConfig(signal="eos_prob", cut_in_step0=True)
    with pytest.raises(SeerError, match="unknown Seer option"):
        SeerConfig.from_dict({"tau": 1})


def _never(**kw) -> SeerConfig:
    # a run of more end positions than the window has: the signal never finds a boundary
    return SeerConfig(signal="eos_prob", eos_run=10_000, bucket=4, **kw)


def test_a_row_without_a_boundary_keeps_the_fallback_window_with_the_guard_behind_it():
    loop = DenoisingLoop(EndsAtOnce(tiny("llada")), TOKENS)
    p = SamplingParams(gen_length=32, steps=32)
    out = loop.run(
        make_canvas(PROMPTS[:1], 32, TOKENS, "cpu"), p, SeerPolicy(_never(fallback=6), TOKENS)
    )
    rep = out.extras["boundaries"][0]
    assert rep.length is None and rep.fallback and rep.window == 8  # 6, bucket-rounded
    assert out.window.tolist() == [8] and out.nfe == 1 + 7  # step 0, then the window's steps
    # the guard grows a fallback window whose answer reaches it (a random model never ends)
    loop = DenoisingLoop(tiny("llada"), TOKENS)
    grown = loop.run(
        make_canvas(PROMPTS[:1], 32, TOKENS, "cpu"), p, SeerPolicy(_never(fallback=6), TOKENS)
    )
    assert grown.window.tolist() == [32] and grown.grown.tolist() == [2]  # 8 -> 16 -> 32
    # no fallback: the full window, said so in the report
    full = loop.run(make_canvas(PROMPTS[:1], 32, TOKENS, "cpu"), p, SeerPolicy(_never(), TOKENS))
    rep = full.extras["boundaries"][0]
    assert rep.window == 32 and not rep.fallback and "no boundary" in repr(rep)


def test_the_end_probability_threshold_is_a_probability():
    with pytest.raises(SeerError, match="eos_tau"):
        SeerConfig(signal="eos_prob", eos_tau=2.0)
    with pytest.raises(SeerError, match="fallback"):
        SeerConfig(fallback=-1)
