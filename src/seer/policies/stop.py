"""Stop sequences (LLaDA-V's `stopping_criteria`), declared: its one option, `stop`.

Its hooks are `seer.diffusion.stop.StopWords`: once a sequence appears in the answer, only
masks before it are revealed, then the row ends. The server encodes its `stop` strings with the
tokenizer; the library takes token ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from seer.policies import Declaration, Traits
from seer.spec import option


@dataclass(slots=True, frozen=True)
class Stop:
    """`SamplingParams(policies=(Stop(stop=((13, 7),)),))`."""

    stop: tuple[tuple[int, ...], ...] = option((), "stop sequences, as token ids")


DECLARATION: Declaration = Declaration(
    name="stop",
    options=Stop,
    on=lambda flat: bool(flat.get("stop")),
    traits=Traits(limits=True),
    after="banned_ids",
    hooks="seer.diffusion.stop",
)
