"""`EngineModel`: what the engine needs of a model — the facade it is written against.

`seer.DiffusionLM` is one (`seer.load` returns it); a test or another front end may hand the
engine anything with these members. The engine never reaches past them: the network itself is
driven through `loop` (the one denoising loop, holding the model) and read through `model`
only for its input embeddings and its context; prompts are encoded and checked by the input
processor (`seer.engine.prompts`) through `tokenizer`, `processor` and `max_length`; answers
are decoded by `decode`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

    from seer.diffusion.graphs import GraphCache
    from seer.diffusion.loop import DenoisingLoop
    from seer.models.base import DiffusionModel
    from seer.models.defaults import ModelDefaults
    from seer.models.multimodal import PromptProcessor
    from seer.sampling import TokenIds


class EngineModel(Protocol):
    """The members of `DiffusionLM` that the engine, its runner and its requests use."""

    model: DiffusionModel  # the network (the runner reads its input embeddings)
    tokens: TokenIds  # special ids: [MASK] (masks left, revealed), end tokens (answer length)
    loop: DenoisingLoop  # the denoising loop over `model`: begin / step / answers
    name: str  # said in Seer's notices
    defaults: ModelDefaults  # read once by the loader: the processor lays options over its
    # values (`seer.engine.request.defaults`) and Seer's `resolve` reads `defaults.seer`
    tokenizer: PreTrainedTokenizerBase | None  # text and chats -> ids (`seer.engine.prompts`)
    processor: PromptProcessor | None  # a multimodal model's prompt processor (images)

    @property
    def default_rule(self) -> str:
        """The official sampler's unmasking rule (`seer.engine.request.sampling` fills it in)."""
        ...

    @property
    def device(self) -> torch.device: ...

    @property
    def max_length(self) -> int:
        """The model's context in tokens (prompt + answer)."""
        ...

    @property
    def multimodal(self) -> bool:
        """The model takes images (its prompt processor accepts them)."""
        ...

    def decode(self, ids: list[int]) -> str: ...

    def graph_cache(self) -> GraphCache:
        """The model's captured CUDA graphs, shared by every engine on it."""
        ...
