"""tools/control_curve.py: the trainer's checks read from a train.log (the last of a step checked
twice), the plot written, one line for a missing file or a log without checks."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("control_curve", ROOT / "tools/control_curve.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checks_are_read_and_plotted_beside_the_reference(tmp_path, capsys):
    tool = _tool()
    log = tmp_path / "train.log"
    log.write_text(
        "step 25 loss 1.0\n"
        'eval step 2000: {"copy": 0.0, "count": 0.2, "all": 0.01}\n'
        "saved step 2100\n"
        'eval step 4000: {"copy": 0.0, "count": 0.4, "all": 0.02}\n'
        'eval step 4000: {"copy": 0.2, "count": 0.4, "all": 0.03}\n'
        "eval step 5000: {torn\n"
        'eval step 6000: {"copy": 0.2}\n'
    )
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"label": "builtin", "source": "s", "checks": {"4000": 0.1}}))
    assert tool.checks(log) == {
        2000: {"copy": 0.0, "count": 0.2, "all": 0.01},
        4000: {"copy": 0.2, "count": 0.4, "all": 0.03},
    }
    out = tmp_path / "plot.png"
    assert tool.main([str(log), "--reference", str(ref), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "control step   4000:   3.0%  (copy 20%, count 40%)" in text
    assert "builtin step   4000:  10.0%" in text
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_a_missing_file_or_a_log_without_checks_is_one_line(tmp_path, capsys):
    tool = _tool()
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"label": "b", "source": "s", "checks": {}}))
    out = str(tmp_path / "p.png")
    assert tool.main([str(tmp_path / "none.log"), "--reference", str(ref), "--out", out]) == 2
    assert capsys.readouterr().err.strip().endswith("none.log")
    (tmp_path / "empty.log").write_text("step 25 loss 1.0\n")
    assert tool.main([str(tmp_path / "empty.log"), "--reference", str(ref), "--out", out]) == 2
    assert "has no 'eval step' lines" in capsys.readouterr().err
    for bad in ("{", '{"label": "b"}', '{"label": "b", "checks": {"x": 1}}', "[]"):
        ref.write_text(bad)
        assert tool.main([str(tmp_path / "empty.log"), "--reference", str(ref), "--out", out]) == 2
        err = capsys.readouterr().err.strip()
        assert "not a checks file" in err and "\n" not in err
