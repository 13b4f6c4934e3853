"""The engine's typed facade (issue 22, item 3): what it needs of a model (`EngineModel`), what it
reads of a run (`LoopState` accessors), where a request's state lives (the scheduler) and the
window policy as a typed value."""

from __future__ import annotations

import pytest
import torch

import seer
from seer.boundary.config import SeerConfig
from seer.diffusion.canvas import make_canvas
from seer.diffusion.schedule import Plan
from seer.diffusion.state import LoopState
from seer.engine import Engine, EngineConfig, Request
from seer.engine.model import EngineModel
from seer.engine.sequence import Window, WindowKind
from seer.sampling import SamplingParams, TokenIds

TOKENS = TokenIds(mask=9, eos=8, pad=8)


@pytest.fixture(scope="module")
def lm():
    return seer.load("builtin-v1")


def test_diffusion_lm_has_every_member_the_engine_needs(lm):
    members = (
        set(EngineModel.__annotations__)
        | {n for n, v in vars(EngineModel).items() if not n.startswith("_") and callable(v)}
        | {n for n, v in vars(EngineModel).items() if isinstance(v, property)}
    )
    # what the input processor reads to encode and check a prompt (`seer.engine.prompts`)
    prompts = {"tokenizer", "processor", "max_length", "multimodal"}
    assert {"model", "tokens", "loop", "defaults", "decode"} | prompts <= members
    assert all(hasattr(lm, name) for name in members), members - set(dir(lm))
    # the engine encodes prompts and lays defaults through the processor, not the facade
    assert not {"prompt_inputs", "sampling"} & members


def test_loop_state_accessors_read_masks_revealed_and_bytes():
    c = make_canvas([[5, 6], [7]], 4, TOKENS, "cpu")  # prompt width 2, window 4, all masks
    c.x[0, 2:] = torch.tensor([1, 2, 9, 3])  # row 0: two revealed, then a mask
    c.x[1, 2:] = torch.tensor([1, 2, 3, 4])  # row 1: all revealed
    s = LoopState.new(c, SamplingParams(gen_length=4), Plan([[], []]))
    assert s.masks_left(TOKENS.mask) == [1, 0]
    assert s.revealed(TOKENS.mask) == [2, 4]
    want = sum(t.numel() * t.element_size() for t in (c.x, c.attention_mask))
    assert s.held_bytes() == want


def test_a_request_moves_waiting_running_done_through_the_scheduler(lm):
    engine = Engine(lm, EngineConfig(max_batch=2))
    a = engine.submit(Request("spell sun", lm.sampling(gen_length=8, steps=8)))
    b = engine.submit(Request("spell cat", lm.sampling(gen_length=8, steps=8)))
    assert [q.id for q in engine.scheduler.waiting] == [a, b] and engine.running == []
    assert engine.abort(b) and [q.id for q in engine.waiting] == [a]
    results = engine.step()  # a's step 0: it is running now (b's abort comes out)
    assert engine.waiting == [] and [q.id for q in engine.scheduler.running] == [a]
    while engine.has_unfinished():
        results += engine.step()
    assert {r.request_id: r.finish_reason for r in results} == {b: "abort", a: "stop"}
    assert engine.scheduler.running == [] and not engine.scheduler.has_unfinished()


def test_the_window_policy_is_a_typed_value(lm):
    engine = Engine(lm, EngineConfig(max_batch=4))
    p = lm.sampling(gen_length=8, steps=8)
    for req, kind in [
        (Request("x", p), WindowKind.FULL),
        (Request("x", p, window=4), WindowKind.FIXED),
        (Request("x", p, seer={"signal": "eos_prob"}), WindowKind.SEER),
    ]:
        engine.submit(req)
        assert engine.waiting[-1].policy.kind is kind
    fixed = [Window(WindowKind.FIXED, 4), Window(WindowKind.FIXED, 6)]
    assert fixed[0].key == fixed[1].key  # fixed windows of one kind share step 0
    seer_cfg = SeerConfig(signal="eos_prob")
    assert Window(WindowKind.SEER, seer_cfg).seer is seer_cfg and fixed[0].seer is None
    with pytest.raises(seer.SeerError, match="unknown policy"):
        EngineConfig(policy="lifo")
