"""A greedy answer does not depend on its batch neighbours, on the shipped built-in models.

The random tiny models of `test_step_engine.py` almost never produce two equal confidences; a
trained model saturates float32 softmax to 1.0 at several positions of most steps. The choice
between tied positions must then be a function of the row alone, not of the width it is padded
to or the rows beside it. These tests drive the engine with the built-in models' own held-out
requests, random neighbours, windows and routings, and require every row to equal its solo run
(`seer.load(...).generate` / a one-request engine), whatever Seer's settings are.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seer
from seer.data import load_examples
from seer.diffusion.unmask import select
from seer.engine import Engine, EngineConfig, Request
from seer.errors import SeerError
from seer.sampling import SamplingParams

SETTINGS = dict(
    deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
ROUTINGS = ["hybrid", "static", "varlen", "eager"]
WINDOWS = [5, 8, 13, 16, 24, 32, 47, 64]


@pytest.fixture(scope="module")
def text():
    lm = seer.load("builtin")
    examples = {e.id: e for e in load_examples("builtin", n=64, part="eval")}
    return lm, examples


@pytest.fixture(scope="module")
def vqa():
    lm = seer.load("builtin-vqa")
    return lm, load_examples("builtin-vqa", n=8, part="eval")


def run(lm, requests: list[Request], cfg: EngineConfig | None = None) -> list:
    return Engine(lm, cfg or EngineConfig()).generate(requests)


def test_tied_confidences_pick_the_same_positions_in_any_layout():
    """Two positions of a row tie at 1.0: the row alone (width 32), padded to 128, or laid
    after 8 columns of another row's block must reveal the same one."""
    p = SamplingParams(gen_length=128, steps=128, block_length=128)
    conf = torch.rand(1, 32, generator=torch.Generator().manual_seed(0)) * 0.5
    conf[0, [10, 22]] = 1.0
    pad = torch.full((1, 96), -torch.inf)
    alone = select(conf, torch.ones(1, 32, dtype=torch.bool), torch.tensor([1]), p, None, None)
    wide = torch.cat([conf, pad], dim=1)
    padded = select(wide, wide > -torch.inf, torch.tensor([1]), p, None, None)
    late = torch.cat([pad[:, :8], conf], dim=1)
    offset = select(late, late > -torch.inf, torch.tensor([1]), p, None, None)
    picked = [torch.nonzero(c[0]).flatten().tolist() for c in (alone, padded, offset)]
    assert picked == [[10], [10], [18]]  # the earlier of the tied positions, in every layout


def test_reported_neighbours_3_and_115_keep_115s_solo_answer(text):
    """The reported case: 115 alone runs eager; beside 3 it ran static, padded to 3's window,
    and answered two more names."""
    lm, ex = text
    solo = lm.generate(ex["115"].prompt, seer=True)
    both = run(lm, [Request(ex["3"].prompt, seer=True), Request(ex["115"].prompt, seer=True)])
    assert both[1].token_ids == solo.token_ids


def test_a_row_padded_to_a_neighbours_window_keeps_its_answer(text):
    """The same layout whatever Seer decides: 115 at a window of 32, static beside 3 at 128 (two
    of its positions tie at 1.0 at its first step)."""
    lm, ex = text
    solo = run(lm, [Request(ex["115"].prompt, window=32)])[0]
    pair = run(lm, [Request(ex["3"].prompt, window=128), Request(ex["115"].prompt, window=32)])
    assert (solo.path, pair[1].path) == ("eager", "static")
    assert pair[1].token_ids == solo.token_ids


TEXT_PARAMS = [
    dict(gen_length=64, steps=16, block_length=64),  # 4 tokens per step over one block
    dict(gen_length=64, steps=16, block_length=16),  # semi-AR blocks
    dict(gen_length=64, block_length=16, threshold=0.9),  # Fast-dLLM's parallel decoding
]
row_st = st.tuples(
    st.integers(0, 63),  # which held-out request
    st.sampled_from(["fixed", "fixed", "seer"]),  # fixed windows of any length share forwards
    st.sampled_from(WINDOWS),
    st.integers(0, 2),  # arrival tick
)
_solo: dict[tuple, list[int]] = {}  # solo answers, shared by the examples


