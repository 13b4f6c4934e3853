"""`seer batch` outputs that must not go wrong quietly: a full disk (a row is written whole or
not at all, said in one line), a row written twice, an output that is not UTF-8, a Parquet
output without Ray, and an output that is the data file itself."""

from __future__ import annotations

import errno
import json
import logging
import os

import pytest

import seer
from seer import batch as batch_mod
from seer.batch import RowWriter, done_ids, run_batch
from seer.data import load_examples
from seer.errors import SeerError
from seer.sampling import SamplingParams

P = SamplingParams(gen_length=8)


@pytest.fixture(scope="module")
def lm():
    return seer.load("builtin-v1")


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_full_disk_leaves_whole_rows_and_one_line(tmp_path, monkeypatch):
    out = tmp_path / "o.jsonl"
    w = RowWriter(out, ["a", "b", "c"], stamp="s")
    assert w.put({"id": "a", "answer": "x" * 50}) == 1
    real, calls = os.write, []

    def full(fd, data):  # the disk fills up half way through the next row
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(batch_mod.os, "write", full)
    with pytest.raises(SeerError) as e:
        w.put({"id": "b", "answer": "y" * 50})
    w.close()
    msg = str(e.value)
    assert msg.startswith("disk full: cannot write") and "--resume" in msg and "\n" not in msg
    assert e.value.__cause__ is None and e.value.__suppress_context__
    assert out.read_text().endswith("\n")  # no torn line: "b" is not there at all
    assert [r["id"] for r in _rows(out)] == ["a"] and _rows(out)[0]["settings"] == "s"


def test_another_write_error_is_one_line_too(tmp_path, monkeypatch):
    w = RowWriter(tmp_path / "o.jsonl", ["a"])

    def broken(fd, data):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(batch_mod.os, "write", broken)
    with pytest.raises(SeerError, match="cannot write .*o.jsonl: Input/output error"):
        w.put({"id": "a"})
    w.close()


def test_a_repeated_row_is_dropped_with_one_warning(lm, tmp_path, caplog):
    ex = load_examples("builtin-v1", n=4)
    out = tmp_path / "o.jsonl"
    run_batch(lm, ex[:2], out, params=P)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text(lines[0] + lines[1] + lines[0])  # row 0 written twice
    with caplog.at_level(logging.WARNING, "seer.batch"):
        s = run_batch(lm, ex, out, params=P, resume=True)
    said = [r.getMessage() for r in caplog.records]
    assert said == [f"{out}: dropping 1 repeated row(s) (an id written before)"]
    assert (s.skipped, s.rows) == (2, 2)
    assert [r["id"] for r in _rows(out)] == [e.id for e in ex]  # each once, in input order


def test_an_output_that_is_not_utf8_cannot_be_resumed(tmp_path):
    out = tmp_path / "o.jsonl"
    out.write_bytes(b'\xff\xfe{"id": "0"}\n')
    with pytest.raises(SeerError, match=r"not UTF-8 text \(byte 0\).*cannot resume"):
        done_ids(out)


def test_parquet_and_the_data_file_itself_are_refused(lm, tmp_path):
    ex = load_examples("builtin-v1", n=1)
    with pytest.raises(SeerError, match="Parquet output is written only with --ray"):
        run_batch(lm, ex, tmp_path / "o.parquet", params=P)
    assert not (tmp_path / "o.parquet").exists()
    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "prompt": "add 1 and 2"}\n')
    (tmp_path / "link.jsonl").symlink_to(data)
    for out in (data, tmp_path / "link.jsonl", tmp_path / "." / "d.jsonl"):
        with pytest.raises(SeerError, match="is the data file itself"):
            run_batch(lm, load_examples(str(data)), out, params=P, resume=True, data=str(data))
    assert data.read_text() == '{"id": "a", "prompt": "add 1 and 2"}\n'


def test_a_full_disk_while_writing_the_record_is_one_line(tmp_path, monkeypatch):
    from pathlib import Path

    from seer import provenance

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(SeerError, match=r"^disk full: cannot write .*o.jsonl.meta.json"):
        provenance.write(tmp_path / "o.jsonl", {"format": 1})
    assert not list(tmp_path.iterdir())  # no half-written record left behind
