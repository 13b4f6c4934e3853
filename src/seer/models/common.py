"""Building blocks shared by the architectures: RMS norm, rotary embeddings, attention masks,
and the key/value cache.

Each architecture file (`llada.py`, `dream.py`) composes these and declares its own checkpoint
key names; numerics follow the official models (norm statistics and, where the official code does
so, the rotary product in float32).

KV cache (Fast-dLLM's `past_key_values` / `use_cache` / `replace_position`, see
`BidirectionalLM.forward`): a `KVCache` holds every layer's keys and values for *all* S columns
of a sequence, keys with the rotary embedding already applied (rotation is per position, so this
equals Fast-dLLM's rotate-on-read). A forward over columns [c, c + n) writes its fresh K/V into
those columns (per row, where `replace` allows) and attends over all S: with the cached prefix
and the fresh rest this is Fast-dLLM's prefix cache; with a cached suffix too, its dual cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn

from seer.models.base import FORWARD_KWARGS

if TYPE_CHECKING:
    from seer.models.vision import VisionEncoder


@dataclass(slots=True)
class KVCache:
    """Keys and values of every layer for the S columns of one batch of sequences."""

    keys: list[torch.Tensor]  # per layer (B, H_kv, S, D), rotary embedding applied
    values: list[torch.Tensor]  # per layer (B, H_kv, S, D)

    @property
    def length(self) -> int:
        return self.keys[0].shape[2]


@dataclass(slots=True)
class ModelOutput:
    """What a forward pass returns; mirrors transformers' `CausalLMOutput` for `.logits` access."""

    logits: torch.Tensor  # (B, L, V) in the model dtype, or (B, len(positions), V) when sliced
    past_key_values: KVCache | None = None  # with use_cache: K/V of every column (filled/updated)

    def __getitem__(self, i: int) -> torch.Tensor:  # `out[0]` as transformers code expects
        return (self.logits,)[i]


class RMSNorm(nn.Module):
    """RMS norm computed in float32 and cast back, as both official models do."""

    def __init__(self, dim: int, eps: float, affine: bool = True) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if affine else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        h = h.to(dtype)
        return h if self.weight is None else self.weight * h


class Rotary(nn.Module):
    """NeoX-style rotary embedding (rotate-half), with the position table built per call.

    `full_precision=True` rotates q/k in float32 and casts back (LLaDA's `rope_full_precision`);
    otherwise cos/sin are cast to the activation dtype first (Qwen2/Dream).

    `rounded_freqs=True` rounds the inverse frequencies to the activation dtype before use, as an
    official model does whose whole module is cast after loading (`model.to(torch.bfloat16)`
    casts Hugging Face's `inv_freq` buffer; `from_pretrained(torch_dtype=...)` leaves it float32).
    """

    def __init__(
        self, head_dim: int, theta: float, full_precision: bool, rounded_freqs: bool = False
    ) -> None:
        super().__init__()
        self.head_dim, self.theta, self.full_precision = head_dim, theta, full_precision
        self.rounded_freqs = rounded_freqs

    def cos_sin(
        self, position_ids: torch.Tensor, dtype: torch.dtype | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # position_ids: (B, L) -> cos/sin: (B, 1, L, head_dim) in float32. The frequencies are
        # computed per call (head_dim / 2 values) so no buffer can be cast to a low precision
        # (unless `rounded_freqs`, to `dtype`, the activations').
        exps = torch.arange(0, self.head_dim, 2, dtype=torch.float32, device=position_ids.device)
        inv_freq = 1.0 / (self.theta ** (exps / self.head_dim))
        if self.rounded_freqs and dtype is not None:
            inv_freq = inv_freq.to(dtype).float()
        freqs = position_ids.float()[..., None] * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)[:, None]
        return emb.cos(), emb.sin()

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        dtype = q.dtype
        if self.full_precision:
            q, k = q.float(), k.float()
        else:
            cos, sin = cos.to(dtype), sin.to(dtype)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        return q.to(dtype), k.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def attention_bias(
    attention_mask: torch.Tensor | str | None, batch: int, length: int
) -> torch.Tensor | None:
    """Turn a user mask into a boolean SDPA mask broadcastable to (B, H, L, L); True = attend.

    Accepts None or "full" (no masking), a (B, L) key-padding mask of 0/1 or bools, or a
    (B, 1, L, L) boolean mask as Dream's official sampler builds. Query rows that would attend to
    nothing (padding queries) are opened up so SDPA never produces NaN; their outputs are unused.
    """
    if attention_mask is None or isinstance(attention_mask, str):
        return None
    m = attention_mask
    if m.dim() == 2:
        if m.shape != (batch, length):
            raise ValueError(
                f"attention_mask has shape {tuple(m.shape)}, expected {(batch, length)}"
            )
        if bool(m.all()):
            return None
        return m.bool()[:, None, None, :]
    if m.dim() == 4:
        m = (
            m.bool() if m.dtype == torch.bool else m > -1
        )  # additive float masks: 0 keeps, -inf drops
        return m | ~m.any(dim=-1, keepdim=True)
    raise ValueError(f"attention_mask must be (B, L) or (B, 1, L, L); got {tuple(m.shape)}")


