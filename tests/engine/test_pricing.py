"""merge_on="auto" (the default): the engine prices merges on the GPU it runs on, as the served
model, and is off on CPU, MPS and GPUs the simulator does not know. CPU only: the device's name
is mocked where a GPU is needed."""

from __future__ import annotations

import json
import logging

import pytest
import torch

import seer
from seer.engine import Engine, EngineConfig, Scheduler
from seer.engine import engine as engine_module
from seer.engine.engine import device_gpu
from seer.errors import SeerError
from seer.roofline.shapes import shape_of
from seer.sim import builtin_shapes, gpu


@pytest.fixture(scope="module")
def lm():
    return seer.load("builtin")


@pytest.fixture(scope="module")
def lm16():
    """The built-in model in bf16: auto prices 16-bit forwards only."""
    return seer.load("builtin", dtype="bfloat16")


def _named(monkeypatch, name: str) -> list[torch.device]:
    """torch.cuda.get_device_name answers `name`; returns the devices it was asked about."""
    asked: list[torch.device] = []

    def fake(device=None):
        asked.append(device)
        return name

    monkeypatch.setattr(torch.cuda, "get_device_name", fake)
    return asked


@pytest.mark.parametrize(
    ("name", "profile"),
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 PCIe", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA GeForce RTX 5070", "rtx5070"),
    ],
)
def test_auto_finds_the_profile_a_cuda_device_names(monkeypatch, caplog, name, profile):
    asked = _named(monkeypatch, name)
    with caplog.at_level(logging.INFO, logger="seer.engine"):
        hw = device_gpu(torch.device("cuda", 0))
    assert hw == gpu(profile) and asked == [torch.device("cuda", 0)]
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert profile in caplog.text and name in caplog.text


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GH200 480GB",
        "NVIDIA GeForce RTX 5070 Ti",
        "AMD Instinct MI300X",
        "H800",
        "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
        "NVIDIA GeForce RTX 5070 Laptop GPU",
    ],
)
def test_auto_is_off_on_an_unknown_gpu_with_one_line_saying_how_to_set_one(
    monkeypatch, caplog, name
):
    _named(monkeypatch, name)
    with caplog.at_level(logging.INFO, logger="seer.engine"):
        assert device_gpu(torch.device("cuda")) is None
    (record,) = caplog.records
    text = record.getMessage()
    assert record.levelno == logging.WARNING and "\n" not in text
    assert repr(name) in text and "--merge-on a100|h100|h200|rtx5070" in text


@pytest.mark.parametrize("device", ["cpu", "mps", "meta"])
def test_auto_is_off_off_cuda_without_asking_for_a_name(monkeypatch, caplog, device):
    asked = _named(monkeypatch, "NVIDIA H100 80GB HBM3")
    with caplog.at_level(logging.INFO, logger="seer.engine"):
        assert device_gpu(torch.device(device)) is None
    assert asked == [] and caplog.records == []


def test_auto_is_the_default_and_a_cpu_engine_plans_as_with_merging_off(lm):
    """On CPU auto is off: the default engine's scheduler has no price and plans every
    window mix as merge_on=None does (the engine tests, on CPU, keep their answers)."""
    auto, off = Engine(lm), Engine(lm, EngineConfig(merge_on=None))
    assert auto.config.merge_on == "auto" and auto.scheduler.price is None
    windows, prompts = [2, 3, 8, 8, 12, 30, 30, 64], [40] * 8
    for kw in ({}, {"no_pack": True}):
        assert auto.scheduler.plan(windows, prompts, 64, **kw) == off.scheduler.plan(
            windows, prompts, 64, **kw
        )


