"""Synthetic instruction-following tasks for a small masked-diffusion demo model.

Design
------
The demo trains a tiny LLaDA-architecture model on two CPU cores for about an hour, so every
task is chosen to be *locally determined*: the answer follows from a fixed template plus short
items copied from the prompt (or a small memorised table such as spellings and one-digit sums).
Multi-step reasoning (reversal, sorting, carrying) is avoided on purpose; an earlier trial with
reversal-heavy data reached only 6.5 % exact match.

Every prompt and answer is a sequence of space-separated words drawn from a closed vocabulary
(:func:`all_words`), so a word-level tokenizer covers everything without an unknown token.
Answers never contain special tokens; the training code appends ``<|eot_id|>`` and pads.

Families and answer lengths (in words):

============  ==============================================  ==========
family        example prompt -> answer                        length
============  ==============================================  ==========
``lookup``    what color is the ball ? the ball is red , ...  1
              -> ``red``
``count``     how many items : cat dog cow -> ``3``           1
``arith``     add 3 and 4 -> ``3 plus 4 is 7``                5
``spell``     spell apple -> ``a p p l e``                    3-9
``copy``      copy : cat red lamp -> ``cat red lamp``         1-12
``repeat``    repeat star 7 times -> ``star star ... star``   1-30
``describe``  describe : red ball , blue cube                 6-54
              -> ``there is a red ball . there is a blue cube .``
============  ==============================================  ==========

Mixed uniformly over families, the answer lengths are long-tailed (about 30 % are one word)
but reach :data:`MAX_ANSWER_WORDS`.

Train / held-out split
----------------------
A prompt belongs to the held-out split iff the MD5 hash of its text falls into the lowest
:data:`HELDOUT_PERCENT` percent (:func:`is_heldout`). Generators simply reject prompts of the
other split, so the two splits never share a prompt, regardless of seeds or sizes. Families
with a small prompt space (``arith``, ``spell``) use several phrasings, so a held-out prompt
usually asks for a sum or a spelling that training shows under another phrasing.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MAX_ANSWER_WORDS = 55
"""Upper bound on answer length in words (answer window 64 minus ``<|eot_id|>`` and slack)."""

HELDOUT_PERCENT = 10
"""Share of the prompt space (by hash) reserved for the held-out split."""

SPLITS = ("train", "heldout")

COLORS = (
    "red",
    "blue",
    "green",
    "yellow",
    "black",
    "white",
    "orange",
    "purple",
    "pink",
    "brown",
    "gray",
)
OBJECTS = (
    "ball",
    "cube",
    "box",
    "cup",
    "hat",
    "book",
    "key",
    "lamp",
    "chair",
    "table",
    "bag",
    "shoe",
)
ANIMALS = (
    "cat",
    "dog",
    "cow",
    "pig",
    "fox",
    "owl",
    "bee",
    "ant",
    "hen",
    "duck",
    "goat",
    "frog",
    "bird",
    "fish",
    "horse",
    "sheep",
)
SPELL_WORDS = (
    # 3 letters
    "cat",
    "dog",
    "sun",
    "hat",
    "cup",
    "pen",
    # 4 letters
    "bird",
    "fish",
    "tree",
    "book",
    "lamp",
    "star",
    "frog",
    "boat",
    # 5 letters
    "apple",
    "house",
    "green",
    "water",
    "table",
    "chair",
    "horse",
    "river",
    # 6 letters
    "garden",
    "yellow",
    "orange",
    "planet",
    "rabbit",
    "window",
    # 7 letters
    "kitchen",
    "blanket",
    "chicken",
    "monster",
    # 8 letters
    "elephant",
    "mountain",
    "sandwich",
    "dinosaur",
    # 9 letters
    "butterfly",
    "chocolate",
    "telephone",
    "crocodile",
)
REPEAT_WORDS = ("star", "moon", "sun", "tree", "rain", "snow", "bell", "drum", *ANIMALS[:8])
COPY_WORDS = (*COLORS, *OBJECTS, *ANIMALS)
NUMBER_WORDS = tuple(str(i) for i in range(61))
"""Numbers are single word tokens; 0..60 leaves headroom beyond what the tasks use (0..30)."""

LOOKUP_FACTS = (2, 5)
COUNT_ITEMS = (1, 9)
ARITH_DIGITS = (0, 9)
COPY_ITEMS = (1, 12)
REPEAT_TIMES = (1, 30)
DESCRIBE_ITEMS = (1, 9)
DESCRIBE_WORDS_PER_ITEM = 6

ARITH_TEMPLATES = (
    "add {a} and {b}",
    "what is {a} plus {b} ?",
    "compute the sum of {a} and {b}",
)
SPELL_TEMPLATES = ("spell {w}", "spell the word {w}", "how do you spell {w} ?")
REPEAT_TEMPLATES = ("repeat {w} {n} times", "say {w} {n} times")


@dataclass(slots=True, frozen=True)
class Example:
    """One instruction: a prompt and its answer, both plain space-separated words."""

    family: str
    prompt: str
    answer: str


# --------------------------------------------------------------------------- generators


def _lookup(rng: random.Random) -> tuple[str, str]:
    objects = rng.sample(OBJECTS, rng.randint(*LOOKUP_FACTS))
    colors = [rng.choice(COLORS) for _ in objects]
    facts = " , ".join(f"the {o} is {c}" for o, c in zip(objects, colors, strict=True))
    k = rng.randrange(len(objects))
    question = f"what color is the {objects[k]} ?"
    prompt = f"{question} {facts}" if rng.random() < 0.5 else f"{facts} . {question}"
    return prompt, colors[k]


def _count(rng: random.Random) -> tuple[str, str]:
    items = [rng.choice(ANIMALS) for _ in range(rng.randint(*COUNT_ITEMS))]
    return f"how many items : {' '.join(items)}", str(len(items))


def _arith(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(*ARITH_DIGITS), rng.randint(*ARITH_DIGITS)
    return rng.choice(ARITH_TEMPLATES).format(a=a, b=b), f"{a} plus {b} is {a + b}"


def _spell(rng: random.Random) -> tuple[str, str]:
    word = rng.choice(SPELL_WORDS)
    return rng.choice(SPELL_TEMPLATES).format(w=word), " ".join(word)


def _copy(rng: random.Random) -> tuple[str, str]:
    words = " ".join(rng.choice(COPY_WORDS) for _ in range(rng.randint(*COPY_ITEMS)))
    return f"copy : {words}", words


def _repeat(rng: random.Random) -> tuple[str, str]:
    word, n = rng.choice(REPEAT_WORDS), rng.randint(*REPEAT_TIMES)
    return rng.choice(REPEAT_TEMPLATES).format(w=word, n=n), " ".join([word] * n)


def _describe(rng: random.Random) -> tuple[str, str]:
    objects = rng.sample(OBJECTS, rng.randint(*DESCRIBE_ITEMS))
    items = [(rng.choice(COLORS), o) for o in objects]
    prompt = "describe : " + " , ".join(f"{c} {o}" for c, o in items)
    answer = " ".join(f"there is a {c} {o} ." for c, o in items)
    return prompt, answer


_GENERATORS: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "lookup": _lookup,
    "count": _count,
    "arith": _arith,
    "spell": _spell,
    "copy": _copy,
    "repeat": _repeat,
    "describe": _describe,
}

FAMILIES: tuple[str, ...] = tuple(_GENERATORS)

# Words used by the templates above (everything that is not drawn from a pool).
_TEMPLATE_WORDS = (
    "what color is the ? , . how many items : add and plus compute sum of spell word do you "
    "copy repeat say times describe there a"
)


# --------------------------------------------------------------------------- public API


def is_heldout(prompt: str) -> bool:
    """Whether ``prompt`` belongs to the held-out split (stable across runs and platforms)."""
    digest = hashlib.md5(prompt.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 100 < HELDOUT_PERCENT


def check_answer(answer: str) -> None:
    """Raise ``ValueError`` unless ``answer`` is 1..MAX_ANSWER_WORDS single-spaced words."""
    words = answer.split(" ")
    if not 1 <= len(words) <= MAX_ANSWER_WORDS or "" in words:
        raise ValueError(f"bad answer ({len(words)} words): {answer!r}")


def generate_example(family: str, rng: random.Random, split: str) -> Example:
    """Draw one example of ``family`` whose prompt lies in ``split`` (rejection sampling)."""
    check_split(split)
    want_heldout = split == "heldout"
    generator = _GENERATORS[family]
    while True:
        prompt, answer = generator(rng)
        if is_heldout(prompt) == want_heldout:
            check_answer(answer)
            return Example(family=family, prompt=prompt, answer=answer)


def generate_examples(
    n: int,
    seed: int,
    split: str,
    families: tuple[str, ...] | None = None,
    *,
    unique: bool = False,
) -> list[Example]:
    """Generate ``n`` examples, balanced round-robin over ``families`` and then shuffled.

    Deterministic in ``(n, seed, split, families, unique)``. Each family draws from its own RNG
    stream, so adding or removing a family does not change the others' examples. With
    ``unique=True`` repeated prompts are skipped (useful for evaluation sets); a ``ValueError``
    is raised when a family's prompt space in this split is too small to supply its share.
    """
    return draw_examples(TEXT_TASKS, n, seed, split, families, unique=unique)


def all_words() -> list[str]:
    """Every word that can appear in any prompt or answer, sorted and deduplicated."""
    letters = {ch for w in SPELL_WORDS for ch in w}
    pools: Iterable[Iterable[str]] = (
        _TEMPLATE_WORDS.split(),
        COLORS,
        OBJECTS,
        ANIMALS,
        SPELL_WORDS,
        REPEAT_WORDS,
        NUMBER_WORDS,
        letters,
    )
    return sorted({w for pool in pools for w in pool})


# --------------------------------------------------------------------------- helpers


def check_split(split: str, error: type[Exception] = ValueError) -> None:
    if split not in SPLITS:
        raise error(f"split must be one of {SPLITS}, got {split!r}")


@dataclass(frozen=True, slots=True)
class TaskSet:
    """How one task module draws examples; `draw_examples` balances and shuffles them."""

    families: tuple[str, ...]  # every family, in round-robin order
    draw: Callable[[str, random.Random, str], Any]  # one example of (family, rng, split)
    key: Callable[[Any], str]  # what `unique=True` deduplicates on
    stream: str  # RNG stream prefix of a family's draws: Random(f"{stream}{family}/{seed}/{split}")
    shuffle: str  # RNG stream of the final shuffle: Random(f"{shuffle}/{seed}/{split}")
    noun: str  # what the "cannot draw n unique ..." error counts
    error: type[Exception]  # raised for an unknown split or family, or an exhausted family


def draw_examples(
    tasks: TaskSet,
    n: int,
    seed: int,
    split: str,
    families: tuple[str, ...] | None = None,
    *,
    unique: bool = False,
) -> list:
    """``n`` examples balanced round-robin over ``families`` (default: all), then shuffled;
    with ``unique`` repeated ``tasks.key(ex)`` are skipped (see `generate_examples`)."""
    check_split(split, tasks.error)
    families = tasks.families if families is None else families
    unknown = set(families) - set(tasks.families)
    if unknown or not families:
        raise tasks.error(
            f"unknown or empty families: {sorted(unknown)}; choose from {tasks.families}"
        )
    quota = [n // len(families) + (i < n % len(families)) for i in range(len(families))]
    examples = [
        ex
        for family, q in zip(families, quota, strict=True)
        for ex in _family_examples(tasks, family, q, seed, split, unique)
    ]
    random.Random(f"{tasks.shuffle}/{seed}/{split}").shuffle(examples)
    return examples


# the text tasks: their RNG streams and errors are the ones this module always used
TEXT_TASKS = TaskSet(
    families=FAMILIES,
    draw=generate_example,
    key=lambda ex: ex.prompt,
    stream="",
    shuffle="shuffle",
    noun="prompts",
    error=ValueError,
)


def _family_examples(tasks: TaskSet, family: str, n: int, seed: int, split: str, unique: bool):
    rng = random.Random(f"{tasks.stream}{family}/{seed}/{split}")
    out, seen, attempts = [], set(), 0
    while len(out) < n:
        ex = tasks.draw(family, rng, split)
        attempts += 1
        if unique:
            key = tasks.key(ex)
            if key in seen:
                if attempts > 50 * n + 1000:
                    raise tasks.error(f"cannot draw {n} unique {split} {tasks.noun} for {family!r}")
                continue
            seen.add(key)
        out.append(ex)
    return out
