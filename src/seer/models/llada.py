"""LLaDA (GSAI-ML/LLaDA-8B-Base / -Instruct, and the models on its layout: MMaDA, LaViDa-LLaDA).

Module tree and parameter names follow the official OLMo-derived checkpoint so a downloaded
folder loads with strict key matching:

    model.transformer.wte.weight                 token embedding
    model.transformer.blocks.{i}.attn_norm|ff_norm.weight
    model.transformer.blocks.{i}.q_proj|k_proj|v_proj|attn_out.weight
    model.transformer.blocks.{i}.ff_proj|up_proj|ff_out.weight     gate, up, down projections
    model.transformer.ln_f.weight
    model.transformer.ff_out.weight              LM head (absent when weight_tying)

Block ("llama" block type): h = x + attn_out(attn(attn_norm(x)));
out = h + ff_out(act(ff_proj(ff_norm(h))) * up_proj(ff_norm(h))). The input of `ff_out` is the
MLP activation that Seer's probe reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import torch
from torch import nn

from seer.models.common import BidirectionalLM, RMSNorm, Rotary, self_attention


@dataclass(slots=True)
class LLaDAConfig:
    """The fields of LLaDA's config.json; defaults are those of the official `ModelConfig`."""

    d_model: int
    n_heads: int
    n_layers: int
    vocab_size: int
    mlp_hidden_size: int | None = None
    mlp_ratio: int = 4
    n_kv_heads: int | None = None
    embedding_size: int | None = 50304
    max_sequence_length: int = 1024
    rope: bool = False
    rope_theta: float = 10000.0
    rope_full_precision: bool = True
    rms_norm_eps: float = 1e-5
    layer_norm_type: str = "default"
    layer_norm_with_affine: bool = True
    bias_for_layer_norm: bool | None = None
    activation_type: str = "swiglu"
    block_type: str = "sequential"
    block_group_size: int = 1
    include_bias: bool = True
    include_qkv_bias: bool | None = False
    weight_tying: bool = True
    attention_layer_norm: bool = False
    alibi: bool = False
    input_emb_norm: bool = False
    scale_logits: bool = False
    mask_token_id: int | None = None
    eos_token_id: int | None = None
    pad_token_id: int | None = None
    extra: dict = field(default_factory=dict)  # every other field of config.json, kept verbatim

    @classmethod
    def from_dict(cls, raw: dict) -> LLaDAConfig:
        names = {f.name for f in fields(cls)} - {"extra"}
        missing = [k for k in ("d_model", "n_heads", "n_layers", "vocab_size") if k not in raw]
        if missing:
            raise ValueError(f"LLaDA config.json lacks required field(s) {missing}")
        known = {k: v for k, v in raw.items() if k in names}
        cfg = cls(**known, extra={k: v for k, v in raw.items() if k not in names})
        cfg.validate()
        return cfg

    def validate(self) -> None:
        unsupported = {
            "block_type": (self.block_type, "llama"),
            "layer_norm_type": (self.layer_norm_type, "rms"),
            "activation_type": (self.activation_type, "silu"),
            "block_group_size": (self.block_group_size, 1),
            "rope": (self.rope, True),
            "alibi": (self.alibi, False),
            "attention_layer_norm": (self.attention_layer_norm, False),
        }
        for name, (value, wanted) in unsupported.items():
            if value != wanted:
                raise ValueError(
                    f"LLaDA config {name}={value!r} is not supported (released LLaDA models use "
                    f"{wanted!r})"
                )
        for name in ("d_model", "n_heads", "n_layers", "vocab_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.n_heads % self.kv_heads:
            raise ValueError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads")

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def hidden(self) -> int:
        return self.mlp_hidden_size or self.mlp_ratio * self.d_model

    @property
    def num_embeddings(self) -> int:
        return self.embedding_size or self.vocab_size

    @property
    def num_hidden_layers(self) -> int:  # transformers-style aliases
        return self.n_layers

    @property
    def hidden_size(self) -> int:
        return self.d_model


class LLaDABlock(nn.Module):
    def __init__(self, cfg: LLaDAConfig) -> None:
        super().__init__()
        d, hd = cfg.d_model, cfg.d_model // cfg.n_heads
        qkv_bias = bool(cfg.include_bias or cfg.include_qkv_bias)
        self.n_heads, self.n_kv_heads = cfg.n_heads, cfg.kv_heads
        self.attn_norm = RMSNorm(d, cfg.rms_norm_eps, cfg.layer_norm_with_affine)
        self.ff_norm = RMSNorm(d, cfg.rms_norm_eps, cfg.layer_norm_with_affine)
        self.q_proj = nn.Linear(d, d, bias=qkv_bias)
        self.k_proj = nn.Linear(d, cfg.kv_heads * hd, bias=qkv_bias)
        self.v_proj = nn.Linear(d, cfg.kv_heads * hd, bias=qkv_bias)
        self.attn_out = nn.Linear(d, d, bias=cfg.include_bias)
        self.ff_proj = nn.Linear(d, cfg.hidden, bias=cfg.include_bias)  # gate
        self.up_proj = nn.Linear(d, cfg.hidden, bias=cfg.include_bias)
        self.ff_out = nn.Linear(cfg.hidden, d, bias=cfg.include_bias)  # down (probe point)
        self.act = nn.SiLU()

    @property
    def down_proj(self) -> nn.Linear:
        return self.ff_out

    @property
    def gate_proj(self) -> nn.Linear:
        return self.ff_proj

    @property
    def mlp_act(self) -> nn.Module:  # the activation applied to gate_proj's output
        return self.act

    def forward(self, x, cos_sin, mask, kv=None):
        proj = (self.q_proj, self.k_proj, self.v_proj, self.attn_out)
        h = x + self_attention(
            self.attn_norm(x), proj, self.n_heads, self.n_kv_heads, self._rot, cos_sin, mask, kv
        )
        u = self.ff_norm(h)
        return h + self.ff_out(self.act(self.ff_proj(u)) * self.up_proj(u))


class _Trunk(nn.Module):
    """`model.transformer.*`: the published keys, in the published order."""

    def __init__(self, cfg: LLaDAConfig) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.num_embeddings, cfg.d_model)
        self.blocks = nn.ModuleList(LLaDABlock(cfg) for _ in range(cfg.n_layers))
        self.ln_f = RMSNorm(cfg.d_model, cfg.rms_norm_eps, cfg.layer_norm_with_affine)
        self.ff_out: nn.Linear | None = None  # the LM head, absent when weight_tying
        if not cfg.weight_tying:
            self.ff_out = nn.Linear(cfg.d_model, cfg.num_embeddings, bias=cfg.include_bias)


