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


def test_a_raw_file_is_reported_and_plotted_again_beside_the_closed_forms(bench, capsys, tmp_path):
    raw, png = tmp_path / "raw.jsonl", tmp_path / "k.png"
    args = ["--model", "builtin-v1", "--data", FAKE, "--configs", "k=1,k=2", "--window", "16"]
    bench.main([*args, "--raw", str(raw)])
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    bench.main([*args, "--from-raw", str(raw), "--plot", str(png)])
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["configs"] == first["configs"] and png.stat().st_size > 0
    closed = again["closed_form"]
    assert closed["waiting_line/copy"] == {"k=1": 1.0, "k=2": 1.0}  # a perfect model copies
    shuffle = closed["waiting_line/shuffle"]
    assert shuffle["k=2"] < shuffle["k=1"] <= 1.0
    with pytest.raises(SystemExit, match="other requests"):
        bench.main([*args, "--from-raw", str(raw), "--n", "2"])


def test_list_sizes_come_from_the_reference(bench):
    from seer.data.example import Example

    def ex(ref):
        return Example(id="0", prompt="p", reference=ref)

    assert bench.list_size(ex('["A B", "C D"]')) == 2
    assert bench.list_size(ex({"input": ["A B", "C D", "E F"], "word": "G H"})) == 3
    assert bench.list_size(ex("42")) is None


def test_a_file_that_is_not_a_raw_record_is_one_line(bench, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no id"}\n')
    with pytest.raises(SystemExit, match="bad.jsonl:1 is not a --raw record"):
        bench.main(
            [
                "--model",
                "builtin-v1",
                "--data",
                FAKE,
                "--configs",
                "k=1",
                "--window",
                "16",
                "--from-raw",
                str(bad),
            ]
        )
