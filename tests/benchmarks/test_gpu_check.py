"""benchmarks/gpu_check.py's `train` section runs on the CPU (`--device cpu --tiny`): the text
trainer's loss on the device equals the CPU's, and its steps per second are recorded."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark


def test_the_train_section_runs_and_matches_the_cpu_loss(tmp_path, capsys):
    with benchmark("gpu_check") as gpu_check:
        argv = ["--device", "cpu", "--tiny", "--only", "train", "--out", str(tmp_path)]
        code = gpu_check.main(argv)
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    train = record["sections"]["train"]
    assert code == 0 and train["ok"] is True
    assert train["loss_cpu"] == train["loss_device"] > 0
    assert train["steps_per_s"]["4"] > 0


def test_the_project_section_times_forwards_against_the_roofline(tmp_path, capsys):
    with benchmark("gpu_check") as gpu_check:
        argv = ["--device", "cpu", "--tiny", "--only", "project", "--out", str(tmp_path)]
        code = gpu_check.main(argv)
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows = record["sections"]["project"]["results"]
    assert code == 0 and len(rows) == 4
    assert all(r["measured_ms"] > 0 and r["projected_ms"] > 0 for r in rows)


def test_every_timed_row_has_the_simulators_prediction_beside_it(tmp_path, capsys):
    with benchmark("gpu_check") as gpu_check:
        argv = ["--device", "cpu", "--tiny", "--only", "graphs", "project", "--out", str(tmp_path)]
        code = gpu_check.main(argv)
    out = capsys.readouterr().out
    sections = json.loads(out.strip().splitlines()[-1])["sections"]
    assert code == 0
    graphs = sections["graphs"]
    assert graphs["predicted_graphs_seconds"] > 0 and graphs["predicted_eager_seconds"] > 0
    # a graph replay starts a forward for less than the host's launches
    assert graphs["predicted_speedup"] > 1
    assert all(r["predicted_ms"] > 0 for r in sections["project"]["results"])
    assert "predicted for an H100" in out  # a CPU is priced as an H100, and says so


def test_the_compare_sections_rows_are_predicted_from_their_measured_windows_and_nfe():
    with benchmark("gpu_check") as gpu_check:
        raw = gpu_check.ROOT / "docs" / "results" / "compare" / "shipped" / "raw-builtin.jsonl"
        ms = gpu_check.compare_predictions(type("A", (), {"device": "cpu"})(), raw, 128)
    assert ms["seer@k=1"] < ms["baseline@k=1"] / 3  # a quarter of the forwards, a quarter the time
    assert "dual+threshold/b64@t=0.9" not in ms  # cache layouts are not priced per request


def test_the_merge_section_serves_both_traces_off_and_on_with_predictions_beside(tmp_path, capsys):
    """On a CPU auto is off, so the section names the profile it predicts for (h100) as the
    'on' setting and says so; every case is timed and predicted under both settings, and the
    named profile merges bucket groups in some case (fewer forwards)."""
    with benchmark("gpu_check") as gpu_check:
        argv = ["--device", "cpu", "--tiny", "--only", "merge", "--out", str(tmp_path)]
        code = gpu_check.main(argv)
    out = capsys.readouterr().out
    merge = json.loads(out.strip().splitlines()[-1])["sections"]["merge"]
    assert code == 0 and merge["ok"] is True
    assert merge["merge_on"] == "h100" and merge["confirmed"] is None
    assert "auto is off on cpu: h100 named instead" in out
    rows = {(r["case"], r["merge_on"]): r for r in merge["results"]}
    assert set(rows) == {(c, m) for c in ("uniform/c=8", "mixed/c=8") for m in ("none", "h100")}
    assert all(r["measured_seconds"] > 0 and r["predicted_seconds"] > 0 for r in rows.values())
    assert any(rows[c, "h100"]["forwards"] < rows[c, "none"]["forwards"] for c, _ in rows)
    assert "measured (CPU clock)" in out and "predicted (h100)" in out
    # each setting timed twice (off, on, on, off), its means set against off's, the wall too
    assert all(len(r["passes"]) == 2 for r in rows.values())
    for c, _ in rows:
        on, off = rows[c, "h100"], rows[c, "none"]
        walls = [p["serve_seconds"] for p in on["passes"]]
        assert on["serve_seconds"] == pytest.approx(sum(walls) / 2)
        assert on["wall_over_off"] == pytest.approx(on["serve_seconds"] / off["serve_seconds"])
    assert "stated before the first request" in out and "off, h100, h100, off" in merge["rule"]


def test_the_merge_section_stops_starting_cases_past_the_budget(capsys):
    import argparse

    with benchmark("gpu_check") as gpu_check:
        args = argparse.Namespace(device="cpu", tiny=True, deadline=0.0)
        merge = gpu_check.check_merge(args, None)
    out = capsys.readouterr().out
    assert merge["results"] == [] and merge["confirmed"] is None
    assert out.count("skipped: over the budget") == 2


def test_the_forward_clock_counts_a_graph_replay_as_one_forward_and_not_its_capture():
    """The GPU-only path, on a CPU: a replay through the graph cache is one forward with its
    shape and span; the model calls the capture makes (here: the stand-in's) are not counted,
    and closing the clock restores the cache."""
    import torch

    import seer
    from seer.diffusion.graphs import GraphCache

    lm, original = seer.load("builtin"), GraphCache.__call__
    with benchmark("gpu_check") as gpu_check:
        clock = gpu_check.ForwardClock(lm, "cpu")
        x = torch.zeros(3, 20, dtype=torch.long)

        def capture_and_replay(graphs, *a):
            lm.model(x)  # a capture's model call
            return "logits"

        clock._call = capture_and_replay
        try:
            got = GraphCache(lm.model)(x, None, None, slice(4, 12))
            lm.model(x[:1])  # an ordinary forward
        finally:
            clock.close()
    assert got == "logits"
    assert clock.fwd == [(3, 20, 8), (1, 20, 20)] and len(clock.spans) == 2
    assert GraphCache.__call__ is original


def test_the_bf16_section_replays_every_llada_golden_in_float32(tmp_path):
    """Every case of the three LLaDA golden files (the recorded steps > gen_length ones too) runs
    and matches the official tokens in float32; bfloat16 is reported beside it."""
    import argparse

    with benchmark("gpu_check") as gpu_check:
        res = gpu_check.check_bf16(argparse.Namespace(device="cpu", tiny=False), tmp_path)
    assert res["ok"] is True, res
    assert res["float32"]["token_exact"] == res["float32"]["cases"] > 40
