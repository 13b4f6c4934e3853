"""LLaDA-V (GSAI-ML/LLaDA-V): the language model, LLaDA converted to the Llama layout.

LLaDA-V is a LLaVA-NeXT model (SigLIP2 tower, `mlp2x_gelu` projector, anyres tiling) whose
language model is LLaDA-8B-Instruct with its weights renamed by the official
`llada_v_prepare/rename_checkpoint.py` (wte -> model.embed_tokens, attn_out -> self_attn.o_proj,
ff_proj/up_proj/ff_out -> mlp.gate_proj/up_proj/down_proj, attn_norm/ff_norm ->
input_layernorm/post_attention_layernorm, ln_f -> model.norm, transformer.ff_out -> lm_head).
The official module is `train/llava/model/language_model/modeling_llada.py` (a Llama copy with
`is_causal=False`). Checkpoint keys of the language model:

    model.embed_tokens.weight                       (V, D)
    model.layers.{i}.input_layernorm.weight         (D,)
    model.layers.{i}.self_attn.{q,k,v,o}_proj.weight (bias only with attention_bias)
    model.layers.{i}.post_attention_layernorm.weight
    model.layers.{i}.mlp.{gate,up,down}_proj.weight
    model.norm.weight
    lm_head.weight                                  (V, D)

The rest of a LLaDA-V checkpoint is the vision side, under `model.`: `model.vision_tower.
vision_tower.vision_model.*` (LLaVA's SigLIP, last encoder layer already removed, no pooling
head), `model.mm_projector.{0,2}.{weight,bias}` and `model.image_newline`. This file builds only
the language model; the vision modules are attached to `self.model` by the vision path, which
finds its settings in `config.vision` (every `mm_*` / image field of config.json, parsed here).
Until then a full LLaDA-V folder does not load strictly through `seer.models.loader.load_model`
(its vision keys are unexpected); `load_language_model` loads the language-model keys strictly and
returns the names of the other keys.

Numerics follow the official Llama code: RMS norm in float32, rotary cos/sin cast to the
activation dtype before the product (unlike original-layout LLaDA's `rope_full_precision`).
`pretraining_tp` only splits the official matmuls into slices; the sum is the same, so any value
is accepted. The special ids are not in config.json (`bos_token_id` there is a Llama-3 leftover);
the loader takes the mask/EOS/EoT ids from the tokenizer by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

import torch
from torch import nn

from seer.errors import CheckpointError
from seer.models.common import BidirectionalLM, RMSNorm, Rotary, self_attention

ARCHITECTURE = "llava_llada"
# Checkpoint keys that belong to the language model; everything else is the vision side.
LM_KEY_PREFIXES = ("model.embed_tokens.", "model.layers.", "model.norm.", "lm_head.")


def is_language_model_key(name: str) -> bool:
    return name.startswith(LM_KEY_PREFIXES)


@dataclass(slots=True)
class LLaDAVVisionConfig:
    """The vision fields of a LLaDA-V config.json (LLaVA-NeXT names), kept for the vision path."""

    mm_vision_tower: str  # tower folder, relative to the checkpoint or absolute
    mm_projector_type: str = "mlp2x_gelu"  # Linear(mm_hidden, D) GELU Linear(D, D)
    mm_hidden_size: int = 1152  # tower width (SigLIP so400m)
    mm_vision_select_layer: int = -2  # the official tower drops its last layer instead
    mm_vision_select_feature: str = "patch"  # all 729 patch tokens (SigLIP has no CLS)
    mm_patch_merge_type: str = "spatial_unpad"  # crops -> grid, unpad, image_newline per row
    image_aspect_ratio: str = "anyres_max_4"  # anyres tiling; >4 crops' worth is downsampled
    image_grid_pinpoints: list | str | None = None  # [[w, h], ...] candidate resolutions
    mm_newline_position: str = "grid"  # used for video only
    mm_spatial_pool_mode: str = "bilinear"  # used for video only
    mm_spatial_pool_stride: int | None = None  # used for video only
    mm_use_im_start_end: bool = False  # no <im_start>/<im_end> tokens around images
    mm_use_im_patch_token: bool = False  # no <im_patch> tokens
    tokenizer_model_max_length: int | None = None  # spliced prompts are cut to this length
    tokenizer_padding_side: str = "right"  # side of the batch padding after splicing

    @classmethod
    def from_dict(cls, raw: dict) -> LLaDAVVisionConfig | None:
        tower = raw.get("mm_vision_tower", raw.get("vision_tower"))
        if tower is None:
            return None
        names = {f.name for f in fields(cls)} - {"mm_vision_tower"}
        cfg = cls(mm_vision_tower=str(tower), **{k: raw[k] for k in names if k in raw})
        if cfg.mm_projector_type != "mlp2x_gelu":
            raise ValueError(
                f"LLaDA-V mm_projector_type={cfg.mm_projector_type!r} is not supported"
            )
        if cfg.mm_hidden_size < 1:
            raise ValueError(f"mm_hidden_size must be >= 1, got {cfg.mm_hidden_size}")
        if cfg.mm_use_im_start_end:
            raise ValueError("LLaDA-V mm_use_im_start_end=true is not supported")
        return cfg


@dataclass(slots=True)
class LLaDAVConfig:
    """The fields of LLaDA-V's config.json (Llama names); defaults are the official class's."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int | None = None
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    attention_bias: bool = False
    pretraining_tp: int = 1
    tie_word_embeddings: bool = False
    mask_token_id: int | None = None  # not in the released config; the tokenizer names it
    eos_token_id: int | None = None
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    vision: LLaDAVVisionConfig | None = None  # the mm_* fields; None for a text-only folder
    extra: dict = field(default_factory=dict)  # every other field of config.json, verbatim

    @classmethod
    def from_dict(cls, raw: dict) -> LLaDAVConfig:
        required = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers")
        missing = [k for k in (*required, "num_attention_heads") if k not in raw]
        if missing:
            raise ValueError(f"LLaDA-V config.json lacks required field(s) {missing}")
        names = {f.name for f in fields(cls)} - {"extra", "vision"}
        vision = LLaDAVVisionConfig.from_dict(raw)
        vision_names = {f.name for f in fields(LLaDAVVisionConfig)} | {"vision_tower"}
        extra = {k: v for k, v in raw.items() if k not in names and k not in vision_names}
        cfg = cls(**{k: v for k, v in raw.items() if k in names}, vision=vision, extra=extra)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                     "num_attention_heads"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads "
                f"{self.num_attention_heads}"
            )
        if self.num_attention_heads % self.kv_heads:
            raise ValueError("num_attention_heads is not a multiple of num_key_value_heads")
        if self.hidden_act != "silu":
            raise ValueError(f"LLaDA-V hidden_act={self.hidden_act!r} is not supported")
        if self.rope_scaling not in (None, {}):
            raise ValueError(f"LLaDA-V rope_scaling={self.rope_scaling!r} is not supported")
        if self.pretraining_tp < 1:
            raise ValueError(f"pretraining_tp must be >= 1, got {self.pretraining_tp}")

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads


