"""Which requests a benchmark measures: held-out draws that are unique, scorable and disjoint
from what the model was calibrated or tuned on, and seeded random samples (never a first-N
subset, which is not representative: the pool's order is the families' round-robin, and a task
file's order is whatever its authors wrote).

`held_out(source, n, seed)` keeps the prefix property every resumable benchmark relies on: the
draw of n requests is a prefix of the draw of n + 1, so a run can be stopped and summarised, or
extended, at any n.
"""

from __future__ import annotations

import random

from seer.data import Example
from seer.errors import SeerError


def is_builtin(source: str) -> bool:
    from seer.data.builtin import SOURCES

    return str(source) in SOURCES


def is_parallelbench(source: str) -> bool:
    from seer.data.parallelbench import is_parallelbench as check

    return check(source)


def held_out(source: str, n: int, seed: int) -> list[Example]:
    """`n` unique requests of `source`, each scorable (`seer.data.score`), checked unique and
    disjoint from the calibration side and the seer.json tuning draw.

    A built-in source gives its evaluation part (the other half calibrates the model's Seer
    defaults). ``parallelbench:ROOT/TASK`` keeps the *whole* task, in a seeded random order
    (`permuted`): the model's Seer defaults were calibrated on its built-in task's calibration
    part, never on these rows. A file gives its evaluation part, in a seeded random order. An
    `n` larger than what there is keeps all."""
    from seer.data import example_key, in_calibration, load_examples, unscorable

    if n < 1:
        raise SeerError(f"n must be >= 1, got {n}")
    if is_builtin(source):
        from synthetic import pool  # any seed (seed 0: the package's shipped requests)

        examples = pool.examples(source, n, seed, part="eval")
        if any(in_calibration(e) for e in examples):
            raise AssertionError("a held-out request is in calibration")
    elif is_parallelbench(source):
        examples = permuted(load_examples(source), seed)[:n]
    else:  # a file: its evaluation part (its other part may have calibrated the model)
        examples = permuted(load_examples(source, part="eval"), seed)[:n]
    why = next((f"{e.id}: {unscorable(e)}" for e in examples if unscorable(e)), None)
    if why is not None:
        raise SeerError(f"{source}: every request must be scorable; {why}")
    keys = [example_key(e) for e in examples]
    if len(set(keys)) != len(keys):
        raise SeerError(f"{source}: the requests are not unique (a request appears twice)")
    if is_builtin(source):
        from seer.data.builtin import TUNED_TASKS, task_of
        from synthetic.pool import tuned_keys

        task = task_of(source)
        if task in TUNED_TASKS and set(keys) & set(tuned_keys(task)):
            raise AssertionError("a held-out request is in the seer.json tuning draw")
    return examples


def permuted(items: list, seed: int) -> list:
    """`items` in a seeded random order (the same seed, the same order)."""
    out = list(items)
    random.Random(seed).shuffle(out)
    return out


def sample(n: int, k: int | None, seed: int) -> tuple[list[int], str]:
    """Indices of a seeded random sample of `k` of `n` items, in ascending order, and its label
    for the record: ``"all"`` (k is None or >= n) or ``"random:<seed>"``."""
    if k is None or k >= n:
        return list(range(n)), "all"
    if k < 1:
        raise SeerError(f"a sample needs at least one request, got {k}")
    return sorted(random.Random(seed).sample(range(n), k)), f"random:{seed}"
