"""dInfer's early stop, declared: a filled block holding [EOS] ends its row.

Its hooks are `seer.diffusion.schedule.BlockEnds` (shared with parallel decoding); it needs
semi-AR blocks (`block_length` < `gen_length`) to save steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from seer.policies import Declaration, Traits
from seer.spec import option


@dataclass(slots=True, frozen=True)
class EarlyStop:
    """No options but its switch: `SamplingParams(policies=(EarlyStop(),))`."""


DECLARATION: Declaration = Declaration(
    name="early_stop",
    options=EarlyStop,
    # (the rest of its window becomes [EOS]); needs semi-AR blocks to save steps
    switch=option(
        False,
        "dInfer: end once a completed block holds [EOS] (needs --block-length < gen-length)",
        flag="--early-stop",
        api=True,
    ),
    traits=Traits(),
    hooks="seer.diffusion.schedule",
)