def _request(lm, ex, kind: str, window: int, p, image=None) -> Request:
    if kind == "seer":
        return Request(ex.prompt, p, seer=True, image=image)
    return Request(ex.prompt, p, window=window, image=image)


def _check(lm, rows, reqs, routing, min_group, tag) -> None:
    arrivals: dict[int, list[int]] = {}
    for k, row in enumerate(rows):
        arrivals.setdefault(row[3], []).append(k)
    cfg = EngineConfig(routing=routing, min_group=min_group, kernel="reference")
    eng, ids, got, tick = Engine(lm, cfg), {}, {}, 0
    while tick <= max(arrivals) or eng.has_unfinished():
        for k in arrivals.get(tick, []):
            ids[eng.submit(reqs[k])] = k
        for res in eng.step():
            assert res.request_id not in got, "a result came twice"
            got[res.request_id] = res
        tick += 1
        assert tick < 300, "the engine does not finish"
    assert sorted(ids) == sorted(got), "a request was lost"
    for i, k in ids.items():
        key = (tag, *rows[k][:3]) if rows[k][1] == "fixed" else (tag, *rows[k][:2])
        if key not in _solo:
            _solo[key] = run(lm, [reqs[k]])[0].token_ids
        assert got[i].token_ids == _solo[key], f"row {k} ({rows[k]}) differs from its solo run"


@pytest.mark.parametrize(
    ("cache", "seer_on"), [("dpad", False), ("dpad", True), ("dual", False), ("prefix", False)]
)
def test_rows_that_join_a_cached_batch_later_keep_their_solo_answers(text, cache, seer_on):
    """Early stop frees a row's slot for a request that starts at its first block while its
    neighbours are at later ones: each row keeps its solo answer under every cache (DPad's
    scratchpad is the row's own, not the furthest row's), with Seer's cut too."""
    lm, ex = text
    p = lm.sampling(gen_length=64, block_length=8, cache=cache, early_stop=True)
    reqs = [Request(e.prompt, p, seer=seer_on) for e in list(ex.values())[:8]]
    got = run(lm, reqs, EngineConfig(max_batch=3))
    solo = [run(lm, [r])[0] for r in reqs]
    assert [g.nfe for g in got] != [64] * len(reqs)  # early stop ended rows at different steps
    for k, (g, one) in enumerate(zip(got, solo, strict=True)):
        assert g.token_ids == one.token_ids, f"request {k} differs from its solo run ({cache})"


@settings(max_examples=8, **SETTINGS)
@given(
    rows=st.lists(row_st, min_size=2, max_size=4),
    routing=st.sampled_from(ROUTINGS),
    params=st.integers(0, len(TEXT_PARAMS) - 1),
    min_group=st.sampled_from([1, 2, 4]),
)
def test_text_rows_equal_their_solo_runs_beside_any_neighbours(
    text, rows, routing, params, min_group
):
    lm, ex = text
    ids = list(ex)
    p = lm.sampling(**TEXT_PARAMS[params])
    reqs = [_request(lm, ex[ids[i]], kind, w, p) for i, kind, w, _ in rows]
    _check(
        lm,
        [(ids[i], kind, w, t) for i, kind, w, t in rows],
        reqs,
        routing,
        min_group,
        ("text", params),
    )


@settings(max_examples=4, **SETTINGS)
@given(
    rows=st.lists(row_st, min_size=2, max_size=3),
    routing=st.sampled_from(ROUTINGS),
)
def test_image_rows_equal_their_solo_runs_beside_any_neighbours(vqa, rows, routing):
    lm, ex = vqa
    p = lm.sampling(gen_length=64, steps=32)
    reqs = [
        _request(lm, ex[i % len(ex)], kind, w, p, ex[i % len(ex)].image) for i, kind, w, _ in rows
    ]
    _check(lm, [(i % len(ex), kind, w, t) for i, kind, w, t in rows], reqs, routing, 2, ("vqa",))


@pytest.fixture(scope="module")
def text_bf16():
    lm = seer.load("builtin", dtype=torch.bfloat16)
    return lm, {e.id: e for e in load_examples("builtin", n=64, part="eval")}


