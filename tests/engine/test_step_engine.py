"""The step-level engine: requests come and go every tick, and nothing changes an answer.

Invariance (temperature 0): every request's tokens equal its solo run whatever arrives when,
whatever is aborted, under any policy and budget. Bookkeeping: every added request comes out
exactly once.
"""

from __future__ import annotations

import pytest
import torch
from conftest import TOKENS, tiny
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seer.boundary.config import SeerConfig
from seer.boundary.truncation import FixedWindowPolicy
from seer.engine import Engine, EngineConfig, PartialResult, QueueFull, Request
from seer.errors import SeerError
from seer.lm import DiffusionLM
from seer.sampling import SamplingParams

SEER = SeerConfig(layer=0, theta=0.1, tau_jump=0.02, gamma=1.0, lookahead=2, bucket=4)
PARAMS = {
    "llada": [
        SamplingParams(gen_length=16, steps=8, block_length=4, remasking="low_confidence"),
        SamplingParams(gen_length=16, steps=16, block_length=8, cache="prefix"),
        SamplingParams(gen_length=16, steps=8, block_length=8, cache="dual"),
    ],
    "dream": [
        SamplingParams(gen_length=16, steps=8, block_length=8, remasking="entropy"),
        SamplingParams(gen_length=16, steps=16, block_length=4, remasking="maskgit_plus"),
        SamplingParams(gen_length=16, steps=8, block_length=8, cache="prefix"),
    ],
}
SETTINGS = dict(
    deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def lms():
    return {arch: DiffusionLM(tiny(arch), None, TOKENS) for arch in ("llada", "dream")}


def prompt(n: int, seed: int) -> list[int]:
    return torch.randint(0, 300, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def solo(lm, r: Request) -> list[int]:
    if r.window is not None:
        policy = FixedWindowPolicy([r.window])
        return lm.generate(r.prompt, r.params, policy=policy).token_ids
    return lm.generate(r.prompt, r.params, seer=r.seer).token_ids


def drive(eng: Engine, arrivals: dict[int, list[Request]], aborts: dict[int, int] | None = None):
    """Add each request at its tick, abort by index at a tick, step until done. Returns
    {request index: [results]} (a list, to catch duplicates) and the ids by index."""
    ids, out, tick = {}, {}, 0
    order = [r for t in sorted(arrivals) for r in arrivals[t]]
    last = max(arrivals, default=0)
    while tick <= last or eng.has_unfinished():
        for r in arrivals.get(tick, []):
            ids[order.index(r)] = eng.submit(r)
        if aborts and tick in aborts and aborts[tick] in ids:
            eng.abort(ids[aborts[tick]])
        for res in eng.step():
            out.setdefault(res.request_id, []).append(res)
        tick += 1
        assert tick < 500, "the engine does not finish"
    return {k: out.get(i, []) for k, i in ids.items()}, order


request_st = st.tuples(
    st.integers(1, 9),  # prompt length
    st.integers(0, 6),  # arrival tick
    st.sampled_from(["none", "seer", "fixed"]),
    st.integers(1, 16),  # fixed window
    st.integers(0, 2),  # which params
)


@settings(max_examples=10, **SETTINGS)
@given(
    reqs=st.lists(request_st, min_size=1, max_size=6),
    arch=st.sampled_from(["llada", "dream"]),
    routing=st.sampled_from(["hybrid", "eager", "static", "varlen"]),
    policy=st.sampled_from(["fcfs", "shortest_first"]),
    budget=st.sampled_from([None, 40, 90]),
    seed=st.integers(0, 2**16),
)
def test_answers_equal_solo_runs_whatever_arrives_when(
    lms, reqs, arch, routing, policy, budget, seed
):
    lm = lms[arch]
    arrivals: dict[int, list[Request]] = {}
    for k, (n, t, kind, w, pi) in enumerate(reqs):
        p = PARAMS[arch][pi]
        r = Request(
            prompt(n, seed + k),
            p,
            seer=SEER if kind == "seer" else None,
            window=w if kind == "fixed" else None,
        )
        arrivals.setdefault(t, []).append(r)
    cfg = EngineConfig(
        routing=routing,
        policy=policy,
        max_tokens_per_step=budget,
        min_group=2,
        kernel="reference",
        max_batch=4,
    )
    got, order = drive(Engine(lm, cfg), arrivals)
    for k, r in enumerate(order):
        assert len(got[k]) == 1, "a request was lost or returned twice"
        assert got[k][0].token_ids == solo(lm, r)
        assert got[k][0].finish_reason in ("stop", "length")


@settings(max_examples=6, **SETTINGS)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=2, max_size=5),
    victim=st.integers(0, 4),
    when=st.integers(0, 8),
    arch=st.sampled_from(["llada", "dream"]),
)
def test_abort_never_changes_another_answer(lms, lengths, victim, when, arch):
    lm = lms[arch]
    p = PARAMS[arch][0]
    reqs = [Request(prompt(n, k), p, seer=SEER if k % 2 else None) for k, n in enumerate(lengths)]
    arrivals = {k % 3: [] for k in range(len(reqs))}
    for k, r in enumerate(reqs):
        arrivals[k % 3].append(r)
    victim %= len(reqs)
    got, order = drive(Engine(lm, EngineConfig(kernel="reference")), arrivals, {when: victim})
    for k, r in enumerate(order):
        assert len(got[k]) == 1, "a request was lost or returned twice"
        if got[k][0].finish_reason == "abort":
            assert k == victim
        else:
            assert got[k][0].token_ids == solo(lm, r)


