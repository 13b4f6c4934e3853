"""DAEDAL (`SamplingParams.daedal`, `seer.diffusion.daedal`): token-for-token and NFE goldens
from the official `generate` (Li-Jinsong/DAEDAL, tools/goldens/make_daedal_golden.py) — on the
built-in text model through `DiffusionLM.generate` (the engine), on the tiny LLaDA fixture
through the loop — plus its canvas insertion, defaults, and one-line refusals."""

from __future__ import annotations

import json

import pytest
import torch
from fastdllm_golden import GOLDEN, GOLDEN_TOKENS

import seer
from seer.diffusion.canvas import insert_masks, make_canvas
from seer.diffusion.loop import DenoisingLoop
from seer.errors import SeerError
from seer.models.loader import load_model
from seer.sampling import SamplingParams, TokenIds

FIXTURE = json.loads((GOLDEN.parent / "daedal" / "golden.json").read_text())
CASES = FIXTURE["generations"]
NAMES = {  # official `generate` argument -> SamplingParams field
    "initial_gen_length": "daedal_initial",
    "max_gen_length": "gen_length",
    "block_length": "daedal_block",
    "high_conf_threshold": "daedal_high",
    "low_conf_threshold": "daedal_low",
    "expansion_factor": "daedal_expand",
    "eos_confidence_threshold": "daedal_eos",
    "expand_eos_confidence_threshold": "daedal_expand_eos",
    "eos_check_tokens": "daedal_eos_tokens",
}


def options(case: dict) -> dict:
    return {NAMES[k]: v for k, v in case["kwargs"].items()} | {"daedal": True}


def expected(case: dict, eos: int) -> list[list[int]]:
    """Official rows (prompt + final window) as Seer's answers: the window, then [EOS]."""
    cap, n = case["kwargs"]["max_gen_length"], len(case["prompt_ids"][0])
    return [row[n:] + [eos] * (cap - len(row) + n) for row in case["output_ids"]]


@pytest.fixture(scope="module")
def builtin():
    return seer.load("builtin-v1")


@pytest.fixture(scope="module")
def tiny_golden():
    return load_model(GOLDEN)


# the cases recorded on the first text model (named builtin_* in the golden; now builtin-v1)
BUILTIN_CASES = [c for c in CASES if c["name"].startswith("builtin")]
assert BUILTIN_CASES, "the DAEDAL golden holds no case on the built-in model"


@pytest.mark.parametrize("case", BUILTIN_CASES, ids=lambda c: c["name"])
def test_engine_matches_official_daedal(builtin, case):
    """Through `generate` (the step-level engine): tokens, and each row's NFE (the official
    batch-1 NFE; a batch's rows change phase on their own, see seer.diffusion.daedal)."""
    out = builtin.generate(case["prompt_ids"], **options(case))
    assert [o.token_ids for o in out] == expected(case, builtin.tokens.eos)
    solo = case.get("solo_nfe", [case["nfe"]])
    assert [o.stats.nfe for o in out] == solo


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["name"].startswith("tiny")], ids=lambda c: c["name"]
)
def test_loop_matches_official_daedal(tiny_golden, case):
    p = SamplingParams(remasking="low_confidence", **options(case))
    canvas = make_canvas(case["prompt_ids"], p.gen_length, GOLDEN_TOKENS, "cpu")
    res = DenoisingLoop(tiny_golden, GOLDEN_TOKENS).run(canvas, p)
    assert res.answer.tolist() == expected(case, GOLDEN_TOKENS.eos)
    # each row's NFE is its batch-1 NFE, so the batch takes as many forwards as its longest row
    assert res.nfe == max(case.get("solo_nfe", [case["nfe"]]))


def test_the_goldens_exercise_every_mechanism():
    """Not vacuous: sizing grows and stops short of the cap, windows grow by insertion, a cap
    cuts, several positions are revealed in one step, rows alone equal their batch."""
    by = {c["name"]: c for c in CASES}
    assert all(c["same_in_float64"] for c in CASES)
    assert all(c["solo_equal"] for c in CASES if "solo_equal" in c)
    grew = [c for c in CASES if c["sizing_growths"] > 0]
    assert any(
        c["widths"][c["sizing_growths"]] < len(c["prompt_ids"][0]) + c["kwargs"]["max_gen_length"]
        for c in grew
    )

    def inserts(c: dict) -> bool:  # a canvas grew by expansion_factor - 1 between two calls
        w, n = c["widths"], c["kwargs"].get("expansion_factor", 8)
        return any(b - a == n - 1 for a, b in zip(w, w[1:], strict=False))

    inserted = [c for c in CASES if inserts(c)]
    assert {"builtin_inserts_copy", "builtin_inserts_cap32_copy"} <= {c["name"] for c in inserted}
    cap = by["builtin_inserts_cap32_copy"]
    assert len(cap["output_ids"][0]) - len(cap["prompt_ids"][0]) == 32  # grown to the cap
    out = by["builtin_official_lookup"]
    assert out["nfe"] - 1 < len(out["output_ids"][0]) - len(out["prompt_ids"][0]) - 16


def test_defaults_are_the_official_ones():
    official = FIXTURE["meta"]["defaults"]
    p = SamplingParams()
    for name, field in NAMES.items():
        if field != "gen_length":
            assert getattr(p, field) == official[name], name
    assert official["max_gen_length"] == 2048 and official["temperature"] == 0.0


