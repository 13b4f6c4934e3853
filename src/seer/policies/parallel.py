"""Fast-dLLM's parallel decoding, declared: `threshold` or `factor` (one of them).

The unmasking rule reveals every position the rule accepts (at least one per step,
`seer.diffusion.unmask.parallel_count`), and a block runs until it has no masks: its hooks
(`seer.diffusion.schedule.BlockEnds`) skip the block's remaining steps once it is filled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seer.errors import SeerError
from seer.policies import Declaration, Traits
from seer.spec import option


@dataclass(slots=True, frozen=True)
class Parallel:
    """`SamplingParams(policies=(Parallel(threshold=0.9),))`."""

    threshold: float | None = option(
        None,
        "Fast-dLLM parallel decoding: reveal every masked position of the block whose "
        "confidence is >= this (at least one per step)",
        lo=0,
        hi=1,
        note="a confidence in [0, 1]",
        flag="--threshold",
        api=True,
    )
    # the block ends when it has no masks, so `steps` no longer sets the step count
    factor: float | None = option(
        None,
        "Fast-dLLM factor-based parallel decoding",
        lo=0,
        open_lo=True,
        flag="--factor",
        api=True,
    )
    # (the n-th most confident position is revealed while its confidence is >= 1 - factor/(n+1))


def check(p: Any) -> None:
    """One of threshold / factor, with a top-k rule."""
    if p.threshold is not None and p.factor is not None:
        raise SeerError("give threshold or factor, not both (two parallel-decoding rules)")
    if p.remasking == "origin" or p.alg_temp:
        raise SeerError(
            "threshold/factor rank positions by confidence: use a top-k rule "
            "(not remasking='origin', no alg_temp)"
        )


DECLARATION: Declaration = Declaration(
    name="parallel",
    options=Parallel,
    on=lambda flat: flat.get("threshold") is not None or flat.get("factor") is not None,
    traits=Traits(),
    hooks="seer.diffusion.schedule",
    check=check,
)
