"""The built-in tasks' held-out pools, generated: what `python -m synthetic.export` writes into
the package as the built-in requests (`seer.data.builtin` reads those files), and what a
benchmark draws from for another seed or a larger pool than the package ships.

The pool is the held-out split of a task (disjoint from everything the built-in models were
trained on, by a hash of the prompt), drawn round-robin over the families, each family from its
own RNG stream, with repeats skipped. A family whose held-out prompt space is small
(``builtin-v1``: ``spell`` holds about 13 unique held-out prompts, ``arith`` about 30) stops
contributing when it runs dry, so large pools are not exactly balanced. The pool of ``n`` is a
prefix of the pool of ``n + 1``, so row ids (pool positions) are stable.

``part="calib"`` / ``"eval"`` keep the requests on one side of `seer.data.split`'s hash split.
The evaluation side of the first models' tasks (``builtin-v1`` / ``builtin-vqa-v1``,
`TUNED_TASKS`) also leaves out every request of the draw those models' ``seer.json`` defaults
were calibrated on (`TUNED_DRAW`: 300 held-out examples of seed 7), so no published figure is
measured on a request the defaults were tuned on.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from seer.data import Example, load_examples
from seer.data.builtin import PARTS, SOURCES, TUNED_TASKS, task_of
from seer.data.split import CALIB_FRACTION, CALIB_SEED, in_calibration
from seer.errors import SeerError

TUNED_DRAW = (300, 7)  # (n, seed) of generate_examples(..., "heldout") behind the v1 seer.json
PATIENCE = 300  # consecutive repeats after which a family counts as exhausted
MODULES = {"text": "tasks", "vqa": "vqa", "lines": "lines", "vqa2": "vqa2"}  # task -> module


def examples(source: str, n: int, seed: int = 0, part: str | None = None) -> list[Example]:
    """`n` unique held-out requests of a built-in task, generated (any seed, any size); for
    seed 0 the same requests as the package's files (`seer.data.builtin_examples`)."""
    task = task_of(source)
    if part not in PARTS:
        raise SeerError(f"part must be one of calib, eval or None, got {part!r}")
    if n < 1:
        raise SeerError(f"n must be >= 1, got {n}")
    out = []
    for ex in marked_pool(task, seed):
        if part is not None and ex.part != part:  # "eval-tuned" is in neither part
            continue
        out.append(ex.example)
        if len(out) == n:
            return out
    raise SeerError(f"{source} holds only {len(out)} unique held-out requests of part {part}")


def load(source: str | Path, *, n: int | None = None, part: str | None = None, seed: int = 0):
    """`seer.data.load_examples`, with a built-in source generated (any seed) instead of read
    from the package's files: the benchmarks' loader."""
    if str(source) in SOURCES:
        return examples(str(source), n or 300, seed, part)
    return load_examples(source, n=n, part=part, seed=seed)


class Marked:
    """One pool request and its side: calib, eval, or eval-tuned (the evaluation side, but in
    the v1 models' tuning draw: left out of ``part="eval"``)."""

    __slots__ = ("example", "part")

    def __init__(self, example: Example, part: str) -> None:
        self.example, self.part = example, part


def marked_pool(task: str, seed: int) -> Iterator[Marked]:
    tuned = tuned_keys(task) if task in TUNED_TASKS else frozenset()
    for ex in _pool(task, seed):
        if in_calibration(ex, CALIB_FRACTION, CALIB_SEED):
            yield Marked(ex, "calib")
        else:
            yield Marked(ex, "eval-tuned" if ex.key in tuned else "eval")


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


def _module(task: str):
    return importlib.import_module(f"synthetic.{MODULES[task]}")


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
    """Keys of the requests the first models' Seer defaults were calibrated on."""
    n, seed = TUNED_DRAW
    drawn = _module(task).generate_examples(n, seed, "heldout")
    return frozenset(_example(task, ex, "").key for ex in drawn)
