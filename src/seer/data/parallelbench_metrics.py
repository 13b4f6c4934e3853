"""ParallelBench's per-sample metrics, re-implemented from their documented behaviour (the
official ``dataset/parallel_bench/metrics.py``; no code copied) and checked against the official
functions on recorded predictions (tests/data/test_parallelbench_metrics.py, golden recorded by
tools/goldens/make_parallelbench_golden.py in the official code's own environment).

Every metric maps (the model's text, the row's ``answer``) to 0.0 or 1.0. ``strict=False`` is
what the official ``compute_metrics`` reports as ``score``; ``strict=True`` its
``score_strict`` (the list must be exactly ``["a", "b"]``-shaped; a sudoku exactly four lines of
four digits). How a list is read (`parse_list`): the text between the last ``[`` and the first
``]`` after it (either bracket may be missing), split at commas, pieces that are only whitespace
dropped, quotes and spaces trimmed from both ends of each item.

Left out (`LEFT_OUT`): words-to-sentence (its score needs the LanguageTool grammar checker, a
Java service) and paraphrase / summarize (ROUGE, BLEU and BERTScore models).
"""

from __future__ import annotations

import re
from collections.abc import Callable

LEFT_OUT = {
    "sentence_to_words_score": "its official score needs the LanguageTool grammar checker "
    "(a Java service), which seer does not run",
    "paraphrase_score": "its official score needs BLEU and BERTScore models and a grammar "
    "checker, which seer does not run",
    "summary_score": "its official score needs ROUGE and a grammar checker, which seer does "
    "not run",
}


def parse_list(text: str, strict: bool = False) -> list[str] | None:
    """The list in a model's text (see the module docstring); None when `strict` and the text is
    not exactly a bracketed list of double-quoted items joined by ", "."""
    if "[" in text:
        text = text[text.rindex("[") + 1 :]
    elif strict:
        return None
    if "]" in text:
        text = text[: text.index("]")]
    elif strict:
        return None
    if not strict:
        return [piece.strip('" ') for piece in text.split(",") if piece.strip()]
    items = []
    for piece in text.split(", "):
        if len(piece) < 1 or piece[0] != '"' or piece[-1] != '"':
            return None
        inner = piece[1:-1]
        if '"' in inner:
            return None
        items.append(inner)
    return items


def list_match_score(text: str, reference: str, strict: bool = False) -> float:
    """The list equals the reference's list, item by item."""
    got = parse_list(text, strict)
    return float(got is not None and got == parse_list(reference))


def list_shuffle_score(text: str, reference: dict, strict: bool = False) -> float:
    """The same items as the input, in another order."""
    got, given = parse_list(text, strict), list(reference["input"])
    return float(got is not None and sorted(got) == sorted(given) and got != given)


def _removed_one_each(longer: list[str], shorter: list[str], n: int) -> float:
    """`shorter` is `longer` less `n` distinct items (the first occurrence of each)."""
    if len(shorter) != len(longer) - n:
        return 0.0
    gone = set(longer) - set(shorter)
    if len(gone) != n:
        return 0.0
    rest = list(longer)
    for item in gone:
        rest.remove(item)
    return float(rest == shorter)


def list_random_insert_score(text: str, reference: dict, strict: bool = False) -> float:
    """The input with the given word(s) put anywhere (any n_words new items if word is null)."""
    got, given = parse_list(text, strict), list(reference["input"])
    if got is None:
        return 0.0
    word, n = reference["word"], reference.get("n_words", 1)
    if word is None:
        return _removed_one_each(got, given, n)
    rest = list(got)
    for w in [word] if isinstance(word, str) else word:
        if w not in rest:
            return 0.0
        rest.remove(w)
    return float(rest == given)


def list_random_remove_score(text: str, reference: dict, strict: bool = False) -> float:
    """The input less n_words (default 1) of its items, order kept."""
    got = parse_list(text, strict)
    if got is None:
        return 0.0
    return _removed_one_each(list(reference["input"]), got, reference.get("n_words", 1))


