"""The built-in tasks as a data source, each named after the shipped model that was trained on
it: ``builtin`` (the text model v2's waiting lines, puzzles and sums; also named
``builtin-v2``), ``builtin-vqa`` (the VQA model v2's reading, charts, tables, lists and
captions; also named ``builtin-vqa2``), ``builtin-v1`` (the first text model's instructions)
and ``builtin-vqa-v1`` (the first VQA model's image questions). A v2 request carries its
family's metric and reference, so `seer.data.score` checks it as its trainer does (several
valid answers where the family has them); a ``builtin`` request is the whole chat (its
in-context example turn too).

The requests ship as data (`assets/requests/<model>.jsonl.gz`, written once by the task
generators beside the package, ``python -m synthetic.export``): the first rows of a *pool* of
unique held-out requests (disjoint from everything the built-in models were trained on), drawn
round-robin over the task's families. Row ids are pool positions, and the first ``n`` requests
are a prefix of the first ``n + 1``.

Each row holds its side of `seer.data.split`'s hash split: ``part="calib"`` / ``"eval"`` keep
one side. The evaluation side of the first models' tasks (``builtin-v1`` / ``builtin-vqa-v1``,
`TUNED_TASKS`) also leaves out every request of the draw those models' ``seer.json`` defaults
were calibrated on, so no published figure is measured on a request the defaults were tuned
on. The v2 models are calibrated on the calibration side of their own task, which the
evaluation side never holds.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from seer.data.example import Example
from seer.errors import SeerError

SOURCES = {
    "builtin": "lines",
    "builtin-vqa": "vqa2",
    "builtin-v1": "text",
    "builtin-vqa-v1": "vqa",
    "builtin-v2": "lines",
    "builtin-vqa2": "vqa2",
}
FILES = {
    "lines": "builtin.jsonl.gz",
    "vqa2": "builtin-vqa.jsonl.gz",
    "text": "builtin-v1.jsonl.gz",
    "vqa": "builtin-vqa-v1.jsonl.gz",
}
ROWS = {"lines": 4000, "text": 4000, "vqa2": 2000, "vqa": 2000}  # pool rows shipped per task
DEFAULT_N = 300
PARTS = (None, "calib", "eval")
TUNED_TASKS = ("text", "vqa")  # the first models' tasks (their rows "eval-tuned": out of "eval")
# text-only requests for a multimodal built-in model: the text tasks its LM was trained on, in its
# vocabulary. builtin-vqa (v2) has none: its LM, started from builtin-v1, learned the vqa2
# families only, and its vocabulary lacks most words of builtin-v1's tasks (it answers them with
# colour words).
TEXT_ONLY = {"builtin-vqa-v1": "builtin-v1"}
MULTIMODAL = ("builtin-vqa", "builtin-vqa-v1")  # the built-in models that take images


def builtin_examples(
    source: str, n: int = DEFAULT_N, seed: int = 0, part: str | None = None
) -> list[Example]:
    """The first `n` shipped held-out requests of a built-in task (see the module docstring).
    `seed`: the draw; the package ships one (0)."""
    task = task_of(source)
    if part not in PARTS:
        raise SeerError(f"part must be one of calib, eval or None, got {part!r}")
    if n < 1:
        raise SeerError(f"n must be >= 1, got {n}")
    if seed != 0:
        raise SeerError(
            f"{source}: the package ships one draw of the built-in requests (seed 0), "
            f"not seed {seed}"
        )
    out = []
    for row in _rows(task):
        if part is None or row["part"] == part:
            out.append(_example(row))
            if len(out) == n:
                return out
    side = f" on the {part} side" if part else ""
    raise SeerError(f"{source} ships {len(out)} held-out requests{side}, fewer than {n}")


def source_for(model, images: bool) -> str:
    """The data source a benchmark runs by default: a built-in model's own task (the source of
    the same name; text-only requests for ``builtin-vqa-v1``: ``builtin-v1``, the tasks its LM
    was trained on; ``builtin-vqa`` answers about pictures only: an error), else the built-in
    image task (`images`) or text task."""
    from seer.sampling import BUILTIN_MODELS

    name = str(model)
    if name in MULTIMODAL and not images:
        if name not in TEXT_ONLY:
            raise SeerError(
                f"{name} answers questions about pictures only (its LM learned no "
                "text-only task): it has no built-in text-only requests"
            )
        return TEXT_ONLY[name]
    if name in BUILTIN_MODELS:
        return name
    return "builtin-vqa" if images else "builtin"


def task_of(source: str) -> str:
    if source not in SOURCES:
        raise SeerError(f"unknown built-in source {source!r}; choose {', '.join(SOURCES)}")
    return SOURCES[source]


def folder() -> Path:
    """Where the shipped request files live."""
    return Path(str(resources.files("seer") / "assets" / "requests"))


@lru_cache(maxsize=4)
def _rows(task: str) -> tuple[dict, ...]:
    with gzip.open(folder() / FILES[task], "rt", encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f)


def _example(row: dict) -> Example:
    image = None
    if "image" in row:
        import PIL.Image

        with PIL.Image.open(io.BytesIO(base64.b64decode(row["image"]))) as png:
            image = png.copy()  # the pixels the generator drew (PNG is lossless): the same key
    return Example(
        row["id"],
        row["prompt"],
        messages=row.get("messages"),
        image=image,
        answer=row.get("answer"),
        family=row.get("family"),
        reference=row.get("reference"),
        metric=row.get("metric"),
    )
