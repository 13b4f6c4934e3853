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
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol

import torch

from seer.diffusion.cache import CachePolicy, NoCache, gather_cache
from seer.diffusion.canvas import Canvas, place
from seer.diffusion.policy import DecodePolicy, join
from seer.diffusion.schedule import Plan, StepRows
from seer.diffusion.stop import StopWords
from seer.sampling import SamplingParams, TokenIds

if TYPE_CHECKING:
    from seer.models.base import DiffusionModel


@dataclass(slots=True)
class LoopResult:
    """What the loop did, per batch."""

    answer: torch.Tensor  # (B, gen_length): kept window tokens, then [EOS]
    window: torch.Tensor  # (B,) final answer window per row
    nfe: int  # forward passes (a CFG pair counts once)
    seconds: float  # wall time of the whole loop
    grown: torch.Tensor  # (B,) times the window policy grew each row's window
    policy_seconds: float = 0.0  # time spent inside the window policy (detection, cuts)
    extras: dict[str, Any] = field(default_factory=dict)  # policy reports (e.g. boundary reports)
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

    def start(self, model: DiffusionModel, canvas: Canvas) -> dict[str, Any]: ...

    def cut(self, canvas: Canvas, logits: torch.Tensor) -> torch.Tensor | None: ...

    def grow(
        self, window: torch.Tensor, end_pos: torch.Tensor, gen_length: int
    ) -> torch.Tensor | None: ...

    def report(self) -> dict[str, Any]: ...


class Forward(Protocol):
    """What one denoising step asks of the model.

    `__call__(s, rows, lo, hi, hooks)` returns logits (B, hi - lo, V) for answer positions
    [lo, hi) of `s.canvas` (after the model's logit shift and CFG), counting the columns it fed
    in `s.forwarded` (and an extra prefill forward in `s.nfe`). `hooks` are step-0 forward
    keyword arguments of a window policy (`after_layer`); with hooks the forward is the whole
    canvas. `relayout(canvas)` is called when the canvas changed layout (a cut or a growth)."""

    def __call__(
        self, s: LoopState, rows: StepRows, lo: int, hi: int, hooks: dict[str, Any]
    ) -> torch.Tensor: ...

    def relayout(self, canvas: Canvas) -> None: ...


@dataclass(slots=True)
class LoopState:
    """A run in progress: what `DenoisingLoop.step` advances, one step at a time. Built complete
    (`LoopState.new`, `gather`): the fields from `first_kw` on are the run's progress and
    caches, which every step may change."""

    canvas: Canvas  # the sequences, in their current layout
    params: SamplingParams  # the first row's options: its `layout_key` is every row's
    plan: Plan  # per-row stages; each row continues from its own step
    # the run's `WindowPolicy` (cut at step 0, guard when a row's plan ends); None in a run
    # without one (every row denoises its full window)
    policy: WindowPolicy | None
    # every random draw of the run; None: torch's global generator (an unseeded run)
    generator: torch.Generator | None
    grown: torch.Tensor  # (B,) long: times the policy grew each row's window
    finished: torch.Tensor  # (B,) bool: rows whose answer is complete
    row_nfe: torch.Tensor  # (B,) long: forward passes each row took part in
    phase: torch.Tensor  # (B,) long: each row's phase under a re-planning policy (else 0)
    rows: list[SamplingParams]  # each row's own options
    window_policies: list[WindowPolicy | None]  # each row's window policy (its guard grows it)
    decoders: list[DecodePolicy]  # the run's `DecodePolicy`s (`policy.py`), built once
    cache: CachePolicy  # the KV-cache policy and its cache
    t0: float  # perf_counter() when the run began
    # each row's own generator; None: every row draws from `generator` (a run begun without
    # per-row options, `DenoisingLoop.begin(rows=None)`)
    generators: list[torch.Generator | None] | None = None
    first_kw: dict[str, Any] | None = None  # forward hooks of a pending step 0 under a policy
    nfe: int = 0  # forward passes of this state (a CFG pair counts once)
    policy_seconds: float = 0.0  # time inside the window policy
    forwarded: int = 0  # rows x columns fed to the model
    forward: Forward | None = None  # the `Forward` this state runs with (None: the loop's)
    path: str = ""  # the engine's execution path this layout was formed for ("": step 0's)
    now: StepRows | None = None  # the current step's rows (None: read it from the plan)
    _groups: list[tuple[list[int], SamplingParams, torch.Generator | None]] | None = None

    @classmethod
    def new(
        cls,
        canvas: Canvas,
        params: SamplingParams,
        plan: Plan,
        policy: WindowPolicy | None = None,
        generator: torch.Generator | None = None,
        *,
        cache: CachePolicy | None = None,
        rows: list[SamplingParams] | None = None,
        generators: list[torch.Generator | None] | None = None,
        decoders: list[DecodePolicy] | None = None,
        t0: float = 0.0,
    ) -> LoopState:
        """A state at step 0: counters at zero, every row `params` (or its `rows` entry) and
        `policy`, no KV cache unless `cache` is given."""
        b, dev = canvas.rows, canvas.x.device
        return cls(
            canvas,
            params,
            plan,
            policy,
            generator,
            grown=torch.zeros(b, dtype=torch.long, device=dev),
            finished=torch.zeros(b, dtype=torch.bool, device=dev),
            row_nfe=torch.zeros(b, dtype=torch.long, device=dev),
            phase=torch.zeros(b, dtype=torch.long, device=dev),
            rows=[params] * b if rows is None else rows,
            window_policies=[policy] * b,
            decoders=[] if decoders is None else decoders,
            cache=NoCache() if cache is None else cache,
            t0=t0,
            generators=generators,
        )

    @property
    def stop(self) -> StopWords | None:
        """The stop-sequence policy among `decoders`, if any: each row's stop position."""
        return next((d for d in self.decoders if isinstance(d, StopWords)), None)

    @property
    def gen_length(self) -> int:
        """The longest answer any row may have (each row's own cap: `rows[r].gen_length`)."""
        return max(p.gen_length for p in self.rows)

    def grow(self, ended: torch.Tensor, end_pos: torch.Tensor) -> torch.Tensor:
        """(B,) windows after each `ended` row's window policy's guard (`WindowPolicy.grow`,
        capped at the row's gen_length; `end_pos`: each row's first end position, or -1)."""
        window = self.canvas.window.clone()
        by: dict[tuple[int, int], tuple[WindowPolicy, list[int]]] = {}
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
            start, end, j, steps, active = self.plan.current(self.canvas.x.device)
            self.now = StepRows(start, end, j, steps, active, self.plan.bounds())
        return self.now


