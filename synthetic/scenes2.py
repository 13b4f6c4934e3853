"""The pictures of the built-in multimodal model v2 (`synthetic.vqa2`): what a picture is
(`Picture`) and how it is drawn (`render`).

The v2 model sees a 128 px picture as 16 x 16 patches of 8 px, pooled 2 x 2 (LaViDa's pool)
into 8 x 8 image tokens of 16 px. The pictures are laid out for that eye:

* text is printed one character per 16 px *glyph cell* (one image token), in Pillow's built-in
  font at 16 px, on the 8 x 8 cell grid: reading a word is reading the tokens of one row, so a
  small tower can learn it (the v1 model read 22 px text centred anywhere, across token borders,
  and never learned to: 0 % after 95 minutes);
* shapes (the v1 kinds and colours, :mod:`synthetic.scenes`) sit in the cells of a 3 x 3
grid
  (named top left ... bottom right), big (34 px) or small (20 px);
* a bar chart has 2-4 bars, each one glyph column wide, a letter under each bar on the bottom
  row of cells, and a light grid line at every value 1-6 (one value = one cell of height);
* a table is text: one row of cells per line, ``A 42`` (a letter, a space, 1-2 digits).

A picture is stored as a :class:`Picture` (shapes, printed text, bars) and rendered on demand by
:func:`render`; pixels are a pure function of the picture.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw

from synthetic.scenes import BACKGROUNDS, COLOURS, KINDS, Shape, _draw_shape, _font

__all__ = [
    "BACKGROUNDS",
    "CELL",
    "CELLS",
    "CHART_VALUES",
    "COLOURS",
    "KINDS",
    "POSITIONS",
    "SIZE",
    "Item",
    "Picture",
    "Text",
    "render",
]

SIZE = 128
"""Picture side in pixels (patch 8 -> 16 x 16 patches -> 8 x 8 pooled image tokens)."""
CELL = 16  # glyph cell side = one pooled image token
CELLS = SIZE // CELL  # glyph cells per row / column
GLYPH_SIZE = 16  # font size of printed characters
CHART_VALUES = (1, 6)  # smallest and largest bar value; a value unit is one cell high
SLOT = SIZE / 3  # side of one of the 3 x 3 shape slots
SHAPE_SIZES = {"big": 34, "small": 20}
POSITIONS = (
    "top left",
    "top",
    "top right",
    "left",
    "middle",
    "right",
    "bottom left",
    "bottom",
    "bottom right",
)
"""Names of the 3 x 3 shape slots, in reading order."""


@dataclass(slots=True, frozen=True)
class Item:
    """One shape in a slot of the 3 x 3 grid."""

    kind: str  # one of KINDS
    colour: str  # key of COLOURS
    slot: int  # 0..8, reading order (POSITIONS)
    size: str = "big"  # key of SHAPE_SIZES

    @property
    def name(self) -> str:
        """``red circle``."""
        return f"{self.colour} {self.kind}"


@dataclass(slots=True, frozen=True)
class Text:
    """A run of characters printed one per glyph cell, from cell (row, col) rightwards."""

    row: int  # 0..CELLS-1
    col: int  # 0..CELLS-1; col + len(text) <= CELLS
    text: str
    colour: str = "black"  # key of COLOURS


@dataclass(slots=True, frozen=True)
class Picture:
    """Everything needed to draw one picture; the pixels are a pure function of it."""

    background: str  # key of BACKGROUNDS
    items: tuple[Item, ...] = ()  # shapes in slots
    texts: tuple[Text, ...] = ()  # printed runs of glyphs
    bars: tuple[tuple[str, str, int], ...] = ()  # chart, left to right: (label, colour, value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "background": self.background,
            "items": [[i.kind, i.colour, i.slot, i.size] for i in self.items],
            "texts": [[t.row, t.col, t.text, t.colour] for t in self.texts],
            "bars": [list(b) for b in self.bars],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Picture:
        return cls(
            background=d["background"],
            items=tuple(Item(*i) for i in d["items"]),
            texts=tuple(Text(int(r), int(c), t, col) for r, c, t, col in d["texts"]),
            bars=tuple((lab, col, int(v)) for lab, col, v in d["bars"]),
        )

    def canonical(self) -> str:
        """A stable string of the picture (sorted-key compact JSON): the split hash's input."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))


def render(picture: Picture) -> Image.Image:
    """Draw `picture` as a SIZE x SIZE RGB image."""
    img = Image.new("RGB", (SIZE, SIZE), BACKGROUNDS[picture.background])
    draw = ImageDraw.Draw(img)
    for item in picture.items:
        x = (item.slot % 3 + 0.5) * SLOT
        y = (item.slot // 3 + 0.5) * SLOT
        _draw_shape(draw, Shape(item.kind, item.colour, x, y, SHAPE_SIZES[item.size]), 1.0)
    if picture.bars:
        _draw_chart(draw, picture.bars)
    font = _font(GLYPH_SIZE)
    for t in picture.texts:
        for i, ch in enumerate(t.text):
            if ch != " ":
                xy = ((t.col + i + 0.5) * CELL, (t.row + 0.5) * CELL)
                draw.text(xy, ch, fill=COLOURS[t.colour], font=font, anchor="mm")
    return img


def bar_column(i: int) -> int:
    """Glyph column of bar `i` (left to right) and of its label."""
    return 2 * i + 1


def _draw_chart(draw: ImageDraw.ImageDraw, bars: tuple[tuple[str, str, int], ...]) -> None:
    base = (CELLS - 1) * CELL  # the baseline: the top of the bottom row of cells (labels)
    for v in range(CHART_VALUES[0], CHART_VALUES[1] + 1):
        draw.line((0, base - v * CELL, SIZE, base - v * CELL), fill=(200, 200, 200))
    font = _font(GLYPH_SIZE)
    for i, (label, colour, value) in enumerate(bars):
        x = (bar_column(i) + 0.5) * CELL
        draw.rectangle((x - 6, base - value * CELL, x + 6, base), fill=COLOURS[colour])
        draw.text((x, base + CELL / 2), label, fill=COLOURS["black"], font=font, anchor="mm")
    draw.line((0, base, SIZE, base), fill=COLOURS["black"], width=2)
