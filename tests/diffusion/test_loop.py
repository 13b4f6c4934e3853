"""The denoising loop and its schedule: batching invariance, reproducibility, step arithmetic."""

from __future__ import annotations

import pytest
import torch
from conftest import TOKENS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.diffusion.schedule import Plan, Stage, lay_blocks, linear_count, timestep_count
from seer.sampling import SamplingParams


def prompts_of(lengths: list[int], seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 300, (n,), generator=g).tolist() for n in lengths]


def run(model, prompts, p: SamplingParams, generator=None):
    canvas = make_canvas(prompts, p.gen_length, TOKENS, "cpu")
    return DenoisingLoop(model, TOKENS).run(canvas, p, generator=generator)


def assert_batch_equals_alone(model, prompts, p: SamplingParams) -> list[list[int]]:
    batch = run(model, prompts, p)
    alone = [run(model, [q], p).answer[0].tolist() for q in prompts]
    assert batch.answer.tolist() == alone
    assert batch.nfe == p.total_steps
    # (no check that [MASK] is absent: these random models may propose the [MASK] id itself,
    # as the official samplers allow)
    return alone


LLADA_CASES = [
    SamplingParams(gen_length=16, remasking="low_confidence"),
    SamplingParams(gen_length=16, steps=8, block_length=4, remasking="low_confidence"),
    SamplingParams(gen_length=16, steps=8, cfg_scale=1.5, remasking="low_confidence"),
    SamplingParams(
        gen_length=16, steps=8, block_length=8, cfg_scale=0.5, remasking="low_confidence"
    ),
]
DREAM_CASES = [
    SamplingParams(gen_length=16, remasking=rule)
    for rule in ("maskgit_plus", "topk_margin", "entropy")
] + [SamplingParams(gen_length=16, steps=8, remasking="entropy", top_k=20, top_p=0.9)]


# -- batching: left padding + mask ------------------------------------------------------------


@pytest.mark.parametrize("p", LLADA_CASES, ids=lambda p: f"{p.block_length}-{p.cfg_scale}")
def test_llada_batch_rows_equal_their_solo_runs(tiny_llada, p):
    alone = assert_batch_equals_alone(tiny_llada, prompts_of([3, 9, 1, 6]), p)
    assert len({tuple(a) for a in alone}) > 1  # the rows really differ


@pytest.mark.parametrize("p", DREAM_CASES, ids=lambda p: f"{p.remasking}-{p.steps}")
def test_dream_batch_rows_equal_their_solo_runs(tiny_dream, p):
    alone = assert_batch_equals_alone(tiny_dream, prompts_of([3, 9, 1, 6], seed=1), p)
    assert len({tuple(a) for a in alone}) > 1


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_padding_is_visible_without_the_mask(tiny_llada, tiny_dream, arch):
    """Control: the model does react to padding, so the invariance above is not vacuous."""
    model = tiny_llada if arch == "llada" else tiny_dream
    prompts = prompts_of([2, 10], seed=2)
    p = SamplingParams(gen_length=8).with_defaults(
        "low_confidence" if arch == "llada" else "entropy"
    )
    alone = run(model, prompts[:1], p).answer[0].tolist()
    canvas = make_canvas(prompts, 8, TOKENS, "cpu")
    canvas.attention_mask.fill_(1)  # attend to the left padding and shift the positions
    blind = DenoisingLoop(model, TOKENS).run(canvas, p).answer[0].tolist()
    assert blind != alone


RULES = [("llada", "low_confidence", None, 0.0), ("llada", "low_confidence", 2, 0.0)]
RULES += [("llada", "low_confidence", None, 1.0)]
RULES += [("dream", r, None, 0.0) for r in ("maskgit_plus", "topk_margin", "entropy")]


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    lengths=st.lists(st.integers(1, 12), min_size=2, max_size=4),
    seed=st.integers(0, 2**16),
    case=st.sampled_from(RULES),
)
def test_any_mix_of_prompt_lengths_batches_exactly(tiny_llada, tiny_dream, lengths, seed, case):
    arch, rule, block, cfg = case
    model = tiny_llada if arch == "llada" else tiny_dream
    p = SamplingParams(gen_length=8, block_length=block, remasking=rule, cfg_scale=cfg)
    assert_batch_equals_alone(model, prompts_of(lengths, seed), p)


