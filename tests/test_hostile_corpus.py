"""The hostile corpus (tests/corpus/hostile.yaml): huge and malformed request fields, damaged
data files, model folders that do not match their weights, outputs that must not be destroyed.
Each case is one line (a `seer: error:` line, an OpenAI-style 4xx, a SeerError), never a
traceback. HTTP cases run in-process against builtin-v1's app. Also: the count of the whole
bad-input corpus, and the writes that must not destroy or misname a file."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path

import pytest
import yaml
from corpus.corpus import case_id, check_one_line, prepare, substitute

from seer.cli import main
from seer.errors import SeerError

CORPUS = Path(__file__).parent / "corpus"
FILE = CORPUS / "hostile.yaml"
ALL = yaml.safe_load(FILE.read_text(encoding="utf-8"))
CLI, HTTP, LIB = ALL["cli"], ALL["http"], ALL["library"]
MODEL = "builtin-v1"


def _write_extras(case: dict, tmp: Path) -> None:
    """This file's own keys (see its header): Parquet files and texts with a NUL."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for rel, rows in (case.get("parquet") or {}).items():
        if isinstance(rows, str):
            (tmp / rel).write_text(rows)
        elif rows:
            pq.write_table(pa.Table.from_pylist(rows), tmp / rel)
        else:
            pq.write_table(pa.table({"prompt": pa.array([], pa.string())}), tmp / rel)
    for rel, text in (case.get("nul") or {}).items():
        (tmp / rel).write_text(text.replace("{NUL}", "\x00"), encoding="utf-8")


def _make(case: dict, tmp: Path) -> dict:
    names = {"tmp": str(tmp), "long": "a" * 20_000}
    prepare({**case, "files": substitute(case.get("files"), **names)}, tmp)
    _write_extras(case, tmp)
    return names


@pytest.mark.parametrize("case", CLI, ids=[case_id(c) for c in CLI])
def test_a_hostile_command_line_is_one_line(case, tmp_path, capsys, caplog, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEER_NO_PROGRESS", "1")
    names = _make(case, tmp_path)
    with caplog.at_level(logging.WARNING):
        rc = main(substitute(case["argv"], **names))
    check_one_line(case, rc, capsys.readouterr().err, caplog.records, tmp=str(tmp_path))


# -- HTTP, in-process ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    import seer
    from seer.serve import build

    with TestClient(build(seer.load(MODEL))) as c:
        yield c


HI = [{"role": "user", "content": "hi"}]
BODY_VALUES = {  # a placeholder that is a whole JSON value
    "{hi}": HI,
    "{hi_1025}": HI * 1025,
    "{stop_50}": ["s"] * 50,
    "{parts_257}": [{"type": "text", "text": "a"}] * 257,
    "{opts_65}": {f"k{i}": i for i in range(65)},
    "{ids_65537}": [5] * 65_537,
}
RAW = {
    "{bad_utf8}": b'{"model": "\xff\xfe"}',
    "{deep_5000}": b"[" * 5000 + b"]" * 5000,
    "{commas_140k}": b'{"model": "builtin-v1", "stop": [' + b"1," * 140_000 + b"1]}",
    "{objects_140k}": b"[" + b"{}," * 140_000 + b"{}]",
}


def _fill(value):
    if isinstance(value, str) and value in BODY_VALUES:
        return BODY_VALUES[value]
    if isinstance(value, dict):
        return {k: _fill(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v) for v in value]
    return substitute(value, x_257="x" * 257, long="a " * 10_000)


@pytest.mark.parametrize("case", HTTP, ids=[case_id(c) for c in HTTP])
def test_a_hostile_request_is_one_openai_style_line(client, case):
    path = case.get("path", "/v1/chat/completions")
    if "raw" in case:
        raw = RAW.get(case["raw"], case["raw"].encode())
    else:
        raw = json.dumps({"model": MODEL, **_fill(case["json"])}).encode()
    r = client.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == case["status"], r.text[:300]
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert "\n" not in err["message"] and "Traceback" not in err["message"], err
    assert case["error"] in err["message"], err["message"]
    assert client.get("/health").status_code == 200


# -- the library --------------------------------------------------------------------------------
@pytest.mark.parametrize("case", LIB, ids=[f"{c['call']} {c.get('error', '')}"[:90] for c in LIB])
def test_a_hostile_library_call_is_one_seer_error(case, tmp_path):
    names = _make(case, tmp_path)
    module, _, name = case["call"].partition(":")
    fn = getattr(importlib.import_module(module), name)
    args = substitute(case.get("args") or [], **names)
    with pytest.raises(SeerError) as e:
        fn(*args, **(case.get("kwargs") or {}))
    assert case["error"] in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_corpus_is_well_formed_and_the_whole_corpus_holds_450_cases():
    keys = {"argv", "files", "model", "json", "delete", "exit", "error", "warn", "parquet", "nul"}
    for case in CLI:
        assert set(case) <= keys and "error" in case, case
    for case in HTTP:
        assert set(case) <= {"path", "json", "raw", "status", "error"}, case
    for case in LIB:
        assert set(case) <= {"call", "args", "kwargs", "error", *keys}, case
    total = 0
    for f in CORPUS.glob("*.yaml"):
        total += sum(len(v) for v in yaml.safe_load(f.read_text(encoding="utf-8")).values())
    assert total >= 450, total


# -- writes that must not destroy or misname a file ------------------------------------------------
def test_make_checkpoint_force_replaces_its_files_and_keeps_the_rest(tmp_path, capsys):
    out = tmp_path / "m"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "config.json").write_text("{}")
    assert main(["make-checkpoint", "--out", str(out), "--layers", "1"]) == 2
    assert (out / "config.json").read_text() == "{}"  # nothing touched
    assert main(["make-checkpoint", "--out", str(out), "--layers", "1", "--force"]) == 0
    assert json.loads((out / "config.json").read_text())["n_layers"] == 1
    assert (out / "notes.txt").read_text() == "mine"
    assert f"to {out}" in capsys.readouterr().out


def test_a_figure_is_written_where_the_command_says(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["profile", "--prompt", "add 1 and 2", "--gen-length", "8", "--no-generate"]
    assert main([*argv, "--out", "heat"]) == 0
    assert "wrote heat.png " in capsys.readouterr().out and (tmp_path / "heat.png").is_file()
    assert not (tmp_path / "heat").exists()
    assert main([*argv, "--out", "/dev/full"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if not line.startswith("loading ")]  # progress
    assert len(errors) == 1 and "cannot write the figure /dev/full: No space left" in errors[0]
    assert not Path("/dev/full.png").exists()


def test_the_model_build_stops_at_the_weights_tensor_count(tmp_path):
    """A config whose layers the weights' names do not show still cannot build for ever: the
    build stops once it registered far more parameters than the weights hold."""
    import shutil

    import torch
    from safetensors.torch import save_file

    from seer.errors import CheckpointError
    from seer.models.loader import build_model, builtin_path, read_config

    shutil.copytree(builtin_path(MODEL), tmp_path / "m")
    save_file({"a": torch.zeros(2), "b": torch.zeros(2)}, tmp_path / "m" / "model.safetensors")
    folder, raw = read_config(tmp_path / "m")
    with pytest.raises(CheckpointError, match="more than 68 tensors; the weights hold 2"):
        build_model({**raw, "n_layers": 10**9}, folder)
