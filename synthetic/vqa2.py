"""Image questions of the built-in multimodal model v2: reading, charts, tables, counting,
attributes, any-order and multi-answer lists, and long descriptions.

Design
------
The v1 tasks (:mod:`synthetic.vqa`) had a 64-position window, and their answers were
either one word or a long fixed-order list, so no decoding method could be seen to win or lose on
them. These families follow the issue's real VQA mix (pictures: :mod:`synthetic.scenes2`),
for a 128-position answer window with LaViDa's evaluation convention (one token per step):

==============  ===========================================  ============================  =====
family          question                                     answer                        tokens
==============  ===========================================  ============================  =====
``read``        what does the text say ?                     ``stop go`` (1-2 words)       1-2
``number``      what number is written ?                     ``407`` (1-4 digits)          1-4
``chart``       what is the value of bar C ? / tallest bar   ``4`` / ``C``                 1
``table``       what is the value of B in the table ?        ``42`` / ``B``                1-2
``colour``      what colour is the circle ?                  ``red``                       1
``count``       how many (red) shapes are there ?            ``5``                         1
``list``        list every object in the picture             ``red circle, blue bar`` *    5-14
``pair``        name two things of the same colour          ``red circle and red bar`` *  5
``describe``    describe every object                        5-9 objects, place and size   49-86
==============  ===========================================  ============================  =====

(* several valid answers: ``list`` in any order, ``pair`` any two objects of the repeated colour
in any order; :func:`score` checks them.) Tokens are those of the v2 tokenizer
(:mod:`training.vocab_vqa2`: one token per word, digit or punctuation mark), so a number
is read digit by digit, one digit per glyph cell. The median answer is 1-2 tokens, far below a
quarter of the window; ``describe`` is the long-answer (caption) family.

A request belongs to the held-out split iff the MD5 of its picture's canonical string plus the
question falls in the lowest :data:`HELDOUT_PERCENT` percent (as v1), so the splits never share a
request and the split does not depend on the renderer.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image

from seer.data.scoring import OWN_METRICS
from seer.errors import SeerError
from seer.models.tokens import IMAGE_TOKEN
from synthetic.scenes2 import (
    BACKGROUNDS,
    CELLS,
    CHART_VALUES,
    COLOURS,
    KINDS,
    POSITIONS,
    SHAPE_SIZES,
    Item,
    Picture,
    Text,
    render,
)
from synthetic.tasks import HELDOUT_PERCENT, TaskSet, check_split, draw_examples

WORDS = (
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
    "exit",
    "open",
    "shop",
    "park",
    "book",
    "rain",
    "cake",
    "milk",
    "home",
    "road",
    "sale",
    "taxi",
    "menu",
    "gate",
    "room",
    "left",
    "right",
    "north",
    "south",
    "water",
    "bread",
    "hotel",
    "train",
    "music",
    "apple",
    "lemon",
)
"""Words printed in `read` pictures (at most 5 letters: they fit a row of 8 glyph cells)."""
LETTERS = "ABCDEFGH"  # chart bar and table row labels
TEXT_COLOURS = ("black", "blue", "red", "purple", "green")
QUESTIONS: dict[str, tuple[str, ...]] = {
    "read": ("what does the text say ?", "read the text"),
    "number": ("what number is written ?", "read the number"),
    "chart": ("what is the value of bar {label} ?", "which bar is the tallest ?"),
    "table": ("what is the value of {label} in the table ?", "which row has the largest value ?"),
    "colour": ("what colour is the {kind} ?", "which colour is the {kind} ?"),
    "count": ("how many shapes are there ?", "how many {colour} shapes are there ?"),
    "list": ("list every object in the picture", "what objects are in the picture ?"),
    "pair": ("name two things of the same colour", "which two objects share a colour ?"),
    "describe": ("describe every object", "describe the picture in detail"),
}
WEIGHTS = {"read": 2.0, "number": 2.0, "chart": 1.5, "table": 1.5}
"""Training draw weight per family (others 1): reading takes the tower longest to learn."""
WINDOW = 128  # the model's answer window


@dataclass(slots=True, frozen=True)
class VQA2Example:
    """One image question: the picture, the question and one valid answer (the reference)."""

    family: str  # one of FAMILIES
    picture: Picture  # render with image()
    question: str  # without the image placeholder
    answer: str  # the reference answer (exact text)

    @property
    def prompt(self) -> str:
        """The user turn as LaViDa writes it: the image placeholder, a newline, the question."""
        return f"{IMAGE_TOKEN}\n{self.question}"

    @property
    def key(self) -> str:
        """The request's identity (picture + question): split and de-duplication key."""
        return f"{self.picture.canonical()}\n{self.question}"

    def image(self) -> Image.Image:
        return render(self.picture)