def test_insert_masks_shifts_and_caps():
    t = TokenIds(mask=9, eos=8, pad=8)
    c = make_canvas([[5, 6]], 4, t, "cpu")
    c.x[0, 2:] = torch.tensor([1, 9, 3, 4])
    out = insert_masks(c, torch.tensor([1]), 3, 10, t)
    assert out.x[0, 2:].tolist() == [1, 9, 9, 9, 3, 4] and out.window.tolist() == [6]
    cut = insert_masks(c, torch.tensor([1]), 3, 5, t)  # what passes the cap is dropped
    assert cut.x[0, 2:].tolist() == [1, 9, 9, 9, 3] and cut.window.tolist() == [5]
    same = insert_masks(c, torch.tensor([-1]), 3, 10, t)
    assert same.x.tolist() == c.x.tolist()


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(cache="dual"), "combine with cache"),
        (dict(threshold=0.9), "combine with threshold"),
        (dict(early_stop=True), "combine with early_stop"),
        (dict(remasking="entropy"), "low_confidence"),
        (dict(daedal_initial=128), "exceeds gen_length"),
        (dict(daedal_low=1.5), "in [0, 1]"),
        (dict(daedal_expand=0), ">= 1"),
    ],
)
def test_bad_options_are_one_line(kw, words):
    with pytest.raises(SeerError, match=words.replace("[", r"\[").replace("]", r"\]")) as e:
        SamplingParams(gen_length=64, daedal=True, **kw)
    assert "\n" not in str(e.value)


def test_seer_and_a_fixed_window_do_not_compose(builtin):
    for kw in (dict(seer=True), dict(policy=None, seer={"signal": "eos_prob"})):
        with pytest.raises(SeerError, match="daedal sets the answer length"):
            builtin.generate("copy : red box", daedal=True, **kw)


def test_cli_flags(builtin, capsys):
    from seer.cli import main

    argv = [
        "generate",
        "--model",
        "builtin-v1",
        "--daedal",
        "--daedal-initial",
        "8",
        "--daedal-block",
        "8",
        "--daedal-eos-tokens",
        "8",
        "--json",
        "--prompt",
        "copy : red box",
    ]
    assert main(argv) in (0, None)
    got = json.loads(capsys.readouterr().out)
    want = builtin.generate(
        "copy : red box", daedal=True, daedal_initial=8, daedal_block=8, daedal_eos_tokens=8
    )
    assert got["token_ids"] == want.token_ids and got["nfe"] == want.stats.nfe
    assert main(["generate", "--model", "builtin-v1", "--daedal-low", "2", "--prompt", "x"]) == 2
    err = capsys.readouterr().err
    assert "--daedal-low" in err and len(err.strip().splitlines()) == 1


def test_bench_compare_daedal_configs(builtin):
    """`bench_compare.py --daedal`: its configs are valid options of the built-in model."""
    from conftest import benchmark

    with benchmark("bench_compare") as bench:
        configs = bench.build_configs(builtin, 64, [1], True, daedal=True)
    daedal = [c for c in configs if c.method == "daedal"]
    assert [c.budget for c in daedal] == ["official", "i16", "i8"]
    for c in daedal:
        assert builtin.sampling(gen_length=64, **c.params).daedal and not c.seer


def test_engine_rows_arriving_at_other_ticks_equal_their_solo_run(builtin):
    """Continuous batching: DAEDAL rows at other phases and windows share forwards (gather,
    routing by window) and each still gets its solo answer and NFE."""
    from seer.engine import Engine, EngineConfig, Request

    case = next(c for c in CASES if c["name"] == "builtin_inserts_mixed_batch2")
    p = builtin.sampling(**options(case))
    want = expected(case, builtin.tokens.eos)
    eng = Engine(builtin, EngineConfig(max_batch=4))
    ids = [eng.submit(Request(case["prompt_ids"][1], params=p))]
    got = {}
    for tick in range(200):
        if tick in (2, 5):  # arrivals while the first row is sizing / denoising
            ids.append(eng.submit(Request(case["prompt_ids"][0], params=p)))
        for r in eng.step():
            got[r.request_id] = r
        if len(got) == 3:
            break
    assert got[ids[0]].token_ids == want[1] and got[ids[0]].nfe == case["solo_nfe"][1]
    for i in ids[1:]:
        assert got[i].token_ids == want[0] and got[i].nfe == case["solo_nfe"][0]


def test_masks_predicted_everywhere_still_reveal_one_token_per_step():
    """The official fallback when every candidate's prediction is [MASK]: the best other token
    (a softmax without [MASK]) is revealed, one per step; [EOS] never predicted: the window
    grows to the cap (8 -> 12 -> 16, three sizing forwards) and takes no [EOS] tail."""
    from conftest import TOKENS, tiny

    model = tiny("llada")
    forward = model.forward

    def masks_first(*a, **kw):
        out = forward(*a, **kw)
        out.logits[..., TOKENS.mask] += 100.0
        return out

    model.forward = masks_first
    p = SamplingParams(
        gen_length=16,
        remasking="low_confidence",
        daedal=True,
        daedal_initial=8,
        daedal_block=8,
        daedal_expand=4,
        daedal_eos_tokens=4,
    )
    res = DenoisingLoop(model, TOKENS).run(make_canvas([[5, 6, 7]], 16, TOKENS, "cpu"), p)
    assert TOKENS.mask not in res.answer[0].tolist()
    assert res.nfe == 3 + 16 and res.window.tolist() == [16]
