"""The built-in synthetic tasks as a data source: ``builtin`` (text, `seer.demo.tasks`) and
``builtin-vqa`` (image questions, `seer.demo.vqa`).

The source is a *pool* of unique held-out requests: the held-out split of the tasks (disjoint
from everything the built-in models were trained on, by a hash of the prompt), drawn round-robin
over the families, each family from its own RNG stream, with repeats skipped. A family whose
held-out prompt space is small (text: ``spell`` holds about 13 unique held-out prompts,
``arith`` about 30) stops contributing when it runs dry, so large pools are not exactly
balanced. The pool of ``n`` is a prefix of the pool of ``n + 1``, so row ids (pool positions)
are stable.

``part="calib"`` / ``"eval"`` keep the requests on one side of `seer.data.split`'s hash split.
The evaluation side also leaves out every request of the draw the shipped models' ``seer.json``
defaults were calibrated on (`TUNED_DRAW`: 300 held-out examples of seed 7, drawn before this
module existed), so no published figure is measured on a request the defaults were tuned on.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from functools import lru_cache

from seer.data.example import Example
from seer.data.split import CALIB_FRACTION, CALIB_SEED, in_calibration
from seer.errors import SeerError

SOURCES = {"builtin": "text", "builtin-vqa": "vqa"}
DEFAULT_N = 300
PARTS = (None, "calib", "eval")
TUNED_DRAW = (300, 7)  # (n, seed) of generate_examples(..., "heldout") behind the shipped seer.json
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
    tuned = tuned_keys(task) if part == "eval" else frozenset()
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


def task_of(source: str) -> str:
    if source not in SOURCES:
        raise SeerError(f"unknown built-in source {source!r}; choose {', '.join(SOURCES)}")
    return SOURCES[source]


def _pool(task: str, seed: int) -> Iterator[Example]:
    """Unique held-out examples, round-robin over the families until every one runs dry."""
    module = _module(task)
    streams = {
        f: _unique(module, f, random.Random(f"data/{task}/{f}/{seed}")) for f in module.FAMILIES
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


def _unique(module, family: str, rng: random.Random):
    seen: set[str] = set()
    misses = 0
    while misses < PATIENCE:
        ex = module.generate_example(family, rng, "heldout")
        key = _demo_key(task_name(module), ex)
        if key in seen:
            misses += 1
            continue
        misses = 0
        seen.add(key)
        yield ex


def task_name(module) -> str:
    return "vqa" if module.__name__.endswith("vqa") else "text"


def _demo_key(task: str, ex) -> str:
    return f"{ex.spec.canonical()}\n{ex.question}" if task == "vqa" else ex.prompt


def _module(task: str):
    if task == "vqa":
        from seer.demo import vqa

        return vqa
    from seer.demo import tasks

    return tasks


def _example(task: str, ex, id_: str) -> Example:
    if task == "vqa":  # the question alone: the model's processor places the image
        return Example(id_, ex.question, image=ex.image(), answer=ex.answer, family=ex.family)
    return Example(id_, ex.prompt, answer=ex.answer, family=ex.family)


@lru_cache(maxsize=2)
def tuned_keys(task: str) -> frozenset[str]:
    """Keys of the requests the shipped models' Seer defaults were calibrated on."""
    n, seed = TUNED_DRAW
    drawn = _module(task).generate_examples(n, seed, "heldout")
    return frozenset(_example(task, ex, "").key for ex in drawn)
