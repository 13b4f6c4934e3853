"""The engine: every row's answer through any path equals its answer alone (temperature 0)."""

from __future__ import annotations

import pytest
import torch
from conftest import TOKENS, tiny
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seer.boundary.config import SeerConfig
from seer.boundary.truncation import FixedWindowPolicy
from seer.diffusion.graphs import GraphCache, GraphedForward
from seer.engine import Engine, EngineConfig, Request
from seer.errors import SeerError
from seer.lm import DiffusionLM
from seer.sampling import SamplingParams

ROUTINGS = ("static", "varlen", "eager", "hybrid", "naive")
# a detector that fires at scattered positions on the tiny random models: a real length mix
SEER = SeerConfig(layer=0, theta=0.1, tau_jump=0.02, gamma=1.0, lookahead=2, bucket=4)


@pytest.fixture(scope="module")
def lms():
    return {arch: DiffusionLM(tiny(arch), None, TOKENS) for arch in ("llada", "dream")}


def prompts_of(lengths: list[int], seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 300, (n,), generator=g).tolist() for n in lengths]


def engine(lm, **kw) -> Engine:
    kw.setdefault("kernel", "reference")  # pinned: the kernel tests may turn the interpreter on
    kw.setdefault("min_group", 2)
    return Engine(lm, EngineConfig(**kw))


def alone(lm, req: Request) -> list[int]:
    if req.window is not None:
        return lm.generate(req.prompt, req.params, policy=FixedWindowPolicy([req.window])).token_ids
    return lm.generate(req.prompt, req.params, seer=req.seer).token_ids


def assert_engine_equals_alone(lm, reqs: list[Request], **kw) -> Engine:
    eng = engine(lm, **kw)
    out = eng.generate(reqs)
    assert [o.index for o in out] == list(range(len(reqs)))
    assert [o.token_ids for o in out] == [alone(lm, r) for r in reqs]
    return eng


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rows=st.lists(st.tuples(st.integers(1, 9), st.integers(1, 32)), min_size=1, max_size=7),
    arch=st.sampled_from(["llada", "dream"]),
    routing=st.sampled_from(ROUTINGS),
    kind=st.sampled_from(["fixed", "seer", "none"]),
    seed=st.integers(0, 2**16),
)
def test_any_length_mix_through_any_path_equals_solo_runs(lms, rows, arch, routing, kind, seed):
    lm = lms[arch]
    p = SamplingParams(gen_length=32, steps=16, block_length=8)
    prompts = prompts_of([n for n, _ in rows], seed)
    reqs = [
        Request(q, p, window=w if kind == "fixed" else None, seer=SEER if kind == "seer" else None)
        for q, (_, w) in zip(prompts, rows, strict=True)
    ]
    eng = assert_engine_equals_alone(lm, reqs, routing=routing)
    if routing in ("static", "varlen", "eager"):
        assert set(eng.stats.rows) == {routing}


@pytest.mark.parametrize("arch", ["llada", "dream"])
@pytest.mark.parametrize("routing", ["static", "varlen", "eager"])
def test_guard_growth_works_per_row_in_every_path(lms, arch, routing):
    """The guard grows the windows of unfinished answers inside the path's layout (varlen
    packs the rows again)."""
    lm = lms[arch]
    p = SamplingParams(gen_length=32, steps=16, block_length=8)
    cfg = SeerConfig(**{**_fields(SEER), "guard": True})
    reqs = [Request(q, p, seer=cfg) for q in prompts_of([3, 7, 1, 5, 2, 9])]
    eng = engine(lm, routing=routing)
    out = eng.generate(reqs)
    assert [o.token_ids for o in out] == [alone(lm, r) for r in reqs]
    assert any(o.grown for o in out)


def _fields(cfg) -> dict:
    return {k: getattr(cfg, k) for k in cfg.__dataclass_fields__}


def test_mixed_requests_share_the_engine_and_keep_their_order(lms):
    lm = lms["llada"]
    a = SamplingParams(gen_length=16, steps=8, block_length=8)
    b = SamplingParams(gen_length=32, steps=32, block_length=16)
    c = SamplingParams(gen_length=8, steps=4, logits_eos_inf=True)
    prompts = prompts_of([2, 5, 3, 8, 1, 4, 6])
    params = [a, b, a, c, b, a, c]
    windows = [None, 8, None, None, 20, 4, None]
    reqs = [
        Request(q, pp, window=w, seer=SEER if w is None and pp is a else None)
        for q, pp, w in zip(prompts, params, windows, strict=True)
    ]
    assert_engine_equals_alone(lm, reqs, max_batch=2)


def test_no_truncation_runs_static_at_gen_length(lms):
    lm = lms["dream"]
    p = SamplingParams(gen_length=16)
    eng = assert_engine_equals_alone(lm, [Request(q, p) for q in prompts_of([4, 2, 7])])
    assert [(pl.path, pl.bucket, pl.rho) for pl in eng.stats.plans] == [("static", 16, 0.0)]


def test_classifier_free_guidance_is_never_packed(lms):
    lm = lms["llada"]
    p = SamplingParams(gen_length=16, steps=8, cfg_scale=1.0)
    reqs = [Request(q, p, window=w) for q, w in zip(prompts_of([3, 6, 2]), [4, 16, 8], strict=True)]
    eng = assert_engine_equals_alone(lm, reqs, routing="varlen")
    assert set(eng.stats.rows) == {"static"}


