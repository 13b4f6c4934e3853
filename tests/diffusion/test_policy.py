"""Decoding policies as plug-ins (`seer.diffusion.policy`): the loop calls each policy's hooks
without naming it, and the policies' traits decide what composes."""

from __future__ import annotations

import pytest
import torch
from conftest import TOKENS

from seer.diffusion.decoders import for_rows
from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.diffusion.policy import Policy, Traits, check
from seer.errors import SeerError
from seer.sampling import SamplingParams

PROMPTS = [[5, 17, 42, 9, 100, 3], [7, 7, 250, 12]]
P = SamplingParams(gen_length=16, steps=8, remasking="low_confidence")


class Length(Policy):
    name = "length"
    traits = Traits(sets_length=True, caches=("none",))


class Limit(Policy):
    name = "limit"
    traits = Traits(limits=True)


def test_traits_decide_what_composes():
    check([Length()], None, "none")
    check([Length(), Limit()], None, "none")
    with pytest.raises(SeerError, match="length sets the answer length itself: drop Seer"):
        check([Length()], object(), "none")
    with pytest.raises(SeerError, match="both set the answer length"):
        check([Length(), Length()], None, "none")
    with pytest.raises(SeerError, match="length does not combine with cache='dual'"):
        check([Length()], None, "dual")
    with pytest.raises(SeerError, match="two policies limit the reveal"):
        check([Limit(), Limit()], None, "none")


def test_the_rows_options_build_their_policies(tiny_llada):
    loop = DenoisingLoop(tiny_llada, TOKENS)
    names = [
        [p.name for p in for_rows(loop, rows, "cpu")]
        for rows in (
            [P],
            [P, SamplingParams(gen_length=16, stop=((5,),))],
            [SamplingParams(gen_length=16, threshold=0.9)],
            [SamplingParams(gen_length=64, daedal=True)],
            [SamplingParams(gen_length=64, rho_eos=True)],
        )
    ]
    assert names == [[], ["stop"], ["threshold/factor/early_stop"], ["daedal"], ["rho_eos"]]


def test_a_new_policy_plugs_in_without_touching_the_loop(tiny_llada):
    """A policy the loop has never heard of: it halves every window before step 0 (a length
    policy), takes the reveal of the first step (reveals the whole first position), and ends
    the rows after their third step; the loop runs it through its hooks alone."""
    loop = DenoisingLoop(tiny_llada, TOKENS)
    calls: list[str] = []

    class Toy(Policy):
        name = "toy"
        traits = Traits(sets_length=True)

        def start(self, s, window):
            calls.append("start")
            half = s.canvas.window // 2
            loop._resize(s, half, half != s.canvas.window)
            s.plan = loop.plan(s.canvas.window, s.params)

        def reveal(self, s, logits, now):
            if s.nfe > 1:
                return False
            calls.append("reveal")
            s.canvas.x[:, s.canvas.prompt_len] = 42
            return True

        def after(self, s, answer):
            return torch.full_like(s.finished, s.nfe >= 3)

    s = loop.begin(make_canvas(PROMPTS, P.gen_length, TOKENS, "cpu"), P)
    s.decoders.append(Toy())
    s.decoders[-1].start(s, None)
    while not bool(s.finished.all()):
        loop.step(s)
    answer = loop.answers(s)
    assert calls == ["start", "reveal"]
    assert s.nfe == 3 and s.canvas.window.tolist() == [8, 8]
    assert answer[:, 0].tolist() == [42, 42]  # the policy's reveal, not the rule's
    assert (answer[:, 8:] == TOKENS.eos).all()  # past the halved window
