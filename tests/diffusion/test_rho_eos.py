"""ρ-EOS (`SamplingParams.rho_eos`, `seer.diffusion.rho_eos`): token-for-token and NFE goldens
from the official `generate` (yjyddq/rho-EOS, tools/goldens/make_rho_eos_golden.py) — on the
built-in text model through `DiffusionLM.generate` (the engine), on the tiny LLaDA fixture
through the loop — plus its length rule, defaults, and one-line refusals."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fastdllm_golden import GOLDEN, GOLDEN_TOKENS

import seer
from seer.diffusion.canvas import make_canvas
from seer.diffusion.loop import DenoisingLoop
from seer.diffusion.rho_eos import window_change
from seer.errors import SeerError
from seer.models.loader import load_model
from seer.sampling import SamplingParams

FIXTURE = json.loads((GOLDEN.parent / "rho_eos" / "golden.json").read_text())
CASES = FIXTURE["generations"]
NAMES = {  # official `generate` argument -> SamplingParams field
    "initial_gen_length": "rho_initial",
    "max_gen_length": "gen_length",
    "block_length": "rho_block",
    "high_conf_threshold": "rho_reveal",
    "expansion_factor": "rho_expand",
    "eos_check_tokens": "rho_eos_tokens",
    "low_density_threshold": "rho_low",
    "high_density_threshold": "rho_high",
    "scheduler": "rho_scheduler",
}


def options(case: dict) -> dict:
    return {NAMES[k]: v for k, v in case["kwargs"].items()} | {"rho_eos": True}


def expected(case: dict, eos: int) -> list[list[int]]:
    """Official rows (prompt + final window) as Seer's answers: the window, then [EOS]."""
    cap, n = case["kwargs"]["max_gen_length"], len(case["prompt_ids"][0])
    return [row[n:] + [eos] * (cap - len(row) + n) for row in case["output_ids"]]


@pytest.fixture(scope="module")
def builtin():
    return seer.load("builtin")


BUILTIN_CASES = [c for c in CASES if c["name"].startswith("builtin")]
assert BUILTIN_CASES, "the rho-EOS golden holds no case on the built-in model"


@pytest.mark.parametrize("case", BUILTIN_CASES, ids=lambda c: c["name"])
def test_engine_matches_official_rho_eos(builtin, case):
    """Through `generate` (the step-level engine): tokens, NFE and the final window."""
    out = builtin.generate(case["prompt_ids"], **options(case))
    assert [o.token_ids for o in out] == expected(case, builtin.tokens.eos)
    assert [o.stats.nfe for o in out] == [case["nfe"]]


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["name"].startswith("tiny")], ids=lambda c: c["name"]
)
def test_loop_matches_official_rho_eos(case):
    model = load_model(GOLDEN)
    p = SamplingParams(remasking="low_confidence", **options(case))
    canvas = make_canvas(case["prompt_ids"], p.gen_length, GOLDEN_TOKENS, "cpu")
    res = DenoisingLoop(model, GOLDEN_TOKENS).run(canvas, p)
    assert res.answer.tolist() == expected(case, GOLDEN_TOKENS.eos)
    assert res.nfe == case["nfe"]
    assert res.window.tolist() == [len(r) - len(case["prompt_ids"][0]) for r in case["output_ids"]]


def test_the_goldens_exercise_every_mechanism():
    """Not vacuous: windows grow and shrink (by 1x, 2x, 4x and 8x the unit), shrink to nothing,
    keep their length, reach the cap, reveal several positions in one step, and no official run
    ended by its stagnation break."""
    assert all(c["same_in_float64"] for c in CASES)
    assert not any(c["stagnant"] for c in CASES)
    actions = {a for c in CASES for a in c["actions"]}
    assert actions == {0, 1, 2}
    lengths = {c["name"]: len(c["output_ids"][0]) - len(c["prompt_ids"][0]) for c in CASES}
    assert 0 in lengths.values() and lengths["builtin_grow_cap64_1"] == 64
    steps = set()
    for c in CASES:
        w = c["widths"]
        steps |= {abs(b - a) for a, b in zip(w, w[1:], strict=False)}
    assert {1, 4, 8, 16, 32, 64} <= steps
    many = [c for c in CASES if c["nfe"] < lengths[c["name"]]]
    assert many, "no case reveals more than one position per step"


def test_defaults_are_the_official_ones():
    """The script's settings (scripts/eval_LLaDA_rho_EOS.sh) over `generate`'s defaults."""
    official = FIXTURE["meta"]["defaults"]
    p = SamplingParams()
    for name, field in NAMES.items():
        if field != "gen_length":
            assert getattr(p, field) == official[name], name
    assert official["max_gen_length"] == 2048 and official["temperature"] == 0.0
    script = FIXTURE["meta"]["official"]["script"]
    assert "low_density_threshold=0.4" in script and "scheduler=exp" in script