@settings(max_examples=3, **SETTINGS)
@given(rows=st.lists(row_st, min_size=1, max_size=2))
def test_batch_invariant_rows_equal_their_solo_runs_in_bfloat16(text_bf16, rows):
    """In bfloat16 a batched forward's logits differ from the solo forward's in the last bit
    often enough to flip near-ties: request 32 at a window of 16, batched beside 14 at 64,
    answers otherwise than alone. `batch_invariant` runs each row alone, bit for bit."""
    lm, ex = text_bf16
    ids = list(ex)
    p = lm.sampling(gen_length=64, steps=16, block_length=64)
    rows = [(ids.index("14"), "fixed", 64, 0), (ids.index("32"), "fixed", 16, 0), *rows]
    reqs = [_request(lm, ex[ids[i]], kind, w, p) for i, kind, w, _ in rows]
    eng, ids_of, got = Engine(lm, EngineConfig(batch_invariant=True)), {}, {}
    for k in range(len(rows)):
        ids_of[eng.submit(reqs[k])] = k
        if k:  # the pair arrives together, the others a tick apart (joining running rows)
            got.update({res.request_id: res for res in eng.step()})
    while eng.has_unfinished():
        got.update({res.request_id: res for res in eng.step()})
    assert sorted(got) == sorted(ids_of)
    for i, k in ids_of.items():
        assert got[i].token_ids == run(lm, [reqs[k]])[0].token_ids, f"row {k} ({rows[k]})"


def test_batch_invariant_refuses_a_forced_layout():
    with pytest.raises(SeerError, match="batch_invariant runs every row alone"):
        EngineConfig(batch_invariant=True, routing="static")


# -- mixed traffic: requests that differ in every per-row option share forwards ----------------
MIXED = [  # per-request options of OpenAI-style traffic (one layout: no cache, no guidance)
    dict(),  # greedy
    dict(temperature=0.7, seed=11),
    dict(temperature=1.0, seed=5),
    dict(temperature=0.7, seed=11, top_k=4),  # the same seed as another row: its own draws
    dict(threshold=0.9, block_length=16),
    dict(gen_length=32, steps=16),  # a smaller window cap (max_tokens)
    dict(temperature=1.0, seed=3, gen_length=32, steps=32, block_length=8),
    dict(stop=((2039, 11),)),  # the builtin model's '",' after each name
    dict(temperature=0.7, seed=2, threshold=0.8, block_length=32),
]
mixed_st = st.tuples(
    st.integers(0, 63),  # which held-out request
    st.integers(0, len(MIXED) - 1),  # its options
    st.sampled_from(["seer", "seer", "full", "fixed"]),  # Seer on for most
    st.integers(0, 2),  # arrival tick
)


def _mixed_request(lm, ex, opts: int, window: str, image=None) -> Request:
    p = lm.sampling(**{"gen_length": 64, "steps": 32, **MIXED[opts]})
    kw = {"seer": True} if window == "seer" else {"window": 24} if window == "fixed" else {}
    return Request(ex.prompt, p, image=image, **kw)


class Forwards:
    """Rows of every model forward (a forward pre-hook on the model)."""

    def __init__(self, model) -> None:
        self.rows: list[int] = []
        self.model = model

    def __enter__(self) -> Forwards:
        def count(module, args, kwargs):
            x = args[0] if args and args[0] is not None else kwargs["inputs_embeds"]
            self.rows.append(x.shape[0])

        self.hook = self.model.register_forward_pre_hook(count, with_kwargs=True)
        return self

    def __exit__(self, *exc) -> None:
        self.hook.remove()


def _check_mixed(lm, reqs, ticks, tag, cfg=None) -> list[int]:
    """Every request equals its solo run; returns the rows of each forward of the mix."""
    eng, ids, got, tick = Engine(lm, cfg or EngineConfig(kernel="reference")), {}, {}, 0
    with Forwards(lm.model) as fwd:
        while tick <= max(ticks) or eng.has_unfinished():
            for k, t in enumerate(ticks):
                if t == tick:
                    ids[eng.submit(reqs[k])] = k
            got.update({res.request_id: res for res in eng.step()})
            tick += 1
            assert tick < 300, "the engine does not finish"
    assert sorted(ids) == sorted(got), "a request was lost"
    for i, k in ids.items():
        key = (tag, reqs[k].prompt, reqs[k].params, reqs[k].seer, reqs[k].window)
        if key not in _solo:
            _solo[key] = run(lm, [reqs[k]])[0].token_ids
        assert got[i].token_ids == _solo[key], f"request {k} ({reqs[k].params}) differs alone"
    return fwd.rows


