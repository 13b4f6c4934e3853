"""What a multimodal model adds to a text one: a prompt processor.

A `PromptProcessor` turns one request (text + at most one image) into a `PromptInput`: the
prompt's token ids and, for models that splice continuous image features into the sequence
(LaViDa, LLaDA-V), the prompt's input embeddings with the features in place. Models that put
images in as discrete tokens (MMaDA) return ids only. The denoising loop then works on the same
canvas as for text: `[prompt | answer window]`, the answer window located after splicing, so the
Seer probe and truncation see answer positions only and need no change.

Images reach the processor as `PIL.Image.Image` in RGB, already checked by `seer.images.load_image`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass(slots=True)
class PromptInput:
    """One request's prompt, ready for the canvas."""

    ids: list[int]  # prompt token ids, one per sequence position (image positions: a filler id)
    embeds: torch.Tensor | None = None  # (len(ids), D) input embeddings, images in; or None


class PromptProcessor(Protocol):
    """Builds the prompt of one request. `chat` applies the model's official chat template."""

    accepts_images: bool  # False for text-only models (an image is then a user error)

    def __call__(self, text: str, image, chat: bool = True) -> PromptInput: ...