# --------------------------------------------------------------------------- generators
Draw = tuple[Picture, str, str]


def _background(rng: random.Random) -> str:
    return rng.choice(tuple(BACKGROUNDS))


def _items(rng: random.Random, n: int, colours=None, distinct_names: bool = False) -> list[Item]:
    """`n` shapes in distinct slots, in reading order; `colours` fixes their colours."""
    while True:
        slots = sorted(rng.sample(range(9), n))
        cols = colours or [rng.choice(tuple(COLOURS)) for _ in range(n)]
        items = [
            Item(rng.choice(KINDS), c, s, rng.choice(tuple(SHAPE_SIZES)))
            for s, c in zip(slots, cols, strict=True)
        ]
        if not distinct_names or len({i.name for i in items}) == n:
            return items


def _read(rng: random.Random) -> Draw:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 2))]
    rows = sorted(rng.sample(range(CELLS), len(words)))
    colour = rng.choice(TEXT_COLOURS)
    texts = tuple(
        Text(r, rng.randint(0, CELLS - len(w)), w, colour) for r, w in zip(rows, words, strict=True)
    )
    return Picture(_background(rng), texts=texts), rng.choice(QUESTIONS["read"]), " ".join(words)


def _number(rng: random.Random) -> Draw:
    digits = rng.randint(1, 4)
    value = str(rng.randint(0 if digits == 1 else 10 ** (digits - 1), 10**digits - 1))
    text = Text(
        rng.randrange(CELLS), rng.randint(0, CELLS - digits), value, rng.choice(TEXT_COLOURS)
    )
    return Picture(_background(rng), texts=(text,)), rng.choice(QUESTIONS["number"]), value


def _chart(rng: random.Random) -> Draw:
    n = rng.randint(2, 4)
    labels = sorted(rng.sample(LETTERS, n))
    while True:  # the tallest bar must be unique
        values = [rng.randint(*CHART_VALUES) for _ in labels]
        if values.count(max(values)) == 1:
            break
    colours = [rng.choice(tuple(COLOURS)) for _ in labels]
    bars = tuple(zip(labels, colours, values, strict=True))
    picture = Picture(_background(rng), bars=bars)
    if rng.random() < 0.7:
        i = rng.randrange(n)
        return picture, QUESTIONS["chart"][0].format(label=labels[i]), str(values[i])
    return picture, QUESTIONS["chart"][1], labels[values.index(max(values))]


def _table(rng: random.Random) -> Draw:
    n = rng.randint(2, 5)
    labels = sorted(rng.sample(LETTERS, n))
    while True:
        values = [rng.randint(1, 99) for _ in labels]
        if values.count(max(values)) == 1:
            break
    top, col = rng.randint(0, CELLS - n), rng.randint(0, CELLS - 4)
    colour = rng.choice(TEXT_COLOURS)
    texts = tuple(
        Text(top + r, col, f"{lab} {v}", colour)
        for r, (lab, v) in enumerate(zip(labels, values, strict=True))
    )
    picture = Picture(_background(rng), texts=texts)
    if rng.random() < 0.7:
        i = rng.randrange(n)
        return picture, QUESTIONS["table"][0].format(label=labels[i]), str(values[i])
    return picture, QUESTIONS["table"][1], labels[values.index(max(values))]


