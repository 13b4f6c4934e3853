"""What the loader refuses in one `CheckpointError` line: a device that cannot run a model here,
a vision folder whose JSON files are not JSON, garbage `image_grid_pinpoints`, and weights
stored as integers where the model holds floats."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from seer.errors import CheckpointError
from seer.models.loader import builtin_path, load_model, read_config, resolve_device


@pytest.mark.parametrize("device", ["meta", "mps", "xla", "nonsense"])
def test_a_device_that_cannot_run_a_model_is_refused(device):
    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has mps")
    with pytest.raises(CheckpointError, match="use one of: cpu") as e:
        resolve_device(device)
    assert "\n" not in str(e.value)


def test_cpu_is_accepted():
    assert resolve_device("cpu").type == "cpu"


@pytest.fixture
def vqa(tmp_path):
    return shutil.copytree(builtin_path("builtin-vqa"), tmp_path / "m")


def _edit(folder, **changes):
    raw = json.loads((folder / "config.json").read_text())
    raw.update(changes)
    (folder / "config.json").write_text(json.dumps(raw))
    return raw


def test_a_preprocessor_config_that_is_not_json(vqa):
    (vqa / "preprocessor_config.json").write_text("{nope")
    with pytest.raises(CheckpointError, match="preprocessor_config.json is not valid JSON"):
        read_config(vqa)


def test_a_vision_tower_config_that_is_not_json(vqa):
    raw = json.loads((vqa / "config.json").read_text())
    raw.pop("vision_config")
    raw["mm_vision_tower"] = "tower"
    (vqa / "config.json").write_text(json.dumps(raw))
    (vqa / "tower").mkdir()
    (vqa / "tower" / "config.json").write_text("[1, 2")
    with pytest.raises(CheckpointError, match="tower/config.json is not valid JSON"):
        read_config(vqa)


@pytest.mark.parametrize(
    "value", ["garbage", "(ax1)", "(1x1),...,(99999x99999)", 7, [[1], [2, 3, 4]], [[0, 0]], []]
)
def test_garbage_pinpoints(vqa, value):
    _edit(vqa, image_grid_pinpoints=value, image_aspect_ratio="anyres")
    with pytest.raises(CheckpointError, match="image_grid_pinpoints must be a list of"):
        read_config(vqa)


def test_good_pinpoints_pass(vqa):
    _edit(vqa, image_grid_pinpoints=[[128, 128], [128, 256]])
    read_config(vqa)


def test_integer_weights_where_floats_belong(tmp_path):
    folder = shutil.copytree(builtin_path("builtin-v1"), tmp_path / "m")
    tensors = load_file(folder / "model.safetensors")
    name = sorted(tensors)[1]
    tensors[name] = tensors[name].to(torch.int32)
    save_file(tensors, folder / "model.safetensors")
    with pytest.raises(CheckpointError, match=f"{name} is stored as I32"):
        load_model(folder)


def test_a_retired_builtin_model_resolves_in_a_checkout_and_is_named_elsewhere(
    tmp_path, monkeypatch
):
    """The first built-in models live in the repository, not the wheel: from a checkout their
    names find checkpoints/<name>; from an installed package (no checkpoints/ beside it)
    one line says where they live, and the shipped models still resolve."""
    from seer import sampling

    assets = sampling.builtin_folder("builtin").parent  # what the wheel ships: its models only
    assert {p.parent.name for p in assets.glob("*/config.json")} == set(sampling.SHIPPED_MODELS)
    root = assets.parents[2]  # src/seer/assets
    assert builtin_path("builtin-v1") == root / "checkpoints" / "builtin-v1"
    assert read_config("builtin-v1")[0].name == "builtin-v1"  # the folder's name: the lm's name
    assert (builtin_path("builtin-vqa-v1") / "model.safetensors").is_file()
    site = tmp_path / "site-packages" / "seer"
    site.mkdir(parents=True)
    monkeypatch.setattr(sampling.resources, "files", lambda package: site)
    assert builtin_path("builtin") == site / "assets" / "builtin"
    for name in sampling.RETIRED_MODELS:
        with pytest.raises(CheckpointError, match=f"checkpoints/{name}") as e:
            read_config(name)
        assert "\n" not in str(e.value) and "not in the package" in str(e.value)
    with pytest.raises(CheckpointError, match="unknown built-in model"):
        builtin_path("builtin-v3")
