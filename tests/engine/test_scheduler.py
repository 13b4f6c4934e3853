"""Routing: buckets, padding-waste ratio, path choice, packing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seer.engine import EngineConfig, Scheduler
from seer.engine.scheduler import default_buckets, pack, rho_of
from seer.errors import SeerError
from seer.roofline import cost


def plan(windows, prompts=None, **kw):
    prompts = prompts or [4] * len(windows)
    return Scheduler(EngineConfig(**kw)).plan(windows, prompts, 64)


def test_default_buckets_end_at_gen_length():
    assert default_buckets(64) == (8, 16, 32, 64)
    assert default_buckets(48) == (8, 16, 32, 48)
    assert default_buckets(8) == (8,)
    assert Scheduler(EngineConfig(buckets=(4, 8))).buckets(32) == (4, 8, 32)


def test_rho_is_the_papers_padding_waste():
    assert rho_of([8, 8], 8) == 0.0
    assert rho_of([2, 6], 8) == 0.5


def test_uniform_group_is_static_padded_to_its_bucket():
    (p,) = plan([16, 16, 12, 16], prompts=[3, 9, 5, 4])
    assert (p.path, p.bucket, p.width, p.prompt_width) == ("static", 16, 16, 16)
    assert p.rho == pytest.approx(1 - 60 / 64)


def test_skewed_group_is_packed_and_straggler_runs_eager():
    plans = plan([8, 8, 8, 24, 64], min_group=4)
    paths = [(p.path, sorted(p.rows)) for p in plans]
    assert paths == [("varlen", [0, 1, 2, 3]), ("eager", [4])]
    v = plans[0]
    assert v.rho == pytest.approx(1 - 48 / 128)
    assert v.packs == 1 and v.offsets == [0, 12, 24, 36] and v.packed_len == 256


def test_tiny_buckets_run_eager_and_naive_is_one_static_group():
    assert plan([2, 3, 4, 4], buckets=(4, 8))[0].path == "eager"
    (p,) = plan([8, 8, 8, 64], routing="naive")
    assert (p.path, p.bucket, sorted(p.rows)) == ("static", 64, [0, 1, 2, 3])


def test_computed_waste_counts_the_prompt_and_merges_adjacent_buckets():
    """Long prompts: padding 8-windows to 64 adds little to what the forward computes (prompt +
    window), so the computed basis merges the two bucket groups into one static forward; the
    paper's basis (answer windows only) keeps them apart."""
    windows, long = [8] * 4 + [64] * 4, [88] * 8
    apart = plan(windows, long)
    assert [(p.path, p.bucket, len(p.rows)) for p in apart] == [("static", 8, 4), ("static", 64, 4)]
    assert all(p.waste == p.rho for p in apart)
    (one,) = plan(windows, long, waste="computed")
    assert (one.path, one.bucket, one.prompt_width, sorted(one.rows)) == (
        "static",
        64,
        88,
        [*range(8)],
    )
    assert one.waste == pytest.approx(1 - (4 * (88 + 8) + 4 * (88 + 64)) / (8 * (88 + 64)))
    assert one.rho == pytest.approx(1 - (4 * 8 + 4 * 64) / (8 * 64))  # the paper's, reported


def test_computed_waste_keeps_groups_apart_when_padding_dominates():
    """Short prompts (4, aligned to 8): the merged group would compute 44 % padding > tau_pad;
    a KV cache that reuses the prompt counts the windows only (the paper's rho, 44 %)."""
    windows = [8] * 4 + [64] * 4
    assert len(plan(windows, [4] * 8, waste="computed")) == 2
    s = Scheduler(EngineConfig(waste="computed"))
    assert len(s.plan(windows, [88] * 8, 64, no_pack=True, reuses_prompt=True)) == 2
    assert len(s.plan(windows, [88] * 8, 64, no_pack=True)) == 1


LLADA_H100 = "h100:llada-8b"


