"""Model shapes: what a forward's cost depends on, read from a config.json (weights not needed).

`shape_of(raw)` reads LLaDA's OLMo names or Llama/Qwen names; the built-in names are the
released models' configs (`seer.models.configs`) with their image positions per request:
- LaViDa (LLaDA or Dream LM + SigLIP so400m): anyres views of 729 patches, pooled 2x2 to 196
  each; `tiles` views (default 5: the base view and a 2x2 grid) -> 980 positions, and the SigLIP
  tower (~400 M weights) run once per request over every view's 729 patches.
- LLaDA-V (LLaDA-8B in Llama layout + SigLIP2 so400m, anyres_max_4, no pooling): 729 per view,
  5 views -> 3,645 positions.
- MMaDA-8B: the image as `num_vq_tokens` (1,024) MAGVIT codes in the prompt; no tower on the
  GPU's critical path beyond the tokenizer (priced as nothing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from seer.errors import SeerError

SIGLIP_PARAMS = 400e6  # siglip-so400m-patch14-384
SIGLIP_PATCHES = 729  # 27 x 27 patches of one 384 px view


@dataclass(slots=True, frozen=True)
class ModelShape:
    """What a forward's cost depends on."""

    name: str  # as printed in tables
    hidden: int  # hidden size
    layers: int  # transformer layers
    intermediate: int  # MLP width (SwiGLU: three matrices)
    vocab: int  # output rows
    kv_dim: int  # key/value width per layer (heads_kv x head_dim)
    image_tokens: int = 0  # positions an image adds to the prompt
    vision_flops: float = 0.0  # FLOPs once per request with an image (the vision tower)
    weight_bytes: float = 2.0  # bytes per weight (bf16: 2; int4: 0.5)

    @property
    def layer_params(self) -> int:
        """Weights of the layers: q, o (h^2 each), k, v (h x kv_dim each), SwiGLU (3 h I)."""
        h = self.hidden
        return self.layers * (2 * h * h + 2 * h * self.kv_dim + 3 * h * self.intermediate)

    @property
    def params(self) -> int:
        """Every weight a forward reads: the layers and the output layer (the embedding is a
        gather of a few rows, not a read of the table)."""
        return self.layer_params + self.hidden * self.vocab


def shape_of(raw: dict, name: str = "model", image_tokens: int | None = None) -> ModelShape:
    """A `ModelShape` from a config.json dict; one `SeerError` line if a size is missing."""

    def size(k: str) -> int:
        v = raw[k]
        ok = (
            isinstance(v, int | float)
            and not isinstance(v, bool)
            and v >= 1
            and float(v).is_integer()
        )
        if not ok:
            raise SeerError(f"{name}: config.json's {k} must be a positive integer, got {v!r}")
        return int(v)

    def pick(*keys: str) -> int:
        for k in keys:
            if raw.get(k) is not None:
                return size(k)
        raise SeerError(f"{name}: config.json has none of {', '.join(keys)}")

    h = pick("d_model", "hidden_size")
    heads = pick("n_heads", "num_attention_heads")
    kv = next((size(k) for k in ("n_kv_heads", "num_key_value_heads") if raw.get(k)), heads)
    vocab = pick("new_vocab_size", "vocab_size", "embedding_size")
    mlp_keys = ("mlp_hidden_size", "intermediate_size")
    if any(raw.get(k) is not None for k in mlp_keys) or raw.get("mlp_ratio") is None:
        mlp = pick(*mlp_keys)
    else:  # LLaDA's config may give the MLP width as a multiple of d_model (its default)
        mlp = h * size("mlp_ratio")
    if image_tokens is None:
        image_tokens = size("num_vq_tokens") if "num_vq_tokens" in raw else _image_tokens(raw)
    vision = 2 * SIGLIP_PARAMS * SIGLIP_PATCHES * 5 if "mm_vision_tower" in raw else 0.0
    return ModelShape(
        name,
        h,
        pick("n_layers", "num_hidden_layers"),
        mlp,
        vocab,
        kv * (h // heads),
        image_tokens,
        vision,
    )


def _image_tokens(raw: dict, tiles: int = 5) -> int:
    if "num_vq_tokens" in raw:  # MMaDA: the image as VQ codes
        return int(raw["num_vq_tokens"])
    if "mm_vision_tower" not in raw:
        return 0
    pooled = raw.get("mm_spatial_pool_mode") == "average"  # LaViDa: 2x2 average pooling
    return tiles * (196 if pooled else SIGLIP_PATCHES)


def builtin_shapes() -> dict[str, ModelShape]:
    """The released models, by name (config dicts from `seer.models.configs`)."""
    from seer.models import configs as c

    lavida_l = c.lavida_config(c.LLADA_8B, "llada", vision=_siglip_so400m())
    lavida_l["mm_spatial_pool_mode"] = "average"
    lavida_d = c.lavida_config(c.DREAM_7B, "dream", vision=_siglip_so400m())
    mmada = dict(c.LLADA_8B, **c.MMADA_8B)
    return {
        "llada-8b": shape_of(c.LLADA_8B, "LLaDA-8B"),
        "dream-7b": shape_of(c.DREAM_7B, "Dream-7B"),
        "lavida-llada": shape_of(lavida_l, "LaViDa-LLaDA"),
        "lavida-dream": shape_of(lavida_d, "LaViDa-Dream"),
        "llada-v": shape_of(c.LLADA_V_8B, "LLaDA-V"),
        "mmada-8b": shape_of(mmada, "MMaDA-8B"),
    }


def _siglip_so400m() -> dict:
    """siglip-so400m-patch14-384's sizes (the released tower)."""
    from seer.models.configs import siglip_config

    cfg = siglip_config(hidden_size=1152, layers=27, heads=16, image_size=384, patch=14)
    cfg["intermediate_size"] = 4304
    return cfg


def load_shape(model: str) -> ModelShape:
    """A built-in name (llada-8b, dream-7b, lavida-llada, lavida-dream, llada-v, mmada-8b) or a
    model folder / config.json path; one `SeerError` line otherwise."""
    shapes = builtin_shapes()
    if model.lower() in shapes:
        return shapes[model.lower()]
    path = Path(model)
    cfg = path / "config.json" if path.is_dir() else path
    if not cfg.is_file():
        raise SeerError(
            f"--model {model}: no config.json there and not a built-in name ({', '.join(shapes)})"
        )
    try:
        raw = json.loads(cfg.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise SeerError(f"--model {model}: cannot read {cfg}: {e}") from None
    if not isinstance(raw, dict):
        raise SeerError(f"--model {model}: {cfg} is not a JSON object")
    return shape_of(raw, path.name if path.is_dir() else path.parent.name)