def test_rows_at_different_steps_share_one_forward(lms):
    lm = lms["llada"]
    p = SamplingParams(gen_length=16, steps=16, block_length=8)
    calls = []
    hook = lm.model.register_forward_pre_hook(lambda *a: calls.append(1))
    try:
        eng = Engine(lm, EngineConfig(routing="eager", kernel="reference"))
        got, _ = drive(eng, {0: [Request(prompt(5, 0), p)], 5: [Request(prompt(3, 1), p)]})
    finally:
        hook.remove()
    # alone: 16 forwards each; together: the second's step 0 (no window policy: an ordinary
    # step) runs in the first's step-5 forward, and their later steps share one forward until
    # the first leaves; the second's last 5 steps run alone
    assert len(calls) == 16 + 5
    assert [g[0].nfe for g in got.values()] == [16, 16]


def test_a_finished_row_leaves_at_once_first_done_first_out(lms):
    lm = lms["dream"]
    short = SamplingParams(gen_length=8, steps=4, block_length=8)
    long = SamplingParams(gen_length=16, steps=16, block_length=8)
    eng = Engine(lm, EngineConfig(kernel="reference"))
    a, b = eng.submit(Request(prompt(4, 0), long)), eng.submit(Request(prompt(4, 1), short))
    finished, tick = [], 0
    while eng.has_unfinished():
        finished += [(r.request_id, tick) for r in eng.step()]
        tick += 1
    assert finished == [(b, 3), (a, 15)]  # at the tick of its last step, the other still runs


def test_partial_results_stream_each_final_block(lms):
    lm = lms["llada"]
    p = SamplingParams(gen_length=16, steps=8, block_length=4)
    seen: list[PartialResult] = []
    eng = Engine(lm, EngineConfig(kernel="reference"))
    rid = eng.submit(Request(prompt(6, 2), p, on_block=seen.append))
    eng.submit(Request(prompt(3, 3), SamplingParams(gen_length=8, steps=8, block_length=4)))
    (res,) = [r for r in _finish(eng) if r.request_id == rid]
    assert [s.block for s in seen] == [0, 1, 2, 3]
    assert [s.final for s in seen] == [False, False, False, True]
    assert all(s.request_id == rid for s in seen)
    for s in seen:  # every partial is a prefix of the final answer
        assert res.token_ids[: len(s.token_ids)] == s.token_ids
    assert seen[-1].text == res.text
    assert 0 < res.first_block_latency <= res.latency


