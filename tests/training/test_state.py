"""A training run's state.pt is read weights-only: tensors and plain values come back, a file
holding any other object is one `SeerError` line (it never runs while it loads)."""

from __future__ import annotations

import argparse

import pytest
import torch

from seer.errors import SeerError
from training.trainer import load_state


def test_a_state_of_tensors_and_plain_values_loads(tmp_path):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    log = [{"step": 1, "loss": 0.5, "heldout_exact_match": {"all": 0.25}}]
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": 1, "log": log}
    torch.save(state, tmp_path / "state.pt")
    back = load_state(tmp_path / "state.pt", "cpu")
    assert back["step"] == 1 and back["log"] == log
    torch.optim.AdamW(model.parameters()).load_state_dict(back["opt"])


def test_a_state_holding_another_object_is_refused(tmp_path):
    state = {"model": {}, "opt": {}, "step": 1, "log": argparse.Namespace(a=1)}
    torch.save(state, tmp_path / "state.pt")
    msg = "state.pt cannot be resumed .it holds objects other than tensors"
    with pytest.raises(SeerError, match=msg) as e:
        load_state(tmp_path / "state.pt", "cpu")
    assert "\n" not in str(e.value)
