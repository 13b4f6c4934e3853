"""Datasets for every data-driven command: one loader, one row type, one split.

    from seer.data import load_examples, split
    examples = load_examples("prompts.jsonl")        # or .csv, .parquet, a save_to_disk folder,
                                                     # a built-in model's name ("builtin", ...),
                                                     # "parallelbench:ROOT/waiting_line/copy"
    calib, evaluation = split(examples, 0.5, seed=0) # de-duplicated and disjoint
    score(examples[0], "an answer")                  # the task's metric, else exact match

Formats and row rules: `seer.data.files`; the built-in tasks: `seer.data.builtin`; a
ParallelBench checkout: `seer.data.parallelbench`; scoring: `seer.data.scoring`; the split:
`seer.data.split`.
"""

from __future__ import annotations

from pathlib import Path

from seer.data.builtin import DEFAULT_N, SOURCES, builtin_examples
from seer.data.example import Example, example_key
from seer.data.files import read_file
from seer.data.parallelbench import is_parallelbench, parallelbench_examples
from seer.data.scoring import scorable, score, unscorable
from seer.data.split import CALIB_FRACTION, CALIB_SEED, dedupe, in_calibration, split
from seer.errors import SeerError

__all__ = [
    "CALIB_FRACTION",
    "CALIB_SEED",
    "Example",
    "builtin_examples",
    "dedupe",
    "example_key",
    "in_calibration",
    "load_examples",
    "scorable",
    "score",
    "split",
    "unscorable",
]


def load_examples(
    source: str | Path, *, n: int | None = None, part: str | None = None, seed: int = 0
) -> list[Example]:
    """The examples of `source`, in source order.

    `source`: a .jsonl / .csv / .parquet / .arrow file, a `datasets.save_to_disk` folder,
    a built-in model's name (``builtin``, ``builtin-vqa``, ``builtin-v1``, ``builtin-vqa-v1``:
    unique held-out requests of its own task, `seer.data.builtin`; the package ships one draw,
    `seed` 0; `n` defaults to 300), or ``parallelbench:ROOT[/GROUP[/TASK]]`` (the official test
    files of a ParallelBench checkout, `seer.data.parallelbench`). `n`: keep the first n rows.
    `part`: ``"calib"`` or ``"eval"`` keeps one side of `split` (default fraction and seed) —
    for the built-in sources the evaluation side also excludes what the shipped models were
    tuned on.
    """
    if n is not None and n < 1:
        raise SeerError(f"n must be >= 1, got {n}")
    if str(source) in SOURCES:
        return builtin_examples(str(source), n or DEFAULT_N, seed, part)
    if is_parallelbench(source):
        examples = parallelbench_examples(source)
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise SeerError(
                f"data {str(source)!r} does not exist; give a .jsonl/.csv/.parquet file, a "
                f"save_to_disk folder, parallelbench:ROOT/TASK, or one of {', '.join(SOURCES)}"
            )
        examples = read_file(path)
    if part is not None:
        if part not in ("calib", "eval"):
            raise SeerError(f"part must be calib, eval or None, got {part!r}")
        examples = split(examples)[part == "eval"]
    return examples if n is None else examples[:n]
