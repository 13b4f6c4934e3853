"""DPad's suffix dropout (Chen et al. 2025, arXiv 2508.14148), declared: its one option.

DPad is on with `cache='dpad'` and runs through the loop's cache seam, not as a decoding
policy's hooks (`seer.diffusion.cache.SuffixDropout`: it changes which columns a forward runs,
never which tokens are revealed; docs/architecture.md says why). Its option lives here all the
same, and its traits say what it composes with: only its own cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from seer.policies import Declaration, Traits
from seer.spec import option


@dataclass(slots=True, frozen=True)
class DPad:
    """`SamplingParams(cache="dpad", policies=(DPad(dpad_window=8),))`."""

    # (DPad's `window`; the official generate has no default: 16 is ours, bench_compare's)
    dpad_window: int = option(
        16,
        "--cache dpad: suffix positions kept past the block (default 16)",
        lo=0,
        flag="--dpad-window",
        api=True,
    )


DECLARATION: Declaration = Declaration(
    name="dpad",
    options=DPad,
    needs=("cache", "dpad"),
    traits=Traits(caches=("dpad",)),
    after="cache",
    hooks=None,
)
