"""Shared factories: tiny models in the official layouts, token ids, prompts."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from seer.models.configs import dream_config, llada_config
from seer.models.factory import random_model
from seer.sampling import TokenIds

MASK, EOS, EOT = 310, 300, 301
TOKENS = TokenIds(mask=MASK, eos=EOS, pad=EOS, eot=EOT)


def tiny(arch: str, seed: int = 0, layers: int = 2):
    ids = {"mask_token_id": MASK, "eos_token_id": EOS, "pad_token_id": EOS}
    make = llada_config if arch == "llada" else dream_config
    if arch == "llada":
        raw = make(320, n_layers=layers, **ids)
    else:
        raw = make(320, num_hidden_layers=layers, **ids)
    return random_model(raw, seed=seed, std=0.2)


@pytest.fixture(scope="session")
def tiny_llada():
    return tiny("llada")


@pytest.fixture(scope="session")
def tiny_dream():
    return tiny("dream")


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)  # small tensors: threads only add overhead on 2-core CI machines


@pytest.fixture()
def offline(monkeypatch):
    """Offline for real: datasets / huggingface_hub read their offline switches at import, so
    the environment variables alone come too late; set the switches themselves too."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for module, name in (
        ("datasets.config", "HF_DATASETS_OFFLINE"),
        ("huggingface_hub.constants", "HF_HUB_OFFLINE"),
    ):
        monkeypatch.setattr(pytest.importorskip(module), name, True)


@contextlib.contextmanager
def benchmark(name: str):
    """The script `benchmarks/<name>.py` imported as a module (registered in `sys.modules`
    while in use: dataclasses look their module up while defining)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]
