"""Synthetic image question answering for the built-in multimodal demo model.

Design
------
The multimodal demo trains a tiny LaViDa-LLaDA-architecture model (small SigLIP-style vision
tower, projector, small LLaDA) on two CPU cores; its pictures (colours, shapes, the font, the
96 px canvas, rendering) are :mod:`synthetic.scenes`. The questions about them:

* multi-object scenes sit on a 3x3 grid of 32 px cells (one cell = 2x2 image tokens) with a
  little jitter, so the *reading order* (rows top to bottom, left to right within a row) of the
  ``describe`` answer is always well defined;
* printed words are 2-4 letters, at most 3 words on one or two lines of at most
  :data:`LINE_CHARS` characters;
* bar charts identify each bar by its colour through a fixed fruit table (:data:`FRUITS`: red
  bar = apples, ...), because labels written under 4 bars of 12 px would be unreadable at 96 px.
  Values 1-5; the maximum is unique by construction.

Families, questions and answer lengths (in words; answers are space-separated words from the
closed vocabulary :func:`all_words`):

============  ===========================  ===============================================  =====
family        question                     answer                                           words
============  ===========================  ===============================================  =====
``colour``    what colour is the shape ?   ``red``                                          1
``count``     how many shapes ?            ``5`` (1-9 shapes on the grid)                   1
``read``      read the text                ``stop go``                                      1-3
``describe``  describe every object        ``a red circle , an orange bar`` (1-6 objects)   3-23
``chart``     summarise the chart          ``apples 3 , pears 5 , most pears`` (2-4 bars)   8-14
============  ===========================  ===============================================  =====

Each family has two phrasings of its question. The held-out split is decided, as in
:mod:`synthetic.tasks`, by the MD5 hash of a canonical string of the image *spec* plus the
question (never of the pixels), so it does not depend on the renderer or the font.
The user turn of a LaViDa prompt is ``"<image>\\n" + question`` (:attr:`VQAExample.prompt`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from seer.errors import SeerError
from seer.models.tokens import IMAGE_TOKEN
from synthetic.scenes import (
    BACKGROUNDS,
    CANVAS,
    CHART_VALUES,
    COLOURS,
    IMAGE_SIZE,
    KINDS,
    ImageSpec,
    Shape,
    render,
)
from synthetic.tasks import HELDOUT_PERCENT, TaskSet, check_split, draw_examples

__all__ = [
    "BACKGROUNDS",
    "CANVAS",
    "CELL",
    "COLOURS",
    "FAMILIES",
    "FRUITS",
    "IMAGE_SIZE",
    "KINDS",
    "LINE_CHARS",
    "QUESTIONS",
    "READ_WORDS",
    "VQA_TASKS",
    "ImageSpec",
    "Shape",
    "VQAExample",
    "all_words",
    "generate_example",
    "generate_examples",
    "is_heldout",
    "render",
    "save_contact_sheet",
    "save_samples",
    "wrap_words",
]

FRUITS: dict[str, str] = {
    "red": "apples",
    "green": "pears",
    "blue": "berries",
    "yellow": "lemons",
    "orange": "oranges",
    "purple": "plums",
    "black": "olives",
}
"""Chart label of a bar of each colour (the chart draws no text)."""

TEXT_COLOURS = ("black", "blue", "red", "purple", "green")
READ_WORDS = (
    "go",
    "up",
    "no",
    "on",
    "yes",
    "off",
    "top",
    "hot",
    "cat",
    "dog",
    "sun",
    "sky",
    "red",
    "big",
    "car",
    "bus",
    "map",
    "box",
    "cup",
    "hat",
    "pen",
    "cold",
    "stop",
    "fish",
    "tree",
    "moon",
    "star",
    "bird",
    "ship",
    "door",
)
LINE_CHARS = 6  # most characters (with spaces) on one printed line: at most 79 px at 22 px
TEXT_JITTER = (6, 8)  # largest x / y offset of the text block's centre from the middle
READ_WORDS_RANGE = (1, 3)
COUNT_RANGE = (1, 9)
DESCRIBE_RANGE = (1, 6)
CHART_BARS_RANGE = (2, 4)
CELL = CANVAS // 3  # grid cell side
MAX_ANSWER_WORDS = 25

QUESTIONS: dict[str, tuple[str, ...]] = {
    "colour": ("what colour is the shape ?", "what colour is the {kind} ?"),
    "count": ("how many shapes ?", "how many shapes are there ?"),
    "read": ("read the text", "what does the text say ?"),
    "describe": ("describe every object", "list the objects"),
    "chart": ("summarise the chart", "what does the chart show ?"),
}


@dataclass(slots=True, frozen=True)
class VQAExample:
    """One image question: the image's spec, the question and its answer (plain words)."""

    family: str  # one of FAMILIES
    spec: ImageSpec  # render with image() / render()
    question: str  # without the image placeholder
    answer: str  # space-separated words from all_words()

    @property
    def prompt(self) -> str:
        """The user turn as LaViDa writes it: the image placeholder, a newline, the question."""
        return f"{IMAGE_TOKEN}\n{self.question}"

    def image(self, size: int = IMAGE_SIZE) -> Image.Image:
        return render(self.spec, size)


