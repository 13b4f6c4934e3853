"""The pictures of the built-in multimodal demo's image questions (`synthetic.vqa`): what
a picture is (`ImageSpec`) and how it is drawn (`render`).

The multimodal demo model sees a 96 px picture as 12x12 patches of 8 px, pooled 2x2 into 6x6
image tokens of 16 px each, so the pictures are made for that eye:

* seven saturated colours far apart in RGB (:data:`COLOURS`) on a white, grey or cream
  background; four shape kinds (:data:`KINDS`: circle, square, triangle, bar = a 3:1 flat
  rectangle);
* printed words use Pillow's built-in Aileron font at 22 px (cap height about 16 px);
* a bar chart draws its bars (colour, value 1-5) on light grid lines, and no text.

A picture is stored as an :class:`ImageSpec` (shapes / text / bars in canvas units, 0..96) and
rendered on demand by :func:`render` at any size, so a data set of specs is cheap to keep and
training renders thousands of images per second. Pixels are a pure function of the spec.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from seer.errors import SeerError

IMAGE_SIZE = 96
"""Default rendered side in pixels (patch 8 -> 12x12 patches -> 6x6 pooled image tokens)."""

CANVAS = 96
"""Side of the spec coordinate system; :func:`render` scales it to the requested size."""

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (215, 25, 25),
    "green": (20, 160, 50),
    "blue": (25, 75, 225),
    "yellow": (245, 210, 0),
    "orange": (255, 120, 0),
    "purple": (140, 40, 185),
    "black": (20, 20, 20),
}
BACKGROUNDS: dict[str, tuple[int, int, int]] = {
    "white": (255, 255, 255),
    "grey": (236, 236, 236),
    "cream": (250, 244, 222),
}
KINDS = ("circle", "square", "triangle", "bar")
TEXT_SIZE = 22  # font size of printed words, in canvas units
CHART_VALUES = (1, 5)  # the smallest and largest bar value (a grid line at each)
CHART_BASE, CHART_UNIT, CHART_MARGIN = 88, 15, 8  # baseline y, height of value 1, side margin


@dataclass(slots=True, frozen=True)
class Shape:
    """One filled shape; coordinates in canvas units (0..CANVAS)."""

    kind: str  # one of KINDS
    colour: str  # key of COLOURS
    x: int  # centre x
    y: int  # centre y
    size: int  # width of the shape (a bar is size wide and size // 3 high)


@dataclass(slots=True, frozen=True)
class ImageSpec:
    """Everything needed to draw one image; the pixels are a pure function of it."""

    background: str  # key of BACKGROUNDS
    shapes: tuple[Shape, ...] = ()  # drawn in order
    text: tuple[str, ...] = ()  # printed lines, top to bottom, centred on text_xy
    text_colour: str = "black"  # key of COLOURS
    text_xy: tuple[int, int] = (CANVAS // 2, CANVAS // 2)  # centre of the text block
    bars: tuple[tuple[str, int], ...] = ()  # bar chart, left to right: (colour, value 1..5)

    def to_dict(self) -> dict[str, Any]:
        return {
            "background": self.background,
            "shapes": [[s.kind, s.colour, s.x, s.y, s.size] for s in self.shapes],
            "text": list(self.text),
            "text_colour": self.text_colour,
            "text_xy": list(self.text_xy),
            "bars": [list(b) for b in self.bars],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ImageSpec:
        return cls(
            background=d["background"],
            shapes=tuple(Shape(*s) for s in d["shapes"]),
            text=tuple(d["text"]),
            text_colour=d["text_colour"],
            text_xy=(int(d["text_xy"][0]), int(d["text_xy"][1])),
            bars=tuple((c, int(v)) for c, v in d["bars"]),
        )

    def canonical(self) -> str:
        """A stable string of the spec (sorted-key compact JSON), used for the split hash."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))


def render(spec: ImageSpec, size: int = IMAGE_SIZE) -> Image.Image:
    """Draw ``spec`` as a ``size`` x ``size`` RGB image (canvas units scaled by size / CANVAS)."""
    s = size / CANVAS
    img = Image.new("RGB", (size, size), BACKGROUNDS[spec.background])
    draw = ImageDraw.Draw(img)
    for shape in spec.shapes:
        _draw_shape(draw, shape, s)
    if spec.bars:
        _draw_chart(draw, spec.bars, s)
    if spec.text:
        x, y = spec.text_xy
        draw.multiline_text(
            (x * s, y * s),
            "\n".join(spec.text),
            fill=COLOURS[spec.text_colour],
            font=_font(round(TEXT_SIZE * s)),
            anchor="mm",
            align="center",
        )
    return img


def render_batch(specs: Iterable[ImageSpec], size: int = IMAGE_SIZE) -> np.ndarray:
    """Render many specs into one uint8 array: [B, size, size, 3]."""
    return np.stack([np.asarray(render(spec, size)) for spec in specs])


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont:
    """Pillow's built-in scalable font (Aileron), loaded once per size."""
    try:
        font = ImageFont.load_default(size=size)
    except TypeError as e:  # Pillow < 10.1 has no size argument
        raise SeerError("the VQA demo images need Pillow >= 10.1 (pip install -U pillow)") from e
    if not isinstance(font, ImageFont.FreeTypeFont):
        raise SeerError("the VQA demo images need Pillow built with FreeType")
    return font


def _draw_shape(draw: ImageDraw.ImageDraw, shape: Shape, s: float) -> None:
    fill = COLOURS[shape.colour]
    x, y, half = shape.x * s, shape.y * s, shape.size * s / 2
    if shape.kind == "circle":
        draw.ellipse((x - half, y - half, x + half, y + half), fill=fill)
    elif shape.kind == "square":
        draw.rectangle((x - half, y - half, x + half, y + half), fill=fill)
    elif shape.kind == "triangle":
        h = 0.9 * half  # half the height of a slightly flattened upward triangle
        draw.polygon(((x, y - h), (x - half, y + h), (x + half, y + h)), fill=fill)
    elif shape.kind == "bar":
        draw.rectangle((x - half, y - half / 3, x + half, y + half / 3), fill=fill)
    else:
        raise SeerError(f"unknown shape kind {shape.kind!r}; choose from {KINDS}")


def _draw_chart(draw: ImageDraw.ImageDraw, bars: tuple[tuple[str, int], ...], s: float) -> None:
    left, right = CHART_MARGIN * s, (CANVAS - CHART_MARGIN) * s
    for v in range(CHART_VALUES[0], CHART_VALUES[1] + 1):  # light grid lines at each value
        y = (CHART_BASE - v * CHART_UNIT) * s
        draw.line((left, y, right, y), fill=(190, 190, 190), width=max(1, round(s)))
    slot = (right - left) / len(bars)
    for i, (colour, value) in enumerate(bars):
        cx = left + (i + 0.5) * slot
        top = (CHART_BASE - value * CHART_UNIT) * s
        draw.rectangle(
            (cx - 0.3 * slot, top, cx + 0.3 * slot, CHART_BASE * s), fill=COLOURS[colour]
        )
    base = CHART_BASE * s
    draw.line((left, base, right, base), fill=COLOURS["black"], width=max(2, round(2 * s)))
