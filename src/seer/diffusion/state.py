"""A run in progress (`LoopState`), how rows move between runs (`gather`), the window policy's
contract (`WindowPolicy`) and what a finished run returns (`LoopResult`).

Every row carries its own place in its plan, its stop position, its cache columns and its
counters, so rows taken from different runs — at different steps, with different prompt and
window lengths — can be laid into one canvas and advanced by one forward (`gather`): the
step-level engine's continuous batching. A row's tokens do not depend on the rows beside it
(positions follow the attention mask; padding is hidden; ties between confidences go to the
earlier position), so at temperature 0 it gets the answer it gets alone, up to the last bits
of the logits a batched forward sums in another order (`EngineConfig.batch_invariant`).

Rows of one state share only what changes the forward (`SamplingParams.layout_key`); each row
keeps its own sampling options (`rows`), its own random generator (`generators`: a seeded row
draws from its own, exactly what it draws alone) and its own window policy
(`window_policies`, whose guard grows it). The reveal runs per `reveal_groups`: rows that draw
nothing and read the same options together, every row that draws from its own generator alone,
over its own block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import torch

from seer.diffusion.cache import CachePolicy, NoCache, gather_cache
from seer.diffusion.canvas import Canvas, place
from seer.diffusion.policy import join
from seer.diffusion.schedule import Plan, StepRows
from seer.diffusion.stop import StopWords
from seer.sampling import SamplingParams, TokenIds


@dataclass(slots=True)
class LoopResult:
    """What the loop did, per batch."""

    answer: torch.Tensor  # (B, gen_length): kept window tokens, then [EOS]
    window: torch.Tensor  # (B,) final answer window per row
    nfe: int  # forward passes (a CFG pair counts once)
    seconds: float  # wall time of the whole loop
    grown: torch.Tensor  # (B,) times the window policy grew each row's window
    policy_seconds: float = 0.0  # time spent inside the window policy (detection, cuts)
    extras: dict = field(default_factory=dict)  # policy reports (e.g. boundary reports)
    forwarded: int = 0  # rows x columns fed to the model, summed over forwards (CFG pair once)


class WindowPolicy(Protocol):
    """Decides each row's answer window. Called by the loop at fixed points:

    `start(model, canvas)` before step 0's forward; returns extra forward kwargs (e.g. an
    `after_layer` hook that cuts the window inside step 0) and may attach probes.
    `cut(canvas, logits)` after step 0's forward with its window logits (B, W, V); removes probes;
    returns the new window per row (B,) or None to keep the full window.
    `grow(window, end_pos, gen_length)` for the rows whose plan ran out (their windows, and the
    position of the first end token in each, or -1); returns larger windows or None to stop.
    `report()` returns what the policy wants the caller to see (put in `LoopResult.extras`).
    """

    def start(self, model, canvas: Canvas) -> dict: ...

    def cut(self, canvas: Canvas, logits: torch.Tensor) -> torch.Tensor | None: ...

    def grow(self, window: torch.Tensor, end_pos: torch.Tensor, gen_length: int): ...

    def report(self) -> dict: ...


@dataclass(slots=True)
class LoopState:
    """A run in progress: what `DenoisingLoop.step` advances, one step at a time."""

    canvas: Canvas  # the sequences, in their current layout
    params: SamplingParams  # the first row's options: its `layout_key` is every row's
    plan: Plan  # per-row stages; each row continues from its own step
    policy: object | None  # the `WindowPolicy` (cut at step 0, guard when a row's plan ends)
    generator: torch.Generator | None  # every random draw of the run
    first_kw: dict | None = None  # forward hooks of a pending step 0 under a policy
    grown: torch.Tensor | None = None  # (B,) long: times the policy grew each row's window
    finished: torch.Tensor | None = None  # (B,) bool: rows whose answer is complete
    row_nfe: torch.Tensor | None = None  # (B,) long: forward passes each row took part in
    nfe: int = 0  # forward passes of this state (a CFG pair counts once)
    policy_seconds: float = 0.0  # time inside the window policy
    t0: float = 0.0  # perf_counter() when the run began
    cache: CachePolicy = field(default_factory=NoCache)  # the KV-cache policy and its cache
    forwarded: int = 0  # rows x columns fed to the model
    forward: object | None = None  # the `Forward` this state runs with (None: the loop's)
    path: str = ""  # the engine's execution path this layout was formed for ("": step 0's)
    now: StepRows | None = None  # the current step's rows (None: read it from the plan)
    decoders: list = field(default_factory=list)  # the run's `DecodePolicy`s (`policy.py`)
    phase: torch.Tensor | None = None  # (B,) long: each row's phase under a re-planning policy
    rows: list[SamplingParams] | None = None  # each row's own options (None: `params` for all)
    generators: list[torch.Generator | None] | None = None  # per row (None: `generator`, shared)
    window_policies: list[object | None] | None = None  # per row (None: `policy` for all)
    _groups: list | None = None  # `reveal_groups`' answer (rows never change within a state)

    def __post_init__(self) -> None:
        b, dev = self.canvas.rows, self.canvas.x.device
        if self.grown is None:
            self.grown = torch.zeros(b, dtype=torch.long, device=dev)
        if self.finished is None:
            self.finished = torch.zeros(b, dtype=torch.bool, device=dev)
        if self.row_nfe is None:
            self.row_nfe = torch.zeros(b, dtype=torch.long, device=dev)
        if self.rows is None:
            self.rows = [self.params] * b
        if self.window_policies is None:
            self.window_policies = [self.policy] * b

    @property
    def stop(self) -> StopWords | None:
        """The stop-sequence policy among `decoders`, if any: each row's stop position."""
        return next((d for d in self.decoders if isinstance(d, StopWords)), None)

    @property
    def gen_length(self) -> int:
        """The longest answer any row may have (each row's own cap: `rows[r].gen_length`)."""
        assert self.rows is not None  # set in __post_init__
        return max(p.gen_length for p in self.rows)

    def grow(self, ended: torch.Tensor, end_pos: torch.Tensor) -> torch.Tensor:
        """(B,) windows after each `ended` row's window policy's guard (`WindowPolicy.grow`,
        capped at the row's gen_length; `end_pos`: each row's first end position, or -1)."""
        window, by = self.canvas.window.clone(), {}
        assert self.rows is not None and self.window_policies is not None  # __post_init__
        for r in torch.nonzero(ended).flatten().tolist():
            pol = self.window_policies[r]
            if pol is not None:  # rows of one policy and cap, grown together
                by.setdefault((id(pol), self.rows[r].gen_length), (pol, []))[1].append(r)
        for (_, cap), (pol, group) in by.items():
            idx = torch.tensor(group, device=window.device)
            bigger = pol.grow(window[idx], end_pos[idx], cap)
            if bigger is not None:
                window[idx] = bigger.to(window)
        return window

    def generator_of(self, row: int) -> torch.Generator | None:
        return self.generator if self.generators is None else self.generators[row]

    def reveal_groups(self) -> list[tuple[list[int], SamplingParams, torch.Generator | None]]:
        """(rows, their options, their generator) per reveal: with one shared generator, rows
        of equal options together (all rows, usually); with per-row generators, a row that
        draws from its own alone, and rows that draw nothing (or from the global generator)
        together when their reveal options are equal."""
        if self._groups is None:
            assert self.rows is not None  # set in __post_init__
            groups: dict[object, tuple[list[int], SamplingParams, torch.Generator | None]] = {}
            for r, p in enumerate(self.rows):
                g = self.generator_of(r)
                own = self.generators is not None and g is not None and p.draws
                key = ("own", r) if own else p.sampling_key
                groups.setdefault(key, ([], p, g))[0].append(r)
            self._groups = list(groups.values())
        return self._groups

    # -- what the engine reads of a run (its scheduler, its partial results, its memory) ------
    def masks_left(self, mask: int) -> list[int]:
        """Per row: [MASK]s left in its answer columns (`mask`: the model's mask id)."""
        c = self.canvas
        return (c.x[:, c.prompt_len :] == mask).sum(dim=1).tolist()

    def revealed(self, mask: int) -> list[int]:
        """Per row: answer positions before its first [MASK] (its whole window if none)."""
        c = self.canvas
        masked = c.x[:, c.prompt_len :] == mask
        first = torch.where(masked.any(dim=1), masked.int().argmax(dim=1), c.width)
        return torch.minimum(first, c.window).tolist()

    def held_bytes(self) -> int:
        """Bytes the run holds: canvas ids, masks, prompt embeddings and the KV cache."""
        c, kv = self.canvas, self.cache.kv
        tensors = [c.x, c.attention_mask, c.prompt_embeds]
        if kv is not None:
            tensors += [*kv.keys, *kv.values]
        return sum(t.numel() * t.element_size() for t in tensors if t is not None)

    def rows_now(self) -> StepRows:
        """The current step's `StepRows` (cached until the plan changes)."""
        if self.now is None:
            self.now = StepRows(*self.plan.current(self.canvas.x.device), self.plan.bounds())
        return self.now