# -- reproducibility ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arch", "rule"),
    [
        ("llada", "low_confidence"),
        ("llada", "random"),
        ("dream", "maskgit_plus"),
        ("dream", "origin"),
    ],
)
def test_same_seed_same_sample(tiny_llada, tiny_dream, arch, rule):
    model = tiny_llada if arch == "llada" else tiny_dream
    prompts = prompts_of([4, 7], seed=3)
    p = SamplingParams(gen_length=16, temperature=0.7, remasking=rule)

    def sample(seed: int) -> list[list[int]]:
        return run(model, prompts, p, torch.Generator().manual_seed(seed)).answer.tolist()

    first = sample(11)
    torch.manual_seed(999)  # the global RNG must not matter
    assert sample(11) == first
    assert any(sample(s) != first for s in (12, 13, 14))


def test_loop_honours_params_seed(tiny_llada):
    p = SamplingParams(gen_length=16, temperature=0.7, remasking="low_confidence", seed=5)
    prompts = prompts_of([4, 7], seed=3)
    torch.manual_seed(0)
    a = run(tiny_llada, prompts, p).answer.tolist()
    torch.manual_seed(1)
    assert run(tiny_llada, prompts, p).answer.tolist() == a


def test_temperature_zero_ignores_the_generator(tiny_dream):
    prompts = prompts_of([5], seed=4)
    p = SamplingParams(gen_length=8, remasking="entropy")
    a = run(tiny_dream, prompts, p, torch.Generator().manual_seed(1)).answer
    b = run(tiny_dream, prompts, p, torch.Generator().manual_seed(2)).answer
    assert torch.equal(a, b)


# -- cost and step-by-step progress -------------------------------------------------------------


@pytest.mark.parametrize(
    ("gen", "steps", "block"), [(16, None, None), (16, 4, None), (16, 8, 4), (8, 8, None)]
)
def test_nfe_equals_steps(tiny_llada, gen, steps, block):
    p = SamplingParams(gen_length=gen, steps=steps, block_length=block, remasking="low_confidence")
    res = run(tiny_llada, prompts_of([5, 2]), p)
    assert res.nfe == (steps or gen)
    assert res.answer.shape == (2, gen)
    assert res.window.tolist() == [gen, gen]
    assert res.grown.tolist() == [0, 0]


def _trace(model, prompts, p: SamplingParams) -> list[torch.Tensor]:
    """Snapshots of the answer window after every step."""
    loop = DenoisingLoop(model, TOKENS)
    canvas = make_canvas(prompts, p.gen_length, TOKENS, "cpu")
    snaps = []
    decode = loop.decode

    def spy(c, logits, lo, plan, params, g):
        decode(c, logits, lo, plan, params, g)
        snaps.append(c.x[:, c.prompt_len :].clone())

    loop.decode = spy
    loop.run(canvas, p)
    return snaps


def test_llada_reveals_linear_counts_block_by_block(tiny_llada):
    p = SamplingParams(gen_length=16, steps=6, block_length=8, remasking="low_confidence")
    snaps = _trace(tiny_llada, prompts_of([3, 6]), p)
    assert len(snaps) == 6
    masked = [(s == TOKENS.mask).sum(1).tolist() for s in snaps]
    # 8 positions over 3 steps per block: 3, 3, 2 revealed per step, per row
    assert masked == [[m, m] for m in (13, 10, 8, 5, 2, 0)]
    for s in snaps[:3]:  # block 2 stays masked while block 1 is denoised
        assert (s[:, 8:] == TOKENS.mask).all()
    assert not (snaps[2][:, :8] == TOKENS.mask).any()
    for a, b in zip(snaps, snaps[1:], strict=False):  # revealed tokens never change
        kept = a != TOKENS.mask
        assert torch.equal(a[kept], b[kept])


