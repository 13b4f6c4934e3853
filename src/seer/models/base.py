"""What the rest of Seer asks of a model: the `DiffusionModel` protocol.

The denoising loop, the step-0 probe, the loader and `DiffusionLM` read a model only through
these members; none of them probes a model with `getattr` / `isinstance`. Every architecture
class implements them (most through `seer.models.common.BidirectionalLM`'s defaults, overriding
what its official code does differently), so a new architecture states here, in one place,
how it differs:

| member | read by | meaning |
|---|---|---|
| `logits_shift` | loop, probe | 1 when position j-1 predicts token j (Dream), else 0 |
| `confidence_dtype` | loop | dtype of the unmasking confidences (None: the logits') |
| `compact_topk` | loop | top-k over the masked confidences alone, not the window (tie order) |
| `default_rule` | DiffusionLM | unmasking rule of the official sampler |
| `forward_kwargs` | loop, engine | keyword arguments `forward` accepts besides `input_ids` |
| `probe_point(layer, tensor)` | probe | module read: input ("down"), output ("gate", "act") |
| `layers` | probe, calibration | the decoder blocks, in order |
| `register_forward_(pre_)hook` | probe | nn.Module's: the columns each forward computes |
| `context_length` | DiffusionLM | the longest prompt + answer window the model takes |
| `banned_token_names` | loader | tokens the official sampler never proposes (-> TokenIds) |
| `sampling_defaults(raw, tok)` | loader | the official README call's SamplingParams fields |
| `vision` / `system_prompt` / `image_codes` | loader | which prompt processor the model takes |
| `resize_to_tokenizer` / `keep_token_rows` | loader | LLaVA loaders' embedding resize |
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

# what `BidirectionalLM.forward` accepts (see its docstring); the loop passes only these
FORWARD_KWARGS = frozenset(
    {
        "attention_mask",  # (B, S) 0/1 or a bias; None = full attention
        "inputs_embeds",  # (B, L, D) instead of input_ids (spliced image features)
        "position_ids",  # (B, L) absolute positions (left padding, truncated windows)
        "logits_positions",  # slice of columns (or a bool mask) to compute the LM head at
        "after_layer",  # hook(i, h, mask) -> None | (h, mask, position_ids): Seer's cut
        "past_key_values",  # KVCache to read and write
        "use_cache",  # return a KVCache of every column
        "cache_start",  # first cached column of this forward's inputs
        "replace",  # (B, n) rows x columns whose cached K/V this forward overwrites
    }
)


@runtime_checkable
class DiffusionModel(Protocol):
    """A masked-diffusion LM as the loop, the probe and the loader use it."""

    logits_shift: int  # 1: the logit for token j is read at position j-1 (Dream); else 0
    confidence_dtype: torch.dtype | None  # unmasking confidences' dtype; None: the logits'
    compact_topk: bool  # top-k over the masked confidences alone (ties: see unmask.select)
    default_rule: str  # the official sampler's unmasking rule (config.RULES)
    forward_kwargs: frozenset[str]  # keyword arguments `forward` accepts (FORWARD_KWARGS)
    banned_token_names: tuple[str, ...]  # never proposed at masked positions (LLaDA-V)
    official_defaults: ClassVar[dict]  # see `sampling_defaults`
    system_prompt: str | None  # the official conversation template's system prompt, or None
    image_codes: bool  # images enter as discrete VQ codes (MMaDA)
    resize_to_tokenizer: bool  # the official loader cuts the vocabulary to len(tokenizer)

    # read-only here, so an architecture may declare its own config / vision types
    @property
    def config(self) -> object: ...  # the architecture's typed config (its config.json fields)

    @property
    def vision(self) -> object | None: ...  # the LLaVA-NeXT vision path (image features) or None

    def keep_token_rows(self, n: int) -> None: ...  # embedding + head keep their first n rows

    @property
    def layers(self) -> nn.ModuleList: ...

    @property
    def context_length(self) -> int: ...  # the longest prompt + answer the model takes

    def probe_point(self, layer: int, tensor: str) -> nn.Module: ...

    def get_input_embeddings(self) -> nn.Embedding: ...

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]: ...  # nn.Module's

    # nn.Module's (the probe hooks the whole forward to see which columns it computes)
    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle: ...

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle: ...

    @classmethod
    def sampling_defaults(cls, raw: dict, tokenizer) -> dict: ...

    def __call__(self, input_ids=None, **kwargs): ...