@pytest.mark.parametrize("cache", ["prefix", "dual"])
@pytest.mark.parametrize("arch", ["llada", "dream"])
@pytest.mark.parametrize("routing", ["hybrid", "static", "varlen"])
def test_a_kv_cache_moves_with_the_rows_into_their_layouts(lms, arch, cache, routing):
    """Under a KV cache the rows' cache follows them into the static/eager layouts (with
    another prompt width and window width); rows are never packed."""
    lm = lms[arch]
    p = SamplingParams(gen_length=32, steps=16, block_length=8, cache=cache)
    prompts = prompts_of([3, 9, 1, 6, 4], seed=11)
    windows = [4, 32, 12, 8, 32]  # kept windows keep their step-0 cache, cut ones refill
    seer = SeerConfig(**{**_fields(SEER), "guard": True})
    for reqs in (
        [Request(q, p, window=w) for q, w in zip(prompts, windows, strict=True)],
        [Request(q, p, seer=seer) for q in prompts],
        [Request(q, p) for q in prompts],
    ):
        eng = assert_engine_equals_alone(lm, reqs, routing=routing)
        assert "varlen" not in eng.stats.rows


def test_engine_runs_the_triton_kernel_when_asked(lms):
    triton = pytest.importorskip("triton")
    if not triton.knobs.runtime.interpret:
        pytest.skip("needs TRITON_INTERPRET=1 (set by tests/kernels) or a GPU")
    lm = lms["dream"]
    p = SamplingParams(gen_length=16, steps=8)
    reqs = [
        Request(q, p, window=w)
        for q, w in zip(prompts_of([3, 6, 2, 5]), [4, 16, 8, 1], strict=True)
    ]
    assert_engine_equals_alone(lm, reqs, routing="varlen", kernel="triton")


def test_stats_account_for_every_row_and_phase(lms):
    lm = lms["llada"]
    p = SamplingParams(gen_length=32, steps=16, block_length=8)
    eng = engine(lm, routing="hybrid")
    out = eng.generate([Request(q, p, seer=SEER) for q in prompts_of([3, 7, 1, 5, 2, 9, 4, 4])])
    s = eng.stats
    assert sum(s.rows.values()) == len(out)
    assert min(s.detect, s.route, s.compact, s.model) >= 0
    assert s.detect + s.route + s.compact + s.model == pytest.approx(s.total)
    assert all(o.latency <= s.total and o.boundary is not None for o in out)


def test_request_errors_are_clear(lms):
    lm = lms["llada"]
    with pytest.raises(SeerError, match="either a fixed window or a Seer config"):
        engine(lm).generate([Request([1, 2], window=4, seer=SEER)])
    with pytest.raises(SeerError, match="token-id prompts cannot take one"):
        engine(lm).generate([Request([1, 2], image=object())])
    with pytest.raises(SeerError, match="suffix needs cache='none' and no window policy"):
        engine(lm).generate([Request([1, 2], SamplingParams(gen_length=8, suffix=(5,)), seer=SEER)])
    assert engine(lm).generate([]) == []


def test_graphed_forward_runs_eagerly_off_cuda(lms):
    lm = lms["llada"]
    eng = engine(lm, routing="static")
    graphs = eng.runner.graphs = GraphCache(lm.model)  # what the engine uses on CUDA
    p = SamplingParams(gen_length=16, steps=8)
    reqs = [Request(q, p, window=w) for q, w in zip(prompts_of([3, 6]), [4, 16], strict=True)]
    assert [o.token_ids for o in eng.generate(reqs)] == [alone(lm, r) for r in reqs]
    assert not graphs.graphs  # on CPU it must fall back
    assert isinstance(eng.runner._forward("static"), GraphedForward)


@pytest.mark.gpu
@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_cuda_graphs_replay_equals_solo_runs(arch):
    lm = DiffusionLM(tiny(arch).cuda(), None, TOKENS)
    p = SamplingParams(gen_length=32, steps=16, block_length=8)
    reqs = [
        Request(q, p, window=w) for q, w in zip(prompts_of([3, 6, 2, 5]), [8, 8, 6, 7], strict=True)
    ]
    eng = assert_engine_equals_alone(lm, reqs, routing="static", kernel=None)
    assert eng.runner.graphs.graphs  # graphs were captured and replayed


@pytest.fixture(scope="module")
def lavida(tmp_path_factory):
    import seer
    from seer.models.factory import make_random_checkpoint

    folder = make_random_checkpoint("lavida-llada", tmp_path_factory.mktemp("lv"), layers=2)
    return seer.load(folder)


@pytest.mark.parametrize("routing", ["static", "varlen", "eager", "hybrid"])
def test_image_requests_through_any_path_equal_solo_runs(lavida, routing):
    """Spliced image prompts keep their embeddings through compaction and packing."""
    import numpy as np

    rng = np.random.default_rng(0)
    images = [(rng.random((20 + 9 * k, 30, 3)) * 255).astype("uint8") for k in range(4)]
    p = SamplingParams(gen_length=16, steps=8, block_length=8)
    texts = ["what colour", "count the shapes please", "read", "describe every object"]
    windows = [3, 16, 8, 5]
    reqs = [
        Request(t, p, image=im, window=w) for t, im, w in zip(texts, images, windows, strict=True)
    ]
    reqs.append(Request("no image here", p, window=6))
    out = engine(lavida, routing=routing).generate(reqs)
    for o, r in zip(out, reqs, strict=True):
        solo = lavida.generate(r.prompt, p, image=r.image, policy=FixedWindowPolicy([r.window]))
        assert o.token_ids == solo.token_ids