def _apart_and_merged(s, windows, prompts, gen_length):
    """Predicted seconds of the two bucket groups apart (the paper's plans) and of the one
    forward the merge rule lays them out as."""
    apart = Scheduler(EngineConfig()).plan(windows, prompts, gen_length)
    assert len(apart) == 2
    rows = apart[0].rows + apart[1].rows
    merged = s._plan(windows, prompts, gen_length, False, False)
    one = merged if len(merged) == 1 else None
    if one is None:  # the rule kept them apart: price the layout it refused
        rho = s.waste(rows, windows, prompts, gen_length)
        path = s._route(rows, windows, gen_length, False, rho)
        one = [s._make(path, rows, windows, prompts, gen_length, rho)]
    price = s.price
    return sum(price.seconds(p, windows, False) for p in apart), price.seconds(
        one[0], windows, False
    )


def test_merge_on_merges_small_groups_whose_forward_is_memory_bound():
    """Eight rows of LLaDA-8B on an H100: the weights read dominates, so one forward of both
    bucket groups costs about one of them; the rule merges them (packed: padding is 44 % of
    the windows), where the paper's rho and the computed basis keep two forwards."""
    windows, prompts = [8] * 4 + [64] * 4, [4] * 8
    assert len(plan(windows, prompts)) == len(plan(windows, prompts, waste="computed")) == 2
    s = Scheduler(EngineConfig(merge_on=LLADA_H100))
    (one,) = s.plan(windows, prompts, 64)
    assert (one.path, sorted(one.rows)) == ("varlen", [*range(8)])
    apart, merged = _apart_and_merged(s, windows, prompts, 64)
    assert merged <= apart
    w = cost.Work(8 * 72, 8 * 72 * 72, 8 * 64, 8 * 72)
    assert cost.bound(s.price.shape, s.price.hw, s.price.eff, w) == "memory"


def test_merge_on_keeps_apart_a_compute_bound_forward_with_much_padding():
    """64 rows with 200-token prompts: the computed basis merges the 8- and 64-window groups
    (the padding is small beside the prompts), but the merged forward is compute-bound, so
    its padding costs FLOPs and it is predicted slower than the two apart: no merge."""
    windows, prompts = [8] * 32 + [64] * 32, [200] * 64
    assert len(plan(windows, prompts, waste="computed")) == 1
    for waste in ("window", "computed"):
        s = Scheduler(EngineConfig(merge_on=LLADA_H100, waste=waste))
        plans = s.plan(windows, prompts, 64)
        assert [(p.path, p.bucket, len(p.rows)) for p in plans] == [
            ("static", 8, 32),
            ("static", 64, 32),
        ]
        apart, merged = _apart_and_merged(s, windows, prompts, 64)
        assert merged > apart
    w = cost.Work(64 * 264, 64 * 264 * 264, 64 * 64, 64 * 264)
    assert cost.bound(s.price.shape, s.price.hw, s.price.eff, w) == "compute"


def test_merge_on_plans_are_pure_and_memoised():
    windows, prompts = [8] * 4 + [64] * 4, [4] * 8
    s = Scheduler(EngineConfig(merge_on=LLADA_H100))
    first = s.plan(windows, prompts, 64)
    assert s.plan(list(windows), list(prompts), 64) is first  # the memo's answer
    assert windows == [8] * 4 + [64] * 4 and prompts == [4] * 8  # arguments untouched
    fresh = Scheduler(EngineConfig(merge_on=LLADA_H100)).plan(windows, prompts, 64)
    assert [(p.path, p.rows, p.offsets) for p in fresh] == [
        (p.path, p.rows, p.offsets) for p in first
    ]
    # forced paths and naive padding ignore the rule
    forced = Scheduler(EngineConfig(merge_on=LLADA_H100, routing="static"))
    assert len(forced.plan(windows, prompts, 64)) == 2


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("h999", "merge_on 'h999': unknown gpu 'h999': choose one of a100, h100, h200, rtx5070"),
        ("h100:nope", "merge_on 'h100:nope': unknown model shape 'nope'; choose one of llada-8b"),
        ("h100:", "merge_on 'h100:': name a model shape after ':'"),
        ("auto:llada-8b", "merge_on 'auto:llada-8b': auto prices the GPU found as the served"),
        ("automatic", "merge_on 'automatic': unknown gpu 'automatic': choose one of a100"),
        ("", "merge_on '': unknown gpu ''"),
    ],
)
def test_merge_on_bad_values_are_one_line(bad, says):
    with pytest.raises(SeerError) as e:
        EngineConfig(merge_on=bad)
    assert str(e.value).startswith(says) and "\n" not in str(e.value)


