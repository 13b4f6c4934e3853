"""The Llama / Qwen2 decoder layout, shared by Dream (Qwen2) and LLaDA-V (Llama names).

Both checkpoints name their language-model weights the same way:

    model.embed_tokens.weight                        (V, D)
    model.layers.{i}.input_layernorm.weight          (D,)
    model.layers.{i}.self_attn.{q,k,v,o}_proj.weight (+ .bias where `ProjBias` says so)
    model.layers.{i}.post_attention_layernorm.weight (D,)
    model.layers.{i}.mlp.{gate,up,down}_proj.weight
    model.norm.weight                                (D,)
    lm_head.weight                                   (V, D), absent with tied embeddings

They differ only in which attention projections carry a bias (Qwen2: q/k/v; Llama: all four or
none, by `attention_bias`), which each model states with a `ProjBias`. Numerics are the official
ones of both: RMS norm in float32, rotary cos/sin cast to the activation dtype before the
product, SiLU-gated MLP. The architecture files (`dream.py`, `llada_v.py`) subclass `LlamaLayoutLM`
and add what is theirs (logits shift, vision modules, banned tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from seer.models.common import BidirectionalLM, RMSNorm, Rotary, self_attention


class LlamaLayoutConfig(Protocol):
    """The config fields the shared modules read (Dream's and LLaDA-V's configs have them)."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    hidden_act: str
    rms_norm_eps: float
    rope_theta: float
    tie_word_embeddings: bool
    max_position_embeddings: int

    @property
    def kv_heads(self) -> int: ...


# config.json fields without a default in either model
REQUIRED_FIELDS = (
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
)


def require_fields(raw: dict, model: str) -> None:
    """Raise `ValueError` naming the `REQUIRED_FIELDS` that config.json `raw` lacks."""
    missing = [k for k in REQUIRED_FIELDS if k not in raw]
    if missing:
        raise ValueError(f"{model} config.json lacks required field(s) {missing}")


def check_heads_and_act(cfg: LlamaLayoutConfig, label: str) -> None:
    """Raise `ValueError` unless the heads split the width, the KV heads divide the heads and
    the MLP activation is SiLU (`label` starts the activation's message)."""
    if cfg.hidden_size % cfg.num_attention_heads:
        raise ValueError(
            f"hidden_size {cfg.hidden_size} is not divisible by num_attention_heads "
            f"{cfg.num_attention_heads}"
        )
    if cfg.num_attention_heads % cfg.kv_heads:
        raise ValueError("num_attention_heads is not a multiple of num_key_value_heads")
    if cfg.hidden_act != "silu":
        raise ValueError(f"{label} hidden_act={cfg.hidden_act!r} is not supported")


@dataclass(frozen=True, slots=True)
class ProjBias:
    """Which attention projections carry a bias (and so a `.bias` checkpoint key)."""

    qkv: bool  # q_proj, k_proj, v_proj
    o: bool  # o_proj


class LlamaAttention(nn.Module):
    """`self_attn.{q,k,v,o}_proj`; the product itself is `common.self_attention`."""

    def __init__(self, cfg: LlamaLayoutConfig, bias: ProjBias) -> None:
        super().__init__()
        d, hd = cfg.hidden_size, cfg.hidden_size // cfg.num_attention_heads
        self.n_heads, self.n_kv_heads = cfg.num_attention_heads, cfg.kv_heads
        self.q_proj = nn.Linear(d, d, bias=bias.qkv)
        self.k_proj = nn.Linear(d, cfg.kv_heads * hd, bias=bias.qkv)
        self.v_proj = nn.Linear(d, cfg.kv_heads * hd, bias=bias.qkv)
        self.o_proj = nn.Linear(d, d, bias=bias.o)


class LlamaMLP(nn.Module):
    """`mlp.{gate,up,down}_proj`: down(silu(gate(x)) * up(x))."""

    def __init__(self, cfg: LlamaLayoutConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    """`model.layers.{i}`: pre-norm attention and MLP blocks, each with a residual."""

    _rot: Rotary  # set by LlamaLayoutLM: one shared instance, not registered per layer

    def __init__(self, cfg: LlamaLayoutConfig, bias: ProjBias) -> None:
        super().__init__()
        self.self_attn = LlamaAttention(cfg, bias)
        self.mlp = LlamaMLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    @property
    def down_proj(self) -> nn.Linear:  # the probe's hook point (input = act(gate) * up)
        return self.mlp.down_proj

    @property
    def gate_proj(self) -> nn.Linear:
        return self.mlp.gate_proj

    @property
    def mlp_act(self) -> nn.Module:  # the activation applied to gate_proj's output
        return self.mlp.act_fn

    def forward(self, x, cos_sin, mask, kv=None):
        a = self.self_attn
        proj = (a.q_proj, a.k_proj, a.v_proj, a.o_proj)
        h = x + self_attention(
            self.input_layernorm(x), proj, a.n_heads, a.n_kv_heads, self._rot, cos_sin, mask, kv
        )
        return h + self.mlp(self.post_attention_layernorm(h))


class LlamaTrunk(nn.Module):
    """`model.*`: embeddings, decoder layers, final norm. Multimodal models add their vision
    modules (`vision_tower`, `mm_projector`, `image_newline`) here, under the official names."""

    def __init__(self, cfg: LlamaLayoutConfig, bias: ProjBias) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        layers = (LlamaDecoderLayer(cfg, bias) for _ in range(cfg.num_hidden_layers))
        self.layers = nn.ModuleList(layers)
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class LlamaLayoutLM(BidirectionalLM):
    """`model.*` + `lm_head` (unless tied) + one rotary embedding shared by the layers."""

    config: LlamaLayoutConfig

    def __init__(self, cfg: LlamaLayoutConfig, bias: ProjBias) -> None:
        super().__init__()
        self.config = cfg
        self.model = LlamaTrunk(cfg, bias)
        if not cfg.tie_word_embeddings:
            self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        head_dim = cfg.hidden_size // cfg.num_attention_heads
        self.rotary = Rotary(head_dim, cfg.rope_theta, full_precision=False)
        for layer in self.model.layers:
            object.__setattr__(layer, "_rot", self.rotary)  # shared, not registered twice

    @property
    def context_length(self) -> int:
        return self.config.max_position_embeddings

    def _parts(self):
        head = None if self.config.tie_word_embeddings else self.lm_head
        return self.model.embed_tokens, self.model.layers, self.model.norm, head
