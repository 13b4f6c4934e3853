"""The built-in text model v2's tasks: a waiting line of people, 4x4 puzzles, worked sums.

Design
------
The first built-in model's tasks (:mod:`synthetic.tasks`) are *locally determined*: every
answer token follows from a template and a short item copied from the prompt, so decoding several
tokens per step costs them nothing and no decoding method can be seen to lose accuracy. These tasks
are chosen for the opposite reason. They follow the operations of ParallelBench (furiosa-ai, ICLR
2026), on which real diffusion LMs break under parallel decoding, generated here from our own
templates and our own name lists (:mod:`synthetic.names`, US Census lists); no
ParallelBench file or item is used, and :func:`overlap` checks that no training item equals a test
item.

Families (answer length in tokens of the v2 tokenizer, one name ~ 5 tokens in a list):

* waiting-line operations on a list of 2-8 people, answered as ``["First Last", ...]``:
  ``copy``, ``reverse``, ``sort`` (by the full string, as ParallelBench's reference answers are),
  ``insert_index`` / ``remove_index`` / ``replace_index`` (0-based positions), and the operations
  with several valid answers -- ``shuffle`` (any order but the input's), ``insert_random``,
  ``remove_random``, ``replace_random`` (any position) -- 11-41 tokens;
* ``latin_square`` (any 4x4 Latin square of the given symbols, CSV rows) and ``sudoku`` (a 4x4
  grid with 4-12 blanks), 19-31 tokens: many valid squares, each cell depends on the others;
* ``pick``: "name two people of the line", any two in any order (parallel decoding mixes first
  and last names of different people), 11 tokens;
* ``sum``: a worked column addition of two 2-4 digit numbers, each digit and carry depending on
  the earlier ones, 15-40 tokens;
* very short answers: ``count`` (how many people), ``where`` (the position of a person) -- 1-2
  tokens; ``who`` (the person at a position) -- 2 tokens;
* long answers: ``long_copy`` (a line of 12-22 people, 61-111 tokens) and ``roll`` (a numbered
  roll of 8-15 people, one per line, 40-100 tokens).

An item optionally carries one in-context example of the same family as an earlier user and
assistant turn (ParallelBench's prompts do). A request belongs to the held-out split iff the MD5
of its text (the whole chat) falls in the lowest :data:`HELDOUT_PERCENT` percent, so the splits
never share a request. :func:`score` checks an answer (exact match, or the family's checker when
several answers are valid).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from seer.data.example import Example
from seer.data.scoring import score as data_score
from synthetic.lines_templates import OPS, PUZZLES, SCENES
from synthetic.names import first_names, last_names

HELDOUT_PERCENT = 10
SPLITS = ("train", "heldout")
ICL_PROB = 0.5  # share of items with one in-context example turn
SYMBOLS = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


@dataclass(slots=True)
class Item:
    """One request of the v2 tasks and its reference."""

    family: str  # task family
    prompt: str  # the last user turn
    answer: str  # one valid answer (the reference for exact-match families)
    turns: list[tuple[str, str]] = field(default_factory=list)  # in-context (user, assistant)
    ref: dict = field(default_factory=dict)  # what the family's checker needs

    def messages(self) -> list[dict]:
        """The chat: the in-context turns, then the question."""
        out = []
        for user, assistant in self.turns:
            out += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        return out + [{"role": "user", "content": self.prompt}]

    @property
    def text(self) -> str:
        """The request's identity (the whole chat as JSON): split and overlap key."""
        return json.dumps(self.messages(), sort_keys=True)


def list_str(items: list[str]) -> str:
    """``["a", "b"]``: a JSON list of strings with ", " between items."""
    return "[" + ", ".join(f'"{x}"' for x in items) + "]"


# ---------------------------------------------------------------- family generators
def _people(rng: random.Random, n: int) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        name = f"{rng.choice(first_names())} {rng.choice(last_names())}"
        if name not in out:
            out.append(name)
    return out


def _outsider(rng: random.Random, people: list[str]) -> str:
    while (name := _people(rng, 1)[0]) in people:
        pass
    return name


def _shuffled(rng: random.Random, xs: list[str]) -> list[str]:
    ys = xs[:]
    while ys == xs:
        rng.shuffle(ys)
    return ys


Gen = Callable[[random.Random], tuple[dict, str, dict]]  # rng -> (template fields, answer, ref)


def _line_op(op: str, lo: int = 2, hi: int = 8) -> Gen:
    def gen(rng: random.Random) -> tuple[dict, str, dict]:
        people = _people(rng, rng.randint(max(lo, 3 if op == "shuffle" else lo), hi))
        fields: dict = {"context": list_str(people)}
        ref: dict = {"input": people}
        out, index = people[:], None
        if op == "reverse":
            out = people[::-1]
        elif op == "sort":
            out = sorted(people)
        elif op == "shuffle":
            out = _shuffled(rng, people)
        elif op.startswith("insert"):
            index, fields["word"] = rng.randint(0, len(people)), _outsider(rng, people)
            out.insert(index, fields["word"])
        elif op.startswith("remove"):
            index = rng.randrange(len(people))
            del out[index]
        elif op.startswith("replace"):
            index, fields["word"] = rng.randrange(len(people)), _outsider(rng, people)
            out[index] = fields["word"]
        if "word" in fields:
            ref["word"] = fields["word"]
        if op.endswith("_index"):
            fields["index"] = index
        return fields, list_str(out), ref

    return gen