def _finish(eng: Engine) -> list:
    out = []
    while eng.has_unfinished():
        out += eng.step()
    return out


def test_shortest_first_runs_short_requests_first_and_ages_long_ones(lms):
    lm = lms["llada"]
    long = SamplingParams(gen_length=16, steps=16, block_length=16)
    short = SamplingParams(gen_length=4, steps=4, block_length=4)
    cfg = EngineConfig(policy="shortest_first", max_tokens_per_step=1, aging=4, kernel="reference")
    eng = Engine(lm, cfg)
    first = eng.submit(Request(prompt(4, 0), long))
    done, tick = {}, 0
    while eng.has_unfinished() or tick < 60:
        if tick < 60:  # a short request every tick: a stream that would starve the long one
            eng.submit(Request(prompt(2, tick + 1), short))
        for r in eng.step():
            done[r.request_id] = tick
        tick += 1
        assert tick < 400
    assert first in done  # aging: the long request is not starved
    shorts = sorted(t for i, t in done.items() if i != first)
    assert shorts[0] < done[first]  # short work ran first


def test_queue_full_and_bad_requests_leave_running_ones_alone(lms):
    lm = lms["llada"]
    p = SamplingParams(gen_length=8, steps=4, block_length=4)
    eng = Engine(lm, EngineConfig(max_queue=1, kernel="reference"))
    good = Request(prompt(5, 0), p)
    rid = eng.submit(good)
    with pytest.raises(QueueFull, match="queue is full"):
        eng.submit(Request(prompt(5, 1), p))
    eng.step()  # step 0 ran: the queue has room again
    with pytest.raises(SeerError, match="either a fixed window or a Seer config"):
        eng.submit(Request([1, 2], p, window=4, seer=SEER))
    with pytest.raises(SeerError, match="exceeds the model's context"):
        eng.submit(Request([1] * 5000, p))
    with pytest.raises(SeerError, match="cfg_scale"):
        eng.submit(Request([1, 2], SamplingParams(cfg_scale=1.0, remasking="entropy")))
    (res,) = _finish(eng)
    assert res.request_id == rid and res.token_ids == solo(lm, good)
    assert issubclass(QueueFull, SeerError)


def test_abort_of_a_waiting_request_and_unknown_ids(lms):
    lm = lms["llada"]
    eng = Engine(lm, EngineConfig(kernel="reference"))
    rid = eng.submit(Request(prompt(4, 0), SamplingParams(gen_length=8, steps=4)))
    assert eng.abort(rid) and not eng.abort(rid) and not eng.abort(12345)
    (res,) = eng.step()
    assert res.finish_reason == "abort" and res.token_ids == [] and not eng.has_unfinished()


def test_the_token_budget_bounds_every_tick(lms):
    lm = lms["dream"]
    p = SamplingParams(gen_length=16, steps=8, block_length=8)
    eng = Engine(lm, EngineConfig(max_tokens_per_step=60, kernel="reference"))
    ticks, schedule = [], eng.scheduler.schedule

    def spy(*a):
        out = schedule(*a)
        rows = out.prefill + out.decode
        ticks.append((out.tokens, len(rows), sum(q.prompt_len + q.window for q in rows)))
        return out

    eng.scheduler.schedule = spy
    reqs = [Request(prompt(n, n), p, seer=SEER if n % 2 else None) for n in range(1, 9)]
    out = eng.generate(reqs)
    assert [o.token_ids for o in out] == [solo(lm, r) for r in reqs]
    for tokens, rows, cost in ticks:
        assert tokens == cost and (tokens <= 60 or rows == 1)
    assert max(rows for _, rows, _ in ticks) > 1  # the budget admits several rows