def _colour(rng: random.Random) -> Draw:
    n = rng.randint(1, 4)
    kinds = rng.sample(KINDS, n)
    items = [
        Item(k, rng.choice(tuple(COLOURS)), s, rng.choice(tuple(SHAPE_SIZES)))
        for k, s in zip(kinds, sorted(rng.sample(range(9), n)), strict=True)
    ]
    target = rng.choice(items)
    question = rng.choice(QUESTIONS["colour"]).format(kind=target.kind)
    return Picture(_background(rng), items=tuple(items)), question, target.colour


def _count(rng: random.Random) -> Draw:
    items = _items(rng, rng.randint(1, 9))
    picture = Picture(_background(rng), items=tuple(items))
    if rng.random() < 0.5:
        return picture, QUESTIONS["count"][0], str(len(items))
    colour = rng.choice([i.colour for i in items])
    n = sum(i.colour == colour for i in items)
    return picture, QUESTIONS["count"][1].format(colour=colour), str(n)


def _list(rng: random.Random) -> Draw:
    items = _items(rng, rng.randint(2, 5), distinct_names=True)
    answer = ", ".join(i.name for i in items)
    return Picture(_background(rng), items=tuple(items)), rng.choice(QUESTIONS["list"]), answer


def _pair(rng: random.Random) -> Draw:
    n = rng.randint(3, 6)
    shared = rng.randint(2, min(3, n))  # objects of the one repeated colour
    colours = rng.sample(tuple(COLOURS), n - shared + 1)
    cols = [colours[0]] * shared + colours[1:]
    rng.shuffle(cols)
    items = _items(rng, n, colours=cols)
    two = [i for i in items if i.colour == colours[0]][:2]
    answer = f"{two[0].name} and {two[1].name}"
    return Picture(_background(rng), items=tuple(items)), rng.choice(QUESTIONS["pair"]), answer


def _describe(rng: random.Random) -> Draw:
    items = _items(rng, rng.randint(5, 9))
    parts = [f"a {i.size} {i.name} {_place(i.slot)}" for i in items]
    answer = f"there are {len(items)} objects: " + ", ".join(parts) + "."
    return Picture(_background(rng), items=tuple(items)), rng.choice(QUESTIONS["describe"]), answer


def _place(slot: int) -> str:
    return "in the middle" if POSITIONS[slot] == "middle" else f"at the {POSITIONS[slot]}"


_GENERATORS: dict[str, Callable[[random.Random], Draw]] = {
    "read": _read,
    "number": _number,
    "chart": _chart,
    "table": _table,
    "colour": _colour,
    "count": _count,
    "list": _list,
    "pair": _pair,
    "describe": _describe,
}
FAMILIES: tuple[str, ...] = tuple(_GENERATORS)
READING = ("read", "number", "chart", "table")  # families answered by reading printed glyphs


