"""Seer on any checkpoint: settings validated against the model, sensible choices said in one
line, notices when uncalibrated or when no boundary was found, a compact report."""

from __future__ import annotations

import logging

import pytest

import seer
from seer.boundary.config import SeerConfig
from seer.boundary.detector import BoundaryReport, summary
from seer.engine.request import seer_config as resolve
from seer.errors import SeerError
from seer.models.factory import make_random_checkpoint

LOGGER = "seer.boundary.truncation"


@pytest.fixture(scope="module")
def two_layers(tmp_path_factory):
    """What `seer make-checkpoint --arch llada --out ck` writes: 2 layers, no seer.json."""
    return seer.load(make_random_checkpoint("llada", tmp_path_factory.mktemp("ck")))


def _notices(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_the_readme_tiny_model_runs_seer(two_layers, caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    g = two_layers.generate("hi", seer=True, gen_length=16, steps=4)
    assert g.stats.window <= 16
    g = two_layers.generate("hi", seer={"signal": "sparsity"}, gen_length=16, steps=4)
    assert g.boundary is not None and g.boundary.signal == "sparsity@L1"


def test_default_layer_beyond_a_small_model_falls_back_to_its_last_layer(tmp_path, caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    two_layers = seer.load(make_random_checkpoint("llada", tmp_path / "ck"))
    cfg = resolve(two_layers, {"signal": "sparsity"})
    assert cfg.layer == 1
    cfg = resolve(two_layers, {"signal": "sparsity", "theta": 0.01})
    assert cfg.layer == 1
    said = [m for m in _notices(caplog) if "instead of the paper's layer 3" in m]
    assert len(said) == 1 and "\n" not in said[0]  # once per model, one line


def test_uncalibrated_model_says_so_once_and_names_the_command(tmp_path, caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    lm = seer.load(make_random_checkpoint("dream", tmp_path / "d", layers=4))
    resolve(lm, True)
    resolve(lm, True)
    said = [m for m in _notices(caplog) if "uncalibrated" in m]
    assert len(said) == 1
    assert "seer calibrate --model DIR --data FILE --write" in said[0] and "\n" not in said[0]


def test_calibrated_model_gives_no_uncalibrated_notice(caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    lm = seer.load("builtin-v1")
    assert resolve(lm, True).signal == dict(lm.defaults.seer.config)["signal"]
    assert not [m for m in _notices(caplog) if "uncalibrated" in m]


@pytest.mark.parametrize(
    ("seer_opts", "match"),
    [
        ({"layer": 2}, r"layer 2 does not exist; the model has 2 layers: choose 0\.\.1"),
        ({"signal": "sparsity", "layer": 7}, "layer 7 does not exist"),
        ({"layer": -1}, "layer must be >= 0"),
        ({"layer": "1"}, "layer must be an integer"),
        ({"theta": 0}, "theta must be > 0"),
        ({"theta": "big"}, "theta must be a number"),
        ({"eos_run": 0}, "eos_run must be >= 1"),
        ({"signal": "entropy"}, "unknown Seer signal"),
        ({"tensor": "up"}, "unknown probe tensor"),
        ({"rule": "magic"}, "unknown sparsity rule"),
        ({"direction": "up"}, "unknown direction 'up'"),
        ({"lookahed": 3}, r"unknown Seer option\(s\) \['lookahed'\]"),
        ({"bucket": 0}, "bucket must be >= 1"),
    ],
)
def test_bad_settings_are_one_line_errors(two_layers, seer_opts, match):
    with pytest.raises(SeerError, match=match) as e:
        resolve(two_layers, seer_opts)
    assert "\n" not in str(e.value)


def test_none_means_default_and_a_seerconfig_is_checked_too(two_layers):
    cfg = resolve(two_layers, {"signal": "sparsity", "theta": None, "layer": None})
    assert cfg.theta == SeerConfig().theta and cfg.layer == 1
    with pytest.raises(SeerError, match="layer 5 does not exist"):
        resolve(two_layers, SeerConfig(layer=5))
    with pytest.raises(SeerError, match="must be True, a dict"):
        resolve(two_layers, "yes")


def test_no_boundary_is_said_once_per_run_by_the_front_end(two_layers, caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    never = SeerConfig(signal="eos_prob", eos_run=10_000)  # a run longer than the window
    g = two_layers.generate(["hi", "hello there"], seer=never, gen_length=16, steps=4)
    assert all(r.boundary.length is None and r.stats.window == 16 for r in g)
    assert not [m for m in _notices(caplog) if "no boundary" in m]  # nothing per step or row
    assert summary([r.boundary for r in g]) == (
        "Seer found no boundary in 2 of 2 row(s); 2 kept the full window (no fallback window "
        "set: `seer calibrate --write` sets one)"
    )  # the front ends' one line per run


def test_boundary_report_prints_compactly():
    rep = BoundaryReport(12, 11, 0.91, 0.02, "eos_prob", window=16, profile=[0.5] * 64)
    text = repr(rep)
    assert "L*=12" in text and "window=16" in text and "<64 values>" in text
    assert "0.5," not in text and len(text) < 120
    assert "no boundary" in repr(BoundaryReport(None, None, None, None, "eos_prob", 64))
    assert rep.as_dict()["profile"] == [0.5] * 64  # the full profile stays available
