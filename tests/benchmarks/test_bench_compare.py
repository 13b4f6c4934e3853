"""`benchmarks/bench_compare.py`: held-out requests unique and disjoint from calibration, every
method through the one loop on the built-in text model (a small, quick run), the Pareto front,
the bootstrap interval and resuming from the raw records."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark

from seer.data import example_key, in_calibration, load_examples


@pytest.fixture(scope="module")
def bench():
    with benchmark("bench_compare") as module:
        yield module


@pytest.mark.parametrize(
    "source,n", [("builtin", 16), ("builtin-v1", 48), ("builtin-vqa", 32), ("builtin-vqa2", 8)]
)
def test_held_out_requests_are_unique_and_disjoint_from_calibration(bench, source, n):
    examples = bench.held_out(source, n, 0)
    keys = {example_key(e) for e in examples}
    assert len(keys) == len(examples) == n
    calib = {example_key(e) for e in load_examples(source, n=n, part="calib")}
    assert not keys & calib
    assert not any(in_calibration(e) for e in examples)


def test_pareto_front_and_bootstrap(bench):
    pts = [(10.0, 0.5, "a"), (5.0, 0.5, "b"), (20.0, 0.6, "c"), (6.0, 0.4, "d")]
    assert bench.pareto(pts) == {"b", "c"}
    lo, hi = bench.bootstrap([True] * 6 + [False] * 4)
    assert 0.2 <= lo < 0.6 < hi <= 0.95
    assert bench.bootstrap([True] * 5) == (1.0, 1.0)


def _few_calibration_answers(tmp_path, n: int = 4):
    """builtin-v1 copied with a seer.json whose calibration side is `n` requests: static+guard's
    window comes from that many baseline answers (the published run reads 150)."""
    import json
    import shutil

    from seer.models.loader import builtin_path

    model = tmp_path / "builtin-v1"
    shutil.copytree(builtin_path("builtin-v1"), model)
    meta = json.loads((model / "seer.json").read_text())
    meta.setdefault("calibration", {})["n_calibration"] = n
    (model / "seer.json").write_text(json.dumps(meta))
    return model


def test_a_quick_run_and_its_resume(bench, tmp_path):
    raw = tmp_path / "raw.jsonl"
    model = _few_calibration_answers(tmp_path)
    argv = [
        "--model",
        str(model),
        "--data",
        "builtin-v1",
        "--n",
        "3",
        "--repeats",
        "2",
        "--budgets",
        "8",
        "--quick",
        "--no-engine",
        "--raw",
        str(raw),
        "--plot",
        str(tmp_path / "p.png"),
    ]
    rec = bench.main(argv)
    res = rec["results"]
    assert set(res) == {
        "baseline@k=8",
        "seer@k=8",
        "stop@k=8",
        "oracle@k=8",
        "static+guard@k=8",
        "threshold@t=0.9",
        "seer+threshold@t=0.9",
    }
    for r in res.values():
        lo, hi = r["ci95"]
        assert lo <= r["accuracy"] <= hi and r["nfe"] > 0 and r["loop_ms"] > 0
    assert res["baseline@k=8"]["nfe"] == 8 and res["baseline@k=8"]["mean_window"] == 64
    assert res["seer@k=8"]["mean_window"] < 64  # Seer cut the windows
    assert res["oracle@k=8"]["window_cuts"] == 0
    assert rec["static"]["window"] < 64  # one window for every request, from the calibration part
    assert any(r["pareto_b1"] for r in res.values())
    assert (tmp_path / "p.png").stat().st_size > 10_000
    md = bench.markdown(rec)  # the README's tables: one grid row per method, one row per config
    assert all(f"| {m} | " in md for m in ("baseline", "seer", "stop", "oracle"))
    assert all(f"| {name} | " in md for name in res)
    # the plan first (written before the first request), then one line per request
    plan, *lines = [json.loads(x) for x in raw.read_text().splitlines()]
    assert plan["preregistered"]["margin"] == 3.0 and plan["preregistered"]["requests_done"] == 0
    assert plan["preregistered"]["primary"] == ["seer+threshold@t=0.9", "threshold@t=0.9"]
    assert "Holm" in plan["preregistered"]["selection"]
    assert len(lines) == 3 and all(x["request"] in (0, 1, 2) for x in lines)
    assert rec["preregistered"] == plan["preregistered"] and rec["post_hoc"] is False
    assert rec["primary"]["treatment"] == "seer+threshold@t=0.9"
    assert "pre-registered: the margin" in md and "Primary comparison (pre-registered)" in md
    again = bench.main(argv)  # resumes: every request is read back, nothing is run or appended
    assert len(raw.read_text().splitlines()) == 4
    assert again["results"]["seer@k=8"]["accuracy"] == res["seer@k=8"]["accuracy"]
    # the same run reported at another margin keeps its first plan: the tables say post hoc
    wide = bench.main(argv + ["--margin", "5"])
    assert len(raw.read_text().splitlines()) == 4
    assert wide["post_hoc"] is True and wide["preregistered"]["margin"] == 3.0
    assert bench.markdown(wide).startswith("**Post hoc** (post hoc: margin 5 points, not the ")
    assert "Post hoc" not in md


def test_a_raw_file_is_not_resumed_with_other_weights(bench, tmp_path):
    """A new release of a model keeps its name: the raw records of the old weights are not
    taken as the new ones' answers; the run starts over beside them."""
    import shutil

    from safetensors.torch import load_file, save_file

    from seer.models.loader import builtin_path

    model, raw = tmp_path / "m", tmp_path / "raw.jsonl"
    shutil.copytree(builtin_path("builtin-v1"), model)
    argv = [
        "--model",
        str(model),
        "--data",
        "builtin-v1",
        "--n",
        "1",
        "--repeats",
        "1",
        "--budgets",
        "8",
        "--quick",
        "--no-static",
        "--no-engine",
        "--raw",
        str(raw),
        "--plot",
        str(tmp_path / "p.png"),
    ]
    bench.main(argv)
    state = load_file(model / "model.safetensors")
    name = next(iter(state))
    state[name] = state[name] * 1.01
    save_file(state, model / "model.safetensors", metadata={"format": "pt"})
    bench.main(argv)
    lines = [json.loads(x) for x in raw.read_text().splitlines() if '"request"' in x]
    assert (
        len(lines) == 2
        and lines[0]["settings"]["weights_sha256"] != lines[1]["settings"]["weights_sha256"]
    )


