"""The comparison's rules: non-inferiority at a stated margin, the fastest config's share over
request redraws, the cost model's fit and projection, the block-size sweep's names, a raw
file written without text, answers hashed apart from the window, and old records still
rendering."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seerbench import costmodel, stats
from seerbench.compare import Config, build_configs, family, fitting_blocks
from seerbench.compare_report import headline_lines, markdown, select_fastest

ROOT = Path(__file__).resolve().parents[2]


def test_the_margin_rule_is_a_one_sided_lower_bound_against_the_margin():
    ref = [1.0] * 100
    same = [1.0] * 100
    swaps = [0.0, 0.0, 1.0, 1.0] + [1.0] * 96  # two losses, two wins: no loss on average
    ref_swaps = [1.0, 1.0, 0.0, 0.0] + [1.0] * 96
    loses6 = [0.0] * 6 + [1.0] * 94  # 6 points lost
    assert stats.noninferior(same, ref, 0.03) == (True, 0.0)
    assert stats.noninferior(swaps, ref_swaps, 0.03)[0]
    ok, lo = stats.noninferior(loses6, ref, 0.03)
    assert not ok and lo < -0.06 + 0.02
    assert stats.noninferior(loses6, ref, 0.10)[0]  # a wider margin admits it
    # the same bound is below the two-sided interval's lower end (one-sided 95 % = 5th pct)
    assert stats.lower_bound(swaps, ref_swaps) >= stats.bootstrap(swaps, ys=ref_swaps)[0]


def test_the_selection_is_redone_in_every_redraw_of_the_requests():
    n = 60
    rng = np.random.default_rng(0)
    ref = [1.0] * n
    scores = {"base": ref, "fast": ref, "faster_but_wrong": [0.0] * 20 + [1.0] * 40}
    times = {"base": [10.0] * n, "fast": [2.0] * n, "faster_but_wrong": [1.0] * n}
    share = select_fastest(scores, times, "base", 3.0, reps=200)
    assert share == {"fast": 1.0}  # a third wrong is never within the margin
    # two configs as fast as each other (noise per request): neither is clearly the fastest
    a = list(2.0 + rng.normal(0, 0.5, n))
    b = list(2.0 + rng.normal(0, 0.5, n))
    share = select_fastest(
        {"base": ref, "a": ref, "b": ref},
        {"base": [10.0] * n, "a": a, "b": b},
        "base",
        3.0,
        reps=400,
    )
    assert set(share) == {"a", "b"} and max(share.values()) < 0.9
    rec = {
        "headline": {
            "reference": "base",
            "margin": 3.0,
            "b1": {
                "fastest": "a",
                "speedup_vs_reference": 5.0,
                "share": 0.45,
                "clear": False,
                "shares": {"a": 0.45, "b": 0.55},
            },
        },
        "clock": "e2e_cpu",
    }
    line = headline_lines(rec)[0]
    assert "Within 3 points of base" in line and "no config is clearly the fastest" in line
    # the reference itself the fastest within the margin: no other config passes, said so
    shares = {"base": 0.72, "a": 0.2, "b": 0.08}
    rec["headline"]["b1"] = dict(
        fastest="base", speedup_vs_reference=1.0, share=0.72, clear=True, shares=shares
    )
    assert headline_lines(rec)[0] == (
        "Within 3 points of base (one-sided 95 % bound), no config but base itself passes at "
        "batch 1 (end to end, CPU time); another config passes in 28 % of request redraws "
        "(a 20 %, b 8 %)."
    )
    del shares["b"]  # the shares name the most frequent few: the rest is "…"
    assert headline_lines(rec)[0].endswith("in 28 % of request redraws (a 20 %, …).")


def test_the_cost_model_recovers_known_coefficients():
    rng = np.random.default_rng(1)
    true = np.array([2e-3, 5e-4, 3e-6, 1e-8])  # per request, forward, token, token-key
    x, shapes = [], []
    for _ in range(200):
        cache = ["none", "prefix", "dual", "dpad"][rng.integers(4)]
        w = int(rng.choice([16, 32, 64, 128]))
        shp = dict(
            prompt=int(rng.integers(10, 200)),
            window=w,
            nfe=int(rng.integers(4, w + 1)),
            g=128,
            cache=cache,
            block=8 if cache != "none" else None,
            cut=bool(rng.integers(2)),
        )
        x.append(costmodel.terms(**shp))
        shapes.append(shp)
    x = np.asarray(x)
    f = costmodel.fit(x, x @ true)
    assert np.allclose(f.coef, true, rtol=1e-6) and f.rel_rmse < 1e-6
    # the dual cache computes less per forward than no cache, at the same NFE
    full = costmodel.terms(100, 64, 64, 64)
    dual = costmodel.terms(100, 64, 64, 64, cache="dual", block=8)
    assert full[1] == dual[1] == 64 and dual[2] < full[2]


def test_the_cost_line_states_the_error_of_the_predicted_speedups():
    from seerbench.compare_report import _cost_lines

    res = {
        "base": {"ref": "base", "model_b1_error": 0.0},
        "a": {"ref": "base", "model_b1_error": 0.30},
        "b": {"ref": "base", "model_b1_error": -0.40},
    }
    cm = {"b1": {"coef": [0, 0, 0, 0], "n": 30, "rel_rmse": 0.5}}
    line = _cost_lines({"cost_model": cm, "results": res})[1]
    assert "batch 1: 30 observations, relative RMS error 50 %" in line
    # the reference itself is left out: sqrt((0.3^2 + 0.4^2) / 2) = 35 %
    assert "35 % RMS from the measured over 2 configs (largest b -40 %)" in line


def test_the_projection_reads_the_model_config_and_is_labelled():
    s = costmodel.llada_8b()
    assert (s.hidden, s.layers, s.intermediate, s.vocab) == (4096, 32, 12288, 126464)
    assert 7.5e9 < s.params < 8.5e9
    assert costmodel.lavida().image_tokens == costmodel.LAVIDA_IMAGE_TOKENS
    # one forward of 1000 positions on an H200: compute bound, ~2 N q / 989 TFLOP/s
    t = costmodel.forward_seconds(s, 1, 1000, 1000)
    assert t == pytest.approx(2 * s.layer_params * 1000 / 989e12, rel=0.2)
    record = json.loads((ROOT / "docs/results/compare/compare-builtin.json").read_text())
    lines = costmodel.projection_lines(record)
    assert lines[1].startswith("PROJECTION, not a measurement nor a validated prediction")
    assert "LLaDA-8B" in lines[1] and "seer simulate" in lines[1]
    assert any("LaViDa" in x and "980 image positions" in x for x in lines)


def test_block_sizes_are_swept_and_named():
    class LM:
        class tokens:
            enders = (1,)

    assert fitting_blocks(128, 4) == [8, 16, 32, 64]
    assert fitting_blocks(128, 16) == [16, 32, 64]  # a block holds at least one step
    assert fitting_blocks(48, 1) == [8, 16]  # each divides the window
    assert fitting_blocks(128, None, (8, 32)) == [8, 32]
    names = {c.name for c in build_configs(LM, 128, [1, 16], False, blocks=(8, 32))}
    assert {
        "dual/b8@k=1",
        "dual/b32@k=1",
        "seer+prefix/b32@k=16",
        "dpad/b32@k=16",
        "dual+threshold/b32@t=0.9",
        "seer+dual+threshold/b8@t=0.9",
    } <= names
    assert "dual/b8@k=16" not in names and "dual/b64@k=1" not in names
    assert family("seer+dual+threshold/b32") == "seer+dual+threshold" and family("seer") == "seer"
    c = Config("dual/b32", "k=1", {"block_length": 32}, block=32)
    assert c.name == "dual/b32@k=1" and c.family == "dual"


def test_a_raw_file_without_text_keeps_scores_ids_and_the_machine(tmp_path):
    import seer
    from seer.data import load_examples
    from seer.engine.request import seer_config as resolve
    from seerbench.compare import batch1
    from seerbench.compare_report import summarise

    lm = seer.load(ROOT / "src/seer/assets/builtin")
    examples = load_examples("builtin", n=2, part="eval")[:1]
    configs = [Config("baseline", "k=8", {"steps": 1}, ref="baseline@k=8")]
    raw = tmp_path / "raw.jsonl"
    rows = batch1(
        lm,
        examples,
        configs,
        8,
        resolve(lm, True),
        1,
        raw,
        {"s": 1},
        lambda *a: None,
        keep_text=False,
    )
    line = json.loads(raw.read_text().splitlines()[0])
    entry = line["results"]["baseline@k=8"]
    assert "text" not in entry and "answer" not in line and entry["score"] in (0.0, 1.0)
    assert line["id"] == examples[0].id and "ids_hash" in entry
    assert line["machine"]["seer_version"] and line["machine"]["cpus"]
    assert len(entry["call_cpu_repeats"]) == 1 and line["prompt_cpu_seconds"] >= 0
    res = summarise(rows, {}, configs, 8, examples)  # scored from the recorded score
    assert res["baseline@k=8"]["accuracy"] == entry["score"]
    assert set(res["baseline@k=8"]["b1"]) == {"e2e_cpu", "e2e_wall", "loop_cpu", "loop_wall"}


def test_a_run_hashes_its_answer_apart_from_the_window_padding():
    """`answer_hash` (the ids before the end token) is the same answer's at any window, so
    windows can be compared without text; `ids_hash` keeps the whole window (one window's
    checks)."""
    from types import SimpleNamespace

    from seerbench.compare import run_one

    class LM:
        def generate(self, q, seer=None, policy=None, gen_length=0, **kw):
            ids = [5, 6] + [2] * (gen_length - 2)  # an answer of two tokens, then [EOS]
            stats = SimpleNamespace(
                tokens=2, window=gen_length, nfe=gen_length, seconds=0.1, detect_seconds=0.0
            )
            return SimpleNamespace(text="5 6", token_ids=ids, stats=stats)

    cfg = Config("baseline", "k=1", {})
    short, long = (run_one(LM(), [1], cfg, g, None, {}) for g in (8, 16))
    assert short.answer_hash == long.answer_hash == hash((5, 6))
    assert short.ids_hash != long.ids_hash


def test_records_from_before_the_clocks_still_render_and_say_so():
    record = json.loads((ROOT / "docs/results/compare/compare-builtin.json").read_text())
    md = markdown(record)
    assert "old format" in md and "| config |" in md


def test_the_block_sweep_table_has_one_column_per_block_size():
    from seerbench.compare_report import _sweep_table

    def row(acc, x, lo, ok, block):
        return dict(
            accuracy=acc,
            b1_speedup_vs_ref=x,
            ni_lower=lo,
            noninferior=ok,
            block=block,
            budget="k=1",
        )

    res = {
        "baseline@k=1": dict(accuracy=0.5, budget="k=1", block=None),
        "dual/b8@k=1": row(0.4, 3.4, -0.15, False, 8),
        "dual/b64@k=1": row(0.5, 2.1, -0.02, True, 64),
        "seer+dual/b8@k=1": row(0.5, 15.0, -0.017, True, 8),
    }
    lines = _sweep_table(res, 3.0)
    assert "| method | budget | blocks of 8 | blocks of 64 |" in lines
    assert "| dual | k=1 | 40.0 · 3.4× · -15.0 | 50.0 · 2.1× · -2.0 ✓ |" in lines
    assert "| seer+dual | k=1 | 50.0 · 15.0× · -1.7 ✓ |  |" in lines
    assert _sweep_table({"dual/b8@k=1": row(0.4, 3.4, -0.15, False, 8)}, 3.0) == []  # one size


def _results(scores: dict, ms: dict, margin: float = 3.0) -> dict:
    """Minimal per-config results for `headline`: scores and times per request, the
    unadjusted verdict against "base" (seed 0, as `summarise` computes it)."""
    out = {}
    for k, s in scores.items():
        ok, lo = stats.noninferior(s, scores["base"], margin / 100)
        out[k] = {
            "method": k,
            "seer": False,
            "correct": s,
            "b1_ms": ms[k],
            "margin": margin,
            "b1_request_ms": [ms[k]] * len(s),
            "noninferior": ok,
            "ni_lower": lo,
        }
    return out


def test_holm_steps_down_and_the_p_values_agree_with_the_lower_bound():
    assert stats.holm([0.01, 0.04, 0.03]) == [True, False, False]  # 0.03 > 0.05 / 2
    assert stats.holm([0.01, 0.02, 0.04]) == [True, True, True]  # 0.01, 0.025, 0.05
    assert stats.holm([]) == []
    import torch

    rng = np.random.default_rng(3)
    ref = rng.integers(0, 2, 300).astype(float)
    for flips in (3, 8, 12, 20):
        x = ref.copy()
        x[rng.choice(300, flips, replace=False)] = 0.0
        (p,) = stats.noninferior_p(torch.tensor(np.stack([x - ref])), 0.03)
        assert (p <= 0.05) == stats.noninferior(list(x), list(ref), 0.03)[0]


def test_the_winner_must_pass_holm_over_the_candidates():
    """A fast config that passes the margin on its own (p 0.04) but not after Holm's correction
    over the candidate set is not the winner; the unadjusted rule would have named it."""
    from seerbench.compare_report import headline

    ref = [1.0] * 200
    scores = {"base": ref, "sound": ref, "risky": [0.0] * 3 + [1.0] * 197}
    scores |= {f"bad{i}": [0.0] * 40 + [1.0] * 160 for i in range(8)}  # fail: p ~ 1
    ms = {"base": 100.0, "sound": 50.0, "risky": 10.0} | {f"bad{i}": 5.0 for i in range(8)}
    res = _results(scores, ms)
    assert res["risky"]["noninferior"]  # unadjusted, it passes
    h = headline(res, "base", 3.0, reps=200)["b1"]
    assert h["fastest"] == "sound" and h["fastest_unadjusted"] == "risky"
    line = headline_lines(
        {"headline": {"reference": "base", "margin": 3.0, "b1": h}, "clock": "e2e_cpu"}
    )[0]
    assert "Holm-corrected" in line and "risky is faster and passes the margin on its own" in line


def test_a_config_whose_verdict_flips_with_the_bootstrap_seed_is_borderline():
    from seerbench.compare_report import headline, verdicts

    ref = [1.0] * 150 + [0.0] * 150
    flaky = [0.0] * 6 + [1.0] * 144 + [1.0] + [0.0] * 149  # 6 lost, 1 won
    scores = {"base": ref, "sound": ref, "flaky": flaky}
    v = verdicts(scores, "base", 3.0)["flaky"]
    assert v["verdict"] == "borderline" and 0 < v["seed_share"] < 1
    res = _results(scores, {"base": 100.0, "sound": 50.0, "flaky": 10.0})
    assert res["flaky"]["noninferior"]  # seed 0 passes it: the old rule's winner
    h = headline(res, "base", 3.0, reps=200)["b1"]
    assert h["fastest"] == "sound" and list(h["borderline"]) == ["flaky"]
    line = headline_lines(
        {"headline": {"reference": "base", "margin": 3.0, "b1": h}, "clock": "e2e_cpu"}
    )[0]
    assert "borderline, not winners" in line and "flaky (passes alone under" in line


def test_committed_reports_say_how_their_margin_was_fixed_and_render_from_their_records():
    """Every committed comparison record of the current format renders to its Markdown beside
    it (`compare_report.rerender` wrote both), its headline chosen by the Holm rule, its margin
    labelled as not pre-registered (the records predate pre-registration) and the baseline's
    accuracy stated, "near the floor" below 30 %; the one run with a plan says so, and a
    re-timing whose plan was written after its batch-1 requests says "post hoc"."""
    from seerbench.compare_report import FLOOR, preregistration

    records = sorted((ROOT / "docs/results/compare").rglob("compare-*.json"))
    current = [p for p in records if json.loads(p.read_text()).get("clock")]
    assert len(current) >= 12
    for path in current:
        record = json.loads(path.read_text())
        assert markdown(record) == path.with_suffix(".md").read_text(), path
        h = record["headline"]
        assert all(h[k]["rule"] == "holm" for k in ("b1", "b32") if k in h), path
        how, post_hoc = preregistration(record)
        plan = record.get("preregistered")
        if plan and plan["requests_done"]:  # written after requests had run
            assert post_hoc and how.startswith("post hoc: the plan was written after"), path
            assert f"named after {plan['requests_done']} requests had run: post hoc" in (
                path.with_suffix(".md").read_text()
            )
        else:  # written into the raw file before the first request, or no plan at all
            assert how.startswith("pre-registered: " if plan else "margin not pre-registered")
            assert not post_hoc
        md = path.with_suffix(".md").read_text()
        assert how in md
        base = record["results"][h["reference"]]["accuracy"]
        assert ("near the floor" in md.split("\n\n")[1]) == (base < FLOOR), path


def test_a_report_at_another_margin_than_the_plan_is_post_hoc():
    from seerbench.compare_report import preregistration

    plan = {
        "margin": 3.0,
        "primary": ["seer+threshold@t=0.9", "threshold@t=0.9"],
        "written": "2026-12-07T00:00:00Z",
        "requests_done": 0,
    }
    assert preregistration({"preregistered": plan, "margin": 3.0}) == (
        "pre-registered: the margin, the primary comparison and the selection rule were written "
        "into the raw file before the first request (2026-12-07T00:00:00Z)",
        False,
    )
    how, post_hoc = preregistration({"preregistered": plan, "margin": 5.0})
    assert post_hoc and "not the pre-registered 3" in how
    how, post_hoc = preregistration({"preregistered": dict(plan, requests_done=40), "margin": 3})
    assert post_hoc and "after 40 requests" in how


def test_a_batch32_time_from_another_process_or_pass_is_never_a_headline():
    """A config timed at batch 32 by a second process or in a later pass is not on the first
    pass's clock (nor one of an old record whose second process's times were scaled): the
    batch-32 headline never picks it."""
    from seerbench.compare_report import headline, one_clock_b32

    ref = [1.0] * 100
    res = _results(
        {"base": ref, "a": ref, "b": ref, "c": ref},
        {"base": 100.0, "a": 50.0, "b": 40.0, "c": 30.0},
    )
    for k, ms in (("base", 1000.0), ("a", 500.0), ("b", 100.0), ("c", 90.0)):
        res[k] |= {"b32_ms": ms, "b32_correct": ref, "b32_round_ms": [ms], "b32_noninferior": True}
    res["b"]["b32_other_process"] = True
    res["c"]["b32_later_pass"] = True
    assert [one_clock_b32(res[k]) for k in ("a", "b", "c")] == [True, False, False]
    assert not one_clock_b32({"b32_part_scale": {"cpu": 0.915}})  # an old record's
    h = headline(res, "base", 3.0, reps=100)
    assert h["b32"]["fastest"] == "a" and h["b1"]["fastest"] == "c"


def test_a_batch32_speedup_in_the_readme_needs_three_rounds_on_one_clock():
    """The README's batch-32 column shows a speed-up only where the config and the baseline were
    timed in >= 3 interleaved rounds of one pass, with the range of the per-round ratios; one
    round, or a time from a later pass, is a dash."""
    from seerbench.compare_report import _b32_cell

    num = lambda x: format(x, ".1f")  # noqa: E731
    three = {
        "base": {"b32_ms": 900.0, "b32_round_ms": [900.0, 880.0, 950.0]},
        "a": {
            "b32_ms": 100.0,
            "b32_round_ms": [100.0, 110.0, 95.0],
            "b32_speedup_vs_ref_range": [8.0, 10.0],
        },
        "late": {
            "b32_ms": 90.0,
            "b32_round_ms": [90.0] * 3,
            "b32_speedup_vs_ref_range": [10.0, 10.0],
            "b32_later_pass": True,
        },
    }
    assert _b32_cell(three, "base", "a", num) == "9.0× [8.0, 10.0]"
    assert _b32_cell(three, "base", "base", num) == "1.0×"
    assert _b32_cell(three, "base", "late", num) == "—"
    assert _b32_cell(three, "base", "missing", num) == "—"
    one = {k: dict(v, b32_round_ms=v["b32_round_ms"][:1]) for k, v in three.items()}
    assert _b32_cell(one, "base", "a", num) == "—"


def test_the_readmes_first_table_is_generated_from_the_shipped_record():
    """README's first results table is `readme_table` of the records its comment names (the
    shipped settings' pre-registered batch-1 run and the batch-32 re-timing of the same
    requests): baseline, stop at the first end, threshold 0.9, Seer, Seer + threshold, the
    oracle, with the margin verdict under Holm's rule; batch 32 only for the configs re-timed in
    3 rounds. The batch-1 record's plan was written before its first request."""
    from seerbench.compare_report import preregistration, readme_table

    readme = (ROOT / "README.md").read_text()
    marker = readme.index("<!-- headline: bench_compare builtin")
    comment = readme[marker : readme.index("-->", marker)]
    paths = comment.split("--readme ")[1].split(")")[0].split()
    assert len(paths) == 2 and paths[0].endswith("shipped-prereg/compare-builtin.json")
    record, b32 = (json.loads((ROOT / x).read_text()) for x in paths)
    assert b32["b32_repeats"] >= 3 and b32["n"] == record["n"]
    assert record["preregistered"]["requests_done"] == 0  # the plan preceded the first request
    how, post_hoc = preregistration(record)
    assert how.startswith("pre-registered: ") and not post_hoc
    assert record["preregistered"]["primary"] == ["seer+threshold@t=0.9", "threshold@t=0.9"]
    table = readme_table(record, b32)
    assert readme[readme.index("\n", marker) + 1 :].startswith(table)
    labels = [row.split(" | ")[0].removeprefix("| ") for row in table.splitlines()[2:]]
    assert labels[:6] == [
        "baseline, 128 steps (1 token / step)",
        "stop at the first end token",
        "Fast-dLLM threshold 0.9",
        "**Seer**, 128 steps",
        "**Seer** + threshold 0.9",
        "oracle window (a bound: knows each end)",
    ]
    assert "| no [−3.7] |" in table.splitlines()[3]  # stop at the first end misses the margin
    rows = table.splitlines()  # Seer: a batch-32 figure with its range; stop: timed once, a dash
    assert rows[5].rstrip(" |*").endswith("]") and rows[3].endswith("| — |")


