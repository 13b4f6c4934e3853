"""LLaVA-NeXT image preprocessing: tiles by `image_aspect_ratio`, then SigLIP's processor.

The per-tile resize / rescale / normalise is transformers' `SiglipImageProcessor`, configured
from the checkpoint (`preprocessor_config.json` of the tower folder or the checkpoint; else
SigLIP's published values at the tower's resolution). The tiling follows LLaVA's
`process_images`: "anyres" / "anyres_max_N" resize the image into the best grid resolution
(aspect kept, black padding), cut it into tower-sized tiles and put a whole-image tile, resized
to a square (aspect not kept, as the released code does), first; "pad" expands the image to a
square in the mean colour; anything else resizes it directly.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import torch
from PIL import Image

from seer.models.vision import VisionConfig, best_resolution, pinpoints

if TYPE_CHECKING:
    from transformers.image_processing_utils import BaseImageProcessor


class ImageProcessor:
    """One PIL image -> (T, 3, S, S) float tiles for the tower, and its (width, height)."""

    def __init__(self, cfg: VisionConfig) -> None:
        processor: type[BaseImageProcessor]
        try:  # transformers 5: the PIL backend by name (the default one wants torchvision)
            from transformers import SiglipImageProcessorPil

            processor = SiglipImageProcessorPil
        except ImportError:  # transformers 4.x
            from transformers import SiglipImageProcessor

            processor = SiglipImageProcessor

        s = cfg.image_size
        # preprocessor_config.json's fields (JSON values), over SigLIP's published ones
        fields: dict[str, Any] = {"size": {"height": s, "width": s}, "image_mean": [0.5] * 3}
        fields["image_std"] = [0.5] * 3
        fields.update({k: v for k, v in cfg.processor.items() if not k.startswith("_")})
        fields.pop("image_processor_type", None)
        fields.pop("processor_class", None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.hf = processor(**fields)
        self.cfg = cfg
        self.side = s

    @property
    def mean_colour(self) -> tuple[int, ...]:
        return tuple(int(m * 255) for m in self.hf.image_mean)

    def _pixels(self, tiles: list[Image.Image]) -> torch.Tensor:
        return self.hf(images=tiles, return_tensors="pt")["pixel_values"]

    def __call__(self, image: Image.Image) -> tuple[torch.Tensor, tuple[int, int]]:
        image = image.convert("RGB")
        cfg, s = self.cfg, self.side
        if cfg.anyres:
            w, h = best_resolution(image.size, pinpoints(cfg.grid_pinpoints, s))
            padded = resize_and_pad(image, (w, h))
            tiles = [
                padded.crop((x, y, x + s, y + s)) for y in range(0, h, s) for x in range(0, w, s)
            ]
            tiles = [image.resize((s, s))] + tiles
        elif cfg.aspect_ratio == "pad":
            tiles = [expand_to_square(image, self.mean_colour)]
        else:
            tiles = [image]
        return self._pixels(tiles), image.size


def resize_and_pad(image: Image.Image, target: tuple[int, int]) -> Image.Image:
    """Fit `image` inside `target` (width, height), aspect kept, centred on black."""
    ow, oh = image.size
    tw, th = target
    sw, sh = tw / ow, th / oh
    if sw < sh:
        nw, nh = tw, min(math.ceil(oh * sw), th)
    else:
        nw, nh = min(math.ceil(ow * sh), tw), th
    out = Image.new("RGB", (tw, th), (0, 0, 0))
    out.paste(image.resize((nw, nh)), ((tw - nw) // 2, (th - nh) // 2))
    return out


def expand_to_square(image: Image.Image, colour: tuple[int, ...]) -> Image.Image:
    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    out = Image.new(image.mode, (side, side), colour)
    out.paste(image, ((side - w) // 2, (side - h) // 2))
    return out