class _Transformer(nn.Module):
    def __init__(self, cfg: LLaDAConfig) -> None:
        super().__init__()
        self.transformer = _Trunk(cfg)


class LLaDAModelLM(BidirectionalLM):
    """LLaDA as a plain `nn.Module`; `model(input_ids, attention_mask).logits` is (B, L, V)."""

    # ML-GSAI/LLaDA's README points at `generate()` in generate.py; called with its own
    # defaults: steps = gen_length = block_length = 128, temperature 0, cfg 0, low_confidence
    # (its __main__ and chat.py pass block_length=32 instead: give block_length=32 for that).
    official_defaults = {"gen_length": 128, "temperature": 0.0, "remasking": "low_confidence"}

    config: LLaDAConfig

    def __init__(self, cfg: LLaDAConfig) -> None:
        super().__init__()
        self.config = cfg
        self.model = _Transformer(cfg)
        rotary = Rotary(cfg.d_model // cfg.n_heads, cfg.rope_theta, cfg.rope_full_precision)
        self.rotary = rotary
        for block in self.model.transformer.blocks:
            object.__setattr__(block, "_rot", rotary)  # shared, not registered twice

    @property
    def context_length(self) -> int:
        return self.config.max_sequence_length

    def _parts(self) -> tuple[nn.Embedding, nn.ModuleList, nn.Module, nn.Linear | None]:
        t = self.model.transformer
        return t.wte, t.blocks, t.ln_f, t.ff_out

    def _scale_embeddings(self, h: torch.Tensor) -> torch.Tensor:
        return h * (self.config.d_model**0.5) if self.config.input_emb_norm else h

    def _scale_logits(self, logits: torch.Tensor) -> torch.Tensor:
        return logits / math.sqrt(self.config.d_model) if self.config.scale_logits else logits