def test_the_report_says_how_the_batch_32_rounds_were_ordered():
    """A record with the rounds' orders says whether they rotated; an older record (one fixed
    order every round, no orders kept) renders as before, saying nothing."""
    from seerbench.compare_report import _b32order

    rotated = {"a": {"b32_round_orders": [["a", "b"], ["b", "a"]]}, "b": {}}
    fixed = {"a": {"b32_round_orders": [["a", "b"], ["a", "b"]]}}
    assert _b32order(rotated) == "; rounds in rotated order"
    assert _b32order(fixed) == "; rounds in one order"
    assert _b32order({"a": {"b32_ms": 1.0}}) == ""


def _times(s: float) -> dict:
    """A batch-1 entry's times, `s` seconds on every clock (one repeat)."""
    return {
        "seconds": s,
        "seconds_repeats": [s],
        "call_wall_repeats": [s],
        "call_cpu_repeats": [s],
    }


def test_a_later_pass_is_put_on_the_first_clock_by_the_baseline_alone(tmp_path):
    """An added config's batch-1 times are scaled by the reference baseline's first-pass /
    later-pass ratio alone, so its speed-up over the baseline is its time over the baseline's
    re-timed in the same pass: another config re-timed beside it (an older raw file's
    `anchors`, here threshold 0.9 at a different ratio) never enters; a pass without the
    baseline re-timed is refused in one line."""
    from seer.errors import SeerError
    from seerbench.compare import _pass_scale

    settings = {"model": "m"}
    first = {"baseline@k=1": 2.0, "threshold@t=0.9": 0.2}  # first pass, per request
    later = {"baseline@k=1": 4.0, "threshold@t=0.9": 0.1}  # the later pass: 0.5 and 2.0
    added = 0.5  # measured in the later pass: 8x the baseline re-timed beside it
    lines, rows = [], []
    for i in range(3):
        res = {k: _times(v) for k, v in first.items()}
        res["x"] = dict(_times(added * 0.7), scale=0.7)  # a line's own loop-wall scale
        rows.append({"request": i, "results": res})
        lines.append(
            {
                "settings": settings,
                "request": i,
                "added": ["x"],
                "scale": 0.7,
                "results": {"x": res["x"]},
                "anchors": {k: _times(v) for k, v in later.items()},
            }
        )
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(x) + "\n" for x in lines))
    _pass_scale(raw, settings, 3, rows, "baseline@k=1")
    for row in rows:
        x = row["results"]["x"]
        assert x["scales"] == {"seconds": 0.5, "call_wall": 0.5, "call_cpu": 0.5}
        for key in ("seconds_repeats", "call_wall_repeats", "call_cpu_repeats"):
            speedup = row["results"]["baseline@k=1"][key][0] / x[key][0]
            assert speedup == pytest.approx(later["baseline@k=1"] / added)  # 8x, one clock
    for x in lines:  # the same pass timed beside threshold 0.9 only
        x["anchors"] = {"threshold@t=0.9": _times(0.1)}
    raw.write_text("".join(json.dumps(x) + "\n" for x in lines))
    for row in rows:
        row["results"]["x"] = dict(_times(added * 0.7), scale=0.7)
    with pytest.raises(SeerError, match="without the reference baseline baseline@k=1 re-run"):
        _pass_scale(raw, settings, 3, rows, "baseline@k=1")
    # a run resumed from that raw file is refused before it times any request
    from types import SimpleNamespace

    from seerbench import compare

    def never(*a, **k):
        raise AssertionError("a request ran before the refusal")

    ex = [SimpleNamespace(id=str(i)) for i in range(4)]
    base = SimpleNamespace(name="baseline@k=1", budget="k=1", oracle=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compare, "timed", never)
        mp.setattr(compare, "encode", never)
        with pytest.raises(SeerError, match="without the reference baseline"):
            compare.batch1(None, ex, [base], 128, None, 1, raw, settings, never)