def seeded(seed: int | None, device: torch.device) -> torch.Generator | None:
    """A generator of its own for a seeded row (None: the global generator)."""
    return None if seed is None else torch.Generator(device=device).manual_seed(seed)


def gather(
    parts: list[tuple[LoopState, int]],
    prompt_width: int,
    width: int,
    tokens: TokenIds,
    embedding: torch.nn.Embedding | None = None,
) -> LoopState:
    """One state of rows taken from other states (`(state, row)` each, all with the same
    `layout_key`), laid out with `prompt_width` prompt columns and `width` answer columns. Each
    row keeps its step, stop position, cache columns, counters. Rows of a state at a pending
    step 0 whose policy hooks nothing into the forward take it in the new state's next forward
    (`RowCuts`); every row of such a state must be among `parts`."""
    first = parts[0][0]
    pending = [s for s in {id(s): s for s, _ in parts}.values() if s.first_kw is not None]
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
    policy = first.policy
    if pending:
        at = {(id(s), r): k for k, (s, r) in enumerate(parts)}  # where each row is laid
        if any((id(s), r) not in at for s in pending for r in range(s.canvas.rows)):
            raise AssertionError("a step 0 split across forwards")
        policy = RowCuts([(s, [at[id(s), r] for r in range(s.canvas.rows)]) for s in pending])
    return LoopState(
        canvas,
        first.params,
        Plan.join([(s.plan, r) for s, r in parts]),
        policy,
        first.generator,
        grown=cat("grown"),
        finished=cat("finished"),
        row_nfe=cat("row_nfe"),
        phase=cat("phase"),
        rows=[s.rows[r] for s, r in parts],
        window_policies=[s.window_policies[r] for s, r in parts],
        decoders=join(parts),
        cache=cache,
        t0=first.t0,
        generators=gens,
        first_kw={} if pending else None,
    )


class RowCuts:
    """The `WindowPolicy` of a gathered state holding rows at a pending step 0 beside rows past
    it: after the shared forward, each begun state's policy (started at its `begin`, hooking
    nothing into the forward) cuts its own rows, laid as in that state, over that state's
    columns of the logits; the other rows keep their windows. Growth is each row's own policy's
    (`LoopState.window_policies`)."""

    def __init__(self, parts: list[tuple[LoopState, list[int]]]) -> None:
        self.parts = parts  # (a begun state, the rows its rows are in the gathered state)

    def start(self, model: DiffusionModel, canvas: Canvas) -> dict[str, Any]:
        return {}

    def cut(self, canvas: Canvas, logits: torch.Tensor) -> torch.Tensor | None:
        window = canvas.window.clone()
        for s, rows in self.parts:
            assert s.policy is not None and not s.first_kw  # `gather`: pending, no hooks
            idx, w, t0 = torch.tensor(rows, device=canvas.x.device), s.canvas.width, perf_counter()
            got = s.policy.cut(canvas.part(rows, w), logits[idx, :w])  # (rows,) or None: keep
            s.policy_seconds += perf_counter() - t0  # its own requests' detection time
            if got is not None:
                window[idx] = got.to(window)
            s.first_kw = None  # its step 0 ran
        self.parts = []  # every begun run has cut: hold none of them (nor their canvases) on
        return window

    def grow(
        self, window: torch.Tensor, end_pos: torch.Tensor, gen_length: int
    ) -> torch.Tensor | None:
        return None

    def report(self) -> dict[str, Any]:
        return {}
