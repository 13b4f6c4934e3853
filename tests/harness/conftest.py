"""The harness tests run offline: the datasets / hub libraries read their offline switches when
imported, so the environment variables alone come too late; set the switches themselves too."""

from __future__ import annotations

import pytest


@pytest.fixture()
def offline(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for module, name in (
        ("datasets.config", "HF_DATASETS_OFFLINE"),
        ("huggingface_hub.constants", "HF_HUB_OFFLINE"),
    ):
        mod = pytest.importorskip(module)
        monkeypatch.setattr(mod, name, True)
