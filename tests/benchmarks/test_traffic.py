"""The mixed-traffic serving benchmark (`bench_serving.py --trace`): its traces and verdicts."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

from conftest import benchmark

from seerbench.traffic import LENGTHS, deterministic, trace


def examples(n: int):
    return [SimpleNamespace(prompt=f"question {i}", image=None) for i in range(n)]


def test_the_mixed_trace_varies_every_per_request_option_and_uniform_none():
    mixed, uniform = (trace(examples(200), kind, "builtin", 0) for kind in ("mixed", "uniform"))
    temps = Counter(b["temperature"] for b in mixed)
    assert set(temps) == {0.0, 0.7, 1.0} and min(temps.values()) > 40
    assert 70 < sum("seed" in b for b in mixed) < 130  # about half seeded
    assert {b["max_tokens"] for b in mixed} == set(LENGTHS)
    assert 25 < sum(b.get("seer") is False for b in mixed) < 75  # Seer on for most
    assert 25 < sum("threshold" in b for b in mixed) < 75
    assert all(b["steps"] == b["max_tokens"] // 2 for b in mixed)
    assert (
        len({tuple(sorted((k, str(v)) for k, v in b.items() if k != "messages")) for b in uniform})
        == 1
    )
    assert trace(examples(200), "mixed", "builtin", 0) == mixed  # seeded: the same trace
    assert [deterministic(b) for b in mixed] == [
        b["temperature"] == 0 or "seed" in b for b in mixed
    ]


def test_verdicts_compare_mixed_with_uniform_and_the_old_grouping():
    def row(grouping, traffic, c, rpf, steps):
        return {
            "model": "m",
            "grouping": grouping,
            "traffic": traffic,
            "concurrency": c,
            "rows_per_forward": rpf,
            "row_steps_per_s": steps,
            "tokens_per_s": steps,
        }

    rows = [
        row("layout", "uniform", 1, 1, 10),
        row("layout", "mixed", 1, 1, 5),
        row("layout", "uniform", 8, 4, 20),
        row("layout", "mixed", 8, 3.8, 9),
        row("params", "mixed", 8, 1, 6),
        row("apart", "mixed", 8, 3.04, 8),
    ]
    with benchmark("bench_serving") as bench:
        v = bench.trace_verdicts(rows)["m/layout/c8"]
    assert v["mixed_over_uniform_rows_per_forward"] == 3.8 / 4
    assert v["mixed_over_uniform_speedup"] == (9 / 5) / (20 / 10)  # 0.9: meets, just
    assert v["meets"] and v["mixed_layout_over_params_rows_per_forward"] == 3.8
    assert v["mixed_layout_over_apart_rows_per_forward"] == 3.8 / 3.04


def test_ticks_count_every_row_step_and_joined_arrivals_save_forwards(capsys):
    """`bench_trace_ticks.py` on a few mixed requests: its forwards hold every row-step, the
    bound is row-steps per tick, arrivals that join save forwards without adding any (Seer
    arrivals too, under layout), the steady ticks lie between the start and the tail, and
    every forward is priced on the GPU (predicted), the target stated first."""
    argv = ["--models", "builtin", "--n", "6", "--concurrency", "3", "--time", "1"]
    with benchmark("bench_trace_ticks") as ticks:
        ticks.main([*argv, "--groupings", "apart", "policy-apart", "layout"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("target (stated before the first request)")
    record = json.loads(lines[-1])
    err = record["prediction_error"]  # the simulator's score, its label read from it
    assert record["margin"] == 0.9 and ("met" if err <= 0.3 else "missed") in lines[0]
    got = {(r["grouping"], r["traffic"]): r for r in record["results"]}
    for r in got.values():
        assert r["forwards"] >= r["ticks"] and r["bound"] == r["row_steps"] / r["ticks"]
        assert r["rows_per_forward"] == r["row_steps"] / r["forwards"]
        assert r["model_rows_per_forward"] <= r["rows_per_forward"]  # varlen packs rows
        assert len(r["walls"]) == 1 and r["wall_over_first"] > 0
        if r["grouping"] == "apart":  # the first grouping: the timings' reference
            assert r["wall_over_first"] == 1.0
        assert 0 < r["steady_ticks"] < r["ticks"] and r["steady_rows_per_forward"] <= 3
        assert r["predicted_seconds"] > 0
        assert r["predicted_row_steps_per_s"] == r["row_steps"] / r["predicted_seconds"]
        assert r["per_tick"].count("x") == r["forwards"]  # every forward with its shape
    apart, before, layout = (got[g, "mixed"] for g in ("apart", "policy-apart", "layout"))
    assert layout["row_steps"] == before["row_steps"] == apart["row_steps"]  # the same work
    assert layout["forwards"] < before["forwards"] < apart["forwards"]  # in fewer forwards
    assert layout["step0_apart"] == 0 < before["step0_apart"]  # Seer's step 0 joins too


def test_waste_verdicts_pass_only_when_every_trace_is_cheaper_and_no_case_rises():
    """`bench_trace_ticks.waste_verdicts`: the second basis passes when its predicted seconds
    summed over concurrencies are lower per traffic and no case rises past the noise."""

    def row(waste, traffic, c, seconds):
        return _case(traffic, c, seconds, waste=waste)

    base = [row("window", t, c, 10.0) for t in ("uniform", "mixed") for c in (8, 64)]
    with benchmark("bench_trace_ticks") as ticks:
        good = [*base, *(row("computed", t, c, 9.0) for t in ("uniform", "mixed") for c in (8, 64))]
        v = ticks.waste_verdicts(good, ["window", "computed"])["m/layout/computed"]
        assert v["passes"] and v["worst_case_over_first"] == 0.9
        rises = [*good[:-1], row("computed", "mixed", 64, 10.5)]  # lower sum, one case +5 %
        v = ticks.waste_verdicts(rises, ["window", "computed"])["m/layout/computed"]
        assert v["sums"]["mixed"]["predicted_seconds"] < 20 and not v["passes"]
        assert v["cases"]["mixed/c64"]["predicted_seconds_over_first"] == 1.05


def _case(traffic, c, seconds, merge="none", positions=1000.0, row_steps=100, waste="window"):
    return dict(
        model="m",
        grouping="layout",
        waste=waste,
        merge_on=merge,
        traffic=traffic,
        concurrency=c,
        predicted_seconds=seconds,
        rows_per_forward=2.0,
        forwards=10,
        computed_positions=positions,
        row_steps=row_steps,
    )


def test_merge_verdicts_fail_when_any_case_rises_past_the_noise():
    """`bench_trace_ticks.merge_verdicts`: merge_on passes only if no case's predicted seconds
    rise by more than the noise (a lower sum does not excuse one case up 5 %)."""
    base = [_case(t, c, 10.0) for t in ("uniform", "mixed") for c in (8, 64)]
    merged = [_case(t, c, 9.0, "h100:llada-8b") for t in ("uniform", "mixed") for c in (8, 64)]
    with benchmark("bench_trace_ticks") as ticks:
        v = ticks.merge_verdicts([*base, *merged], ["none", "h100:llada-8b"])
        assert list(v) == ["m/layout/window/h100:llada-8b"]
        assert v["m/layout/window/h100:llada-8b"]["passes"]
        rises = [*base, *merged[:-1], _case("mixed", 64, 10.5, "h100:llada-8b")]
        v = ticks.merge_verdicts(rises, ["none", "h100:llada-8b"])["m/layout/window/h100:llada-8b"]
        assert not v["passes"] and v["worst_case_over_first"] == 1.05
        edge = [*base, *merged[:-1], _case("mixed", 64, 10.05, "h100:llada-8b")]  # within noise
        assert ticks.merge_verdicts(edge, ["none", "h100:llada-8b"])[
            "m/layout/window/h100:llada-8b"
        ]["passes"]


def test_the_predicted_ratio_splits_into_work_and_rate():
    """Mixed rows compute 1.5x the positions per row-step (work 2/3) in forwards that run
    1.2x the positions per second (rate 1.2): the predicted ratio is their product, 0.8."""
    uniform = {**_case("uniform", 8, 10.0), "rows_per_forward": 2.0, "bound": 2.0}
    mixed = {**_case("mixed", 8, 12.5, positions=1500.0), "rows_per_forward": 2.0, "bound": 2.0}
    for r in (uniform, mixed):
        r["steady_rows_per_forward"] = None
        r["predicted_row_steps_per_s"] = r["row_steps"] / r["predicted_seconds"]
        r["predicted_tokens_per_s"] = 1.0
    with benchmark("bench_trace_ticks") as ticks:
        v = ticks.ratios([uniform, mixed])["m/layout/window/c8"]
    assert abs(v["work_factor"] - 2 / 3) < 1e-12 and abs(v["rate_factor"] - 1.2) < 1e-12
    ratio = v["predicted_mixed_over_uniform_row_steps_per_s"]
    assert abs(ratio - 0.8) < 1e-12 and abs(ratio - v["work_factor"] * v["rate_factor"]) < 1e-12