@settings(max_examples=6, **SETTINGS)
@given(rows=st.lists(mixed_st, min_size=2, max_size=5), routing=st.sampled_from(ROUTINGS))
def test_mixed_traffic_rows_equal_their_solo_runs(text, rows, routing):
    """Greedy rows equal their solo answers and seeded sampled rows their solo answers with
    that seed, whatever temperatures, seeds, top-k, thresholds, window caps, stop sequences and
    window policies run beside them, in any routing."""
    lm, ex = text
    ids = list(ex)
    reqs = [_mixed_request(lm, ex[ids[i]], o, w) for i, o, w, _ in rows]
    cfg = EngineConfig(routing=routing, min_group=2, kernel="reference")
    _check_mixed(lm, reqs, [t for *_, t in rows], "mixed", cfg)


@settings(max_examples=3, **SETTINGS)
@given(rows=st.lists(mixed_st, min_size=2, max_size=3))
def test_mixed_image_rows_equal_their_solo_runs(vqa, rows):
    lm, ex = vqa
    opts = [o for o in range(len(MIXED)) if "stop" not in MIXED[o]]  # the text model's ids
    reqs = [
        _mixed_request(lm, ex[i % len(ex)], opts[o % len(opts)], w, ex[i % len(ex)].image)
        for i, o, w, _ in rows
    ]
    _check_mixed(lm, reqs, [t for *_, t in rows], "mixed-vqa")


def test_image_rows_merged_across_buckets_keep_their_solo_answers(vqa):
    """Long image prompts: the computed waste basis runs rows of windows 8 and 64 in one
    forward padded to 64 (the paper's basis runs two), and every answer is its solo answer."""
    lm, ex = vqa
    p = lm.sampling(gen_length=64, steps=32)
    reqs = [
        Request(ex[i].prompt, p, window=w, image=ex[i].image) for i, w in enumerate([8, 8, 64, 64])
    ]
    rows = {
        w: _check_mixed(
            lm, reqs, [0] * 4, "merge-vqa", EngineConfig(min_group=2, kernel="reference", waste=w)
        )
        for w in ("window", "computed")
    }
    assert max(rows["window"][1:]) == 2 and rows["computed"][1:4] == [4, 4, 4]


@pytest.mark.parametrize("model", ["text", "vqa"])
def test_rows_merged_by_predicted_cost_keep_their_solo_answers(model, request):
    """`merge_on`: few rows of LLaDA-8B on an H100 are memory-bound, so the rule runs windows
    of 8 and 64 in one forward per step (the paper's rho runs two), and every greedy answer
    is its solo answer."""
    lm, ex = request.getfixturevalue(model)
    ex = list(ex.values()) if isinstance(ex, dict) else ex
    p = lm.sampling(gen_length=64, steps=32)
    reqs = [
        Request(ex[i].prompt, p, window=w, image=ex[i].image) for i, w in enumerate([8, 8, 64, 64])
    ]
    base = EngineConfig(min_group=2, kernel="reference")
    rows = {
        m: _check_mixed(lm, reqs, [0] * 4, f"merge-on-{model}", replace(base, merge_on=m))
        for m in (None, "h100:llada-8b")
    }
    # the steps where the 8-windows run beside the 64-windows: one forward each, not two
    assert len(rows[None]) - len(rows["h100:llada-8b"]) == 3