def sdpa(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """Bidirectional attention. q: (B, H, L, D); k, v: (B, H_kv, L, D) with H % H_kv == 0."""
    if k.shape[1] != q.shape[1]:
        rep = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=False)


def default_positions(batch: int, length: int, device: torch.device) -> torch.Tensor:
    return torch.arange(length, device=device).expand(batch, length)


def self_attention(
    x: torch.Tensor,
    proj: tuple[nn.Linear, nn.Linear, nn.Linear, nn.Linear],
    n_heads: int,
    n_kv_heads: int,
    rotary: Rotary,
    cos_sin: tuple[torch.Tensor, torch.Tensor],
    mask: torch.Tensor | None,
    kv=None,
) -> torch.Tensor:
    """x: (B, L, C) -> (B, L, C). `proj` is (q, k, v, out) in the architecture's own modules.

    `kv(k, v)`, when given, receives this forward's rotated keys and values (B, H_kv, L, D) and
    returns those to attend over (B, H_kv, S, D): the cache's hook (`CacheIO.layer`).
    """
    q_proj, k_proj, v_proj, out_proj = proj
    b, n, _ = x.shape
    q = q_proj(x).view(b, n, n_heads, -1).transpose(1, 2)  # (B, H, L, D)
    k = k_proj(x).view(b, n, n_kv_heads, -1).transpose(1, 2)  # (B, H_kv, L, D)
    v = v_proj(x).view(b, n, n_kv_heads, -1).transpose(1, 2)
    q, k = rotary.rotate(q, k, *cos_sin)
    if kv is not None:
        k, v = kv(k, v)
    y = sdpa(q, k, v, mask)
    return out_proj(y.transpose(1, 2).reshape(b, n, -1))