@pytest.mark.parametrize(
    "rho, scheduler, change",
    [
        (0.5, "exp", 0),
        (0.4, "exp", 0),
        (0.6, "exp", 0),  # inside the band, its edges too
        (0.35, "exp", 8),
        (0.25, "exp", 16),
        (0.15, "exp", 32),
        (0.05, "exp", 64),
        (0.0, "exp", 64),
        (0.0, "linear", 32),
        (0.0, "const", 8),
        (0.65, "exp", -8),
        (0.75, "exp", -16),
        (0.95, "exp", -64),
        (1.0, "linear", -32),
    ],
)
def test_window_change_by_hand(rho, scheduler, change):
    """K = 8 x m, m from ceil(gap / 0.1) (exp: 2^(seg-1), linear: seg, const 1), m <= 8."""
    assert window_change(rho, 0.4, 0.6, 8, scheduler) == change


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(cache="dual"), "combine with cache"),
        (dict(threshold=0.9), "combine with threshold"),
        (dict(early_stop=True), "combine with early_stop"),
        (dict(daedal=True), "both set the answer length"),
        (dict(remasking="entropy"), "low_confidence"),
        (dict(rho_initial=128), "exceeds gen_length"),
        (dict(rho_low=0.7), "exceeds rho_high"),
        (dict(rho_high=1.5), "in [0, 1]"),
        (dict(rho_expand=0), ">= 1"),
        (dict(rho_scheduler="power"), "choose one of exp, linear, const"),
    ],
)
def test_bad_options_are_one_line(kw, words):
    with pytest.raises(SeerError, match=words.replace("[", r"\[").replace("]", r"\]")) as e:
        SamplingParams(gen_length=64, rho_eos=True, **kw)
    assert "\n" not in str(e.value)


def test_a_rho_option_turns_it_on_and_seer_does_not_compose(builtin):
    out = builtin.generate("copy : red box", rho_initial=8, rho_block=8, rho_eos_tokens=8)
    assert out.stats.nfe >= 1
    for kw in (dict(seer=True), dict(seer={"signal": "eos_prob"})):
        with pytest.raises(SeerError, match="rho_eos sets the answer length"):
            builtin.generate("copy : red box", rho_eos=True, **kw)


def test_batch_rows_equal_their_solo_runs(builtin):
    """Rows move alone: each row of a batch gets its batch-1 answer and NFE."""
    cases = [c for c in BUILTIN_CASES if c["kwargs"] == BUILTIN_CASES[0]["kwargs"]]
    prompts = [c["prompt_ids"][0] for c in cases]
    out = builtin.generate(prompts, **options(cases[0]))
    assert [o.token_ids for o in out] == [expected(c, builtin.tokens.eos)[0] for c in cases]
    assert [o.stats.nfe for o in out] == [c["nfe"] for c in cases]


def test_rows_beside_other_traffic_keep_their_answers(builtin):
    """A ρ-EOS request and plain requests submitted together: each keeps its solo answer and
    NFE (ρ-EOS rows share no forward with rows of another layout, `SamplingParams.layout_key`)."""
    from seer.engine import Engine, EngineConfig, Request

    case = BUILTIN_CASES[0]
    rho = builtin.sampling(**options(case))
    plain = [builtin.sampling(gen_length=rho.gen_length, steps=32), rho]
    assert rho.layout_key != plain[0].layout_key
    assert rho.layout_key == replace(rho, seed=7).layout_key  # a seed is a row's own
    reqs = [Request(case["prompt_ids"][0], rho)] + [Request("copy : red box", p) for p in plain]
    solo = [Engine(builtin, EngineConfig()).generate([r])[0] for r in reqs]
    out = Engine(builtin, EngineConfig()).generate(reqs)
    assert [o.token_ids for o in out] == [o.token_ids for o in solo]
    assert [o.nfe for o in out] == [o.nfe for o in solo]
    assert out[0].token_ids == expected(case, builtin.tokens.eos)[0]


def test_cli_flags(builtin, capsys):
    from seer.cli import main

    argv = [
        "generate",
        "--model",
        "builtin",
        "--rho-initial",
        "16",
        "--rho-block",
        "8",
        "--rho-eos-tokens",
        "8",
        "--json",
        "--prompt",
        "copy : red box",
    ]
    assert main(argv) in (0, None)
    got = json.loads(capsys.readouterr().out)
    want = builtin.generate(
        "copy : red box", rho_eos=True, rho_initial=16, rho_block=8, rho_eos_tokens=8
    )
    assert got["token_ids"] == want.token_ids and got["nfe"] == want.stats.nfe
    assert main(["generate", "--model", "builtin", "--rho-low", "2", "--prompt", "x"]) == 2
    err = capsys.readouterr().err
    assert "--rho-low" in err and len(err.strip().splitlines()) == 1


def test_bench_compare_rho_eos_configs(builtin):
    """`bench_compare.py --rho-eos`: its configs are valid options of the built-in model."""
    from conftest import benchmark

    with benchmark("bench_compare") as bench:
        configs = bench.build_configs(builtin, 128, [1], True, daedal=False, rho_eos=True)
    rho = [c for c in configs if c.method == "rho-eos"]
    assert [c.budget for c in rho] == ["official", "i16", "i8"]
    for c in rho:
        assert builtin.sampling(gen_length=128, **c.params).rho_eos and not c.seer


def test_the_length_stops_changing_after_64_steps():
    """Hand-checked: the tiny checkpoint never predicts [EOS] (ρ = 0 < rho_low), so with K = 1
    (const, rho_expand 1) and one reveal per step (rho_reveal 1.0: only the fallback) the window
    grows by one at each of the first 64 steps (8 -> 72, under the cap of 100), then keeps its
    length: 72 positions, one per step, 72 forwards."""
    model = load_model(GOLDEN)
    one = dict(rho_expand=1, rho_scheduler="const", rho_reveal=1.0)
    p = SamplingParams(
        gen_length=100, remasking="low_confidence", rho_initial=8, rho_block=8, rho_eos=True, **one
    )
    canvas = make_canvas([[5, 6, 7]], p.gen_length, GOLDEN_TOKENS, "cpu")
    res = DenoisingLoop(model, GOLDEN_TOKENS).run(canvas, p)
    assert res.window.tolist() == [8 + 64] and res.nfe == 72
    assert GOLDEN_TOKENS.mask not in res.answer[0].tolist()