def test_mixed_traffic_shares_forwards_as_uniform_traffic_does(text):
    """Nine requests, each with other sampling options, arriving together: under the layout
    grouping one step 0 for both window caps (each row cut over its own), then forwards of all
    the unfinished rows (as for nine equal requests); under the old grouping by every option,
    no forward holds two."""
    lm, ex = text
    reqs = [_mixed_request(lm, e, k, "seer") for k, e in enumerate(list(ex.values())[:9])]
    naive = EngineConfig(routing="naive", kernel="reference")  # one group, whatever windows
    rows = _check_mixed(lm, reqs, [0] * len(reqs), "share", naive)
    assert rows[0] == len(reqs)  # step 0: the two rows capped at 32 and the seven at 64
    assert rows[1] >= len(reqs) - 1  # then steps of every unfinished row (one ended at once)
    assert rows[1:] == sorted(rows[1:], reverse=True)  # in one forward each: rows only leave
    old = _check_mixed(lm, reqs, [0] * len(reqs), "share", replace(naive, grouping="params"))
    assert max(old) == 1  # every request alone: the grouping the option keeps for comparisons
    assert len(old) > 2 * len(rows)


@pytest.mark.parametrize("model", ["text", "vqa"])
def test_arrivals_share_step_0_across_window_caps_and_with_running_rows(model, request):
    """Seer rows of different window caps (max_tokens) arriving together share one step-0
    forward, each cut over its own cap; requests with no window policy (Seer off), whatever
    their cap and sampling options, arriving while those run take their step 0 in the running
    rows' forward. Every request keeps its solo answer; `apart` gives each kind of arrival a
    step-0 forward of its own."""
    lm, ex = request.getfixturevalue(model)
    ex = list(ex.values()) if isinstance(ex, dict) else list(ex)
    opts = [0, 1, 5, 6] if model == "text" else [0, 2, 5, 6]  # greedy, seeded, capped at 32
    reqs = [
        _mixed_request(lm, ex[0], 0, "seer", ex[0].image),
        _mixed_request(lm, ex[1], 5, "seer", ex[1].image),
    ]  # caps 64 and 32
    reqs += [_mixed_request(lm, e, o, "full", e.image) for e, o in zip(ex[2:], opts, strict=False)]
    ticks = [0, 0, 1, 1, 2, 3]
    naive = EngineConfig(routing="naive", kernel="reference")  # one forward per tick
    rows = _check_mixed(lm, reqs, ticks, f"join-{model}", naive)
    apart = _check_mixed(lm, reqs, ticks, f"join-{model}", replace(naive, grouping="apart"))
    assert rows[:2] == [2, 4]  # one step 0 of both caps; then theirs and the arrivals' steps
    assert apart[:4] == [1, 1, 2, 2]  # apart: a step 0 per cap, then one per kind of arrival
    assert sum(apart) == sum(rows)  # the same row-steps ...
    assert len(apart) == len(rows) + 4  # ... in a forward more per step 0 apart


JOIN_TICKS = [0, 0, 1, 1, 2, 2, 2]  # two Seer requests, then two, then two and one Seer-off


def _joining_seer_requests(lm, ex) -> list[Request]:
    """Seer requests, greedy and seeded, capped at 64 and 32, and one seeded Seer-off request
    (the last), arriving at `JOIN_TICKS`."""
    ex = list(ex.values()) if isinstance(ex, dict) else list(ex)
    opts = [0, 5, 1, 6, 2, 0]
    reqs = [_mixed_request(lm, e, o, "seer", e.image) for e, o in zip(ex, opts, strict=False)]
    return [*reqs, _mixed_request(lm, ex[6], 1, "full", ex[6].image)]


def _serve_joining(lm, eng, reqs) -> list:
    """Serve `reqs` at `JOIN_TICKS`; each one's result equals its solo run (answer, window and
    boundary); the results in request order."""
    ids, got = {}, {}
    for tick in range(3):
        ids.update({eng.submit(reqs[k]): k for k, t in enumerate(JOIN_TICKS) if t == tick})
        got.update({res.request_id: res for res in eng.step()})
    while eng.has_unfinished():
        got.update({res.request_id: res for res in eng.step()})
    assert sorted(got) == sorted(ids)
    for i, k in ids.items():
        g, one = got[i], _solo_result(lm, reqs[k])
        assert (g.token_ids, g.window, g.detected) == (one.token_ids, one.window, one.detected)
    return [got[i] for i in sorted(ids, key=ids.__getitem__)]


_solo_results: dict = {}


def _solo_result(lm, req):
    key = (id(lm), req.prompt, req.params, req.seer, req.window, req.image is None)
    if key not in _solo_results:
        _solo_results[key] = run(lm, [req])[0]
    return _solo_results[key]