class CacheIO:
    """How one forward uses a `KVCache`: fill a new one, or read `past` and write the forwarded
    columns [start, start + n) into it (per row where `replace` (B, n) is True; all if None)."""

    def __init__(
        self, past: KVCache | None, start: int = 0, replace: torch.Tensor | None = None
    ) -> None:
        self.past, self.start, self.replace = past, start, replace
        self.out = past if past is not None else KVCache([], [])

    def layer(self, i: int):
        def kv(k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            if self.past is None:  # filling: keep this forward's K/V as they are
                self.out.keys.append(k)
                self.out.values.append(v)
                return k, v
            ck, cv = self.past.keys[i], self.past.values[i]  # (B, H_kv, S, D)
            cols = slice(self.start, self.start + k.shape[2])
            if self.replace is None:
                ck[:, :, cols], cv[:, :, cols] = k, v
            else:  # rows keep their cached K/V where they do not recompute a column
                r = self.replace[:, None, :, None]
                ck[:, :, cols] = torch.where(r, k, ck[:, :, cols])
                cv[:, :, cols] = torch.where(r, v, cv[:, :, cols])
            return ck, cv

        return kv


class LMConfig(Protocol):
    """What the shared forward's owner reads of an architecture's config."""

    vocab_size: int


@runtime_checkable
class ProbedBlock(Protocol):
    """A decoder block's probe points (`BidirectionalLM.probe_point`)."""

    @property
    def down_proj(self) -> nn.Linear: ...  # input: act(gate) * up

    @property
    def gate_proj(self) -> nn.Linear: ...

    @property
    def mlp_act(self) -> nn.Module: ...  # the activation applied to gate_proj's output


class BidirectionalLM(nn.Module):
    """Shared forward of the non-causal decoders: embed -> blocks -> norm -> head.

    Subclasses build their modules under the official key names and implement `_parts()`
    returning (embedding, blocks, final_norm, head or None for tied weights) and `rotary`.

    `logits_positions` (a slice of columns, or a (B, N) bool mask: logits (M, V) at its True
    positions, row-major) computes the LM head only where the caller needs logits (the answer
    window; a training loss's masked positions), which saves the large head matmul over the
    rest. `after_layer(i, h, mask)` is called after block i and may return a replacement
    `(h, mask)`: this is how a step can continue on a truncated window from layer k+1 on.

    KV cache: `use_cache=True` returns `out.past_key_values`, a `KVCache` of every column. With
    `past_key_values=cache`, the inputs are the columns [cache_start, cache_start + n) of the
    cached sequence (their `position_ids` are the absolute ones, `attention_mask` is (B, S) over
    all cached columns); their fresh K/V overwrite the cache there (only where `replace` (B, n)
    is True, if given) and attention reads all S columns. `after_layer` may not change the
    sequence while a cache is in use.
    """

    rotary: Rotary
    config: LMConfig
    # -- the `seer.models.base.DiffusionModel` protocol, with the LLaDA family's values --------
    logits_shift: int = 0  # Dream predicts token j from position j-1: the loop applies the shift
    confidence_dtype: torch.dtype | None = None  # unmasking confidences in the logits' dtype
    compact_topk: bool = False  # top-k over the masked confidences alone (LaViDa-Dream)
    default_rule: str = "low_confidence"  # the official sampler's unmasking rule
    forward_kwargs: frozenset[str] = FORWARD_KWARGS
    banned_token_names: tuple[str, ...] = ()
    vision: VisionEncoder | None = None  # the LLaVA-NeXT vision path (spliced image features)
    system_prompt: str | None = None  # None: the prompt processor's own system prompt
    image_codes: bool = False  # images enter as discrete VQ codes (MMaDA)
    # SamplingParams fields of the official sampler called as the official README shows
    # (`seer.models.defaults`); subclasses record the call they come from beside them
    official_defaults: ClassVar[dict] = {"gen_length": 128, "remasking": "low_confidence"}

    resize_to_tokenizer: bool = False  # the official loader cuts the vocabulary to the tokenizer

    def keep_token_rows(self, n: int) -> None:
        """Keep the first `n` rows of the embedding and the LM head: what the official LLaVA
        loaders' `resize_token_embeddings(len(tokenizer))` does when the tokenizer is smaller
        than the released vocabulary (LLaDA-V: 126464 rows, 126349 tokens)."""
        embed, _, _, head = self._parts()
        for module in (embed, head):
            if module is None:  # tied: the embedding is the head
                continue
            with torch.no_grad():
                module.weight = nn.Parameter(module.weight[:n].clone(), requires_grad=False)
            if isinstance(module, nn.Embedding):
                module.num_embeddings = n
            else:
                module.out_features = n
        self.config.vocab_size = n

    def probe_point(self, layer: int, tensor: str) -> nn.Module:
        """The module whose input ("down": act(gate) * up) or output ("gate": gate(x); "act":
        act(gate(x)), the block's own activation module) the probe reads."""
        block = self.layers[layer]
        if not isinstance(block, ProbedBlock):
            raise TypeError(f"{type(block).__name__} has no probe points")
        if tensor == "act":
            return block.mlp_act
        return block.down_proj if tensor == "down" else block.gate_proj

    @classmethod
    def sampling_defaults(cls, raw: dict, tokenizer) -> dict:
        """The official call's options for a checkpoint (`raw`: its config.json)."""
        return dict(cls.official_defaults)

    def _parts(self) -> tuple[nn.Embedding, nn.ModuleList, nn.Module, nn.Linear | None]:
        raise NotImplementedError

    @property
    def layers(self) -> nn.ModuleList:
        return self._parts()[1]

    @property
    def context_length(self) -> int:
        raise NotImplementedError

    def _scale_embeddings(self, h: torch.Tensor) -> torch.Tensor:
        return h

    def _scale_logits(self, logits: torch.Tensor) -> torch.Tensor:
        return logits

    def get_input_embeddings(self) -> nn.Embedding:
        return self._parts()[0]

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | str | None = None,
        inputs_embeds: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        logits_positions: slice | torch.Tensor | None = None,
        after_layer=None,
        past_key_values: KVCache | None = None,
        use_cache: bool = False,
        cache_start: int = 0,
        replace: torch.Tensor | None = None,
        **unused,
    ) -> ModelOutput:
        embed, blocks, norm, head = self._parts()
        if inputs_embeds is None:
            if input_ids is None:
                raise ValueError("pass input_ids or inputs_embeds")
            inputs_embeds = embed(input_ids)
        h = self._scale_embeddings(inputs_embeds)
        b, n, _ = h.shape
        if position_ids is None:
            position_ids = default_positions(b, n, h.device)
        cos_sin = self.rotary.cos_sin(position_ids, h.dtype)
        io = None
        if use_cache or past_key_values is not None:
            io = CacheIO(past_key_values, cache_start, replace)
        keys = n if past_key_values is None else past_key_values.length
        mask = attention_bias(attention_mask, b, keys)
        for i, block in enumerate(blocks):
            h = block(h, cos_sin, mask, None if io is None else io.layer(i))
            if after_layer is not None:
                changed = after_layer(i, h, mask)
                if changed is not None:
                    if io is not None:
                        raise ValueError("after_layer cannot change the sequence under a KV cache")
                    h, mask, position_ids = changed
                    cos_sin = self.rotary.cos_sin(position_ids, h.dtype)
        if isinstance(logits_positions, torch.Tensor):  # (B, N) bool: those positions, (M, V)
            h = h[logits_positions]
        elif logits_positions is not None:
            h = h[:, logits_positions]
        h = norm(h)
        logits = h @ embed.weight.T if head is None else head(h)
        kv = None if io is None else io.out
        return ModelOutput(logits=self._scale_logits(logits), past_key_values=kv)