# --------------------------------------------------------------------------- generators


def _grid_shapes(rng: random.Random, n: int) -> tuple[Shape, ...]:
    """``n`` shapes in distinct cells of the 3x3 grid, in reading order (row, then column)."""
    cells = sorted(rng.sample(range(9), n))
    shapes = []
    for cell in cells:
        size = rng.randint(18, 26)
        jitter = (CELL - size) // 2 - 1
        x = (cell % 3) * CELL + CELL // 2 + rng.randint(-jitter, jitter)
        y = (cell // 3) * CELL + CELL // 2 + rng.randint(-jitter, jitter)
        shapes.append(Shape(rng.choice(KINDS), rng.choice(tuple(COLOURS)), x, y, size))
    return tuple(shapes)


def _background(rng: random.Random) -> str:
    return rng.choice(tuple(BACKGROUNDS))


def _colour(rng: random.Random) -> tuple[ImageSpec, str, str]:
    size = rng.randint(36, 60)
    lo, hi = size // 2 + 4, CANVAS - size // 2 - 4
    shape = Shape(rng.choice(KINDS), rng.choice(tuple(COLOURS)), *_xy(rng, lo, hi), size)
    question = rng.choice(QUESTIONS["colour"]).format(kind=shape.kind)
    return ImageSpec(_background(rng), shapes=(shape,)), question, shape.colour


def _count(rng: random.Random) -> tuple[ImageSpec, str, str]:
    shapes = _grid_shapes(rng, rng.randint(*COUNT_RANGE))
    spec = ImageSpec(_background(rng), shapes=shapes)
    return spec, rng.choice(QUESTIONS["count"]), str(len(shapes))


def _read(rng: random.Random) -> tuple[ImageSpec, str, str]:
    while True:  # resample texts that would need three lines
        words = [rng.choice(READ_WORDS) for _ in range(rng.randint(*READ_WORDS_RANGE))]
        lines = wrap_words(words)
        if len(lines) <= 2:
            break
    spec = ImageSpec(
        _background(rng),
        text=lines,
        text_colour=rng.choice(TEXT_COLOURS),
        text_xy=(
            CANVAS // 2 + rng.randint(-TEXT_JITTER[0], TEXT_JITTER[0]),
            CANVAS // 2 + rng.randint(-TEXT_JITTER[1], TEXT_JITTER[1]),
        ),
    )
    return spec, rng.choice(QUESTIONS["read"]), " ".join(words)


def _describe(rng: random.Random) -> tuple[ImageSpec, str, str]:
    shapes = _grid_shapes(rng, rng.randint(*DESCRIBE_RANGE))
    answer = " , ".join(f"{_article(s.colour)} {s.colour} {s.kind}" for s in shapes)
    return ImageSpec(_background(rng), shapes=shapes), rng.choice(QUESTIONS["describe"]), answer


def _chart(rng: random.Random) -> tuple[ImageSpec, str, str]:
    colours = rng.sample(tuple(FRUITS), rng.randint(*CHART_BARS_RANGE))
    while True:  # the largest value must be unique so that "most" is well defined
        values = [rng.randint(*CHART_VALUES) for _ in colours]
        if values.count(max(values)) == 1:
            break
    bars = tuple(zip(colours, values, strict=True))
    top = FRUITS[colours[values.index(max(values))]]
    answer = " , ".join(f"{FRUITS[c]} {v}" for c, v in bars) + f" , most {top}"
    return ImageSpec(_background(rng), bars=bars), rng.choice(QUESTIONS["chart"]), answer


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _xy(rng: random.Random, lo: int, hi: int) -> tuple[int, int]:
    return rng.randint(lo, hi), rng.randint(lo, hi)


_GENERATORS: dict[str, Callable[[random.Random], tuple[ImageSpec, str, str]]] = {
    "colour": _colour,
    "count": _count,
    "read": _read,
    "describe": _describe,
    "chart": _chart,
}

FAMILIES: tuple[str, ...] = tuple(_GENERATORS)


# --------------------------------------------------------------------------- public API


def wrap_words(words: Sequence[str]) -> tuple[str, ...]:
    """Greedy line breaking: each printed line holds at most :data:`LINE_CHARS` characters."""
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= LINE_CHARS:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return tuple(lines)


def is_heldout(spec: ImageSpec, question: str) -> bool:
    """Whether (spec, question) belongs to the held-out split (stable across runs/platforms)."""
    key = f"{spec.canonical()}\n{question}"
    digest = hashlib.md5(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 100 < HELDOUT_PERCENT


def generate_example(family: str, rng: random.Random, split: str) -> VQAExample:
    """Draw one example of ``family`` in ``split`` (rejection sampling on :func:`is_heldout`)."""
    check_split(split, SeerError)
    generator = _GENERATORS[family]
    while True:
        spec, question, answer = generator(rng)
        if is_heldout(spec, question) == (split == "heldout"):
            words = answer.split(" ")
            if not 1 <= len(words) <= MAX_ANSWER_WORDS or "" in words:
                raise AssertionError(f"bad {family} answer: {answer!r}")  # a generator bug
            return VQAExample(family, spec, question, answer)


def generate_examples(
    n: int,
    seed: int,
    split: str,
    families: tuple[str, ...] | None = None,
    *,
    unique: bool = False,
) -> list[VQAExample]:
    """``n`` examples, balanced round-robin over ``families``, then shuffled.

    Deterministic in ``(n, seed, split, families, unique)``; each family draws from its own RNG
    stream, so adding a family does not change the others' examples. With ``unique=True``
    repeated (spec, question) pairs are skipped; ``SeerError`` if a family cannot supply them.
    """
    return draw_examples(VQA_TASKS, n, seed, split, families, unique=unique)


def all_words() -> list[str]:
    """Every word of any question or answer, sorted and deduplicated (no image placeholder)."""
    template = " ".join(q for qs in QUESTIONS.values() for q in qs).replace("{kind}", "")
    pools: Iterable[Iterable[str]] = (
        template.split(),
        ("a", "an", ",", "most"),
        COLOURS,
        KINDS,
        FRUITS.values(),
        READ_WORDS,
        (str(i) for i in range(COUNT_RANGE[0], COUNT_RANGE[1] + 1)),
        (str(i) for i in range(CHART_VALUES[0], CHART_VALUES[1] + 1)),
    )
    return sorted({w for pool in pools for w in pool})


def save_samples(
    folder: Path, n: int = 6, seed: int = 0, split: str = "heldout", size: int = IMAGE_SIZE
) -> list[Path]:
    """Write ``n`` sample PNGs (round-robin over families) and ``samples.json`` into ``folder``.

    ``samples.json`` is a list of ``{"file", "family", "question", "prompt", "answer", "spec"}``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    per_family = [generate_examples(n, seed, split, (f,)) for f in FAMILIES]
    picked = [per_family[i % len(FAMILIES)][i // len(FAMILIES)] for i in range(n)]
    paths, records = [], []
    for i, ex in enumerate(picked):
        path = folder / f"{i:02d}_{ex.family}.png"
        ex.image(size).save(path, optimize=True)
        paths.append(path)
        records.append(
            {
                "file": path.name,
                "family": ex.family,
                "question": ex.question,
                "prompt": ex.prompt,
                "answer": ex.answer,
                "spec": ex.spec.to_dict(),
            }
        )
    text = json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    (folder / "samples.json").write_text(text, encoding="utf-8")
    return paths


def save_contact_sheet(
    path: Path, n: int = 12, seed: int = 0, split: str = "heldout", cols: int = 4
) -> None:
    """A matplotlib grid of ``n`` examples at :data:`IMAGE_SIZE` with their question and answer."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    examples = sorted(generate_examples(n, seed, split), key=lambda e: FAMILIES.index(e.family))
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.9 * rows), squeeze=False)
    for ax, ex in zip(axes.flat, examples, strict=False):
        ax.imshow(ex.image(), interpolation="nearest")
        answer = textwrap.fill(ex.answer, 38)
        ax.set_title(f"[{ex.family}] {ex.question}\n{answer}", fontsize=8, loc="left")
    for ax in axes.flat:
        ax.axis("off")
    fig.suptitle(f"Seer VQA demo data ({IMAGE_SIZE} px, {split} split)", fontsize=11)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- helpers


# the image questions: RNG streams apart from the text tasks', dedup on (image, question)
VQA_TASKS = TaskSet(
    families=FAMILIES,
    draw=generate_example,
    key=lambda ex: f"{ex.spec.canonical()}\n{ex.question}",
    stream="vqa/",
    shuffle="vqa-shuffle",
    noun="examples",
    error=SeerError,
)