def test_merge_on_without_a_model_prices_the_served_model():
    """ "h100" alone: the engine reads the served model's shape from its config (the built-in
    text model's config.json); a model shape named after ':' overrides it."""
    import json

    import seer
    from seer.engine import Engine
    from seer.roofline.shapes import shape_of

    lm = seer.load("builtin")
    served = Engine(lm, EngineConfig(merge_on="h100")).scheduler.price
    raw = json.loads((lm.path / "config.json").read_text())
    want = shape_of(raw, "builtin")
    assert served is not None and served.hw.name.startswith("H100")
    assert (served.shape.hidden, served.shape.layers, served.shape.params) == (
        want.hidden,
        want.layers,
        want.params,
    )
    named = Engine(lm, EngineConfig(merge_on=LLADA_H100)).scheduler.price
    assert named is not None and named.shape.name == "LLaDA-8B"


def test_merge_on_refuses_a_model_without_a_config_shape():
    from seer.engine.pricing import served_shape

    with pytest.raises(SeerError, match="merge_on: the shape of toy is unknown"):
        served_shape(object(), "toy")


def test_cfg_groups_are_never_packed():
    s = Scheduler(EngineConfig(routing="varlen"))
    assert {p.path for p in s.plan([8, 40], [3, 3], 64, no_pack=True)} == {"static"}


def test_pack_is_next_fit_within_capacity():
    offsets, packs, cap = pack([5, 5, 5, 30], 12)
    assert cap == 32 and packs == 2 and offsets == [0, 5, 10, 32]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    windows=st.lists(st.integers(1, 64), min_size=1, max_size=40),
    routing=st.sampled_from(["hybrid", "naive", "static", "varlen", "eager"]),
    tau=st.floats(0, 1),
    waste=st.sampled_from(["window", "computed"]),
)
def test_every_row_is_planned_exactly_once(windows, routing, tau, waste):
    plans = plan(windows, routing=routing, tau_pad=tau, waste=waste)
    rows = sorted(r for p in plans for r in p.rows)
    assert rows == list(range(len(windows)))
    for p in plans:
        assert all(windows[r] <= p.width <= p.bucket for r in p.rows)
        if p.path == "varlen":
            ends = [o + 4 + windows[r] for o, r in zip(p.offsets, p.rows, strict=True)]
            assert all(
                o // p.packed_len == (e - 1) // p.packed_len
                for o, e in zip(p.offsets, ends, strict=True)
            )
            assert max(ends) <= p.packs * p.packed_len


def test_config_errors_are_clear():
    with pytest.raises(SeerError, match="routing"):
        EngineConfig(routing="fast")
    with pytest.raises(SeerError, match="tau_pad"):
        EngineConfig(tau_pad=1.5)
    with pytest.raises(SeerError, match="buckets"):
        EngineConfig(buckets=(16, 8))
    with pytest.raises(SeerError, match="unknown waste basis 'answer'"):
        EngineConfig(waste="answer")


@pytest.mark.parametrize("bad", [0, -1])
def test_a_queue_that_holds_nothing_is_refused(bad):
    """max_queue=0 would refuse every request with QueueFull; the config refuses it instead."""
    with pytest.raises(
        SeerError, match=rf"max_queue must be >= 1 \(or None for no bound\), got {bad}"
    ):
        EngineConfig(max_queue=bad)
    assert EngineConfig(max_queue=1).max_queue == 1 and EngineConfig().max_queue is None


def test_seer_bench_subcommand_parses():
    from seer.cli import build_parser

    args = build_parser().parse_args(["bench", "--batches", "8", "32", "--tau-pad", "0.3"])
    assert (args.batches, args.tau_pad, args.command) == ([8, 32], 0.3, "bench")
