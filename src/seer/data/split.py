"""De-duplication and the calibration / evaluation split.

`split` puts each unique example on a side by a hash of (seed, `example_key`): its side depends
only on its own content and the seed, never on which other rows are in the set. Two commands that
draw different amounts of the same source (a calibration of 300 prompts, a benchmark of 100)
therefore never share a request as long as they use the same seed and fraction
(`CALIB_SEED`, `CALIB_FRACTION`, the defaults everywhere). The sides' sizes are
``calib_fraction * n`` on average, not exactly.
"""

from __future__ import annotations

import hashlib
import logging

from seer.data.example import Example
from seer.errors import SeerError

CALIB_SEED = 0
CALIB_FRACTION = 0.5

log = logging.getLogger("seer.data")


def dedupe(examples: list[Example]) -> list[Example]:
    """The examples with repeated requests (same `Example.key`) removed, first kept, in order.
    Logs one line (logger ``seer.data``) saying how many repeats were dropped."""
    seen: set[str] = set()
    out = []
    for ex in examples:
        k = ex.key
        if k not in seen:
            seen.add(k)
            out.append(ex)
    if len(out) < len(examples):
        log.warning("%d repeated requests dropped (%d unique)", len(examples) - len(out), len(out))
    return out


def in_calibration(ex: Example, calib_fraction: float = CALIB_FRACTION, seed: int = CALIB_SEED):
    """Whether `ex` falls on the calibration side (a pure function of its key and the seed)."""
    digest = hashlib.sha256(f"{seed}\n{ex.key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < calib_fraction


def split(
    examples: list[Example], calib_fraction: float = CALIB_FRACTION, seed: int = CALIB_SEED
) -> tuple[list[Example], list[Example]]:
    """(calibration, evaluation): de-duplicated, disjoint, each in input order."""
    if not 0 < calib_fraction < 1:
        raise SeerError(f"calib_fraction must lie in (0, 1), got {calib_fraction}")
    unique = dedupe(examples)
    calib = [ex for ex in unique if in_calibration(ex, calib_fraction, seed)]
    keys = {ex.key for ex in calib}
    evaluation = [ex for ex in unique if ex.key not in keys]
    if not calib or not evaluation:
        empty = "calibration" if not calib else "evaluation"
        raise SeerError(
            f"{len(unique)} unique examples leave the {empty} split empty "
            f"(fraction {calib_fraction}); give more examples"
        )
    return calib, evaluation
