"""`EngineModel`: what the engine needs of a model — the facade it is written against.

`seer.DiffusionLM` is one (`seer.load` returns it); a test or another front end may hand the
engine anything with these members. The engine never reaches past them: the network itself is
driven through `loop` (the one denoising loop, holding the model) and read through `model`
only for its input embeddings; prompts are encoded and checked by `prompt_inputs`; answers
are decoded by `decode`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from seer.diffusion.graphs import GraphCache
    from seer.diffusion.loop import DenoisingLoop
    from seer.engine.inputs import Images, Prompts
    from seer.models.base import DiffusionModel
    from seer.models.defaults import ModelDefaults
    from seer.models.multimodal import PromptInput
    from seer.sampling import SamplingParams, TokenIds


class EngineModel(Protocol):
    """The members of `DiffusionLM` that the engine, its runner and its requests use."""

    model: DiffusionModel  # the network (the runner reads its input embeddings)
    tokens: TokenIds  # special ids: [MASK] (masks left, revealed), end tokens (answer length)
    loop: DenoisingLoop  # the denoising loop over `model`: begin / step / answers
    name: str  # said in Seer's notices
    defaults: ModelDefaults  # read once by the loader; Seer's `resolve` reads `defaults.seer`

    @property
    def default_rule(self) -> str:
        """The official sampler's unmasking rule (`seer.engine.request.sampling` fills it in)."""
        ...

    @property
    def device(self) -> torch.device: ...

    def sampling(self, **options: Any) -> SamplingParams:
        """The model's default `SamplingParams` with `options` over them."""
        ...

    def prompt_inputs(
        self,
        prompts: Prompts,
        p: SamplingParams,
        images: Images = None,
        chat: bool = True,
        attention_mask: torch.Tensor | None = None,
    ) -> list[PromptInput]:
        """The prompts encoded (images spliced in) and checked against the model and `p`."""
        ...

    def decode(self, ids: list[int]) -> str: ...

    def graph_cache(self) -> GraphCache:
        """The model's captured CUDA graphs, shared by every engine on it."""
        ...