def test_a_config_added_later_runs_alone_beside_the_anchors(bench, tmp_path, monkeypatch):
    """Resume per config: a method added after a finished run (DAEDAL, say) is run on the
    recorded requests beside the reference baseline only; its batch-1 times are put on the
    first pass's scale by that baseline's ratio (its speed-up over the baseline is its time over
    the baseline's in that pass); at batch 32 it is timed in a pass of its own, kept as
    measured, with no speed-up over the first pass's configs; its tokens equal a run that had
    it from the start."""
    raw = tmp_path / "raw.jsonl"
    argv = [
        "--model",
        "builtin-v1",
        "--n",
        "2",
        "--repeats",
        "1",
        "--budgets",
        "8",
        "--quick",
        "--no-static",
        "--engine-n",
        "1",
        "--raw",
        str(raw),
    ]
    full = bench.build_configs
    added = "seer+threshold@t=0.9"
    monkeypatch.setattr(
        bench, "build_configs", lambda *a, **k: [c for c in full(*a, **k) if c.name != added]
    )
    first = bench.main(argv)
    assert added not in first["results"]
    monkeypatch.setattr(bench, "build_configs", full)
    again = bench.main(argv)
    lines = [json.loads(x) for x in raw.read_text().splitlines()]
    supp = [x for x in lines if "added" in x]
    assert [x["request"] for x in supp] == [0, 1] and all(x["added"] == [added] for x in supp)
    assert all(set(x["anchors"]) == {"baseline@k=8"} for x in supp)  # --quick: one baseline
    for x in supp:
        r = x["results"][added]
        assert r["seconds"] == pytest.approx(r["seconds_measured"] * x["scale"])
    # the summary puts the pass on the first pass's scale, each clock by the anchors' ratio on
    # that clock over the pass's requests (CPU time by a CPU-time ratio, not a wall one)
    firsts = {x["request"]: x for x in lines if "results" in x and "added" not in x}
    base = "baseline@k=8"
    for clock, key in (("loop_wall", "seconds_repeats"), ("e2e_cpu", "call_cpu_repeats")):
        old = sum(firsts[x["request"]]["results"][base][key][0] for x in supp)
        new = sum(x["anchors"][base][key][0] for x in supp)
        got = [x["results"][added][key][0] / x["scale"] * old / new for x in supp]
        if clock == "e2e_cpu":  # the clock adds the prompt's encoding (first pass)
            got = [
                t + firsts[x["request"]]["prompt_cpu_seconds"]
                for t, x in zip(got, supp, strict=True)
            ]
        assert again["results"][added]["b1"][clock] == pytest.approx(1000 * sum(got) / len(got))
        # its speed-up over the baseline is its time over the baseline's in the later pass
        mine = sum(x["results"][added][key][0] / x["scale"] for x in supp)
        speedup = again["results"][base]["b1"][clock] / again["results"][added]["b1"][clock]
        if clock == "loop_wall":  # the end-to-end clock adds the first pass's prompt encoding
            assert speedup == pytest.approx(new / mine)
    eng = [x for x in lines if x.get("engine") == added]
    assert len(eng) == 1 and eng[0]["later_pass"] is True and len(eng[0]["correct"]) == 1
    assert "scale" not in eng[0] and "wall_measured" not in eng[0]
    later = [x for x in lines if "engine_round" in x and x["pass"] == [added]]
    assert [x["engine_round"] for x in later] == [added]  # no anchor re-run: nothing to scale
    res = again["results"]
    assert res[added]["later_pass"] == 2 and res[added]["b32_n"] == 1
    assert res[added]["b32_later_pass"] and "b32_speedup_vs_ref" not in res[added]
    assert res[added]["b32"]["e2e_cpu"] == pytest.approx(1000 * later[0]["cpu"])  # as measured
    assert "b32_speedup" not in res[added].get("seer_adds", {})
    assert "b32_speedup_vs_ref" in res["seer@k=8"]  # the first pass's configs keep theirs
    assert res["seer@k=8"]["later_pass"] == 0 and res["seer@k=8"]["loop_ms"] == pytest.approx(
        first["results"]["seer@k=8"]["loop_ms"]
    )
    fresh = bench.main([*argv[:-1], str(tmp_path / "fresh.jsonl"), "--no-engine"])
    assert fresh["results"][added]["accuracy"] == res[added]["accuracy"]
    assert fresh["results"][added]["nfe"] == res[added]["nfe"]
    lo, hi = res[added]["ci95_minus_ref"]
    assert lo <= res[added]["accuracy_minus_ref"] <= hi


