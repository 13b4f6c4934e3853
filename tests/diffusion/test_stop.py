"""LLaDA-V's sampler options in the one loop: stop sequences, banned ids, generation suffix.

Token-for-token agreement with the official LLaDA-V code is checked in
tests/models/test_llada_v_golden.py; these tests pin the semantics on tiny text models.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import TOKENS

from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.diffusion.stop import StopWords
from seer.errors import SeerError
from seer.sampling import SamplingParams

PROMPTS = [[5, 17, 42, 9, 100, 3], [7, 7, 250, 12]]


def run(model, prompts, p: SamplingParams, tokens=TOKENS):
    canvas = make_canvas(prompts, p.gen_length, tokens, "cpu")
    return DenoisingLoop(model, tokens).run(canvas, p)


def test_stop_search_follows_the_official_order():
    s = StopWords.new(((7,), (3, 4)), rows=1, device="cpu")
    m = 99
    # the second sequence occurs first: the first listed one that occurs at all wins
    done = s.update(torch.tensor([[m, 3, 4, 7, m, m]]), m)
    assert s.at.tolist() == [3] and not bool(done[0])  # a mask is left before position 3
    # later steps try only the first sequence; an earlier (3, 4) does not move the stop
    done = s.update(torch.tensor([[3, 4, m, 7, m, m]]), m)
    assert s.at.tolist() == [3] and not bool(done[0])
    # an earlier occurrence of the first sequence does, and no mask is left before it
    done = s.update(torch.tensor([[1, 7, 2, 7, m, m]]), m)
    assert s.at.tolist() == [1] and bool(done[0])


def _stop_case(model, p: SamplingParams):
    """A stop token the model produces in the middle of its answer, and that answer."""
    free = run(model, PROMPTS[:1], p).answer[0].tolist()
    pos = p.gen_length // 2 + 1
    tok = free[pos]
    first = free.index(tok)
    return tok, first, free


@pytest.mark.parametrize(
    "p",
    [
        SamplingParams(gen_length=16, steps=16, remasking="low_confidence"),
        SamplingParams(gen_length=16, steps=8, block_length=4, remasking="low_confidence"),
    ],
)
def test_stop_ends_the_row_and_cuts_the_answer(tiny_llada, p):
    tok, first, free = _stop_case(tiny_llada, p)
    res = run(tiny_llada, PROMPTS[:1], dataclasses.replace(p, stop=((tok,),)))
    ans = res.answer[0].tolist()
    at = next(i for i, t in enumerate(ans) if t == TOKENS.eos)  # the answer ends there
    assert at <= first  # the stop token was found at or before where it stood unstopped
    assert TOKENS.mask not in ans[:at]  # every position before the stop is revealed
    assert ans[at:] == [TOKENS.eos] * (p.gen_length - at)
    assert res.nfe <= p.total_steps


def test_stop_rows_in_a_batch_equal_alone(tiny_llada):
    p = SamplingParams(gen_length=16, steps=16, remasking="low_confidence")
    tok, _, _ = _stop_case(tiny_llada, p)
    p = dataclasses.replace(p, stop=((tok,), (TOKENS.eot,)))
    batch = run(tiny_llada, PROMPTS, p)
    alone = [run(tiny_llada, [q], p).answer[0].tolist() for q in PROMPTS]
    assert batch.answer.tolist() == alone


def test_banned_ids_are_never_revealed(tiny_llada):
    p = SamplingParams(gen_length=16, steps=8, remasking="low_confidence")
    free = run(tiny_llada, PROMPTS[:1], p).answer[0].tolist()
    common = max(set(free), key=free.count)
    banned = run(tiny_llada, PROMPTS[:1], dataclasses.replace(p, banned_ids=(common,)))
    assert common not in banned.answer[0].tolist()
    # the model's own list (TokenIds.banned) is the default; () switches it off
    tokens = dataclasses.replace(TOKENS, banned=(common,))
    assert run(tiny_llada, PROMPTS[:1], p, tokens).answer.tolist() == banned.answer.tolist()
    off = dataclasses.replace(p, banned_ids=())
    assert run(tiny_llada, PROMPTS[:1], off, tokens).answer[0].tolist() == free


def test_suffix_is_attended_and_not_returned(tiny_llada):
    p = SamplingParams(gen_length=8, steps=8, remasking="low_confidence")
    plain = run(tiny_llada, PROMPTS[:1], p)
    with_suffix = run(tiny_llada, PROMPTS[:1], dataclasses.replace(p, suffix=(11, 12, 13)))
    assert with_suffix.answer.shape == plain.answer.shape == (1, 8)
    assert with_suffix.answer.tolist() != plain.answer.tolist()  # the model saw the suffix
    assert with_suffix.nfe == plain.nfe


def test_suffix_needs_the_plain_loop(tiny_llada):
    p = SamplingParams(gen_length=8, steps=8, block_length=4, suffix=(11,), cache="prefix")
    with pytest.raises(SeerError, match="suffix"):
        run(tiny_llada, PROMPTS[:1], p.with_defaults("low_confidence"))


def test_sampling_params_normalise_and_check_stop():
    p = SamplingParams(stop=[[1, 2], [3]], suffix=[4], banned_ids=[5])
    assert p.stop == ((1, 2), (3,)) and p.suffix == (4,) and p.banned_ids == (5,)
    hash(p)  # still usable as a key
    with pytest.raises(SeerError, match="token-id"):
        SamplingParams(stop=("<|eot_id|>",))
    with pytest.raises(SeerError, match="at least one"):
        SamplingParams(stop=((),))


def test_confidence_dtype_of_the_model_reaches_the_rule(tiny_llada, monkeypatch):
    """A model's `confidence_dtype` (LLaDA-V: float64, the official softmax) is the dtype the
    unmasking rule sees; other models keep their logits' dtype."""
    import seer.diffusion.loop as loop_mod

    seen = []

    def spy(logits, *args):
        seen.append(logits.dtype)
        return propose(logits, *args)

    propose = loop_mod.propose
    monkeypatch.setattr(loop_mod, "propose", spy)
    p = SamplingParams(gen_length=4, steps=2, remasking="low_confidence")
    run(tiny_llada, PROMPTS[:1], p)
    assert set(seen) == {torch.float32}
    monkeypatch.setattr(type(tiny_llada), "confidence_dtype", torch.float64, raising=False)
    seen.clear()
    run(tiny_llada, PROMPTS[:1], p)
    assert set(seen) == {torch.float64}