def test_dream_reveals_timestep_counts(tiny_dream):
    p = SamplingParams(gen_length=16, steps=16, remasking="entropy")
    snaps = _trace(tiny_dream, prompts_of([4]), p)
    remaining = [16] + [int((s == TOKENS.mask).sum()) for s in snaps]
    revealed = [a - b for a, b in zip(remaining, remaining[1:], strict=False)]
    assert revealed == _dream_counts(16, 16)
    assert remaining[-1] == 0


# -- schedule arithmetic ----------------------------------------------------------------------


def _linear(size: int, steps: int) -> list[int]:
    j = torch.arange(steps)
    n = torch.full((steps,), steps)
    sz = torch.full((steps,), size)
    return linear_count(j, n, sz, sz, 1e-3).tolist()


def _dream_counts(masks: int, steps: int, eps: float = 1e-3) -> list[int]:
    remaining, out = masks, []
    for j in range(steps):
        k = timestep_count(
            torch.tensor([j]),
            torch.tensor([steps]),
            torch.tensor([remaining]),
            torch.tensor([masks]),
            eps,
        )
        out.append(int(k))
        remaining -= int(k)
    return out


def test_linear_counts_put_the_remainder_first():
    assert _linear(8, 3) == [3, 3, 2]
    assert _linear(8, 8) == [1] * 8
    assert _linear(7, 2) == [4, 3]
    assert _linear(3, 5) == [1, 1, 1, 0, 0]


@pytest.mark.parametrize(("size", "steps"), [(1, 1), (5, 5), (16, 3), (17, 4), (32, 7), (9, 12)])
def test_linear_counts_sum_to_the_block(size, steps):
    counts = _linear(size, steps)
    assert sum(counts) == size
    assert max(counts) - min(counts) <= 1
    assert counts == sorted(counts, reverse=True)


def test_dream_timestep_counts():
    counts = _dream_counts(16, 16)
    assert counts[0] == 0
    assert sum(counts) == 16
    assert min(counts) >= 0
    # the official rule: floor(remaining * (1 - t[j+1] / t[j])), the rest at the last step
    t = torch.linspace(1, 1e-3, 17)
    remaining, want = 16, []
    for j in range(16):
        k = remaining if j == 15 else int(remaining * (1 - t[j + 1] / t[j]))
        want.append(k)
        remaining -= k
    assert counts == want


@pytest.mark.parametrize(("masks", "steps"), [(16, 4), (32, 32), (5, 1), (64, 16), (8, 20)])
def test_dream_timestep_counts_sum(masks, steps):
    assert sum(_dream_counts(masks, steps)) == masks


def test_lay_blocks():
    assert lay_blocks(0, 16, 8, 4) == [Stage(0, 8, 4), Stage(8, 16, 4)]
    # a partial last block gets its share of the steps, rounded up
    assert lay_blocks(0, 10, 4, 2) == [Stage(0, 4, 2), Stage(4, 8, 2), Stage(8, 10, 1)]
    assert lay_blocks(0, 10, 4, 3) == [Stage(0, 4, 3), Stage(4, 8, 3), Stage(8, 10, 2)]
    assert lay_blocks(0, 5, 8, 8) == [Stage(0, 5, 5)]
    assert lay_blocks(0, 1, 64, 4) == [Stage(0, 1, 1)]  # never zero steps
    assert lay_blocks(8, 14, 4, 2) == [Stage(8, 12, 2), Stage(12, 14, 1)]  # growth past 8
    assert lay_blocks(4, 4, 4, 2) == []


