"""The built-in synthetic tasks as a data source, each named after the shipped model that was
trained on it: ``builtin`` (the text model v2's waiting lines, puzzles and sums,
`seer.data.synthetic.lines`; also named ``builtin-v2``), ``builtin-vqa`` (the VQA model v2's
reading, charts, tables, lists and captions, `seer.data.synthetic.vqa2`; also named
``builtin-vqa2``), ``builtin-v1`` (the first text model's instructions,
`seer.data.synthetic.tasks`) and ``builtin-vqa-v1`` (the first VQA model's image questions,
`seer.data.synthetic.vqa`). A v2 request carries its family's metric and reference, so
`seer.data.score` checks it as its trainer does (several valid answers where the family has
them); a ``builtin`` request is the whole chat (its in-context example turn too).

The source is a *pool* of unique held-out requests: the held-out split of the tasks (disjoint
from everything the built-in models were trained on, by a hash of the prompt), drawn round-robin
over the families, each family from its own RNG stream, with repeats skipped. A family whose
held-out prompt space is small (``builtin-v1``: ``spell`` holds about 13 unique held-out prompts,
``arith`` about 30) stops contributing when it runs dry, so large pools are not exactly
balanced. The pool of ``n`` is a prefix of the pool of ``n + 1``, so row ids (pool positions)
are stable.

``part="calib"`` / ``"eval"`` keep the requests on one side of `seer.data.split`'s hash split.
The evaluation side of the first models' tasks (``builtin-v1`` / ``builtin-vqa-v1``,
`TUNED_TASKS`) also leaves out every request of the draw those models' ``seer.json`` defaults
were calibrated on (`TUNED_DRAW`: 300 held-out examples of seed 7, drawn before this module
existed), so no published figure is measured on a request the defaults were tuned on. The v2
models are calibrated on the calibration side of their own task, which the evaluation side
never holds.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterator
from functools import lru_cache

from seer.data.example import Example
from seer.data.split import CALIB_FRACTION, CALIB_SEED, in_calibration
from seer.errors import SeerError

SOURCES = {"builtin": "lines", "builtin-vqa": "vqa2", "builtin-v1": "text", "builtin-vqa-v1": "vqa",
           "builtin-v2": "lines", "builtin-vqa2": "vqa2"}  # fmt: skip
DEFAULT_N = 300
PARTS = (None, "calib", "eval")
TUNED_DRAW = (300, 7)  # (n, seed) of generate_examples(..., "heldout") behind the shipped seer.json
TUNED_TASKS = ("text", "vqa")  # the first models' tasks, tuned on TUNED_DRAW (v2: calibration part)
# text-only requests for a multimodal built-in model: the text tasks its LM was trained on, in its
# vocabulary. builtin-vqa (v2) has none: its LM, started from builtin-v1, learned the vqa2
# families only, and its vocabulary lacks most words of builtin-v1's tasks (it answers them with
# colour words).
TEXT_ONLY = {"builtin-vqa-v1": "builtin-v1"}
MULTIMODAL = ("builtin-vqa", "builtin-vqa-v1")  # the built-in models that take images
PATIENCE = 300  # consecutive repeats after which a family counts as exhausted


def builtin_examples(
    source: str, n: int = DEFAULT_N, seed: int = 0, part: str | None = None
) -> list[Example]:
    """`n` unique held-out requests of a built-in task (see the module docstring)."""
    task = task_of(source)
    if part not in PARTS:
        raise SeerError(f"part must be one of calib, eval or None, got {part!r}")
    if n < 1:
        raise SeerError(f"n must be >= 1, got {n}")
    tuned = tuned_keys(task) if part == "eval" and task in TUNED_TASKS else frozenset()
    out = []
    for ex in _pool(task, seed):
        if part is not None and in_calibration(ex, CALIB_FRACTION, CALIB_SEED) != (part == "calib"):
            continue
        if ex.key in tuned:
            continue
        out.append(ex)
        if len(out) == n:
            return out
    raise SeerError(f"{source} holds only {len(out)} unique held-out requests of part {part}")


def source_for(model, images: bool) -> str:
    """The data source a benchmark runs by default: a built-in model's own task (the source of
    the same name; text-only requests for ``builtin-vqa-v1``: ``builtin-v1``, the tasks its LM
    was trained on; ``builtin-vqa`` answers about pictures only: an error), else the built-in
    image task (`images`) or text task."""
    from seer.sampling import BUILTIN_MODELS

    name = str(model)
    if name in MULTIMODAL and not images:
        if name not in TEXT_ONLY:
            raise SeerError(f"{name} answers questions about pictures only (its LM learned no "
                            "text-only task): it has no built-in text-only requests")  # fmt: skip
        return TEXT_ONLY[name]
    if name in BUILTIN_MODELS:
        return name
    return "builtin-vqa" if images else "builtin"


def task_of(source: str) -> str:
    if source not in SOURCES:
        raise SeerError(f"unknown built-in source {source!r}; choose {', '.join(SOURCES)}")
    return SOURCES[source]


def _pool(task: str, seed: int) -> Iterator[Example]:
    """Unique held-out examples, round-robin over the families until every one runs dry."""
    module = _module(task)
    streams = {
        f: _unique(task, module, f, random.Random(f"data/{task}/{f}/{seed}"))
        for f in module.FAMILIES
    }
    index = 0
    while streams:
        for family in list(streams):
            ex = next(streams[family], None)
            if ex is None:
                del streams[family]
                continue
            yield _example(task, ex, str(index))
            index += 1


def _unique(task: str, module, family: str, rng: random.Random):
    seen: set[str] = set()
    misses = 0
    while misses < PATIENCE:
        ex = module.generate_example(family, rng, "heldout")
        key = _demo_key(task, ex)
        if key in seen:
            misses += 1
            continue
        misses = 0
        seen.add(key)
        yield ex


def _demo_key(task: str, ex) -> str:
    if task == "vqa":
        return f"{ex.spec.canonical()}\n{ex.question}"
    if task == "lines":
        return ex.text  # the whole chat
    return ex.key if task == "vqa2" else ex.prompt


# task -> its module in seer.data.synthetic
MODULES = {"text": "tasks", "vqa": "vqa", "lines": "lines", "vqa2": "vqa2"}


def _module(task: str):
    return importlib.import_module(f"seer.data.synthetic.{MODULES[task]}")


def _example(task: str, ex, id_: str) -> Example:
    if task in ("vqa", "vqa2"):  # the question alone: the model's processor places the image
        kw = {}
        if task == "vqa2":
            kw["metric"], kw["reference"] = _module(task).metric(ex)
        return Example(id_, ex.question, image=ex.image(), answer=ex.answer, family=ex.family, **kw)
    if task == "lines":
        metric, reference = _module(task).metric(ex)
        return Example(
            id_,
            ex.prompt,
            messages=ex.messages(),
            answer=ex.answer,
            family=ex.family,
            reference=reference,
            metric=metric,
        )
    return Example(id_, ex.prompt, answer=ex.answer, family=ex.family)


@lru_cache(maxsize=2)
def tuned_keys(task: str) -> frozenset[str]:
    """Keys of the requests the shipped models' Seer defaults were calibrated on."""
    n, seed = TUNED_DRAW
    drawn = _module(task).generate_examples(n, seed, "heldout")
    return frozenset(_example(task, ex, "").key for ex in drawn)