def list_random_replace_score(text: str, reference: dict, strict: bool = False) -> float:
    """The input with one item replaced by the given word (placed where the word first
    appears); with no word, exactly n_words positions changed."""
    got, given = parse_list(text, strict), list(reference["input"])
    if got is None or len(got) != len(given):
        return 0.0
    word = reference["word"]
    if word is None:
        return float(
            sum(a != b for a, b in zip(got, given, strict=True)) == reference.get("n_words", 1)
        )
    if word not in got:
        return 0.0
    given[got.index(word)] = word
    return float(got == given)


def latin_square_score(text: str, reference: dict, strict: bool = False) -> float:
    """The first `size` lines (size = distinct symbols) whose comma-separated cells are exactly
    the symbol set form a square whose every column is the symbol set too (and whose first row
    is `first_row`, when the reference gives one). `strict` changes nothing (as officially)."""
    symbols = set(reference["symbols"])
    rows = []
    for line in text.split("\n"):
        cells = [c.strip() for c in line.strip().split(",")]
        if line.strip() and set(cells) == symbols:
            rows.append(cells)
    if len(rows) < len(symbols):
        return 0.0
    rows = rows[: len(symbols)]
    if any(set(col) != symbols for col in zip(*rows, strict=False)):  # ragged: shortest
        return 0.0
    first = reference.get("first_row")
    return float(first is None or rows[0] == list(first))


def parse_sudoku(text: str, strict: bool = False) -> list[list[int]] | None:
    """A 4x4 grid: non-strict, the lines holding exactly four digits once spaces and commas are
    dropped (there must be four such lines); strict, exactly four non-blank lines of exactly
    four digits."""
    lines = [line.strip() for line in text.strip().split("\n") if line.strip()]
    if strict:
        if len(lines) != 4 or any(len(line) != 4 or not _digits(line) for line in lines):
            return None
        return [[int(c) for c in line] for line in lines]
    text = text.strip().replace(" ", "").replace(",", "")
    grid = []
    for line in (ln.strip() for ln in text.split("\n")):
        digits = re.findall(r"\d", line)
        if len(digits) == 4:
            grid.append([int(d) for d in digits])
    return grid if len(grid) == 4 else None


def _digits(line: str) -> bool:
    try:
        [int(c) for c in line]
    except ValueError:
        return False
    return True


def sudoku_score(text: str, reference: str, strict: bool = False) -> float:
    """The grid read from the text equals the reference's grid."""
    return float(parse_sudoku(text, strict) == parse_sudoku(reference, strict=True))


METRICS: dict[str, Callable[..., float]] = {
    f.__name__: f
    for f in (
        list_match_score,
        list_shuffle_score,
        list_random_insert_score,
        list_random_remove_score,
        list_random_replace_score,
        latin_square_score,
        sudoku_score,
    )
}


def _items(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _word(value) -> bool:
    return value is None or isinstance(value, str) or _items(value)


# what each metric needs of a row's answer: (test, the requirement in words)
SHAPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "list_match_score": (lambda r: isinstance(r, str), "a string"),
    "sudoku_score": (
        lambda r: isinstance(r, str) and parse_sudoku(r, strict=True) is not None,
        "a string of four lines of four digits",
    ),
    "list_shuffle_score": (
        lambda r: isinstance(r, dict) and _items(r.get("input")),
        "an object with an 'input' list of strings",
    ),
    "list_random_remove_score": (
        lambda r: isinstance(r, dict) and _items(r.get("input")),
        "an object with an 'input' list of strings",
    ),
    "list_random_insert_score": (
        lambda r: (
            isinstance(r, dict) and _items(r.get("input")) and "word" in r and _word(r["word"])
        ),
        "an object with an 'input' list of strings and a 'word'",
    ),
    "list_random_replace_score": (
        lambda r: (
            isinstance(r, dict)
            and _items(r.get("input"))
            and (r.get("word") is None or isinstance(r.get("word"), str))
            and "word" in r
        ),
        "an object with an 'input' list of strings and a 'word'",
    ),
    "latin_square_score": (
        lambda r: (
            isinstance(r, dict)
            and _items(r.get("symbols"))
            and (r.get("first_row") is None or _items(r.get("first_row")))
        ),
        "an object with a 'symbols' list of strings",
    ),
}


def check_reference(metric: str, reference) -> str | None:
    """Why `reference` cannot be scored by `metric` (None: it can, or the metric is not ours)."""
    test, want = SHAPES.get(metric, (lambda r: True, ""))
    return None if test(reference) else f"must be {want} for {metric}"