def test_plan_runs_rows_in_lockstep():
    plan = Plan([lay_blocks(0, 8, 4, 2), lay_blocks(0, 4, 4, 2)])
    assert plan.total == 4
    start, end, j, n, active = plan.current(torch.device("cpu"))
    assert (start.tolist(), end.tolist(), j.tolist(), active.tolist()) == (
        [0, 0],
        [4, 4],
        [0, 0],
        [True, True],
    )
    plan.step = 2
    start, end, j, n, active = plan.current(torch.device("cpu"))
    assert start[0] == 4 and end[0] == 8 and j[0] == 0 and n[0] == 2
    assert active.tolist() == [True, False]
    plan.extend(1, lay_blocks(4, 6, 4, 2))  # grow row 1 after it went idle
    start, end, j, n, active = plan.current(torch.device("cpu"))
    assert active.tolist() == [True, True] and (start[1], end[1], n[1]) == (4, 6, 1)
    plan.step = 3
    assert not plan.done() and plan.current(torch.device("cpu"))[4].tolist() == [True, False]
    plan.step = 4
    assert plan.done()


def test_a_row_at_its_step_0_cut_beside_running_rows_keeps_its_solo_answer(tiny_llada):
    """A begun run whose window policy hooks nothing into step 0 takes that step in a state
    gathered with rows past theirs (`state.gather`, `RowCuts`): its policy cuts its row alone,
    its plan is laid over the new window, the running rows keep their steps, and every row
    ends with its solo answer. A pending step 0 split across states is refused."""
    from seer.boundary.truncation import FixedWindowPolicy
    from seer.diffusion.state import gather

    loop, p = DenoisingLoop(tiny_llada, TOKENS), SamplingParams(gen_length=16, steps=8)
    prompts = prompts_of([5, 9, 7])

    def begun(rows, policy=None):
        return loop.begin(make_canvas(rows, 16, TOKENS, "cpu"), p, policy, rows=[p] * len(rows))

    running = begun(prompts[:2])
    loop.step(running)
    fresh = begun(prompts[2:], FixedWindowPolicy([8]))
    with pytest.raises(AssertionError, match="split"):
        gather(
            [(running, 0), (fresh, 0), (begun(prompts[1:], FixedWindowPolicy([8, 8])), 0)],
            9,
            16,
            TOKENS,
        )
    s = gather([(running, 0), (fresh, 0), (running, 1)], 9, 16, TOKENS)
    assert s.first_kw == {}  # the fresh row's step 0 is pending
    loop.step(s)
    assert s.canvas.window.tolist() == [16, 8, 16] and s.row_nfe.tolist() == [2, 1, 2]
    assert [st.end for st in s.plan.stages[1]] == [8]  # laid over its cut window
    assert s.plan.stages[0] == running.plan.stages[0]  # the running rows' plans unchanged
    while not bool(s.finished.all()):
        loop.step(s)
    solo = [run(tiny_llada, [prompts[0]], p), run(tiny_llada, [prompts[1]], p)]
    cut = loop.run(make_canvas(prompts[2:], 16, TOKENS, "cpu"), p, FixedWindowPolicy([8]))
    got = loop.answers(s).tolist()
    assert got == [solo[0].answer[0].tolist(), cut.answer[0].tolist(), solo[1].answer[0].tolist()]


def test_plan_relay_lays_a_row_anew_from_the_current_step():
    plan = Plan([lay_blocks(0, 8, 4, 2), lay_blocks(0, 8, 4, 2)])
    plan.step = 1
    plan.relay(1, lay_blocks(0, 4, 4, 1))
    start, end, j, n, active = plan.current(torch.device("cpu"))
    assert (start.tolist(), end.tolist(), j.tolist(), active.tolist()) == (
        [0, 0],
        [4, 4],
        [1, 0],
        [True, True],
    )
    plan.step = 2
    assert plan.current(torch.device("cpu"))[4].tolist() == [True, False]


def test_canvas_left_pads():
    canvas = make_canvas([[7, 8, 9], [5]], 4, TOKENS, "cpu")
    assert canvas.prompt_len == 3 and canvas.width == 4
    assert canvas.x.tolist() == [
        [7, 8, 9] + [TOKENS.mask] * 4,
        [TOKENS.pad, TOKENS.pad, 5] + [TOKENS.mask] * 4,
    ]
    assert canvas.attention_mask.tolist() == [[1] * 7, [0, 0] + [1] * 5]
    assert canvas.window.tolist() == [4, 4]
