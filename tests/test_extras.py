"""Every optional extra, missing, is one line naming the extra to install, before any model
loads (`seer.extras`). A missing package is simulated: `sys.modules[name] = None` makes both
`import name` and `importlib.util.find_spec(name)` see it as not installed."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

import seer
from seer import extras
from seer.cli import main
from seer.errors import SeerError


@pytest.fixture()
def no_model(monkeypatch):
    """A model load fails the test: the extra must be checked first."""

    def load(*a, **k):
        raise AssertionError("a model was loaded before the missing extra was named")

    monkeypatch.setattr(seer, "load", load)


def _block(monkeypatch, *names: str) -> None:
    """Block each package and every submodule an earlier test imported (a submodule already in
    `sys.modules` would otherwise import without its parent)."""
    for name in names:
        for loaded in [m for m in sys.modules if m.startswith(name + ".")]:
            monkeypatch.setitem(sys.modules, loaded, None)
        monkeypatch.setitem(sys.modules, name, None)


def _one_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("seer: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


def test_every_extra_of_pyproject_is_known():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    tooling = {"dev", "docs"}  # the test and documentation tools: no Seer command needs them
    assert set(project["project"]["optional-dependencies"]) - tooling == set(extras.EXTRAS)


@pytest.mark.parametrize(
    ("blocked", "argv", "says"),
    [
        (
            "uvicorn",
            ["serve", "--model", "builtin-v1"],
            "seer serve needs the serve extra (uvicorn is not installed): "
            'pip install -e ".[serve]"',
        ),
        (
            "fastapi",
            ["serve", "--model", "builtin-v1", "--replicas", "2"],
            "seer serve needs the serve extra (fastapi is not installed)",
        ),
        (
            "ray",
            ["serve", "--model", "builtin-v1", "--replicas", "2"],
            "seer serve --replicas needs the ray extra (ray is not installed): pip install -e "
            '".[ray]"',
        ),
        (
            "gradio",
            ["ui", "--model", "builtin-v1"],
            'seer ui needs the ui extra (gradio is not installed): pip install -e ".[ui]"',
        ),
        (
            "gradio",
            ["serve", "--model", "builtin-v1", "--ui"],
            "seer serve --ui needs the ui extra (gradio is not installed)",
        ),
        (
            "ray",
            [
                "batch",
                "--model",
                "builtin-v1",
                "--data",
                "/no/such.jsonl",
                "--out",
                "o.jsonl",
                "--ray",
                "2",
            ],
            "seer batch --ray needs the ray extra (ray is not installed)",
        ),
    ],
)
def test_a_command_without_its_extra_is_one_line_before_the_model(
    capsys, monkeypatch, no_model, blocked, argv, says
):
    _block(monkeypatch, blocked)
    assert says in _one_line(capsys, argv)


def test_parquet_data_without_the_data_extra(capsys, monkeypatch, no_model, tmp_path):
    _block(monkeypatch, "datasets")
    data = tmp_path / "rows.parquet"
    data.write_bytes(b"PAR1")
    err = _one_line(
        capsys,
        ["batch", "--model", "builtin-v1", "--data", str(data), "--out", str(tmp_path / "o.jsonl")],
    )
    assert f"{data}: reading Parquet / Arrow / save_to_disk data needs the data extra" in err
    err = _one_line(capsys, ["calibrate", "--model", "builtin-v1", "--data", str(data)])
    assert "needs the data extra (datasets is not installed)" in err


@pytest.mark.parametrize(
    ("module", "blocked", "says"),
    [
        (
            "seer.harness.lm_eval",
            "lm_eval",
            "model seer for lm-evaluation-harness needs the eval extra (lm_eval is not installed): "
            'pip install -e ".[eval]"',
        ),
        (
            "seer.harness.lmms_eval",
            "lmms_eval",
            "model seer for lmms-eval needs the eval extra (lmms_eval is not installed): "
            'pip install -e ".[eval]" (in the seer checkout), '
            'then pip install --no-deps "lmms-eval==0.7.3"',
        ),
        (
            "seer.harness.lmms_eval",
            "loguru",
            "model seer for lmms-eval needs the eval extra (loguru is not installed)",
        ),
    ],
)
def test_the_harnesses_without_the_eval_extra(capsys, monkeypatch, module, blocked, says):
    _block(monkeypatch, blocked)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(SystemExit) as e:  # python -m seer.harness.<name>
        runpy.run_module(module, run_name="__main__")
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"seer: error: {says}") and err.count("\n") == 1, err
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(SeerError, match="needs the eval extra"):  # import seer.harness.<name>
        __import__(module)
    monkeypatch.delitem(sys.modules, module, raising=False)


def test_the_library_fronts_name_their_extra(monkeypatch):
    from seer.engine import EngineConfig

    _block(monkeypatch, "triton", "prometheus_client")
    with pytest.raises(SeerError, match=r"kernel='triton' needs the kernels extra \(triton is"):
        EngineConfig(kernel="triton")
    import seer.serve

    with pytest.raises(SeerError, match="seer.serve needs the serve extra"):
        seer.serve.build(None)
