"""Raw records are read plain or gzipped (`seerbench.records`): the committed records under
docs/results are .jsonl.gz, and every reader (bench_compare's resume, the report, the cost
model's out-of-sample check, window_gain) takes either, also by the other name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import benchmark

from seer.errors import SeerError
from seerbench import records
from seerbench.compare import raw_lines

ROOT = Path(__file__).resolve().parents[2]
ROWS = [
    {"settings": {"gen_length": 8}},
    {"request": 0, "id": "a", "results": {"x": {"text": "hi"}}},
]


def _plain(tmp_path: Path) -> Path:
    path = tmp_path / "raw-t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_compress_keeps_the_text_and_every_name_finds_it(tmp_path):
    plain = _plain(tmp_path)
    text = plain.read_text()
    gz = records.compress(plain)
    assert gz.name == "raw-t.jsonl.gz" and not plain.exists()
    assert gz.read_bytes()[:2] == b"\x1f\x8b"  # gzip, not a renamed text file
    assert records.read_text(gz) == records.read_text(plain) == text  # by either name
    assert raw_lines(plain) == raw_lines(gz) == ROWS


def test_a_run_resumes_on_a_compressed_record(tmp_path):
    gz = records.compress(_plain(tmp_path))
    with records.append(tmp_path / "raw-t.jsonl") as f:
        f.write(json.dumps({"request": 1}) + "\n")
    assert raw_lines(gz) == [*ROWS, {"request": 1}]
    with records.append(gz) as f:  # a line torn by a stopped run is dropped, as in a plain file
        f.write('{"request": 2')
    assert raw_lines(gz) == [*ROWS, {"request": 1}]
    assert records.read_text(gz).endswith('{"request": 1}\n')
    with records.append(gz) as f:
        f.write('{"torn\n{"request": 3}\n')
    with pytest.raises(SeerError, match="not a JSON record"):
        raw_lines(gz)


def test_window_gain_and_the_cost_model_read_both(tmp_path):
    plain = _plain(tmp_path)
    with benchmark("window_gain") as window_gain, benchmark("costmodel_oos") as oos:
        before = window_gain.baseline_answers(plain, "x"), oos.load(plain, 0)
        records.compress(plain)
        assert window_gain.baseline_answers(plain, "x") == before[0] == {"a": ("hi", None, None)}
        assert oos.load(Path(f"{plain}.gz"), 0) == oos.load(plain, 0) == before[1]


def test_the_committed_raw_records_are_compressed():
    results = ROOT / "docs" / "results" / "compare"
    assert not list(results.rglob("*.jsonl"))
    assert raw_lines(results / "shipped" / "raw-builtin.jsonl")  # the old name finds the .gz
