"""`seer.provenance`: a batch output records what produced it; `--resume` with another model,
other settings or other data is refused in one line naming the first difference."""

from __future__ import annotations

import json
import shutil

import pytest

import seer
from seer import provenance
from seer.batch import run_batch
from seer.data import load_examples
from seer.errors import SeerError
from seer.sampling import SamplingParams

P = SamplingParams(gen_length=8)


@pytest.fixture(scope="module")
def lm():
    return seer.load("builtin-v1")


def _data(tmp_path, n=4):
    path = tmp_path / "d.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"r{i}", "prompt": f"add {i} and 2"}) + "\n" for i in range(n))
    )
    return path


def test_the_record_holds_the_weights_hash_every_setting_and_the_data_hash(lm, tmp_path):
    data = _data(tmp_path)
    out = tmp_path / "o.jsonl"
    run_batch(lm, load_examples(data, n=2), out, params=P, seer={"margin": 2}, data=data)
    rec = json.loads(provenance.sidecar(out).read_text())
    weights = provenance.file_sha256(lm.path / "model.safetensors")
    assert rec["model"]["files"]["model.safetensors"][2] == weights
    assert rec["model"]["dtype"] == "float32" and len(rec["model"]["weights_sha256"]) == 64
    assert rec["sampling"]["gen_length"] == 8 and rec["sampling"]["remasking"] is not None
    assert rec["seer"]["enabled"] and rec["seer"]["margin"] == 2 and rec["seer"]["layer"] >= 0
    assert rec["data"] == {
        "source": str(data.resolve()),
        "sha256": provenance.files_sha256([data], tmp_path)[0],
    }
    assert len(out.read_text().splitlines()) == 2  # the rows file holds only rows


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"seer": True}, "seer.enabled=false, this run has seer.enabled=true"),
        (
            {"params": SamplingParams(gen_length=8, steps=4)},
            "sampling.steps=null, this run has sampling.steps=4",
        ),
        ({"data": "edit"}, "data.sha256="),
    ],
)
def test_resume_with_anything_different_is_refused_naming_the_first_difference(
    lm, tmp_path, change, named
):
    data = _data(tmp_path)
    out = tmp_path / "o.jsonl"
    run_batch(lm, load_examples(data, n=2), out, params=P, data=data)
    kw = {"params": P, "seer": None, "data": data, **change}
    if kw["data"] == "edit":
        data.write_text(data.read_text().replace("add 3", "add 4"))  # a row not yet answered
        kw["data"] = data
    before = out.read_text()
    with pytest.raises(SeerError, match="--resume: .*o.jsonl was written with ") as e:
        run_batch(lm, load_examples(data), out, resume=True, **kw)
    assert named in str(e.value) and "\n" not in str(e.value)
    assert out.read_text() == before  # nothing appended
    kw["data"] = data if change.get("data") != "edit" else None  # (data not recorded: not checked)
    kw.update(params=P, seer=None)
    summary = run_batch(lm, load_examples(data), out, resume=True, **kw)
    assert (summary.skipped, summary.rows) == (2, 2)


def test_other_weights_are_refused_and_a_moved_copy_resumes(lm, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(lm.path, a)
    shutil.copytree(lm.path, b)
    raw = bytearray((b / "model.safetensors").read_bytes())
    raw[-1] ^= 1  # one bit of the last weight
    (b / "model.safetensors").write_bytes(bytes(raw))
    ex = load_examples("builtin-v1", n=3)
    out = tmp_path / "o.jsonl"
    run_batch(seer.load(a), ex[:1], out, params=P, data="builtin-v1")
    with pytest.raises(SeerError, match="model.weights_sha256="):
        run_batch(seer.load(b), ex, out, params=P, resume=True, data="builtin-v1")
    with pytest.raises(SeerError, match='data.source="builtin-v1", this run has data.source="b'):
        run_batch(seer.load(a), ex, out, params=P, resume=True, data="builtin-vqa")
    shutil.rmtree(b)
    a.rename(b)  # the same weights in another folder: the same run
    assert run_batch(seer.load(b), ex, out, params=P, resume=True, data="builtin-v1").rows == 2


def test_an_output_without_a_record_resumes_only_when_its_rows_show_the_same_settings(lm, tmp_path):
    ex = load_examples("builtin-v1", n=3)
    out = tmp_path / "o.jsonl"
    run_batch(lm, ex[:1], out, params=P)
    provenance.sidecar(out).unlink()  # the record is lost; the rows carry the settings hash
    with pytest.raises(SeerError, match="the rows of .* show other settings"):
        run_batch(lm, ex, out, params=P, seer=True, resume=True)
    assert run_batch(lm, ex, out, params=P, resume=True).rows == 2
    assert provenance.read(out) is not None  # it carries this run's record again
    stamps, bare = provenance.row_stamps(out)
    assert len(stamps) == 1 and bare == 0


def test_an_output_whose_rows_carry_no_settings_is_refused_without_its_record(lm, tmp_path):
    ex = load_examples("builtin-v1", n=3)
    out = tmp_path / "o.jsonl"
    run_batch(lm, ex[:1], out, params=P)
    provenance.sidecar(out).unlink()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    out.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "settings"}) + "\n" for r in rows)
    )
    with pytest.raises(SeerError, match="has no record of the settings that wrote it"):
        run_batch(lm, ex, out, params=P, resume=True)


def test_the_skeleton_resolves_the_settings_the_loaded_model_does(lm):
    """The Ray driver records settings without loading weights: they must equal the loaded
    model's, or a Ray resume of a single-process output (or back) would be refused."""
    skeleton = seer.load("builtin-v1", weights=False)
    assert next(skeleton.model.parameters()).is_meta
    for options, seer_opt in (({}, None), ({"gen_length": 16, "steps": 4}, {"margin": 1})):
        full = provenance.batch_record(lm, lm.sampling(**options), seer_opt, data="builtin-v1")
        light = provenance.batch_record(
            skeleton,
            skeleton.sampling(**options),
            seer_opt,
            dtype="float32",
            device="cpu",
            data="builtin-v1",
        )
        assert provenance.compared(full) == provenance.compared(light)


def test_the_cli_refuses_resuming_a_full_window_output_with_seer(tmp_path, capsys, monkeypatch):
    """The issue's case: a full-window partial output resumed with --seer (refused before
    the model loads)."""
    from seer.cli import main
    from seer.commands import options

    real_load = options.load

    data = _data(tmp_path)
    out = tmp_path / "o.jsonl"
    argv = [
        "batch",
        "--model",
        "builtin-v1",
        "--data",
        str(data),
        "--out",
        str(out),
        "--gen-length",
        "8",
    ]
    assert main([*argv, "--n", "2"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(options, "load", lambda *a: pytest.fail("the model loaded first"))
    assert main([*argv, "--resume", "--seer"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seer.enabled=false, this run has seer.enabled=true" in err
    assert main([*argv, "--resume", "--gen-length", "9"]) == 2
    assert "sampling.gen_length=8, this run has sampling.gen_length=9" in capsys.readouterr().err
    monkeypatch.setattr(options, "load", real_load)
    assert main([*argv, "--resume"]) == 0  # the same settings: --n 2 done, 2 more now
    assert len(out.read_text().splitlines()) == 4