def test_a_record_timed_beside_another_config_gives_its_later_pass_no_speed_up():
    """The first ρ-EOS record's later pass was timed beside threshold 0.9, not the baseline:
    its report gives those configs neither a batch-1 time nor a speed-up (—), and says why;
    the first pass's configs keep theirs."""
    from seerbench.compare_report import carried_anchor

    record = json.loads((ROOT / "docs/results/compare/rho-eos/compare-builtin.json").read_text())
    assert carried_anchor(record) == "threshold@t=0.9"
    md = markdown(record)
    rows = [x for x in md.splitlines() if x.startswith("| rho-eos@")]
    assert len(rows) == 3 and not any("×" in x for x in rows)
    assert "beside threshold@t=0.9, not beside the reference baseline" in md
    assert any(x.startswith("| seer@k=1 |") and "×" in x for x in md.splitlines())
    assert carried_anchor(dict(record, settings=dict(record["settings"], anchors=""))) is None


def test_a_carried_later_pass_is_never_the_batch1_winner():
    """A later-pass config whose batch-1 time was carried through another config is never the
    fastest at batch 1, however fast its time reads; the same record without the carry lets
    it win."""
    from seerbench.compare_report import carried_later, headline

    scores = {"base": [1.0] * 200, "sound": [1.0] * 200, "later": [1.0] * 200}
    res = _results(scores, {"base": 100.0, "sound": 50.0, "later": 10.0})
    res["later"]["later_pass"] = 100
    record = {"settings": {"anchors": "sound"}, "headline": {"reference": "base"}, "results": res}
    assert carried_later(record) == {"later"}
    h = headline(res, "base", 3.0, reps=50, untimed=carried_later(record))["b1"]
    assert h["fastest"] == "sound" and "later" not in h["passed"]
    assert "later" not in h["shares"]  # in Holm's family, never a redraw's winner
    free = headline(res, "base", 3.0, reps=50)["b1"]
    assert free["fastest"] == "later"
    # the family is the same: every config's verdict with and without the carry
    assert set(free["passed"]) - {"later"} == set(h["passed"])
    assert carried_later(dict(record, settings={"anchors": "base"})) == frozenset()
