"""`score(example, text)`: how good an answer is, for every source that has a reference or a
checker.

* An example with a `metric` (ParallelBench rows) is scored by that task's official metric,
  re-implemented in `seer.data.parallelbench_metrics` (0.0 or 1.0 per answer; ``strict=True``
  gives the official ``score_strict``). Metrics that need an external service or model
  (words-to-sentence, paraphrase, summarize) are left out: `unscorable` says why.
* Seer's own metrics (`OWN_METRICS`) check the built-in v2 tasks that ParallelBench has no
  metric for (`synthetic.lines`): ``pick_two_score`` (two distinct people of the line, any
  order) and ``sudoku_valid_score`` (any valid 4x4 sudoku that keeps the givens: a puzzle with
  many blanks has several solutions); and the image questions of `synthetic.vqa2`:
  ``normalised_match_score`` (exact match, case and spaces free), ``any_order_score`` (every
  object named once, any order), ``same_colour_pair_score`` (two objects of one colour).
* Any other example with a reference `answer` (a dataset file's ``answer`` column, the first
  built-in models' tasks ``builtin-v1`` / ``builtin-vqa-v1``) is scored by exact match of the
  stripped texts — the check those models were trained and measured with
  (`training.builtin.exact_match`, `training.builtin_vqa.exact_match`); their tasks
  have no other checker.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from seer.data.example import Example
from seer.data.parallelbench_metrics import LEFT_OUT, METRICS, parse_list, parse_sudoku
from seer.errors import SeerError


def pick_two_score(text: str, reference: dict, strict: bool = False) -> float:
    """Two distinct items of the reference's ``input`` list, in any order."""
    got = parse_list(text, strict)
    return float(
        got is not None and len(set(got)) == 2 == len(got) and set(got) <= set(reference["input"])
    )


def sudoku_valid_score(text: str, reference: dict, strict: bool = False) -> float:
    """A valid 4x4 sudoku (rows, columns and 2x2 boxes each 1-4) that keeps every given digit
    of the reference's ``puzzle`` (four lines of four digits, 0 for a blank)."""
    grid = parse_sudoku(text, strict)
    if grid is None:
        return 0.0
    boxes = [
        [grid[r][c] for r in (b // 2 * 2, b // 2 * 2 + 1) for c in (b % 2 * 2, b % 2 * 2 + 1)]
        for b in range(4)
    ]
    units = [*grid, *map(list, zip(*grid, strict=True)), *boxes]
    givens = reference["puzzle"].split("\n")
    return float(
        all(sorted(u) == [1, 2, 3, 4] for u in units)
        and all(g in ("0", str(grid[r][c])) for r in range(4) for c, g in enumerate(givens[r]))
    )


def normalise(text: str) -> str:
    """Case-folded, surrounding and repeated whitespace removed."""
    return re.sub(r"\s+", " ", text).strip().lower()


def normalised_match_score(text: str, reference: str, strict: bool = False) -> float:
    """The answer equals the reference after `normalise` (short image answers)."""
    return float(normalise(text) == normalise(reference))


def any_order_score(text: str, reference: list[str], strict: bool = False) -> float:
    """Every name of `reference` once, comma-separated, in any order (case and spaces free)."""
    got = [x.strip() for x in normalise(text).split(",")]
    return float(Counter(got) == Counter(reference))


def same_colour_pair_score(text: str, reference: list[str], strict: bool = False) -> float:
    """``X and Y``: two of the `reference` objects (two instances if X == Y), named
    ``colour kind``, of one colour, in either order."""
    parts = normalise(text).split(" and ")
    if len(parts) != 2:
        return 0.0
    have, want = Counter(reference), Counter(p.strip() for p in parts)
    colours = {p.split(" ")[0] for p in want.elements()}
    return float(len(colours) == 1 and all(have[name] >= k for name, k in want.items()))


OWN_METRICS = {
    f.__name__: f
    for f in (
        pick_two_score,
        sudoku_valid_score,
        normalised_match_score,
        any_order_score,
        same_colour_pair_score,
    )
}
SCORERS: dict[str, Callable[..., float]] = {**METRICS, **OWN_METRICS}


def unscorable(example: Example) -> str | None:
    """Why `example` cannot be scored (None: it can)."""
    if example.metric is not None:
        if example.metric in SCORERS:
            return None
        why = LEFT_OUT.get(example.metric, "seer does not re-implement it")
        return f"metric {example.metric} is left out: {why}"
    if example.answer is None:
        return "no reference answer"
    return None


def scorable(example: Example) -> bool:
    return unscorable(example) is None


def score(example: Example, text: str, *, strict: bool = False) -> float:
    """The score of answer `text` for `example` in [0, 1] (see the module docstring); a
    `SeerError` naming the reason when the example cannot be scored."""
    why = unscorable(example)
    if why is not None:
        raise SeerError(f"example {example.id} cannot be scored: {why}")
    if example.metric is None:
        assert example.answer is not None  # else unscorable (above)
        return float(text.strip() == example.answer.strip())
    return SCORERS[example.metric](text, example.reference, strict=strict)
