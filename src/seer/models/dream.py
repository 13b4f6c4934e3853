"""Dream (Dream-org/Dream-v0-Instruct-7B / -Base): a Qwen2 decoder with non-causal attention.

Key names are Qwen2's: `model.embed_tokens`, `model.layers.{i}.self_attn.{q,k,v,o}_proj`
(q/k/v with bias), `model.layers.{i}.mlp.{gate,up,down}_proj`, `model.layers.{i}.
{input,post_attention}_layernorm`, `model.norm`, `lm_head`; the modules are the Llama/Qwen2 ones
shared with LLaDA-V (`seer.models.llama_layout`). The forward returns the raw logits as the
official model does; the one-position shift (token j is predicted at position j-1) is declared
by `logits_shift = 1` and applied by the denoising loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from seer.models.llama_layout import (
    LlamaLayoutLM,
    ProjBias,
    check_heads_and_act,
    require_fields,
)


@dataclass(slots=True)
class DreamConfig:
    """The fields of Dream's config.json; defaults are those of the official `DreamConfig`."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int | None = None
    hidden_act: str = "silu"
    max_position_embeddings: int = 32768
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    tie_word_embeddings: bool = False
    use_sliding_window: bool = False
    mask_token_id: int | None = 151666
    pad_token_id: int | None = 151643
    eos_token_id: int | None = None
    bos_token_id: int | None = None
    extra: dict = field(default_factory=dict)  # every other field of config.json, kept verbatim

    @classmethod
    def from_dict(cls, raw: dict) -> DreamConfig:
        names = {f.name for f in fields(cls)} - {"extra"}
        require_fields(raw, "Dream")
        known = {k: v for k, v in raw.items() if k in names}
        cfg = cls(**known, extra={k: v for k, v in raw.items() if k not in names})
        for name in (
            "hidden_size",
            "num_attention_heads",
            "num_hidden_layers",
            "vocab_size",
            "intermediate_size",
        ):
            if getattr(cfg, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(cfg, name)}")
        check_heads_and_act(cfg, "Dream config")
        if cfg.rope_scaling not in (None, {}) and cfg.rope_scaling.get("type") != "default":
            raise ValueError(f"Dream config rope_scaling={cfg.rope_scaling!r} is not supported")
        if cfg.use_sliding_window:
            raise ValueError("Dream config use_sliding_window=true is not supported")
        return cfg

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads


# Qwen2's attention: q/k/v with bias, o without.
DREAM_BIAS = ProjBias(qkv=True, o=False)


# transformers 4.x `PretrainedConfig` keeps legacy generation attributes (top_k=50 among them);
# Dream's `diffusion_generate` builds its config with `DreamGenerationConfig.from_model_config(
# model.config)`, so it filters to the 50 most likely tokens unless the caller passes top_k
LEGACY_TOP_K = 50


def inherited_top_k(raw: dict) -> int | None:
    """The top_k Dream's sampler inherits from config.json (its legacy attribute, else 50)."""
    return raw.get("top_k", LEGACY_TOP_K)


class DreamModel(LlamaLayoutLM):
    """Dream as a plain `nn.Module`; `model(input_ids, attention_mask).logits` is (B, L, V)."""

    logits_shift = 1
    default_rule = "entropy"  # the README's alg (diffusion_generate's own default is "origin")
    # HKUNLP/Dream README: diffusion_generate(input_ids, attention_mask=..., max_new_tokens=512,
    # steps=512, temperature=0.2, top_p=0.95, alg="entropy", alg_temp=0.), eps 1e-3 by default,
    # plus the top_k it inherits from the model config (`sampling_defaults`)
    official_defaults = {
        "gen_length": 512,
        "temperature": 0.2,
        "top_p": 0.95,
        "remasking": "entropy",
        "alg_temp": None,
        "eps": 1e-3,
    }

    @classmethod
    def sampling_defaults(cls, raw: dict, tokenizer) -> dict:
        return {**cls.official_defaults, "top_k": inherited_top_k(raw)}

    def __init__(self, cfg: DreamConfig) -> None:
        super().__init__(cfg, DREAM_BIAS)
