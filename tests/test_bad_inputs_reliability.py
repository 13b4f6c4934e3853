"""The reliability cases of the bad-input corpus (tests/corpus/cli_reliability.yaml): devices,
damaged images, model folders, data rows, batch outputs and resumes. Each is one
`seer: error:` line with the expected text (or, for the warning cases, a run that succeeds with
that one warning line), never a traceback. The file's header lists the keys it adds to
bad_inputs.yaml's format; they are made here."""

from __future__ import annotations

import base64
import errno
import logging
from pathlib import Path

import pytest
import yaml
from corpus.corpus import case_id, check_one_line, png, prepare, substitute

from seer import batch as batch_mod
from seer.cli import main

FILE = Path(__file__).parent / "corpus" / "cli_reliability.yaml"
CLI = yaml.safe_load(FILE.read_text(encoding="utf-8"))["cli"]
KEYS = {"argv", "files", "model", "json", "delete", "exit", "error", "warn"}
MORE = {"bytes", "int32", "before", "then", "disk_full"}


def bad_png() -> bytes:
    raw = bytearray(png())
    raw[11] ^= 0x01  # the IHDR chunk's length: Pillow raises ValueError, not OSError
    return bytes(raw)


def bad_ppm() -> bytes:
    return b"P6\n32 x\n255\n" + bytes(96)  # a width that is not a number


BYTES = {"bad_png": bad_png, "bad_ppm": bad_ppm, "not_utf8": lambda: b'\xff\xfe{"id": "0"}\n'}


def _uri(raw: bytes, kind: str) -> str:
    return f"data:image/{kind};base64," + base64.b64encode(raw).decode()


def names(tmp: Path) -> dict:
    return {
        "tmp": str(tmp),
        "bad_png_uri": _uri(bad_png(), "png"),
        "bad_ppm_uri": _uri(bad_ppm(), "x-portable-pixmap"),
        "deep_row": '{"id": "a", "prompt": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
        "cats": "cat " * 600,
    }


def _int32(path: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    tensors = load_file(path)
    first = sorted(tensors)[0]
    tensors[first] = tensors[first].to(torch.int32)
    save_file(tensors, path)


def make(case: dict, tmp: Path) -> None:
    """`prepare` (bad_inputs.yaml's keys), then this file's own."""
    sub = names(tmp)
    prepare({**case, "files": substitute(case.get("files"), **sub)}, tmp)
    for rel, kind in (case.get("bytes") or {}).items():
        (tmp / rel).write_bytes(BYTES[kind]())
    for rel in case.get("int32") or []:
        _int32(tmp / rel)


@pytest.mark.parametrize("case", CLI, ids=[case_id(c) for c in CLI])
def test_a_bad_command_line_is_one_line(case, tmp_path, capsys, caplog, monkeypatch):
    if "mps" in case["argv"]:
        import torch

        if torch.backends.mps.is_available():
            pytest.skip("this machine has an mps device")
    monkeypatch.chdir(tmp_path)
    make(case, tmp_path)
    sub = names(tmp_path)
    if "before" in case:
        assert main(substitute(case["before"], **sub)) == 0, capsys.readouterr().err
        then = case.get("then") or {}
        for rel in then.get("delete") or []:
            (tmp_path / rel).unlink()
        for rel in then.get("duplicate") or []:
            text = (tmp_path / rel).read_text()
            (tmp_path / rel).write_text(text + text.splitlines(keepends=True)[0])
        capsys.readouterr()
    if case.get("disk_full"):

        def full(fd, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(batch_mod.os, "write", full)
    with caplog.at_level(logging.WARNING):
        rc = main(substitute(case["argv"], **sub))
    check_one_line(case, rc, capsys.readouterr().err, caplog.records, tmp=str(tmp_path))


def test_the_file_is_well_formed():
    for case in CLI:
        assert set(case) <= KEYS | MORE, case
        assert ("error" in case) != ("warn" in case), case
        assert all(kind in BYTES for kind in (case.get("bytes") or {}).values()), case
    assert len(CLI) >= 25