def test_a_quick_run_extended_with_add_runs_only_the_added_config(bench, tmp_path, capsys):
    """`--add` takes configs out of the full set (a block method at one block size, say) into a
    quick run; on a finished run's raw file it runs only them, beside the anchors."""
    raw = tmp_path / "raw.jsonl"
    argv = [
        "--model",
        "builtin-v1",
        "--n",
        "1",
        "--repeats",
        "1",
        "--budgets",
        "8",
        "--quick",
        "--no-static",
        "--no-engine",
        "--raw",
        str(raw),
    ]
    bench.main(argv)
    added = "dual/b16@k=8"
    rec = bench.main([*argv, "--add", added, "--anchors", "baseline@k=8"])
    assert rec["results"][added]["later_pass"] == 1  # its one request, in a later pass
    lines = [json.loads(x) for x in raw.read_text().splitlines() if '"request"' in x]
    assert len(lines) == 2 and lines[1]["added"] == [added]
    assert set(lines[1]["anchors"]) == {"baseline@k=8"}
    with pytest.raises(SystemExit):  # a later pass is never anchored on another config
        bench.main([*argv, "--add", added, "--anchors", "threshold@t=0.9"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith(
        "--anchors: a later pass is timed beside the reference baseline baseline@k=8 re-run, "
        "never through another config: threshold@t=0.9 cannot anchor it"
    )
    with pytest.raises(SystemExit):
        bench.main([*argv, "--add", "dual/b7@k=8"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--add: no config named dual/b7@k=8" in err


def test_a_parallelbench_source_runs_its_chats_and_scores_with_seer_data_score(
    bench, tmp_path, monkeypatch
):
    from pathlib import Path

    import seer.data

    root = Path(__file__).parents[1] / "fixtures" / "parallelbench"
    examples = bench.held_out(f"parallelbench:{root}/waiting_line", 2, 0)
    assert all(e.metric for e in examples) and any(len(e.messages) > 1 for e in examples)
    monkeypatch.setattr(seer.data, "score", lambda ex, text: float(ex.id == examples[0].id))
    argv = [
        "--model",
        "builtin-v1",
        "--data",
        f"parallelbench:{root}/waiting_line",
        "--n",
        "2",
        "--repeats",
        "1",
        "--budgets",
        "8",
        "--quick",
        "--no-static",
        "--engine-n",
        "2",
        "--raw",
        str(tmp_path / "raw.jsonl"),
    ]
    res = bench.main(argv + ["--out", str(tmp_path / "out")])["results"]
    assert res["baseline@k=8"]["accuracy"] == 0.5 and res["baseline@k=8"]["b32_accuracy"] == 0.5
    # the run on other data keeps its own files: the model's own comparison is not overwritten
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    tag = "builtin-v1-parallelbench-waiting_line"
    assert names == [f"compare-{tag}.json", f"compare-{tag}.md", f"compare-{tag}.png"]


def test_an_unscorable_source_is_refused_in_one_line(bench, tmp_path):
    from seer.errors import SeerError

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"add {i} and 2"}) + "\n" for i in range(8)))
    with pytest.raises(SeerError, match=r"every request must be scorable; \d+: no reference"):
        bench.held_out(str(data), 2, 0)


