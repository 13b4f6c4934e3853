"""LLaDA-V (GSAI-ML/LLaDA-V): LLaDA in the Llama layout, with the LLaVA-NeXT vision modules.

LLaDA-V is a LLaVA-NeXT model (SigLIP2 tower, `mlp2x_gelu` projector, anyres tiling) whose
language model is LLaDA-8B-Instruct with its weights renamed by the official
`llada_v_prepare/rename_checkpoint.py` (wte -> model.embed_tokens, attn_out -> self_attn.o_proj,
ff_proj/up_proj/ff_out -> mlp.gate_proj/up_proj/down_proj, attn_norm/ff_norm ->
input_layernorm/post_attention_layernorm, ln_f -> model.norm, transformer.ff_out -> lm_head).
The official module is `train/llava/model/language_model/modeling_llada.py` (a Llama copy with
`is_causal=False`); Seer's modules are the Llama/Qwen2 ones shared with Dream
(`seer.models.llama_layout`). Checkpoint keys of the language model:

    model.embed_tokens.weight                       (V, D)
    model.layers.{i}.input_layernorm.weight         (D,)
    model.layers.{i}.self_attn.{q,k,v,o}_proj.weight (bias only with attention_bias)
    model.layers.{i}.post_attention_layernorm.weight
    model.layers.{i}.mlp.{gate,up,down}_proj.weight
    model.norm.weight
    lm_head.weight                                  (V, D)

The rest of a LLaDA-V checkpoint is the vision side, under `model.`: `model.vision_tower.
vision_tower.vision_model.*` (LLaVA's SigLIP, last encoder layer already removed, no pooling
head), `model.mm_projector.{0,2}.{weight,bias}` and `model.image_newline`. When config.json names
a tower (`mm_vision_tower`), Seer's shared LLaVA-NeXT vision path (`seer.models.vision`) adds
these modules under `self.model` with their published names, so the whole folder loads with
strict key matching through `seer.models.loader`. LLaDA-V uses that path as published: anyres
tiling (`anyres_max_4`), SigLIP without its last layer, the `mlp2x_gelu` projector, the
whole-image tile first, the grid unpadded with one `image_newline` per row, and **no** pooling
of image features (LaViDa pools 2x2; LLaDA-V's `mm_spatial_pool_*` fields are for video only).
The official tower ignores the tower folder's `preprocessor_config.json` (its
`SigLipImageProcessor()` hard-codes 384 px, bicubic, mean = std = 0.5), so Seer does too.

Prompts: `LlavaProcessor` (`seer.models.lavida`) with `LLADA_V_SYSTEM`, the system prompt of the
official `llava_llada` conversation template, through the tokenizer's (LLaDA's) chat template.

Sampling: the official `generate_with_embeds` sets the logits of four special tokens to -inf at
masked positions; `BANNED_TOKEN_NAMES` names them and the loader turns the names into
`TokenIds.banned` (the default of `SamplingParams.banned_ids`). Its stop words and generation
suffix are `SamplingParams.stop` / `.suffix`; `official_sampling` translates the official keyword
arguments. Checked token for token against the official code (tests/models/test_llada_v_golden.py).

Numerics follow the official Llama code: RMS norm in float32, rotary cos/sin cast to the
activation dtype before the product (unlike original-layout LLaDA's `rope_full_precision`).
`pretraining_tp` only splits the official matmuls into slices; the sum is the same, so any value
is accepted. The mask and end-of-turn ids are not in config.json (its `bos_token_id` is a
Llama-3 leftover); the loader takes them, and the banned ids, from the tokenizer by name. The
official sampler runs under CUDA autocast (bf16 matmuls on GPU); Seer runs in the model's dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch

from seer.errors import SeerError
from seer.models.defaults import as_options
from seer.models.lavida import LAVIDA_SYSTEM
from seer.models.llama_layout import (
    LlamaLayoutLM,
    ProjBias,
    check_heads_and_act,
    require_fields,
)
from seer.models.tokens import stop_ids, word_ids
from seer.models.vision import VisionConfig, attach_vision
from seer.policies.stop import Stop
from seer.sampling import SamplingParams

LLADA_V_SYSTEM = LAVIDA_SYSTEM  # conv_templates["llava_llada"].system: LaViDa's text, word for word
# Tokens whose logits `generate_with_embeds` sets to -inf at masked positions (literal ids there:
# 126081, 126080, 126346, 126347 = these names in LLaDA's tokenizer).
BANNED_TOKEN_NAMES = (
    "<|endoftext|>",
    "<|startoftext|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
)
# Checkpoint keys that belong to the language model; everything else is the vision side.
LM_KEY_PREFIXES = ("model.embed_tokens.", "model.layers.", "model.norm.", "lm_head.")


def is_language_model_key(name: str) -> bool:
    return name.startswith(LM_KEY_PREFIXES)


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
    vision: VisionConfig | None = None  # the mm_* fields; None for a text-only folder
    extra: dict = field(default_factory=dict)  # every other field of config.json, verbatim

    @classmethod
    def from_dict(cls, raw: dict) -> LLaDAVConfig:
        require_fields(raw, "LLaDA-V")
        names = {f.name for f in fields(cls)} - {"extra", "vision"}
        extra = {k: v for k, v in raw.items() if k not in names}  # mm_* fields kept verbatim
        cfg = cls(**{k: v for k, v in raw.items() if k in names}, vision=_vision(raw), extra=extra)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        check_heads_and_act(self, "LLaDA-V")
        if self.rope_scaling not in (None, {}):
            raise ValueError(f"LLaDA-V rope_scaling={self.rope_scaling!r} is not supported")
        if self.pretraining_tp < 1:
            raise ValueError(f"pretraining_tp must be >= 1, got {self.pretraining_tp}")

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads


def _vision(raw: dict) -> VisionConfig | None:
    """The shared vision config of a LLaDA-V config.json (None without `mm_vision_tower`)."""
    if not raw.get("mm_vision_tower"):
        return None
    if raw.get("mm_use_im_start_end"):
        raise ValueError("LLaDA-V mm_use_im_start_end=true is not supported")
    vision = VisionConfig.from_dict(raw, pool_stride=1)  # no pooling of image features
    vision.processor = {}  # the official SigLipImageProcessor() ignores preprocessor_config.json
    return vision


class LLaDAVModelLM(LlamaLayoutLM):
    """LLaDA-V (`LlavaLLaDAModelLM`): the language model, plus the vision modules when the config
    names a tower; `model(inputs_embeds=...).logits` is (B, L, V)."""

    banned_token_names = BANNED_TOKEN_NAMES  # the loader resolves them to TokenIds.banned
    confidence_dtype = torch.float64  # the official confidence: softmax(logits.double())
    system_prompt = LLADA_V_SYSTEM  # the llava_llada conversation template's
    resize_to_tokenizer = True  # load_pretrained_model: resize_token_embeddings(len(tokenizer))
    # LLaDA-V's README runs train/generate_demo.py: model.generate(..., steps=128,
    # gen_length=128, block_length=128, tokenizer=tokenizer, stopping_criteria=['<|eot_id|>'])
    README_CALL = {
        "steps": 128,
        "gen_length": 128,
        "block_length": 128,
        "stopping_criteria": ["<|eot_id|>"],
    }

    @classmethod
    def sampling_defaults(cls, raw: dict, tokenizer) -> dict:
        call = dict(cls.README_CALL)
        if tokenizer is None:  # no tokenizer, no stop words to encode
            call.pop("stopping_criteria")
        return as_options(official_sampling(tokenizer, **call))

    def __init__(self, cfg: LLaDAVConfig) -> None:
        # Llama's attention: all four projections with a bias, or none (`attention_bias`)
        super().__init__(cfg, ProjBias(qkv=cfg.attention_bias, o=cfg.attention_bias))
        self.vision = None
        if cfg.vision is not None:  # model.vision_tower / mm_projector / image_newline
            self.vision = attach_vision(self.model, cfg.vision, cfg.hidden_size)


# generate_with_embeds keyword arguments that change nothing here (handled by the caller)
_IGNORED = {"tokenizer", "mask_id", "modalities", "images", "image_sizes", "use_cache"}


def official_sampling(tokenizer, **kw) -> SamplingParams:
    """`SamplingParams` that reproduce LLaDA-V's `model.generate(..., **kw)` (its
    `generate_with_embeds`, whose defaults are 128 / 128 / 128, greedy, low_confidence).

    `stopping_criteria` (strings) and `generation_suffix` (a string) are encoded with
    `tokenizer` without special tokens, as the official code does. Raises `SeerError` for
    options it does not reproduce."""
    kw = {k: v for k, v in kw.items() if k not in _IGNORED}
    gen_length = int(kw.pop("gen_length", 128))
    stops = kw.pop("stopping_criteria", None) or ()
    suffix = kw.pop("generation_suffix", None) or ""
    remasking = kw.pop("remasking", "low_confidence")
    if remasking not in ("low_confidence", "random"):
        raise SeerError(f"LLaDA-V remasking {remasking!r} is not supported")
    p = SamplingParams(
        gen_length=gen_length,
        steps=int(kw.pop("steps", 128)),
        block_length=int(kw.pop("block_length", 128)),
        temperature=float(kw.pop("temperature", 0.0)),
        cfg_scale=float(kw.pop("cfg_scale", 0.0)),
        remasking=remasking,
        policies=(Stop(stop=ids),) if (ids := stop_ids(tokenizer, stops)) else (),
        suffix=tuple(word_ids(tokenizer, suffix)) if suffix else (),
    )
    if kw:
        raise SeerError(f"LLaDA-V generate option(s) {sorted(kw)} are not supported")
    return p
