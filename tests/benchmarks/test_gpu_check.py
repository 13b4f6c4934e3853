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
