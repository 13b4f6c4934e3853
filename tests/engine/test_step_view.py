"""The per-step view (`Request.on_step`): watching a request changes none of its tokens, its
steps arrive in order, and its last view is its answer."""

from __future__ import annotations

import pytest
import torch
from conftest import TOKENS, tiny

from seer.boundary.config import SeerConfig
from seer.engine import Engine, EngineConfig, Request, StepView
from seer.lm import DiffusionLM
from seer.sampling import SamplingParams

SEER = SeerConfig(layer=0, theta=0.1, tau_jump=0.02, gamma=1.0, lookahead=2, bucket=4)
NO_MASK = {"banned_ids": (TOKENS.mask,)}  # random models may emit the mask id as a token
CASES = [  # (arch, params, seer, fixed window)
    ("llada", SamplingParams(gen_length=16, steps=8, block_length=4, **NO_MASK), None, None),
    (
        "llada",
        SamplingParams(gen_length=16, steps=16, block_length=8, cache="dual", **NO_MASK),
        SEER,
        None,
    ),
    ("llada", SamplingParams(gen_length=16, steps=8, threshold=0.3, **NO_MASK), None, 8),
    ("dream", SamplingParams(gen_length=16, steps=8, remasking="entropy", **NO_MASK), SEER, None),
    (
        "dream",
        SamplingParams(gen_length=16, steps=16, block_length=4, stop=((7,),), **NO_MASK),
        None,
        None,
    ),
]


@pytest.fixture(scope="module")
def lms():
    return {arch: DiffusionLM(tiny(arch), None, TOKENS) for arch in ("llada", "dream")}


def prompt(n: int, seed: int) -> list[int]:
    return torch.randint(0, 300, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def run(lm, requests: list[Request]) -> list:
    eng = Engine(lm, EngineConfig(kernel="reference", max_tokens_per_step=40))
    ids = [eng.submit(r) for r in requests]
    out = {}
    while eng.has_unfinished():
        out.update({r.request_id: r for r in eng.step()})
    return [out[i] for i in ids]


def requests(p, seer, window, watch=None) -> list[Request]:
    """Three requests of different prompt lengths; `watch` (index -> list) records views."""
    watch = watch or {}
    return [
        Request(
            prompt(n, n),
            p,
            seer=seer,
            window=window,
            on_step=watch[k].append if k in watch else None,
        )
        for k, n in enumerate((3, 7, 5))
    ]


@pytest.mark.parametrize(("arch", "p", "seer", "window"), CASES, ids=range(len(CASES)))
def test_watching_changes_no_answer_and_the_last_view_is_the_answer(lms, arch, p, seer, window):
    lm = lms[arch]
    plain = run(lm, requests(p, seer, window))
    views: dict[int, list[StepView]] = {0: [], 2: []}
    watched = run(lm, requests(p, seer, window, views))
    for a, b in zip(plain, watched, strict=True):
        assert (a.token_ids, a.nfe, a.window, a.detected) == (
            b.token_ids,
            b.nfe,
            b.window,
            b.detected,
        )
    for k, seen in views.items():
        res = watched[k]
        assert [v.step for v in seen] == list(range(1, res.nfe + 1))  # every step, in order
        assert [v.final for v in seen] == [False] * (res.nfe - 1) + [True]
        assert all(v.request_id == res.request_id for v in seen)
        assert seen[-1].token_ids == res.token_ids  # the last canvas is the answer
        assert seen[-1].window == res.window
        assert all(len(v.token_ids) == v.gen_length == p.gen_length for v in seen)
        for v in seen:  # past the window: [EOS], never computed
            assert all(t == TOKENS.eos for t in v.token_ids[v.window :])
        masks = [v.token_ids[: v.window].count(TOKENS.mask) for v in seen]
        assert masks[-1] == 0
        for a, b, m, n in zip(seen, seen[1:], masks, masks[1:], strict=False):
            assert n <= m or b.window > a.window  # masks only go (unless the guard grew it)
        if seer is not None:
            assert all(v.boundary is res.boundary for v in seen)


def test_revealed_tokens_stay_until_the_end(lms):
    """Greedy LLaDA never remasks: a token in one view is in every later view."""
    p = SamplingParams(gen_length=16, steps=16, block_length=4, **NO_MASK)
    seen: list[StepView] = []
    run(lms["llada"], [Request(prompt(5, 1), p, on_step=seen.append)])
    assert len(seen) == 16
    for a, b in zip(seen, seen[1:], strict=False):
        kept = [i for i, t in enumerate(a.token_ids) if t != TOKENS.mask]
        assert all(b.token_ids[i] == a.token_ids[i] for i in kept)
        assert len(kept) + 1 == sum(t != TOKENS.mask for t in b.token_ids)  # one per step


def test_nobody_watching_builds_no_view(lms, monkeypatch):
    def fail(*args):
        raise AssertionError("a view was built with no on_step")

    monkeypatch.setattr(Engine, "_views", fail)
    p = SamplingParams(gen_length=8, steps=8)
    (res,) = run(lms["llada"], [Request(prompt(4, 0), p)])
    assert res.nfe == 8
