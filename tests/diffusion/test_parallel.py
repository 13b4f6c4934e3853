"""Fast-dLLM parallel decoding (`threshold`, `factor`) in the one loop: token-for-token goldens
from Fast-dLLM's `generate`, `generate_with_prefix_cache` and `generate_with_dual_cache`, the
reveal rules themselves, validation, and Seer's truncation composed with them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from conftest import TOKENS, tiny
from fastdllm_golden import GOLDEN, GOLDEN_TOKENS, cases, golden_params

from seer.boundary.truncation import FixedWindowPolicy
from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.diffusion.unmask import parallel_count
from seer.errors import SeerError
from seer.models.loader import load_model
from seer.sampling import SamplingParams

CASES = cases("parallel")


@pytest.fixture(scope="module")
def golden_llada():
    return load_model(GOLDEN)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_tokens_and_nfe_match_fast_dllm(golden_llada, case):
    p = golden_params(case)
    canvas = make_canvas(case["prompt_ids"], p.gen_length, GOLDEN_TOKENS, "cpu")
    out = DenoisingLoop(golden_llada, GOLDEN_TOKENS).run(canvas, p)
    got = torch.cat([torch.tensor(case["prompt_ids"]), out.answer], dim=1)
    assert got.tolist() == case["output_ids"]
    assert out.nfe == case["nfe"]  # a filled block ends, as Fast-dLLM's `while True`


def test_the_goldens_reveal_in_parallel():
    """Not vacuous: the rules reveal several positions in some steps, fewer forwards than
    positions, and the rules and caches give different answers."""
    for case in CASES:
        assert max(case["stats"]["transfer_counts_per_call"]) >= 2, case["name"]
        assert case["nfe"] < case["kwargs"]["gen_length"] or "factor2.0" in case["name"]
    outs = {c["name"]: c["output_ids"] for c in CASES}
    assert len({json.dumps(v) for v in outs.values()}) > len(CASES) // 2


def _count(confs: list[float], m: int | None = None, **rule) -> int:
    conf = torch.tensor([confs], dtype=torch.float64)
    eligible = torch.ones_like(conf, dtype=torch.bool)
    if m is not None:
        eligible[:, m:] = False
    conf = conf.masked_fill(~eligible, -torch.inf)
    p = SamplingParams(gen_length=8, remasking="low_confidence", **rule)
    return int(parallel_count(conf, eligible, p)[0])


def test_threshold_reveals_every_confident_position_and_at_least_one():
    assert _count([0.95, 0.2, 0.91, 0.5], threshold=0.9) == 2
    assert _count([0.3, 0.2, 0.1, 0.5], threshold=0.9) == 1  # the best one alone
    assert _count([0.95, 0.99, 0.91, 0.97], threshold=0.9) == 4
    assert _count([0.95, 0.99, 0.91, 0.97], m=0, threshold=0.9) == 0  # nothing eligible


def test_factor_rule_and_its_quirks():
    # thresholds 1 - f/(n+2) for ranks n = 1, 2, 3: with f = 1: 0.667, 0.75, 0.8
    assert _count([0.9, 0.7, 0.5, 0.1, 0.1], factor=1.0) == 2  # rank 2 fails
    assert _count([0.9, 0.5, 0.5, 0.1, 0.1], factor=1.0) == 1  # rank 1 fails
    # first failure at the last rank: Fast-dLLM reveals all of them
    assert _count([0.9, 0.7, 0.1], factor=1.0) == 3
    assert _count([0.9, 0.8, 0.9, 0.9], factor=1.0) == 4  # none fails
    assert _count([0.1], factor=1.0) == 1


def test_options_are_validated():
    with pytest.raises(SeerError, match="not both"):
        SamplingParams(threshold=0.9, factor=1.0)
    with pytest.raises(SeerError, match=r"\[0, 1\]"):
        SamplingParams(threshold=1.5)
    with pytest.raises(SeerError, match="factor must be > 0"):
        SamplingParams(factor=0)
    with pytest.raises(SeerError, match="top-k rule"):
        SamplingParams(threshold=0.9, remasking="origin")


def test_threshold_one_reveals_one_per_step_like_the_schedule():
    """threshold=1 accepts only the best position each step: the same tokens as one token per
    step, and NFE equal to the window."""
    model = tiny("llada")
    prompts = [[5, 6, 7, 8], [9, 10]]
    base = SamplingParams(gen_length=16, steps=16, block_length=8, remasking="low_confidence")
    par = SamplingParams(
        gen_length=16, steps=4, block_length=8, remasking="low_confidence", threshold=1.0
    )
    loop = DenoisingLoop(model, TOKENS)
    a = loop.run(make_canvas(prompts, 16, TOKENS, "cpu"), base)
    b = loop.run(make_canvas(prompts, 16, TOKENS, "cpu"), par)
    assert torch.equal(a.answer, b.answer) and b.nfe == 16


@pytest.mark.parametrize("cache", ["none", "prefix", "dual"])
def test_a_cut_window_runs_under_threshold_like_a_short_request(cache):
    """Seer composes with parallel decoding: cut to 8 after step 0, then the same tokens as a
    request whose window is 8, apart from step 0 (which saw the full window)."""
    model = tiny("llada")
    p = SamplingParams(
        gen_length=16, block_length=8, remasking="low_confidence", threshold=0.05, cache=cache
    )
    loop = DenoisingLoop(model, TOKENS)
    out = loop.run(make_canvas([[5, 6, 7, 8]], 16, TOKENS, "cpu"), p, FixedWindowPolicy([8]))
    assert int(out.window[0]) == 8 and out.nfe <= 8
    assert (out.answer[0, 8:] == TOKENS.eos).all()


# -- dInfer's early stop -------------------------------------------------------------------------


BUILTIN = Path(__file__).parents[2] / "checkpoints" / "builtin-v1"


def test_early_stop_ends_a_row_after_the_block_that_holds_eos():
    """A row whose filled block holds [EOS] ends there: the tokens up to that block are those of
    the run without early stop (semi-AR: later blocks never change earlier ones), every later
    position is [EOS], and fewer steps run. On the built-in model (it answers, then pads)."""
    import seer

    lm = seer.load(BUILTIN)
    eos = lm.tokens.eos
    prompts = ["Spell the word cat.", "What colour is the ball? The ball is red.", "Copy: a b c"]
    full_p = SamplingParams(gen_length=32, steps=32, block_length=8, remasking="low_confidence")
    loop = lm.loop
    full = loop.run(lm.canvas(prompts, full_p), full_p)
    early_p = replace(full_p, early_stop=True)
    early = loop.run(lm.canvas(prompts, early_p), early_p)
    fired = 0
    for r in range(len(prompts)):
        row = full.answer[r].tolist()
        blocks = [row[i : i + 8] for i in range(0, 32, 8)]
        first = next((b for b, blk in enumerate(blocks) if eos in blk), None)
        if first is None:
            assert early.answer[r].tolist() == row
            continue
        end = 8 * (first + 1)
        assert early.answer[r, :end].tolist() == row[:end]
        assert (early.answer[r, end:] == eos).all()
        fired += end < 32
    assert fired, "no answer ended before the last block: the test would be vacuous"
    assert early.nfe < full.nfe


def test_early_stop_with_one_block_is_the_plain_run():
    model = tiny("llada")
    p = SamplingParams(gen_length=16, steps=16, remasking="low_confidence")
    loop = DenoisingLoop(model, TOKENS)
    a = loop.run(make_canvas([[5, 6, 7]], 16, TOKENS, "cpu"), p)
    b = loop.run(make_canvas([[5, 6, 7]], 16, TOKENS, "cpu"), replace(p, early_stop=True))
    assert torch.equal(a.answer, b.answer) and a.nfe == b.nfe


# -- DPad's suffix dropout ------------------------------------------------------------------------


def test_suffix_dropout_runs_only_the_scratchpad_after_the_block():
    from seer.diffusion.cache import SuffixDropout

    model = tiny("llada")
    prompts = [[5, 6, 7, 8], [9, 10]]
    p = SamplingParams(gen_length=16, steps=16, block_length=4, remasking="low_confidence")
    loop = DenoisingLoop(model, TOKENS)
    plain = loop.run(make_canvas(prompts, 16, TOKENS, "cpu"), p)
    wide = loop.run(make_canvas(prompts, 16, TOKENS, "cpu"), p, cache=SuffixDropout(16))
    assert torch.equal(wide.answer, plain.answer) and wide.forwarded == plain.forwarded
    out = loop.run(make_canvas(prompts, 16, TOKENS, "cpu"), p, cache=SuffixDropout(4))
    # 4 steps per block; block b ends at 4(b+1): columns P + min(4(b+1) + 4, 16)
    cols = [4 + min(4 * (b + 1) + 4, 16) for b in range(4) for _ in range(4)]
    assert out.forwarded == 2 * sum(cols) < plain.forwarded
    assert out.nfe == plain.nfe and not (out.answer == TOKENS.mask).any()
    cut = loop.run(
        make_canvas(prompts, 16, TOKENS, "cpu"),
        p,
        FixedWindowPolicy([8, 8]),
        cache=SuffixDropout(0),
    )
    assert (cut.answer[:, 8:] == TOKENS.eos).all()
    with pytest.raises(ValueError):
        SuffixDropout(-1)


def test_suffix_dropout_keys_are_each_rows_own_scratchpad():
    """Rows at different blocks share one forward over the furthest row's columns, but each
    row's keys stop at its own block end + the scratchpad; a step that asks for positions past
    every block (a window policy's step 0) shows each row all of them, as a row alone sees."""
    from types import SimpleNamespace

    from seer.diffusion.cache import SuffixDropout
    from seer.diffusion.schedule import StepRows

    canvas = SimpleNamespace(x=torch.zeros(2, 4 + 64, dtype=torch.long), prompt_len=4)
    z = torch.zeros(2, dtype=torch.long)
    behind = StepRows(
        start=torch.tensor([0, 24]),
        end=torch.tensor([8, 32]),
        j=z,
        steps=z + 8,
        active=torch.tensor([True, True]),
    )
    span = SuffixDropout(4).span(canvas, behind, 0, 32, 0)
    assert (span.lo, span.hi, span.fill) == (0, 4 + 32 + 4, True)
    assert span.keys is not None
    assert span.keys.sum(1).tolist() == [4 + 8 + 4, 4 + 32 + 4]
    lockstep = replace(behind, start=torch.tensor([8, 8]), end=torch.tensor([16, 16]))
    assert SuffixDropout(4).span(canvas, lockstep, 8, 16, 0).keys is None
    step0 = SuffixDropout(4).span(canvas, lockstep, 0, 64, 0)  # every position asked for
    assert step0 is None  # a plain forward: every row sees the whole window
    wider = SuffixDropout(4).span(canvas, behind, 0, 40, 0)  # past the furthest block's end
    assert (wider.hi, wider.keys) == (4 + 40, None)  # both rows see every position asked for


def test_dpad_by_name_runs_through_generate_the_engine_and_the_cli(capsys):
    """`cache="dpad"` (`--cache dpad --dpad-window N`) is `SuffixDropout(N)`: the tokens of the
    loop run with the policy object, alone and batched through the engine."""
    import json

    import seer
    from seer.cli import main
    from seer.diffusion.cache import SuffixDropout

    lm = seer.load("builtin-v1")
    qs = ["what is 3 + 4 ?", "spell cat backwards ."]
    p = lm.sampling(gen_length=32, steps=16, block_length=8, cache="dpad", dpad_window=4)
    want = [lm.loop.run(lm.canvas([q], p), p, cache=SuffixDropout(4)) for q in qs]
    solo = [lm.generate(q, p) for q in qs]
    for g, w in zip(solo, want, strict=True):  # the answer, then [EOS] padding
        n = len(g.token_ids)
        assert g.token_ids == w.answer[0, :n].tolist() and (w.answer[0, n:] == lm.tokens.eos).all()
    assert [g.stats.nfe for g in solo] == [w.nfe for w in want]
    batch = lm.generate(qs, p)
    assert [g.token_ids for g in batch] == [g.token_ids for g in solo]
    argv = [
        "generate",
        "--model",
        "builtin-v1",
        "--prompt",
        qs[0],
        "--gen-length",
        "32",
        "--steps",
        "16",
        "--block-length",
        "8",
        "--cache",
        "dpad",
        "--dpad-window",
        "4",
        "--json",
    ]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["answer"] == solo[0].text
    with pytest.raises(seer.SeerError, match="dpad_window must be >= 0"):
        lm.sampling(cache="dpad", dpad_window=-1)