def seeded(seed: int | None, device) -> torch.Generator | None:
    """A generator of its own for a seeded row (None: the global generator)."""
    return None if seed is None else torch.Generator(device=device).manual_seed(seed)


def gather(
    parts: list[tuple[LoopState, int]],
    prompt_width: int,
    width: int,
    tokens: TokenIds,
    embedding=None,
) -> LoopState:
    """One state of rows taken from other states (`(state, row)` each, all with the same
    `layout_key` and none at a pending step 0), laid out with `prompt_width` prompt columns and
    `width` answer columns. Each row keeps its step, stop position, cache columns, counters."""
    first = parts[0][0]
    canvas = place([(s.canvas, r) for s, r in parts], prompt_width, width, tokens, embedding)

    def cat(name: str) -> torch.Tensor:
        return torch.cat([getattr(s, name)[r : r + 1] for s, r in parts])

    cache = gather_cache(
        [(s.cache, r, s.canvas.rows, s.canvas.prompt_len - prompt_width) for s, r in parts],
        prompt_width + width,
    )
    gens = None
    if first.generators is not None:
        gens = [s.generator_of(r) for s, r in parts]
    return LoopState(
        canvas,
        first.params,
        Plan.join([(s.plan, r) for s, r in parts]),
        first.policy,
        first.generator,
        grown=cat("grown"),
        finished=cat("finished"),
        row_nfe=cat("row_nfe"),
        t0=first.t0,
        cache=cache,
        decoders=join(parts),
        phase=None if first.phase is None else cat("phase"),
        rows=[s.rows[r] for s, r in parts],
        generators=gens,
        window_policies=[s.window_policies[r] for s, r in parts],
    )
