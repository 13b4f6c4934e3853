"""Make checkpoints in the official layouts: random or trained weights for a config of
`seer.models.configs`, saved as config.json + model.safetensors (+ tokenizer files) that
`seer.load` reads.

Used by `seer make-checkpoint`, by the tests (tiny models) and by the training recipe of the
built-in model, so every model we produce goes through the same loader as a downloaded one.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import torch
from safetensors.torch import save_file

from seer.errors import CheckpointError
from seer.models.configs import (
    dream_config,
    lavida_config,
    llada_config,
)
from seer.models.loader import build_model, init_buffers
from seer.models.tokens import load_tokenizer

__all__ = [
    "ARCHS",
    "make_random_checkpoint",
    "random_magvit",
    "random_model",
    "save_checkpoint",
    "save_magvit",
]


def random_magvit(raw: dict, seed: int = 0):
    """A `MagvitV2` for `raw`: PyTorch's default conv init, norms 1 + 0.1 N(0, 1)."""
    from seer.models.magvit import MagvitConfig, MagvitV2

    torch.manual_seed(seed)
    model = MagvitV2(MagvitConfig.from_dict(raw))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in model.named_parameters():
            if "norm" in name:
                base = 1.0 if name.endswith("weight") else 0.0
                t.copy_(base + 0.1 * torch.randn(t.shape, generator=g))
    return model.eval()


def save_magvit(model, raw: dict, folder: str | Path) -> Path:
    """Write a MAGVIT-v2 folder: config.json + model.safetensors (official key names)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def random_model(raw: dict, seed: int = 0, std: float = 0.02):
    """A model for `raw` with N(0, std) weights and unit norms (std ~0.2 spreads the logits)."""
    model = build_model(raw).to_empty(device="cpu")
    init_buffers(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in model.state_dict(keep_vars=True).items():
            if name.endswith(
                (
                    "norm.weight",
                    "ln_f.weight",
                    "layer_norm1.weight",
                    "layer_norm2.weight",
                    "post_layernorm.weight",
                )
            ):
                t.fill_(1.0)
            elif name.endswith("bias"):
                t.zero_()
            else:
                t.copy_(torch.randn(t.shape, generator=g) * std)
    return model.eval()


def save_checkpoint(model, raw: dict, folder: str | Path, dtype=torch.float32) -> Path:
    """Write config.json + model.safetensors in the official layout."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


ARCHS = ("llada", "dream", "lavida-llada", "lavida-dream")
RANDOM_WINDOW = 64  # default answer window of `make_random_checkpoint` models
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
# the tokenizer of the random models: builtin-v1's (a small word-level vocabulary), its
# files shipped alone so `seer make-checkpoint` needs no model in the package
TOKENIZER = Path(str(resources.files("seer") / "assets" / "tokenizer"))


def make_random_checkpoint(
    arch: str,
    folder: str | Path,
    layers: int = 2,
    width: int = 64,
    seed: int = 0,
    overwrite: bool = False,
) -> Path:
    """A random model of `arch` with the first built-in model's word-level tokenizer (the
    package's `assets/tokenizer`: `builtin-v1`'s files; the special ids are its tokens'),
    ready for `seer.load`.

    The config is validated before anything is written, so a bad size leaves no folder behind.
    A folder that holds anything is refused (its files would be overwritten) unless
    `overwrite`, which replaces the files of the same names.
    """
    folder = Path(folder)
    if not overwrite and folder.is_dir() and any(folder.iterdir()):
        raise CheckpointError(
            f"{folder} is not empty; its files would be overwritten: choose "
            "a new folder (or --force to replace them)"
        )
    source = TOKENIZER
    tok = load_tokenizer(source)
    ids = {
        "mask_token_id": tok.mask_token_id,
        "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
    }
    vocab = len(tok)
    lm = arch.removeprefix("lavida-")
    if lm == "llada":
        raw = llada_config(vocab, d_model=width, n_layers=layers, **ids)
    elif lm == "dream":
        raw = dream_config(vocab, hidden_size=width, num_hidden_layers=layers, **ids)
        raw["bos_token_id"] = tok.bos_token_id
    if lm not in ("llada", "dream") or arch not in ARCHS:
        raise CheckpointError(f"unknown architecture {arch!r}; choose one of {', '.join(ARCHS)}")
    if arch.startswith("lavida-"):
        raw = lavida_config(raw, lm)
    model = random_model(raw, seed=seed, std=0.2)  # raises CheckpointError on a bad size
    folder.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, folder / name)
    save_checkpoint(model, raw, folder)
    # a random model follows no training recipe: a small window (its context is 512), greedy
    # (reproducible answers), no cache, the rule's own schedule; the rest stays the family's
    gen = {"max_new_tokens": RANDOM_WINDOW, "temperature": 0.0, "cache": "none", "schedule": None}
    (folder / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    return folder