def test_auto_on_a_known_gpu_prices_the_served_model_there(lm16, monkeypatch):
    """The engine's device named an H200: auto prices as h200 with the served model's shape
    (its config.json), as merge_on="h200" does; the scheduler only receives the profile."""
    monkeypatch.setattr(engine_module, "device_gpu", lambda device: gpu("h200"))
    price = Engine(lm16).scheduler.price
    named = Engine(lm16, EngineConfig(merge_on="h200")).scheduler.price
    want = shape_of(json.loads((lm16.path / "config.json").read_text()), "builtin")
    assert price is not None and price == named
    assert price.hw == gpu("h200") and price.shape.params == want.params
    for off in ("none", "off", "OFF", None):  # an explicit off wins over the GPU found
        assert Engine(lm16, EngineConfig(merge_on=off)).scheduler.price is None


def test_auto_is_off_for_a_model_whose_shape_is_unknown(lm16, monkeypatch, caplog):
    """A named profile refuses a model without a config shape; auto turns off, in one line."""

    def unknown(config, name):
        raise SeerError(f"merge_on: the shape of {name} is unknown")

    monkeypatch.setattr(engine_module, "device_gpu", lambda device: gpu("h100"))
    monkeypatch.setattr(engine_module, "served_shape", unknown)
    with caplog.at_level(logging.INFO, logger="seer.engine"):
        assert Engine(lm16).scheduler.price is None
    (record,) = caplog.records
    assert "merge_on auto: off (merge_on: the shape of" in record.getMessage()
    with pytest.raises(SeerError, match="the shape of"):
        Engine(lm16, EngineConfig(merge_on="h100"))


def test_auto_is_off_for_float32_weights_with_one_line(lm, lm16, monkeypatch, caplog):
    """The roofline prices 16-bit forwards: on a known GPU, auto is off for the loader's default
    float32 weights and says so in one line; the same model in bf16 is priced. A named profile
    prices the served shape as a 16-bit forward whatever the weights."""
    monkeypatch.setattr(engine_module, "device_gpu", lambda device: gpu("h100"))
    with caplog.at_level(logging.INFO, logger="seer.engine"):
        assert Engine(lm).scheduler.price is None
    (record,) = caplog.records
    says = record.getMessage()
    assert says.startswith("merge_on auto: off (the served weights are torch.float32")
    assert "\n" not in says
    priced = Engine(lm16).scheduler.price
    assert priced is not None and priced.shape.weight_bytes == 2
    named = Engine(lm, EngineConfig(merge_on="h100")).scheduler.price
    assert named is not None and named.shape == priced.shape


def test_the_scheduler_prices_auto_only_on_the_gpu_it_is_given():
    """`Scheduler` asks no device: auto is off without a GPU, and with one it is that GPU's
    price as the served shape."""
    shape = builtin_shapes()["llada-8b"]
    assert Scheduler(EngineConfig()).price is None
    assert Scheduler(EngineConfig(), shape).price is None
    price = Scheduler(EngineConfig(), shape, gpu("a100")).price
    assert price == Scheduler(EngineConfig(merge_on="a100"), shape).price
    assert Scheduler(EngineConfig(merge_on="none"), shape, gpu("a100")).price is None


def test_the_flag_says_its_default_and_takes_none_and_auto():
    from seer.cli import build_parser
    from seer.commands import serve

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices["serve"]
    assert "(default auto)" in " ".join(sub.format_help().split())
    for given, want in (
        ([], "auto"),
        (["--merge-on", "none"], "none"),
        (["--merge-on", "off"], "off"),
    ):
        args = parser.parse_args(["serve", "--model", "m", *given])
        assert serve._build(args)["merge_on"] == want


def test_absolute_makes_a_model_folder_merge_on_names_absolute(tmp_path, monkeypatch):
    from seer.engine.pricing import absolute

    (tmp_path / "m").mkdir()
    monkeypatch.chdir(tmp_path)
    assert absolute("h100:m") == f"h100:{(tmp_path / 'm').resolve()}"
    for same in (None, "h100", "h100:", "auto", "none", "h100:llada-8b", "h100:no-such-folder"):
        assert absolute(same) == same