def test_a_run_stopped_in_its_engine_rounds_resumes_at_the_next_round(bench, tmp_path, monkeypatch):
    """Each engine round is written as it ends: a run stopped in its third timed round runs
    only the rounds left, and its records are those the rounds recorded."""
    from seer.engine import Engine

    raw = tmp_path / "raw.jsonl"
    argv = [
        "--model",
        "builtin-v1",
        "--n",
        "3",
        "--repeats",
        "2",
        "--budgets",
        "8",
        "--quick",
        "--no-static",
        "--engine-n",
        "3",
        "--raw",
        str(raw),
    ]
    timed, real = [], Engine.generate

    class Stop(Exception):
        pass

    def generate(self, requests, *a, **k):
        if len(requests) == 3:  # a timed round (the warm-up runs two requests)
            timed.append(1)
            if len(timed) == 3 and stop:
                raise Stop
        return real(self, requests, *a, **k)

    monkeypatch.setattr(Engine, "generate", generate)
    stop = True
    with pytest.raises(Stop):
        bench.main(argv)
    rounds = [x for x in map(json.loads, raw.read_text().splitlines()) if "engine_round" in x]
    assert len(rounds) == 2 and all("result" in x for x in rounds)  # the third never ended
    stop, timed[:] = False, []
    rec = bench.main(argv)
    configs = [c for c in rec["results"].values() if c.get("b32_n")]
    assert len(timed) == 2 * len(configs) - 2  # the two finished rounds are not run again
    lines = [json.loads(x) for x in raw.read_text().splitlines()]
    first = {x["engine_round"]: x for x in lines if x.get("round") == 0}
    for x in (x for x in lines if "engine" in x):
        assert x["correct"] == first[x["engine"]]["result"]["correct"]
        walls = [y["wall"] for y in lines if y.get("engine_round") == x["engine"]]
        assert x["wall_repeats"] == walls and len(walls) == 2
    # the rounds' order rotates: round 1 is not round 0's order, and each line says its plan
    ran = [[y["engine_round"] for y in lines if y.get("round") == k] for k in (0, 1)]
    assert ran[0] != ran[1] and sorted(ran[0]) == sorted(ran[1])
    assert all(y["order"] == ran[y["round"]] for y in lines if "engine_round" in y)
    assert all(x["round_orders"] == ran for x in lines if "engine" in x)


