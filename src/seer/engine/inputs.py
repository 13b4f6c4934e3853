"""What a caller may pass as a prompt, an image or a Seer setting: the names the engine's
requests, the engine's model protocol and `DiffusionLM.generate` annotate with (kept apart, so
that `request.py` and `model.py` read them without importing each other)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import PIL.Image
    import torch

    from seer.boundary.config import SeerConfig
    from seer.models.multimodal import PromptInput

# What a caller may pass (names for annotations; `DiffusionLM.generate` takes these too)
Chat: TypeAlias = "list[dict[str, str]]"  # an OpenAI-style chat: role/content messages
# one prompt: text (chat-formatted unless chat=False), a chat, token ids, or a prompt encoded once
Prompt: TypeAlias = "str | Chat | list[int] | torch.Tensor | PromptInput"
# a batch of prompts of one kind, or one prompt ((B, L) or (L,) ids for a tensor)
Prompts: TypeAlias = (
    "Prompt | list[str] | list[Chat] | list[list[int]] | list[torch.Tensor] | list[PromptInput]"
)
# one image (multimodal models): a path, a data URI, a PIL image or an (H, W, 3) array
ImageInput: TypeAlias = "str | Path | PIL.Image.Image | np.ndarray[Any, Any] | torch.Tensor"
# the images of a batch: one for every prompt, or one (or None) per prompt
Images: TypeAlias = "ImageInput | list[ImageInput | None] | None"
# Seer for a request: None / False (the full window), True (the model's calibrated settings),
# a dict of options over them, or a SeerConfig as it is
SeerOption: TypeAlias = "bool | dict[str, Any] | SeerConfig | None"
