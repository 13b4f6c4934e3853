"""Decoding policies: what the one loop does beyond its unmasking rule, as plug-ins.

A decoding policy is one module (DAEDAL's re-planning in `daedal.py`, ρ-EOS's in `rho_eos.py`,
stop sequences in `stop.py`, Fast-dLLM's block closing and dInfer's early stop in `schedule.py`)
whose object the loop calls at fixed points, without knowing which policy it is (`DecodePolicy`):

- `start(s, window)` when a run begins, before step 0's forward: size the window (DAEDAL: its
  first window of `daedal_initial` masks); `window` is the run's window policy, if any;
- `reveal(s, logits, now)` each step: the step's reveals in place of the unmasking rule (DAEDAL:
  its own reveal, mask insertion and re-planning); False leaves them to the rule;
- `limit(eligible, masked, pos)` inside the rule's reveal: which masks it may reveal (stop
  sequences: those before the stop), on the rows of `select(idx)`;
- `after(s, answer)` after each step (`answer`: the answer columns, a view of the canvas): the
  rows that are complete now, or None; it may end rows or close blocks in the plan, or resize
  the canvas through the loop (`DenoisingLoop._resize`);
- `finish(s, answer, pos)` when the answer is read: clear what is not answer (stop sequences:
  the sequence and what follows it).

Each policy declares its options, `Traits` and rules in its declaration (`seer.policies`, torch-
free: the front ends read it), and its hooks class takes the declaration's traits. The traits say
whether it decides the answer length (then it composes with no window policy, such as Seer, and
no other such policy), which KV caches it runs with, whether its steps read the logits of the
whole window, whether it limits the rule's reveal, whether it runs alone. `SamplingParams`
checks them once per request (`seer.policies.check`); `check` here says the same of a run's
hooks and its window policy, for callers of the loop itself. A run's policies are built from its
rows' options (`decoders.py`), once;
rows moved between runs (`state.gather`) take theirs along (`join`): every policy keeps its
per-row state per row.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

import torch

from seer.errors import SeerError
from seer.policies import Traits, decides

# the loop's types, as the hooks see them: this module imports none of the loop's modules,
# not even for the type checker (they import it, and no import closes a circle,
# tests/test_layering.py): a `DenoisingLoop`, a `LoopState`, a `StepRows`, a `WindowPolicy`.
# A hooks module that no loop module imports (daedal.py, rho_eos.py) names the real ones.
Loop = Any
LoopState = Any
StepRows = Any
WindowPolicy = Any

P = TypeVar("P", bound="DecodePolicy")


class DecodePolicy(Protocol):
    """The hooks of a decoding policy (module docstring); `Policy` gives no-op defaults."""

    name: str  # as the user names it (an option's name), in one-line errors
    traits: Traits

    def start(self, s: LoopState, window: WindowPolicy | None) -> None: ...

    def reveal(self, s: LoopState, logits: torch.Tensor, now: StepRows) -> bool: ...

    def limit(
        self, eligible: torch.Tensor, masked: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor: ...

    def select(self, idx: torch.Tensor) -> DecodePolicy: ...

    def after(self, s: LoopState, answer: torch.Tensor) -> torch.Tensor | None: ...

    def finish(self, s: LoopState, answer: torch.Tensor, pos: torch.Tensor) -> None: ...

    def join(self, parts: list[tuple[LoopState, int]]) -> DecodePolicy: ...


class Policy:
    """No-op hooks: a policy defines only the ones it needs."""

    name = "policy"
    traits = Traits()

    def start(self, s: LoopState, window: WindowPolicy | None) -> None:
        pass

    def reveal(self, s: LoopState, logits: torch.Tensor, now: StepRows) -> bool:
        return False

    def limit(
        self, eligible: torch.Tensor, masked: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:
        return eligible

    def select(self, idx: torch.Tensor) -> DecodePolicy:
        return self

    def after(self, s: LoopState, answer: torch.Tensor) -> torch.Tensor | None:
        return None

    def finish(self, s: LoopState, answer: torch.Tensor, pos: torch.Tensor) -> None:
        pass

    def join(self, parts: list[tuple[LoopState, int]]) -> DecodePolicy:
        return self  # no per-row state


def check(policies: list[DecodePolicy], window: WindowPolicy | None, cache: str) -> None:
    """The run's policies compose with each other, its window policy and its cache (traits)."""
    setters = [p.name for p in policies if p.traits.sets_length]
    if setters and window is not None:
        raise SeerError(decides(setters[0]))
    if len(setters) > 1:
        raise SeerError(f"{setters[0]} and {setters[1]} both set the answer length: keep one")
    for p in policies:
        if p.traits.caches is not None and cache not in p.traits.caches:
            raise SeerError(f"{p.name} does not combine with cache={cache!r}; drop one of them")
    if sum(p.traits.limits for p in policies) > 1:
        raise SeerError("two policies limit the reveal: keep one")


def join(parts: list[tuple[LoopState, int]]) -> list[DecodePolicy]:
    """The policies of rows taken from other runs (`state.gather`): one of each kind that any
    of them has, holding every row's own state."""
    kinds: dict[type, DecodePolicy] = {}
    for s, _ in parts:
        for p in s.decoders:
            kinds.setdefault(type(p), p)
    return [p.join(parts) for p in kinds.values()]


def own(s: LoopState, kind: type[P]) -> P | None:
    """`s`'s policy of class `kind`, if it has one (a policy's `join` reads its rows' own)."""
    return next((p for p in s.decoders if isinstance(p, kind)), None)
