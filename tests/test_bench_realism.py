"""benchmarks/bench_realism.py: each config's settings, a run on the fake ParallelBench checkout."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark

FAKE = "parallelbench:tests/fixtures/parallelbench/waiting_line"


@pytest.fixture(scope="module")
def bench():
    with benchmark("bench_realism") as module:
        yield module


def test_configs_set_the_sampling(bench):
    assert bench.settings("k=4", 128) == ({"steps": 32}, False)
    assert bench.settings("thr0.7", 128) == ({"threshold": 0.7}, False)
    assert bench.settings("seer", 128) == ({}, True)
    with pytest.raises(SystemExit, match="unknown config"):
        bench.settings("k8", 128)


def test_a_run_scores_every_request_per_family(bench, capsys):
    bench.main(["--model", "builtin-v1", "--data", FAKE, "--configs", "k=1,k=8", "--window", "16"])
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    total = record["configs"]["k=1"]["ALL"]["n"]
    assert total == sum(v["n"] for f, v in record["configs"]["k=1"].items() if f != "ALL") > 0
    assert record["configs"]["k=8"]["ALL"]["changed"] <= total
    assert 0 < record["lengths"]["median"] <= record["lengths"]["max"] <= 1