def _pick(rng: random.Random) -> tuple[dict, str, dict]:
    people = _people(rng, rng.randint(3, 7))
    return {"context": list_str(people)}, list_str(rng.sample(people, 2)), {"input": people}


def _count(rng: random.Random) -> tuple[dict, str, dict]:
    people = _people(rng, rng.randint(1, 12))
    return {"context": list_str(people)}, str(len(people)), {}


def _who(rng: random.Random) -> tuple[dict, str, dict]:
    people = _people(rng, rng.randint(2, 8))
    i = rng.randrange(len(people))
    return {"context": list_str(people), "index": i}, people[i], {}


def _where(rng: random.Random) -> tuple[dict, str, dict]:
    people = _people(rng, rng.randint(2, 8))
    i = rng.randrange(len(people))
    return {"context": list_str(people), "word": people[i]}, str(i), {}


def _roll(rng: random.Random) -> tuple[dict, str, dict]:
    people = _people(rng, rng.randint(8, 15))
    roll = "\n".join(f"{i}. {p}" for i, p in enumerate(people, 1))
    return {"context": list_str(people)}, roll, {}


def latin_square(rng: random.Random, symbols: list[str]) -> list[list[str]]:
    """A random Latin square: a cyclic square with rows, columns and symbols permuted."""
    n = len(symbols)
    rows, cols = rng.sample(range(n), n), rng.sample(range(n), n)
    return [[symbols[(r + c) % n] for c in cols] for r in rows]


def _latin(rng: random.Random) -> tuple[dict, str, dict]:
    symbols = rng.sample(SYMBOLS, 4)
    square = latin_square(rng, symbols)
    fields = {"size": 4, "symbols": "[" + ", ".join(symbols) + "]"}
    return fields, "\n".join(",".join(row) for row in square), {"symbols": symbols}


def sudoku_solution(rng: random.Random) -> list[list[int]]:
    """A random valid 4x4 sudoku: a base grid, its digits, bands, stacks and rows permuted."""
    base = [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]
    digits = rng.sample(range(1, 5), 4)
    bands = rng.sample([0, 2], 2)
    rows = [b + i for b in bands for i in rng.sample([0, 1], 2)]
    stacks = rng.sample([0, 2], 2)
    cols = [s + i for s in stacks for i in rng.sample([0, 1], 2)]
    return [[digits[base[r][c] - 1] for c in cols] for r in rows]


def _sudoku(rng: random.Random) -> tuple[dict, str, dict]:
    grid = sudoku_solution(rng)
    blanks = set(rng.sample(range(16), rng.randint(4, 12)))
    puzzle = "\n".join(
        "".join("0" if 4 * r + c in blanks else str(grid[r][c]) for c in range(4)) for r in range(4)
    )
    return {"sudoku": puzzle}, "\n".join("".join(map(str, row)) for row in grid), {"puzzle": puzzle}


def worked_sum(a: int, b: int) -> str:
    """Column addition, lowest digit first: ``7 + 5 = 12 , carry 1 . ... the answer is 132``."""
    da, db = str(a)[::-1], str(b)[::-1]
    steps, carry = [], 0
    for i in range(max(len(da), len(db))):
        x, y = int(da[i]) if i < len(da) else 0, int(db[i]) if i < len(db) else 0
        s = x + y + carry
        terms = f"{x} + {y}" + (f" + {carry}" if carry else "")
        carry = s // 10
        steps.append(f"{terms} = {s}" + (f", carry {carry}" if carry else ""))
    return ". ".join(steps) + f". The answer is {a + b}."


def _sum(rng: random.Random) -> tuple[dict, str, dict]:
    a, b = (rng.randint(10, 10 ** rng.randint(2, 4) - 1) for _ in range(2))
    return {"a": a, "b": b}, worked_sum(a, b), {}


FAMILIES: dict[str, tuple[float, Gen]] = {  # family -> (weight in the mix, generator)
    **{
        op: (1.0, _line_op(op))
        for op in (
            "copy",
            "reverse",
            "sort",
            "shuffle",
            "insert_index",
            "insert_random",
            "remove_index",
            "remove_random",
            "replace_index",
            "replace_random",
        )
    },
    "latin_square": (1.0, _latin),
    "sudoku": (1.0, _sudoku),
    "pick": (0.7, _pick),
    "sum": (1.0, _sum),
    "count": (0.6, _count),
    "who": (0.6, _who),
    "where": (0.6, _where),
    "long_copy": (1.5, _line_op("copy", 12, 22)),
    "roll": (1.5, _roll),
}


