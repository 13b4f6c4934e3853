"""tools/control_signal.py: the phase-4 config read from the control script, both recipes'
draws (the same requests, only the windows differ), the loss shares and one line per bad flag."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location(
        "control_signal", ROOT / "tools" / "control_signal.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["control_signal"] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules["control_signal"]


def test_phase_4_is_the_control_scripts_last_phase(tool):
    c = tool.phase_config()
    assert (c.windows, c.until, c.total_steps, c.cycle_start) == ("full", 40108, 40000, 3200)
    assert (c.bare_steps, c.bare_share, c.lr, c.window) == (0, 0.3, 2e-4, 128)
    assert tool.phase_config(phase=3).until == 10690


def test_both_recipes_draw_the_same_requests_and_only_the_windows_differ(tool):
    import dataclasses

    from seer.models.tokens import load_tokenizer
    from training.builtin_v2 import ChatEncoder

    full = tool.phase_config()
    enc = ChatEncoder(load_tokenizer(tool.CONTROL))
    row, ids_row = tool.draw(dataclasses.replace(full, windows="row"), enc, 3, 16000)
    ctl, ids_ctl = tool.draw(full, enc, 3, 16000)
    assert ids_row == ids_ctl and row.answer == ctl.answer and len(row.answer) == 48
    assert all(ids[-1] == enc.eot for ids in ids_ctl if len(ids) < 128)  # each answer whole
    assert set(ctl.window) == {128}
    assert all(a <= w <= 128 for a, w in zip(row.answer, row.window, strict=True))
    assert any(w < 128 for w in row.window)  # cut rows exist in the shipped recipe
    assert tool.answer_share(row) > tool.answer_share(ctl)


def test_the_shares_weigh_each_row_alike(tool):
    rows = tool.Rows(answer=[10, 30], window=[20, 120])
    assert tool.answer_share(rows) == pytest.approx((10 / 20 + 30 / 120) / 2)
    assert tool.longer_half_share(rows) == pytest.approx(0.25 / 0.75)


@pytest.mark.parametrize(
    "argv,line",
    [
        (["--batches", "0"], "argument --batches: expected an integer >= 1, got 0"),
        (["--grad", "x"], "argument --grad: expected an integer, got 'x'"),
        (["--mask-ratio", "0"], "--mask-ratio 0.0: give a ratio in (0, 1]"),
    ],
)
def test_a_bad_flag_is_one_line(tool, argv, line, capsys):
    with pytest.raises(SystemExit):
        tool.main(argv)
    err = capsys.readouterr().err.strip()
    assert err.startswith("usage: ") and "Traceback" not in err  # argparse's usage, then
    assert err.splitlines()[-1].endswith(f"error: {line}")  # the one line


def test_a_step_outside_phase_4_or_a_missing_model_is_one_line(tool):
    with pytest.raises(
        SystemExit, match=r"^error: --step 5: phase 4 runs from step 10690 to 40108$"
    ):
        tool.main(["--step", "5"])
    with pytest.raises(SystemExit, match=r"^error: model folder 'nowhere' does not exist"):
        tool.main(["--batches", "1", "--ce", "--models", "nowhere", "builtin"])
