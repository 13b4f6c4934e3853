"""benchmarks/gpu_check.py's `train` section runs on the CPU (`--device cpu --tiny`): the text
trainer's loss on the device equals the CPU's, and its steps per second are recorded."""

from __future__ import annotations

import json

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
