"""KV-cache policies in the one loop: Fast-dLLM's goldens, the model's cached forward, batching
with padding, and Seer's truncation and guard on top of a cache."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from conftest import TOKENS, tiny
from fastdllm_golden import GOLDEN, GOLDEN_TOKENS, cases, golden_params

from seer.boundary.config import SeerConfig
from seer.boundary.truncation import FixedWindowPolicy, SeerPolicy
from seer.diffusion.cache import DualCache, NoCache, PrefixCache, make_cache
from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.errors import SeerError
from seer.models.common import KVCache
from seer.models.loader import load_model
from seer.sampling import SamplingParams

CASES = cases("cache")


def prompts_of(lengths: list[int], seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 300, (n,), generator=g).tolist() for n in lengths]


def run(model, prompts, p: SamplingParams, policy=None, tokens=TOKENS):
    canvas = make_canvas(prompts, p.gen_length, tokens, "cpu")
    return DenoisingLoop(model, tokens).run(canvas, p, policy)


# -- against Fast-dLLM -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def golden_llada():
    return load_model(GOLDEN)


def _golden_params(case: dict) -> SamplingParams:
    kw = case["kwargs"]
    assert kw["threshold"] is None and kw["remasking"] == "low_confidence"
    return golden_params(case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_tokens_match_fast_dllm(golden_llada, case):
    kw = case["kwargs"]
    if kw["steps"] > kw["gen_length"]:
        # more steps than tokens is refused (the extra steps reveal nothing); Fast-dLLM skips
        # them (a block runs `while it has masks`), so its tokens are those of steps = gen_length
        with pytest.raises(SeerError, match="exceeds gen_length"):
            _golden_params(case)
        case = {**case, "kwargs": {**kw, "steps": kw["gen_length"]}}
    p = _golden_params(case)
    out = run(golden_llada, case["prompt_ids"], p, tokens=GOLDEN_TOKENS)
    got = torch.cat([torch.tensor(case["prompt_ids"]), out.answer], dim=1)
    assert got.tolist() == case["output_ids"]
    # NFE differs by design: we run the plan's steps; Fast-dLLM runs a block `while it has
    # masks`, so when a block has fewer positions than steps (4 over 8) the steps that would
    # reveal nothing are skipped. The tokens are the same either way.
    blocks = p.gen_length // p.block
    assert out.nfe == p.total_steps
    assert case["nfe"] == blocks * min(p.total_steps // blocks, p.block)


def test_the_goldens_are_not_vacuous():
    """The caches change the answer on this model, so matching them checks the cached K/V."""
    out = {c["name"]: c["output_ids"] for c in CASES}
    shapes = {c["name"].split("__")[1] for c in CASES}
    changed = [
        s
        for s in shapes
        if out[f"generate_with_prefix_cache__{s}"] != out[f"generate__{s}"]
        and out[f"generate_with_dual_cache__{s}"] != out[f"generate__{s}"]
    ]
    assert sorted(changed) == sorted(shapes)
    # one block: the dual cache's suffix is empty, so it is the prefix cache
    one = "gen16_block16_steps16"
    assert out[f"generate_with_dual_cache__{one}"] == out[f"generate_with_prefix_cache__{one}"]


# -- the model's cached forward ----------------------------------------------------------------


def _padded_inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 300, (2, 12), generator=g)
    am = torch.ones_like(x)
    am[1, :3] = 0  # left padding of row 1
    return x, am, (am.cumsum(-1) - 1).clamp(min=0)


def _clone(kv: KVCache) -> KVCache:
    return KVCache([k.clone() for k in kv.keys], [v.clone() for v in kv.values])


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_cached_forward_equals_the_full_forward_when_nothing_changed(arch):
    model = tiny(arch)
    x, am, pos = _padded_inputs()
    with torch.no_grad():
        full = model(x, attention_mask=am, position_ids=pos, use_cache=True)
        assert model(x, attention_mask=am, position_ids=pos).past_key_values is None
        kv = full.past_key_values
        assert kv.length == 12 and len(kv.keys) == 2
        for a, b in [(5, 12), (5, 9), (0, 12), (11, 12)]:  # prefix-like, dual-like, all, one
            cols = dict(attention_mask=am, position_ids=pos[:, a:b], cache_start=a)
            out = model(x[:, a:b], past_key_values=_clone(kv), **cols)
            torch.testing.assert_close(out.logits, full.logits[:, a:b], rtol=1e-5, atol=1e-5)


def test_replace_keeps_a_rows_cached_columns():
    model = tiny("llada")
    x, am, pos = _padded_inputs(1)
    with torch.no_grad():
        full = model(x, attention_mask=am, position_ids=pos, use_cache=True)
        kv = _clone(full.past_key_values)
        for k in kv.keys:
            k[1, :, 6:9] = 0  # row 1's cached keys of columns 6..8 are wrong
        rows = torch.tensor([[True] * 3, [False] * 3])  # row 1 keeps them
        cols = dict(attention_mask=am, position_ids=pos[:, 6:9], cache_start=6)
        out = model(x[:, 6:9], past_key_values=kv, replace=rows, **cols)
    torch.testing.assert_close(out.logits[0], full.logits[0, 6:9], rtol=1e-5, atol=1e-5)
    assert not torch.allclose(out.logits[1], full.logits[1, 6:9], atol=1e-3)
    assert (kv.keys[0][1, :, 6:9] == 0).all()  # not overwritten
    assert torch.equal(kv.keys[0][0, :, 6:9], full.past_key_values.keys[0][0, :, 6:9])


def test_after_layer_cannot_change_the_sequence_under_a_cache():
    model = tiny("llada")
    x, am, pos = _padded_inputs()

    def cut(i, h, mask):
        return h[:, :8], mask, pos[:, :8]

    with pytest.raises(ValueError, match="KV cache"):
        model(x, attention_mask=am, position_ids=pos, use_cache=True, after_layer=cut)


# -- the loop ----------------------------------------------------------------------------------

LLADA = dict(remasking="low_confidence")
CASES_LOOP = [
    ("llada", SamplingParams(gen_length=16, steps=8, block_length=4, **LLADA)),
    ("llada", SamplingParams(gen_length=16, steps=16, block_length=8, cfg_scale=0.5, **LLADA)),
    ("llada", SamplingParams(gen_length=16, steps=8, **LLADA)),  # one block
    ("dream", SamplingParams(gen_length=16, steps=8, block_length=4, remasking="entropy")),
    ("dream", SamplingParams(gen_length=16, steps=16, block_length=8, remasking="maskgit_plus")),
]


@pytest.mark.parametrize("cache", ["prefix", "dual"])
@pytest.mark.parametrize(("arch", "p"), CASES_LOOP, ids=lambda v: getattr(v, "remasking", v))
def test_batch_rows_with_padding_equal_their_single_runs(tiny_llada, tiny_dream, arch, p, cache):
    # Fast-dLLM v1 runs one unpadded row (and its model ignores the attention mask), so padding
    # is checked by batch invariance: each left-padded row equals its run alone.
    model = tiny_llada if arch == "llada" else tiny_dream
    p = replace(p, cache=cache)
    prompts = prompts_of([3, 9, 1, 6], seed=5)
    batch = run(model, prompts, p)
    alone = [run(model, [q], p).answer[0].tolist() for q in prompts]
    assert batch.answer.tolist() == alone
    assert batch.nfe == p.total_steps
    assert len({tuple(a) for a in alone}) > 1


def test_cache_none_is_the_plain_loop(tiny_llada):
    prompts = prompts_of([3, 7])
    p = SamplingParams(gen_length=16, steps=8, block_length=4, **LLADA)
    plain, none = run(tiny_llada, prompts, p), run(tiny_llada, prompts, replace(p, cache="none"))
    assert plain.answer.tolist() == none.answer.tolist()
    assert plain.forwarded == none.forwarded == 8 * 2 * (7 + 16)


@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_cached_steps_forward_what_fast_dllm_forwards(tiny_llada, cache):
    pl, gen, block, spb = 5, 16, 4, 3
    steps = spb * gen // block
    p = SamplingParams(gen_length=gen, steps=steps, block_length=block, cache=cache, **LLADA)
    out = run(tiny_llada, prompts_of([pl]), p)
    total = pl + gen
    per_block = [
        total + (spb - 1) * ((total - pl - b) if cache == "prefix" else block)
        for b in range(0, gen, block)
    ]
    assert out.forwarded == sum(per_block)
    assert out.forwarded < out.nfe * total


def test_a_cache_policy_can_be_injected(tiny_dream):
    p = SamplingParams(gen_length=16, steps=8, block_length=4, remasking="entropy")
    canvas = make_canvas(prompts_of([4, 6]), 16, TOKENS, "cpu")
    injected = DenoisingLoop(tiny_dream, TOKENS).run(canvas, p, cache=DualCache())
    named = run(tiny_dream, prompts_of([4, 6]), replace(p, cache="dual"))
    assert injected.answer.tolist() == named.answer.tolist()
    assert injected.forwarded == named.forwarded < run(tiny_dream, prompts_of([4, 6]), p).forwarded


def test_unknown_cache_is_a_clear_error():
    with pytest.raises(SeerError, match="unknown cache 'full'.*none, prefix, dual"):
        SamplingParams(cache="full")
    with pytest.raises(SeerError, match="unknown cache"):
        make_cache("kv")
    kinds = [type(make_cache(n)) for n in ("none", "prefix", "dual")]
    assert kinds == [NoCache, PrefixCache, DualCache]


# -- Seer on top of a cache --------------------------------------------------------------------


def _valid(answer: torch.Tensor, window: list[int]) -> None:
    for row, w in zip(answer, window, strict=True):
        assert (row[:w] != TOKENS.mask).all()
        assert (row[w:] == TOKENS.eos).all()


@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_truncation_with_a_cache_is_valid_cheaper_and_batch_invariant(tiny_llada, cache):
    p = SamplingParams(gen_length=32, steps=16, block_length=8, **LLADA)
    pc = replace(p, cache=cache)
    prompts, windows = prompts_of([4, 2], seed=3), [8, 24]
    both = run(tiny_llada, prompts, pc, FixedWindowPolicy(windows))
    _valid(both.answer, windows)
    for r, (q, w) in enumerate(zip(prompts, windows, strict=True)):
        alone = run(tiny_llada, [q], pc, FixedWindowPolicy([w]))
        assert both.answer[r].tolist() == alone.answer[0].tolist()
    seer_only = run(tiny_llada, prompts, p, FixedWindowPolicy(windows))
    cache_only = run(tiny_llada, prompts, pc)
    assert both.nfe == seer_only.nfe < cache_only.nfe
    assert both.forwarded < seer_only.forwarded
    assert both.forwarded < cache_only.forwarded < run(tiny_llada, prompts, p).forwarded


def _forced(**kw) -> SeerConfig:
    # theta huge -> a flat profile of 1.0; tau_jump 0 -> position 1 is a "boundary": L* = 2
    return SeerConfig(layer=1, theta=1e9, tau_jump=0.0, bucket=4, **kw)


@pytest.mark.parametrize("cache", ["prefix", "dual"])
@pytest.mark.parametrize("in_step0", [False, True])
def test_guard_growth_rebuilds_the_cache(tiny_llada, cache, in_step0):
    # a random model never writes an end token: the guard grows 4 -> 8 -> 16 -> 32
    p = SamplingParams(gen_length=32, steps=32, block_length=8, cache=cache, **LLADA)
    policy = SeerPolicy(_forced(cut_in_step0=in_step0), TOKENS)
    out = run(tiny_llada, prompts_of([5]), p, policy)
    assert out.window.tolist() == [32] and out.grown.tolist() == [3]
    assert out.nfe == 4 + 4 + 8 + 16  # the cache never changes the number of steps
    _valid(out.answer, [32])


class CutThenGrow:
    """Cuts to `cut` after step 0, then grows each row once, from its cut to its `grown`
    window: rows grown from different windows sit in different blocks at the same step. (The
    guard asks about the rows whose plan ran out, each the step it does.)"""

    def __init__(self, cut: list[int], grown: list[int]) -> None:
        self.windows, self.to = cut, dict(zip(cut, grown, strict=True))

    def start(self, model, canvas) -> dict:
        return {}

    def cut(self, canvas, logits):
        return torch.tensor(self.windows)

    def grow(self, window, end_pos, gen_length):
        return torch.tensor([self.to.get(int(w), int(w)) for w in window])

    def report(self) -> dict:
        return {}


@pytest.mark.parametrize("cache", ["prefix", "dual"])
@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_rows_in_different_blocks_see_their_own_cache(tiny_llada, tiny_dream, arch, cache):
    model = tiny_llada if arch == "llada" else tiny_dream
    rule = "low_confidence" if arch == "llada" else "entropy"
    p = SamplingParams(gen_length=16, steps=16, block_length=4, remasking=rule, cache=cache)
    prompts, cut, grown = prompts_of([3, 6], seed=7), [4, 8], [12, 16]
    both = run(model, prompts, p, CutThenGrow(cut, grown))
    assert both.window.tolist() == grown
    for r, q in enumerate(prompts):
        alone = run(model, [q], p, CutThenGrow([cut[r]], [grown[r]]))
        assert both.answer[r].tolist() == alone.answer[0].tolist()


class HookedWindow(FixedWindowPolicy):
    """A fixed cut whose step 0 runs with a (no-op) hook, so it cannot fill the cache."""

    def start(self, model, canvas) -> dict:
        return {"after_layer": lambda i, h, mask: None}


@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_a_cut_refills_the_cache_over_the_truncated_canvas(tiny_llada, cache):
    """Cut rows never read K/V computed over the full window: their run equals one whose step 0
    filled nothing, and the step after the cut is a full forward (of the truncated canvas)."""
    p = SamplingParams(gen_length=32, steps=16, block_length=8, cache=cache, **LLADA)
    prompts = prompts_of([4], seed=3)
    filled = run(tiny_llada, prompts, p, FixedWindowPolicy([8]))
    hooked = run(tiny_llada, prompts, p, HookedWindow([8]))
    assert filled.answer.tolist() == hooked.answer.tolist()
    width = 4 + 8  # prompt + cut window: step 0 full window, step 1 refill, then the block
    assert filled.forwarded == (4 + 32) + width + 2 * 8
    kept = run(tiny_llada, prompts, p, FixedWindowPolicy([32]))  # a cut that keeps the window
    assert kept.answer.tolist() == run(tiny_llada, prompts, p).answer.tolist()
