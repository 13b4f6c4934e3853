"""`Sequence`: one request inside the engine (nano-vllm's `Sequence`), from `add` to its result.

Before its step 0 a sequence is *waiting*; step 0 runs it (with any other arrivals of the same
kind) over the full window, where the window policy (Seer) decides its window: from then on it
is *running* and its cost per step is known. Its tensors live in one row (`row`) of a
`LoopState` (`state`) shared with the rows it ran beside in its last tick.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, cast

from seer.diffusion.state import LoopState
from seer.engine.request import Request
from seer.models.multimodal import PromptInput
from seer.sampling import SamplingParams

if TYPE_CHECKING:
    from seer.boundary.config import SeerConfig
    from seer.boundary.detector import BoundaryReport


class WindowKind(Enum):
    """How a request's answer window is decided at its step 0."""

    FULL = "full"  # no policy: the whole gen_length window
    SEER = "seer"  # Seer's detector cuts it (value: the resolved SeerConfig)
    FIXED = "fixed"  # a given window (value: its length; oracle truncation in benchmarks)
    CUSTOM = "custom"  # a caller's WindowPolicy, shared by the rows of one `generate` call


@dataclass(slots=True, frozen=True)
class Window:
    """A request's window policy: its kind and what the kind takes."""

    kind: WindowKind
    value: object = None  # SeerConfig (SEER) | int (FIXED) | a WindowPolicy (CUSTOM) | None

    @property
    def key(self) -> tuple[Hashable, ...]:
        """Requests whose keys (and layouts and gen_lengths) are equal share a step 0: fixed
        windows differ per row, so the kind alone is the key of FIXED."""
        return (self.kind,) if self.kind is WindowKind.FIXED else (self.kind, self.value)

    @property
    def any_cap(self) -> bool:
        """Whether arrivals of different window caps (gen_length) may share this policy's
        step 0: Seer deciding from the logits after the forward (no probe hooked inside it,
        no cut inside it), each row over its own cap's columns (`runner.CapWindows`)."""
        if self.kind is not WindowKind.SEER:
            return False
        cfg = cast("SeerConfig", self.value)
        return not cfg.uses_sparsity and not cfg.cut_in_step0

    @property
    def seer(self) -> SeerConfig | None:
        """The SeerConfig in force, if Seer (or a caller's SeerPolicy) decides the window."""
        if self.kind is WindowKind.SEER:
            return cast("SeerConfig", self.value)
        cfg = getattr(self.value, "cfg", None) if self.kind is WindowKind.CUSTOM else None
        return cast("SeerConfig | None", cfg)


@dataclass(slots=True, eq=False)
class Sequence:
    """A request in the engine and where its row lives."""

    id: int  # the request id `Engine.add` returned
    request: Request  # what the caller asked
    params: SamplingParams  # sampling, with the model's defaults filled in
    prompt: PromptInput  # prompt ids (and embeddings with an image spliced in)
    policy: Window  # how its window is decided at step 0
    arrival: float  # perf_counter() at `add`
    tick: int  # engine tick at `add`
    last_run: int = -1  # last tick the sequence ran a step (-1: never)
    state: LoopState | None = None  # the state holding its row (None while waiting)
    row: int = 0  # its row in `state`
    path: str = ""  # path of the group it last ran in: static | varlen | eager
    boundary: BoundaryReport | None = None  # Seer's BoundaryReport from step 0
    detect_seconds: float = 0.0  # time its step-0 batch spent in the window policy
    started: float = 0.0  # perf_counter() when its step 0 began
    blocks: int = 0  # semi-AR blocks already reported final (partial results)
    first_block: float | None = None  # perf_counter() when its first block was final
    done: bool = False  # its result has been returned (or it was aborted)
    kind: int = 0  # its step-0 kind: arrivals of a kind share their step-0 forward
    layout: int = 0  # its layout kind (`EngineConfig.grouping`): rows of one share forwards
    _window: int | None = None  # its window after its last step (read back once per state)

    @property
    def waiting(self) -> bool:
        return self.state is None

    @property
    def prompt_len(self) -> int:
        return len(self.prompt.ids)

    @property
    def window(self) -> int:
        """Answer positions of its window (gen_length before step 0; kept on the host)."""
        return self.params.gen_length if self._window is None else self._window

    def key(self) -> tuple[int, bool]:
        """Rows with equal keys can share a forward: same layout kind, and all or none
        holding a KV cache."""
        return self.layout, self.state is not None and self.state.cache.kv is not None

    def needs_blocks(self) -> bool:
        """Whether its final blocks must be watched: a streaming request, or a first block
        that is not the whole window (else the first block is final when the request is)."""
        return self.request.on_block is not None or (
            self.first_block is None and self.params.block < self.window
        )

    def cost(self) -> int:
        """Tokens one step of this row computes: prompt + window (Seer's prediction after
        step 0; the full window before it), + the suffix."""
        return self.prompt_len + self.window + len(self.params.suffix)

    def work(self, masks_left: int | None = None) -> float:
        """Predicted remaining work: steps left (at the run's tokens per step) x `cost`."""
        p = self.params
        left = self.window if masks_left is None else masks_left
        return math.ceil(left * p.total_steps / p.gen_length) * self.cost()
