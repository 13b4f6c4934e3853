"""Every architecture implements `seer.models.base.DiffusionModel`: what the loop, the probe and
the loader read of a model, declared per family instead of probed with getattr."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from seer.models.base import FORWARD_KWARGS, DiffusionModel
from seer.models.configs import (
    dream_config,
    lavida_config,
    llada_config,
    llada_v_config,
    mmada_config,
)
from seer.models.factory import random_model
from seer.models.loader import ARCHITECTURES, get_classes

IDS = {"mask_token_id": 310, "eos_token_id": 300, "pad_token_id": 300}


def _configs() -> dict[str, dict]:
    return {
        "llada": llada_config(320, **IDS),
        "dream": dream_config(320, **IDS),
        "mmada": mmada_config(320, **IDS),
        "lavida-llada": lavida_config(llada_config(320, **IDS), "llada"),
        "lavida-dream": lavida_config(dream_config(320, **IDS), "dream"),
        "llada-v": llada_v_config(320, vision=False, **IDS),
    }


# family -> (logits_shift, default_rule, confidence_dtype, image_codes, splices features)
EXPECTED = {
    "llada": (0, "low_confidence", None, False, False),
    "dream": (1, "entropy", None, False, False),
    "mmada": (0, "low_confidence", torch.float64, True, False),
    "lavida-llada": (0, "low_confidence", None, False, True),
    "lavida-dream": (1, "entropy", None, False, True),
    "llada-v": (0, "low_confidence", torch.float64, False, False),
}


@pytest.mark.parametrize("family", list(EXPECTED))
def test_each_family_implements_the_protocol(family):
    model = random_model(_configs()[family], std=0.2)
    assert isinstance(model, DiffusionModel)
    shift, rule, conf, codes, vision = EXPECTED[family]
    assert model.logits_shift == shift and model.default_rule == rule
    assert model.confidence_dtype == conf and model.image_codes == codes
    assert (model.vision is not None) == vision
    assert model.forward_kwargs <= FORWARD_KWARGS and "attention_mask" in model.forward_kwargs
    assert model.context_length == 512
    for tensor in ("down", "gate"):  # the probe's hook points: the MLP's down / gate proj
        point = model.probe_point(len(model.layers) - 1, tensor)
        assert isinstance(point, nn.Linear)
        hidden = point.in_features if tensor == "down" else point.out_features
        assert hidden > point.out_features if tensor == "down" else hidden > point.in_features
    assert isinstance(model.sampling_defaults({}, None)["gen_length"], int)


def test_llada_v_declares_its_banned_tokens_and_system_prompt():
    from seer.models.llada_v import LLADA_V_SYSTEM, LLaDAVModelLM

    assert LLaDAVModelLM.banned_token_names and LLaDAVModelLM.system_prompt == LLADA_V_SYSTEM


def test_architectures_are_imported_only_when_used_and_no_demo():
    """The loader finds a class by model_type through a table of module names (mlx-lm's
    `_get_classes`); importing it, or loading LLaDA, imports no other architecture; the models
    package and the pipeline import nothing of the demo. One subprocess (imports are slow)."""
    code = (
        "import sys; from seer.models import loader; import seer.lm, seer.models.factory;"
        "mods = lambda: {m for m in sys.modules if m.startswith('seer.models.')};"
        "before = mods(); loader.build_model(seer.models.configs.llada_config(64, "
        "mask_token_id=2, eos_token_id=1)); print(sorted(before)); print(sorted(mods() - before));"
        "print([m for m in sys.modules"
        " if m.startswith(('seer.demo', 'training', 'synthetic'))])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, added, demo = out.stdout.splitlines()
    archs = ("dream", "lavida", "llada_v", "mmada", "llada'")
    assert not any(a in before for a in archs), before
    assert "seer.models.llada'" in added and not any(a in added for a in archs[:4]), added
    assert demo == "[]"


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_every_table_entry_names_real_classes(name):
    cfg_cls, model_cls = get_classes({"architectures": [name]})
    assert hasattr(cfg_cls, "from_dict") and issubclass(model_cls, nn.Module)