class LLaDAVAttention(nn.Module):
    def __init__(self, cfg: LLaDAVConfig) -> None:
        super().__init__()
        d, hd = cfg.hidden_size, cfg.hidden_size // cfg.num_attention_heads
        self.n_heads, self.n_kv_heads = cfg.num_attention_heads, cfg.kv_heads
        self.q_proj = nn.Linear(d, d, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(d, cfg.kv_heads * hd, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(d, cfg.kv_heads * hd, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(d, d, bias=cfg.attention_bias)


class LLaDAVMLP(nn.Module):
    def __init__(self, cfg: LLaDAVConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LLaDAVDecoderLayer(nn.Module):
    def __init__(self, cfg: LLaDAVConfig) -> None:
        super().__init__()
        self.self_attn = LLaDAVAttention(cfg)
        self.mlp = LLaDAVMLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    @property
    def down_proj(self) -> nn.Linear:  # the probe's hook point (input = act(gate) * up)
        return self.mlp.down_proj

    @property
    def gate_proj(self) -> nn.Linear:
        return self.mlp.gate_proj

    def forward(self, x, cos_sin, mask, kv=None):
        a = self.self_attn
        proj = (a.q_proj, a.k_proj, a.v_proj, a.o_proj)
        h = x + self_attention(
            self.input_layernorm(x), proj, a.n_heads, a.n_kv_heads, self._rot, cos_sin, mask, kv
        )
        return h + self.mlp(self.post_attention_layernorm(h))


class _LLaDAVBase(nn.Module):
    """`model.*`: the language model's trunk; the vision path adds `vision_tower`,
    `mm_projector` and `image_newline` here, under their official names."""

    def __init__(self, cfg: LLaDAVConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(LLaDAVDecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class LLaDAVModelLM(BidirectionalLM):
    """LLaDA-V's language model; `model(inputs_embeds=...).logits` is (B, L, V)."""

    def __init__(self, cfg: LLaDAVConfig) -> None:
        super().__init__()
        self.config = cfg
        self.model = _LLaDAVBase(cfg)
        if not cfg.tie_word_embeddings:
            self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        head_dim = cfg.hidden_size // cfg.num_attention_heads
        self.rotary = Rotary(head_dim, cfg.rope_theta, full_precision=False)
        for layer in self.model.layers:
            object.__setattr__(layer, "_rot", self.rotary)  # shared, not registered twice

    @property
    def layers(self) -> nn.ModuleList:
        return self.model.layers

    def _parts(self):
        head = None if self.config.tie_word_embeddings else self.lm_head
        return self.model.embed_tokens, self.model.layers, self.model.norm, head


def load_language_model(
    path: str | Path, dtype=None, device="cpu"
) -> tuple[LLaDAVModelLM, list[str]]:
    """Load the language model of a LLaDA-V folder strictly; return it and the other keys.

    Every language-model key (`LM_KEY_PREFIXES`) must be present with the right shape and no
    other language-model key may appear; the vision keys (tower, projector, image_newline) are
    not loaded and are returned, sorted, so the caller can check or load them.
    """
    from seer.models.loader import (
        _check_keys,
        _open,
        read_config,
        resolve_device,
        resolve_dtype,
        weight_files,
    )

    folder, raw = read_config(path)
    try:
        cfg = LLaDAVConfig.from_dict(raw)
    except (ValueError, TypeError, ZeroDivisionError) as e:
        raise CheckpointError(f"config.json: {e}") from None
    with torch.device("meta"):
        model = LLaDAVModelLM(cfg)
    shards = weight_files(folder)
    lm = {k: v for k, v in shards.items() if is_language_model_key(k)}
    _check_keys(model, lm)
    model = model.to(resolve_dtype(dtype)).to_empty(device=resolve_device(device))
    params = dict(model.state_dict(keep_vars=True))
    bad = []
    for shard in sorted(set(lm.values())):
        with _open(shard) as f:
            for name in (k for k, s in lm.items() if s == shard):
                t = f.get_tensor(name)
                if tuple(t.shape) != tuple(params[name].shape):
                    bad.append(f"{name}: {tuple(t.shape)} vs {tuple(params[name].shape)}")
                    continue
                with torch.no_grad():
                    params[name].copy_(t)
    if bad:
        raise CheckpointError(f"{len(bad)} tensor(s) have the wrong shape, e.g. {bad[:3]}")
    return model.eval(), sorted(set(shards) - set(lm))