# --------------------------------------------------------------------------- public API
def is_heldout(picture: Picture, question: str) -> bool:
    """Whether (picture, question) is held out (stable across runs and platforms)."""
    digest = hashlib.md5(f"{picture.canonical()}\n{question}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100 < HELDOUT_PERCENT


def generate_example(family: str, rng: random.Random, split: str) -> VQA2Example:
    """One example of `family` in `split` (rejection sampling on :func:`is_heldout`)."""
    check_split(split, SeerError)
    if family not in _GENERATORS:
        raise SeerError(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}")
    while True:
        picture, question, answer = _GENERATORS[family](rng)
        if is_heldout(picture, question) == (split == "heldout"):
            return VQA2Example(family, picture, question, answer)


def generate_examples(
    n: int, seed: int, split: str, families: tuple[str, ...] | None = None, *, unique=False
) -> list[VQA2Example]:
    """`n` examples balanced round-robin over `families`, shuffled; deterministic in the
    arguments, each family from its own RNG stream (see
    `synthetic.tasks.draw_examples`)."""
    return draw_examples(VQA2_TASKS, n, seed, split, families, unique=unique)


def _one_colour(rng: random.Random) -> Draw:
    item = Item(
        rng.choice(KINDS),
        rng.choice(tuple(COLOURS)),
        rng.randrange(9),
        rng.choice(tuple(SHAPE_SIZES)),
    )
    question = rng.choice(QUESTIONS["colour"]).format(kind=item.kind)
    return Picture(_background(rng), items=(item,)), question, item.colour


def _one_glyph(rng: random.Random) -> Draw:
    digit = str(rng.randrange(10))
    text = Text(rng.randrange(CELLS), rng.randrange(CELLS), digit, rng.choice(TEXT_COLOURS))
    return Picture(_background(rng), texts=(text,)), rng.choice(QUESTIONS["number"]), digit


def _one_word(rng: random.Random) -> Draw:
    word = rng.choice(WORDS)
    text = Text(
        rng.randrange(CELLS), rng.randint(0, CELLS - len(word)), word, rng.choice(TEXT_COLOURS)
    )
    return Picture(_background(rng), texts=(text,)), rng.choice(QUESTIONS["read"]), word


def _few(rng: random.Random) -> Draw:
    items = _items(rng, rng.randint(1, 3))
    return Picture(_background(rng), items=tuple(items)), QUESTIONS["count"][0], str(len(items))


WARMUP: dict[str, Callable[[random.Random], Draw]] = {
    "colour": _one_colour,
    "number": _one_glyph,
    "read": _one_word,
    "count": _few,
}
"""The warm-up requests (the trainer's first steps; docs/builtin-vqa2/MODEL_CARD.md): one shape,
one digit, one word or 1-3 shapes on the picture, so the answer is in the picture's mean and the
LM starts to use the image (on the full mix it ignored it for 5,000 steps)."""


GLYPH_COPIES = (1, 2, 4, 8, 16, 32)
"""How many times `glyphs` prints its digit (one of these, uniformly)."""
_CHECKER = tuple((r, c) for r in range(CELLS) for c in range(CELLS) if (r + c) % 2 == 0)


def glyphs(rng: random.Random, copies: int = 0) -> Draw:
    """One digit printed in `copies` cells (0: one of :data:`GLYPH_COPIES`) of a checkerboard,
    so no two copies sit side by side and each reads as the number alone. With many copies the
    digit is in the mean of the image tokens; with one the LM must find its cell. The reading
    warm-up (`read_share` in `training.builtin_vqa2`): the LM ignored a single printed digit
    for 5,700 steps though the tower's token at its cell encodes it (a linear probe: 55 %)."""
    digit, colour = str(rng.randrange(10)), rng.choice(TEXT_COLOURS)
    cells = sorted(rng.sample(_CHECKER, copies or rng.choice(GLYPH_COPIES)))
    texts = tuple(Text(r, c, digit, colour) for r, c in cells)
    return Picture(_background(rng), texts=texts), rng.choice(QUESTIONS["number"]), digit


ROW_COPIES = (1, 2, 4, 8)
"""How many rows `rows` prints its number or word in (one of these, uniformly)."""


def rows(rng: random.Random, family: str, copies: int = 0) -> Draw:
    """A number of 2-4 digits (`family` ``number``) or a word (``read``) printed in `copies`
    rows (0: one of :data:`ROW_COPIES`), each at its own column: the reading warm-up's second
    stage, after `glyphs`, for runs of glyphs read in order."""
    if family == "number":
        digits = rng.randint(2, 4)
        text = str(rng.randint(10 ** (digits - 1), 10**digits - 1))
    else:
        text = rng.choice(WORDS)
    colour = rng.choice(TEXT_COLOURS)
    at = sorted(rng.sample(range(CELLS), copies or rng.choice(ROW_COPIES)))
    texts = tuple(Text(r, rng.randint(0, CELLS - len(text)), text, colour) for r in at)
    return Picture(_background(rng), texts=texts), rng.choice(QUESTIONS[family]), text


_ROWS = (
    ("number", functools.partial(rows, family="number")),
    ("read", functools.partial(rows, family="read")),
)
READING: dict[str, tuple[tuple[str, Callable[[random.Random], Draw]], ...]] = {
    "digits": (("number", glyphs),),
    "runs": (("number", glyphs), *_ROWS),
    "rows": _ROWS,
}
"""The reading warm-up's stages (`reading` in `training.builtin_vqa2`): (family, draw)
pairs, one picked uniformly per example: single digits, then numbers and words too, then
numbers and words only (single digits read at 100 % by then)."""


def draw_split(
    n: int, rng: random.Random, pick: Callable[[], tuple[str, Callable]], split: str = "train"
) -> list[VQA2Example]:
    """`n` examples of `split` ("train": never held out; "heldout"), each from the
    (family, draw) that `pick` returns, the others drawn and dropped."""
    out = []
    while len(out) < n:
        family, draw = pick()
        picture, question, answer = draw(rng)
        if is_heldout(picture, question) == (split == "heldout"):
            out.append(VQA2Example(family, picture, question, answer))
    return out


def warmup_examples(n: int, rng: random.Random) -> list[VQA2Example]:
    """`n` training examples of the :data:`WARMUP` draws, each of a family drawn at random."""
    return draw_split(n, rng, lambda: (f := rng.choice(tuple(WARMUP)), WARMUP[f]))


def reading_examples(n: int, rng: random.Random, stage: str = "digits") -> list[VQA2Example]:
    """`n` training examples of the reading warm-up's `stage` (:data:`READING`)."""
    pairs = READING[stage]
    pick = (lambda: pairs[0]) if len(pairs) == 1 else (lambda: rng.choice(pairs))
    return draw_split(n, rng, pick)


def training_examples(n: int, rng: random.Random) -> list[VQA2Example]:
    """`n` training examples, each family drawn with its :data:`WEIGHTS` weight."""
    weights = [WEIGHTS.get(f, 1.0) for f in FAMILIES]
    return [generate_example(f, rng, "train") for f in rng.choices(FAMILIES, weights, k=n)]


METRICS = {"list": "any_order_score", "pair": "same_colour_pair_score"}
"""Families with several valid answers -> their `seer.data.scoring` metric (the others:
``normalised_match_score`` on the reference answer)."""


def metric(example: VQA2Example) -> tuple[str, list[str] | str]:
    """(metric, reference) that `seer.data.score` checks `example` with: the picture's object
    names (in reading order) for ``list`` and ``pair``, else the reference answer."""
    if example.family in METRICS:
        return METRICS[example.family], [i.name for i in example.picture.items]
    return "normalised_match_score", example.answer


def score(example: VQA2Example, text: str) -> float:
    """1.0 if `text` is a right answer to `example`, else 0.0 (:func:`metric`)."""
    name, reference = metric(example)
    return OWN_METRICS[name](text, reference)


def all_texts() -> list[str]:
    """Every fixed piece of text a question or an answer is made of (the vocabulary's source)."""
    template = " ".join(q for qs in QUESTIONS.values() for q in qs)
    template = re.sub(r"\{\w+\}", " ", template)
    words = [template, "there are objects: a and in the at", " ".join(WORDS), " ".join(LETTERS)]
    words += [" ".join(COLOURS), " ".join(KINDS), " ".join(SHAPE_SIZES), " ".join(POSITIONS)]
    return words + [", ."]


# the v2 image questions: RNG streams apart from v1's, dedup on (picture, question)
VQA2_TASKS = TaskSet(
    families=FAMILIES,
    draw=generate_example,
    key=lambda ex: ex.key,
    stream="vqa2/",
    shuffle="vqa2-shuffle",
    noun="examples",
    error=SeerError,
)