@pytest.mark.parametrize("model", ["text", "vqa"])
def test_seer_arrivals_take_step_0_in_the_running_rows_forward(model, request):
    """Seer requests of any window cap and sampling options (the built-in models' Seer cuts
    from the end probability: no probe hooked into step 0), arriving while rows run, take
    their step 0 in the running rows' forward: each is cut over its own cap's columns as it is
    alone (the same boundary and window) and keeps its solo answer. `policy-apart` gives them
    a forward of their own, as before."""
    lm, ex = request.getfixturevalue(model)
    reqs = _joining_seer_requests(lm, ex)
    for r in reqs:  # the solo runs, before the forwards are counted
        _solo_result(lm, r)
    naive = EngineConfig(routing="naive", kernel="reference")  # one forward per tick
    for grouping, extra in (("layout", 0), ("policy-apart", 2)):
        eng = Engine(lm, replace(naive, grouping=grouping))
        with Forwards(lm.model) as fwd:
            got = _serve_joining(lm, eng, reqs)
        assert [g.detected is not None for g in got] == [True] * 6 + [False]
        assert len(fwd.rows) == eng.stats.ticks + extra  # policy-apart: step 0s apart at 1, 2
        if grouping == "layout":
            assert fwd.rows[:3] == [2, 4, 7]  # the arrivals of ticks 1 and 2 beside the running
        else:
            assert fwd.rows[:5] == [2, 2, 2, 5, 2]  # tick 2: Seer off joins, Seer arrivals apart


@pytest.mark.parametrize("routing", ["hybrid", "varlen", "eager", "static"])
def test_seer_arrivals_joining_on_every_path_keep_their_solo_answers(text, routing):
    """The same join on every routing path: the pending rows (full windows of caps 64 and 32)
    are laid with running rows of cut windows into static, packed or eager forwards, and each
    arrival still has its solo answer, window and boundary."""
    lm, ex = text
    reqs = _joining_seer_requests(lm, ex)
    eng = Engine(lm, EngineConfig(routing=routing, min_group=2, kernel="reference"))
    _serve_joining(lm, eng, reqs)
    assert sum(eng.stats.rows.values()) == len(reqs)  # every arrival routed once, ...
    if routing != "hybrid":  # ... on the forced path, beside the running rows
        assert set(eng.stats.rows) == {routing}


def test_a_probing_seer_arrival_takes_its_step_0_apart_and_reads_only_its_rows(text):
    """Seer with the sparsity signal hooks a probe into step 0's forward (its rows, its
    columns): such an arrival takes its step 0 in a forward of its own, never beside running
    rows, and finds the boundary it finds alone; an end-probability Seer arrival of the same
    tick joins the running rows."""
    lm, ex = text
    ex = list(ex.values())
    probe = {"signal": "sparsity", "layer": 4, "theta": 0.03, "rule": "changepoint", "z": 6.0}
    p = lm.sampling(gen_length=64, steps=32)
    reqs = [
        Request(ex[0].prompt, p, seer=True),
        Request(ex[1].prompt, p, seer=True),
        Request(ex[3].prompt, p, seer=probe),  # a prompt where the probe finds a boundary
        Request(ex[3].prompt, p, seer={**probe, "cut_in_step0": True}),
        Request(ex[4].prompt, p, seer=True),
    ]
    solo = [run(lm, [r])[0] for r in reqs]
    eng, got = Engine(lm, EngineConfig(routing="naive", kernel="reference")), {}
    with Forwards(lm.model) as fwd:
        ids = {eng.submit(r): k for k, r in enumerate(reqs[:2])}
        got.update({res.request_id: res for res in eng.step()})
        ids.update({eng.submit(r): k + 2 for k, r in enumerate(reqs[2:])})
        while eng.has_unfinished():
            got.update({res.request_id: res for res in eng.step()})
    assert fwd.rows[:4] == [2, 3, 1, 1]  # the other Seer joins; each probing kind apart
    assert solo[2].detected == solo[3].detected == 41  # the probe's boundary, alone
    for i, k in ids.items():
        g, one = got[i], solo[k]
        assert (g.token_ids, g.window, g.detected) == (one.token_ids, one.window, one.detected)