def _templates(family: str) -> tuple[str, ...]:
    return OPS.get(family) or PUZZLES[family]


def _render(rng: random.Random, family: str, fields: dict) -> str:
    text = rng.choice(_templates(family)).format(**fields)
    if family in OPS and rng.random() < 0.7:  # the waiting-line scene, most of the time
        text = rng.choice(SCENES) + "\n" + text
    return text


def make_item(rng: random.Random, family: str, icl: bool | None = None) -> Item:
    """One request of `family`, with one in-context example with probability ICL_PROB."""
    gen = FAMILIES[family][1]
    fields, answer, ref = gen(rng)
    item = Item(family, _render(rng, family, fields), answer, ref=ref)
    if family not in ("long_copy", "roll") and (rng.random() < ICL_PROB if icl is None else icl):
        ex_fields, ex_answer, _ = gen(rng)
        item.turns.append((_render(rng, family, ex_fields), ex_answer))
    return item


def bare_item(rng: random.Random, people: int) -> Item:
    """A warm-up request of the copy curriculum (docs/builtin-v2/MODEL_CARD.md): a line of 1 to
    `people` people and nothing else (``copy``: answer the line) or the line and a 0-based
    position (``who``: answer the person there); no template, scene or in-context turn. With
    the prompt this short, attention finds the names early and copying starts (a templated
    prompt four times as long did not start in the same steps)."""
    line = _people(rng, rng.randint(1, people))
    if rng.random() < 0.5:
        return Item("copy", list_str(line), list_str(line))
    i = rng.randrange(len(line))
    return Item("who", f"{list_str(line)} {i}", line[i])


def bare_items(
    n: int, rng: random.Random, people: int, split: str = "train", family: str | None = None
) -> list[Item]:
    """`n` warm-up requests (:func:`bare_item`) of `split`, of `family` if given; the others
    drawn are dropped."""
    out = []
    while len(out) < n:
        item = bare_item(rng, people)
        if is_heldout(item) == (split == "heldout") and family in (None, item.family):
            out.append(item)
    return out


def is_heldout(item: Item) -> bool:
    """True iff the request falls in the held-out split (MD5 of the whole chat)."""
    digest = hashlib.md5(item.text.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % 100 < HELDOUT_PERCENT


def generate_example(family: str, rng: random.Random, split: str) -> Item:
    """One request of `family` in `split` (rejection sampling on :func:`is_heldout`)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    while True:
        item = make_item(rng, family)
        if is_heldout(item) == (split == "heldout"):
            return item


def generate(
    n: int, seed: int = 0, split: str = "train", families: tuple[str, ...] | None = None
) -> list[Item]:
    """`n` items of `split`, families drawn by their weights (or round-robin over `families`)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    rng = random.Random(f"lines/{seed}/{split}")
    names = list(FAMILIES)
    weights = [FAMILIES[f][0] for f in names]
    out: list[Item] = []
    while len(out) < n:
        family = families[len(out) % len(families)] if families else rng.choices(names, weights)[0]
        item = make_item(rng, family)
        if is_heldout(item) == (split == "heldout"):
            out.append(item)
    return out


# ---------------------------------------------------------------- checkers
# family -> the `seer.data.score` metric that checks it: ParallelBench's official metrics
# (`seer.data.parallelbench_metrics`) where the family is one of its operations, Seer's own
# (`seer.data.scoring.OWN_METRICS`) for pick and sudoku (any valid completion of the givens);
# families not listed are checked by exact match.
METRICS = {
    **dict.fromkeys(
        ("copy", "reverse", "sort", "insert_index", "remove_index", "replace_index", "long_copy"),
        "list_match_score",
    ),
    "shuffle": "list_shuffle_score",
    "insert_random": "list_random_insert_score",
    "remove_random": "list_random_remove_score",
    "replace_random": "list_random_replace_score",
    "latin_square": "latin_square_score",
    "sudoku": "sudoku_valid_score",
    "pick": "pick_two_score",
}


def metric(item: Item) -> tuple[str | None, object]:
    """(metric, reference) that `seer.data.score` checks `item` with (None: exact match)."""
    name = METRICS.get(item.family)
    return name, (item.answer if name == "list_match_score" else item.ref)


def score(item: Item, text: str) -> float:
    """1.0 when `text` answers `item`: `seer.data.score` with the family's metric."""
    name, reference = metric(item)
    example = Example("", item.prompt, answer=item.answer, reference=reference, metric=name)
    return data_score(example, text)


def overlap(items: list[Item], others: list[tuple[str, str]]) -> list[Item]:
    """The `items` whose (last prompt, answer) equals one of `others` (e.g. a test set's)."""
    seen = set(others)
    return [it for it in items if (it.prompt, it.answer) in seen]