def test_the_defaults_are_the_full_comparison(bench, capsys):
    """The defaults run the full comparison (100 requests, every budget, method and block size,
    3 repeats, batch 32 over every request); `--engine-n N` takes a seeded sample of N."""
    args = bench.parser().parse_args([])
    assert (args.n, args.repeats, args.engine_n, args.budgets) == (100, 3, None, "1,2,4,8")
    assert not args.quick and args.dpad and args.daedal is None and args.static
    assert bench.parser().parse_args(["--engine-n", "ALL"]).engine_n is None
    assert bench.parser().parse_args(["--engine-n", "32"]).engine_n == 32
    for bad in ("0", "abc"):
        with pytest.raises(SystemExit):
            bench.parser().parse_args(["--engine-n", bad])
    assert "a positive integer or all, got 'abc'" in capsys.readouterr().err


def test_the_plot_is_relative_to_the_baseline():
    """Each point: the speed-up over the one-token-per-step baseline and the accuracy difference
    to it, batch 1 over every request and batch 32 over its sample."""
    from seerbench.compare_report import _relative

    ref = {"b1_ms": 100.0, "accuracy": 0.20, "b32_ms": 80.0, "b32_accuracy": 0.25}
    r = {"b1_ms": 25.0, "accuracy": 0.17, "b32_ms": 10.0, "b32_accuracy": 0.25}
    speed, delta = _relative(r, ref, "b1_ms")
    assert speed == 4.0 and delta == pytest.approx(-3.0)
    assert _relative(r, ref, "b32_ms") == (8.0, 0.0)


