"""What the boundary layer needs of a loaded model — `seer.DiffusionLM` is both.

The boundary sits below the engine and the facade (`seer.lm`) and never imports them (the
layers' arrows point down), so its functions that take an `lm` are written against these
Protocols:
`SeerModel` for Seer's settings and policy (the engine's `EngineModel` is one too),
`ProbedModel` for the step-0 probe, calibration and trials, which also build canvases and
generate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from seer.diffusion.canvas import Canvas
    from seer.diffusion.loop import DenoisingLoop
    from seer.models.base import DiffusionModel
    from seer.models.defaults import ModelDefaults
    from seer.models.multimodal import PromptInput
    from seer.sampling import SamplingParams, TokenIds


class SeerModel(Protocol):
    """What Seer's settings (`resolve`) and its window policy read of a model."""

    model: DiffusionModel  # the network (its layers and probe points checked by `fit`)
    tokens: TokenIds  # special ids: [MASK], the end tokens (the end probability)
    name: str  # said in Seer's notices
    defaults: ModelDefaults  # `defaults.seer`: the model's calibrated settings (seer.json)


class ProbedModel(SeerModel, Protocol):
    """What the step-0 probe, calibration and trials use besides: canvases and generation."""

    loop: DenoisingLoop  # the one denoising loop (the probe runs its step 0)

    def sampling(self, **options: Any) -> SamplingParams: ...

    def prompt(self, text: str, image: Any = None, chat: bool = True) -> PromptInput: ...

    def canvas(
        self,
        prompts: Any,
        p: SamplingParams,
        images: Any = None,
        chat: bool = True,
        attention_mask: torch.Tensor | None = None,
    ) -> Canvas: ...

    def generate(self, prompts: Any, params: SamplingParams | None = None, **kw: Any) -> Any:
        """`DiffusionLM.generate`: a `Generation` for one prompt, a list for a batch."""
        ...