def test_the_plot_needs_the_baseline_it_is_relative_to(tmp_path):
    """A record without its headline's reference is one clear error, not a plot of differences
    to some other config."""
    from seer.errors import SeerError
    from seerbench.compare_report import plot

    seer = {"method": "seer", "budget": "k=1", "b1_ms": 10.0, "accuracy": 0.5}
    for headline in ({}, {"reference": "baseline@k=1"}):  # none, or one the results lack
        record = {"clock": "e2e_cpu", "results": {"seer@k=1": seer}, "headline": headline}
        with pytest.raises(SeerError, match="no baseline reference"):
            plot(record, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_a_batch1_only_plot_is_one_panel_with_room_for_its_legend(tmp_path):
    """No batch-32 pass: one panel, no empty second one; the legend (a row per six methods)
    gets its own band under the axes, so many methods never cover the axis."""
    import matplotlib.image as mpimg

    from seerbench.compare_report import plot

    def row(method, ms, acc):
        return dict(
            method=method,
            budget="k=1",
            b1_ms=ms,
            accuracy=acc,
            pareto_b1=False,
            ci95_minus_baseline=[-0.05, 0.05],
        )

    res = {f"m{i}@k=1": row(f"m{i}", 100.0 / (i + 2), 0.5) for i in range(60)}
    res["baseline@k=1"] = row("baseline", 100.0, 0.5)
    record = dict(
        model="builtin",
        n=10,
        gen_length=128,
        clock="e2e_cpu",
        results=res,
        headline={"reference": "baseline@k=1"},
    )
    few = dict(record, results={k: res[k] for k in ("baseline@k=1", "m0@k=1")})
    plot(record, tmp_path / "many.png")
    plot(few, tmp_path / "few.png")
    many, one = mpimg.imread(tmp_path / "many.png"), mpimg.imread(tmp_path / "few.png")
    assert many.shape[1] == one.shape[1] == 11 * 110  # one panel, 11 inches at 110 dpi
    assert many.shape[0] - one.shape[0] == round(110 * 0.17 * 10)  # 61 methods: 10 more rows


def test_a_batch32_pass_split_over_two_processes_keeps_each_on_its_own_clock(bench, tmp_path):
    """The batch-32 pass run as two processes side by side (other `--skip`, a copy of the raw
    file each, the second's new lines joined after): each config's batch-32 time is as its own
    process measured it, and no batch-32 speed-up is given between the two processes (not
    scaled by the baselines both timed): the report prints the second's times marked ‡ and a
    dash for their ratios."""
    from seerbench.compare_report import markdown

    raw, raw2 = tmp_path / "raw.jsonl", tmp_path / "raw2.jsonl"
    argv = [
        "--model",
        "builtin-v1",
        "--n",
        "2",
        "--repeats",
        "1",
        "--budgets",
        "8",
        "--quick",
        "--no-static",
        "--engine-n",
        "2",
    ]
    bench.main([*argv, "--raw", str(raw), "--no-engine"])  # batch 1 for every config
    raw2.write_text(raw.read_text())
    kept = len(raw2.read_text().splitlines())
    moved = "seer+threshold@t=0.9"
    bench.main([*argv, "--raw", str(raw), "--skip", "seer+threshold"])
    bench.main([*argv, "--raw", str(raw2), "--skip", "seer,oracle,threshold"])
    with raw.open("a") as f:
        f.writelines(x + "\n" for x in raw2.read_text().splitlines()[kept:])
    lines = [json.loads(x) for x in raw.read_text().splitlines()]
    rounds = {(tuple(x["pass"]), x["engine_round"]): x for x in lines if "engine_round" in x}
    (home,) = {p for p, name in rounds if name == "seer@k=8"}
    (other,) = {p for p, name in rounds if name == moved}
    base = "baseline@k=8"
    record = bench.main([*argv, "--raw", str(raw)])
    res = record["results"]
    for clock, key in (("e2e_cpu", "cpu"), ("e2e_wall", "wall")):
        assert res[moved]["b32"][clock] == pytest.approx(1000 * rounds[(other, moved)][key] / 2)
    assert res[moved]["b32_other_process"] and "b32_part_scale" not in res[moved]
    assert "b32_speedup_vs_ref" not in res[moved]
    assert "b32_speedup" not in res[moved]["seer_adds"]  # threshold was timed by the first
    # the first part's configs and the baseline are as the first process timed them
    for name in ("seer@k=8", base):
        want = 1000 * rounds[(home, name)]["cpu"] / 2
        assert res[name]["b32"]["e2e_cpu"] == pytest.approx(want)
        assert not res[name]["b32_other_process"]
    assert res["seer@k=8"]["b32_speedup_vs_ref"] == pytest.approx(
        rounds[(home, base)]["cpu"] / rounds[(home, "seer@k=8")]["cpu"]
    )
    row = next(x for x in markdown(record).splitlines() if x.startswith(f"| {moved}²"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[15].endswith("‡") and cells[16] == cells[18] == "—"
    assert "scaled" not in markdown(record)
