"""The scheduler: which rows run each tick (admission), and how they are grouped (routing).

Admission (`schedule`, once per tick; vLLM's `max_num_batched_tokens` idea, with Seer's
prediction as the cost): candidates are the running rows (their window known since step 0) and
the waiting requests (cost: the full window, which their step 0 runs over). In policy order they
are admitted while the tick's token budget (`max_tokens_per_step`: rows x (prompt + window))
lasts — at least one row per tick, so a row larger than the budget still runs — and while
running rows stay within `max_batch`.
- `fcfs`: by arrival.
- `shortest_first`: by predicted remaining work (masks left x tokens per step x cost per step,
  Seer's window after step 0, the full window before it), divided by 2 ** (ticks waited /
  `aging`): a row that keeps losing sees its priority halve every `aging` ticks, so nothing
  waits forever behind a stream of short requests.

Routing (`plan`), for the rows of one kind that run this tick: every row's window (L* rounded by
the Seer policy, or gen_length) and its prompt length, as host ints.

1. Each row goes to the smallest bucket >= its window (buckets 8, 16, 32, ... gen_length).
2. Coarse groups: walking buckets upward, a bucket group with fewer than `min_group` rows merges
   into the next, so stragglers do not each cost a launch of their own.
3. Each coarse group G with bucket B_G (the bucket of its longest window) gets a padding waste
   (`EngineConfig.waste`): `window`, the paper's rho = 1 - sum(L*) / (|G| * B_G), over the
   answer windows only; or `computed`, over the positions the forward computes: without a KV
   cache every step recomputes prompt + window, so rho = 1 - sum(P + L*) / (|G| * (P_G + B_G))
   (P_G: the longest prompt rounded up to `prompt_align`), while a cache that reuses the prompt
   (`CachePolicy.reuses_prompt`: prefix, dual, prefix_lm) counts the windows only. Under
   `computed` (hybrid routing), walking the coarse groups upward, a group also merges into the
   next while the merged group's waste stays <= `tau_pad`: long prompts (images) make padding
   a short window to a longer bucket cheap beside a forward of its own. With
   `EngineConfig.merge_on` (a GPU profile, "h100" or "h100:llada-8b"; by default "auto": the
   GPU the engine runs on, which the engine finds and passes in as `gpu`, off without one) the
   merge asks the price instead, on either basis: walking the coarse groups upward, a group merges
   into the next when the predicted seconds of one forward of both (laid out as it would run:
   the path and layout the merged group takes) are <= the two forwards' apart (each at its own
   path). A memory-bound forward (few rows: the weights read dominates) costs about what a
   smaller one does, so merging pays; a compute-bound one pays for its padding in FLOPs. The
   prices are the GPU simulator's predictions (`seer.engine.pricing`: seer.roofline's roofline at
   its validated efficiencies, median error 28 % on batch-1 text, batched forwards untested),
   not measurements. Then each group gets a path:
   - eager  when B_G <= `eager_bucket` or |G| == 1: rows at their exact windows, no padding;
   - static when its waste <= `tau_pad`: rows padded to B_G (prompts to a multiple of
     `prompt_align`), padding masked out; fixed shapes, so CUDA graphs replay on GPU;
   - varlen otherwise: segments [prompt | window] packed end to end (next-fit) into rows of
     `pack_capacity` slots with block-diagonal attention, so no window padding is computed.
   Groups with classifier-free guidance never take varlen (its doubled batch is not packed).
`routing="naive"` is the paper's baseline: one static group padded to the longest window;
`static` / `varlen` / `eager` force a path on every coarse group (tests, benchmarks).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from seer.diffusion.forward import pack
from seer.engine.config import EngineConfig
from seer.engine.pricing import ForwardPrice, forward_price
from seer.engine.sequence import Sequence
from seer.roofline.hardware import GPU
from seer.roofline.shapes import ModelShape

__all__ = ["BatchPlan", "Scheduler", "SchedulerOutput", "default_buckets", "pack", "rho_of"]


@dataclass(slots=True)
class SchedulerOutput:
    """What one tick runs."""

    prefill: list[Sequence]  # waiting requests admitted: their step 0 runs this tick
    decode: list[Sequence]  # running rows that take their next step this tick
    tokens: int  # predicted tokens of the tick: rows x (prompt + window)


@dataclass(slots=True)
class BatchPlan:
    """How one group of rows runs its remaining denoising steps."""

    path: str  # static | varlen | eager
    rows: list[int]  # rows of the step-0 batch in this group, in layout order
    bucket: int  # the group's bucket: answer columns per row in the static layout
    rho: float  # the paper's padding-waste ratio 1 - sum(L*) / (|G| * bucket)
    waste: float  # the padding waste routing used (`EngineConfig.waste`'s basis)
    width: int  # answer columns of the row layout (bucket, or the longest window for eager)
    prompt_width: int  # prompt columns of the row layout (left padding included)
    packed_len: int = 0  # varlen: slots per packed row (0 for the other paths)
    packs: int = 0  # varlen: packed rows
    offsets: list[int] = field(default_factory=list)  # varlen: first slot of each row's segment

    @property
    def computed_tokens(self) -> int:
        """Positions the model computes per forward (prompt + window, padding included)."""
        if self.path == "varlen":
            return self.packs * self.packed_len
        return len(self.rows) * (self.prompt_width + self.width)


def default_buckets(gen_length: int) -> tuple[int, ...]:
    """8, 16, 32, ... below gen_length, then gen_length."""
    out, b = [], 8
    while b < gen_length:
        out.append(b)
        b *= 2
    return (*out, gen_length)


class Scheduler:
    """Holds the requests' states (waiting, running), admits rows each tick and turns their
    windows into `BatchPlan`s (see the module docstring). The engine moves a request between
    states only through `add`, `started`, `finish` and `abort`. `served`: the served model's
    shape, which `merge_on` prices forwards as when it names no model; `gpu`: the GPU profile
    the forwards run on, which merge_on="auto" prices as (None: auto is off). The scheduler
    asks no device: whoever runs the forwards finds the GPU (`Engine`, `SimEngine`)."""

    def __init__(
        self, config: EngineConfig, served: ModelShape | None = None, gpu: GPU | None = None
    ) -> None:
        self.config = config
        # merge_on's predicted seconds of a forward (None: off)
        self.price: ForwardPrice | None = forward_price(
            config.merge_on, served, config.cuda_graphs, gpu
        )
        self.waiting: list[Sequence] = []  # added, step 0 not run yet
        self.running: list[Sequence] = []  # step 0 done, answer not complete
        self._buckets: dict[int, tuple[int, ...]] = {}  # gen_length -> buckets
        self._plans: dict[
            tuple[Hashable, ...], list[BatchPlan]
        ] = {}  # `plan`'s answers (the same each tick)

    # -- a request's states: waiting -> running -> done (or aborted from either) ----------------
    def add(self, q: Sequence) -> None:
        """A resolved request waits for its step 0."""
        self.waiting.append(q)

    def started(self, seqs: list[Sequence]) -> None:
        """`seqs` ran their step 0 (their window is known): they are running."""
        self.waiting = [q for q in self.waiting if q.state is None]
        self.running += seqs

    def finish(self, seqs: list[Sequence]) -> None:
        """`seqs` are complete: they leave (their results go out this tick)."""
        for q in seqs:
            q.done = True
        self.running = [q for q in self.running if not q.done]

    def abort(self, request_id: int) -> Sequence | None:
        """Take an unfinished request out, wherever it is; None if there is none by that id."""
        for pool in (self.waiting, self.running):
            for q in pool:
                if q.id == request_id and not q.done:
                    pool.remove(q)
                    q.done = True
                    return q
        return None

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    # -- admission ----------------------------------------------------------------------------
    def schedule(self, tick: int, masks: dict[Sequence, int]) -> SchedulerOutput:
        """The rows of this tick. `masks` maps a running sequence to its masks left."""
        cfg, waiting, running = self.config, self.waiting, self.running
        if cfg.policy == "fcfs":
            order = sorted([*running, *waiting], key=lambda q: (q.tick, q.id))
        else:

            def priority(q: Sequence) -> tuple[float, int, int]:
                waited = tick - max(q.last_run, q.tick)
                return (q.work(masks.get(q)) / 2 ** (waited / cfg.aging), q.tick, q.id)

            order = sorted([*running, *waiting], key=priority)
        budget = cfg.max_tokens_per_step or math.inf
        out, seats = SchedulerOutput([], [], 0), cfg.max_batch - len(running)
        for q in order:
            if q.waiting and seats <= 0:
                continue
            cost = q.cost()
            if out.tokens + cost > budget and (out.prefill or out.decode):
                continue
            (out.prefill if q.waiting else out.decode).append(q)
            seats -= q.waiting
            out.tokens += cost
        return out

    def buckets(self, gen_length: int) -> tuple[int, ...]:
        if gen_length not in self._buckets:
            b = self.config.buckets or default_buckets(gen_length)
            self._buckets[gen_length] = b if b[-1] >= gen_length else (*b, gen_length)
        return self._buckets[gen_length]

    def bucket_of(self, window: int, gen_length: int) -> int:
        return next((b for b in self.buckets(gen_length) if b >= window), window)

    def plan(
        self,
        windows: list[int],
        prompt_lens: list[int],
        gen_length: int,
        no_pack: bool = False,
        reuses_prompt: bool = False,
    ) -> list[BatchPlan]:
        """One plan per group; every row appears in exactly one plan. `no_pack`: never route to
        varlen (classifier-free guidance doubles the batch; a KV cache needs row layouts).
        `reuses_prompt`: the rows' KV cache reads the prompt instead of recomputing it (the
        computed waste then counts the windows only). A pure function of its arguments (plans
        are never changed): asked again every tick with the same windows, it answers from a
        small memo."""
        key = (tuple(windows), tuple(prompt_lens), gen_length, no_pack, reuses_prompt)
        if key not in self._plans:
            if len(self._plans) >= 4096:
                self._plans.clear()
            self._plans[key] = self._plan(windows, prompt_lens, gen_length, no_pack, reuses_prompt)
        return self._plans[key]

    def _plan(
        self,
        windows: list[int],
        prompt_lens: list[int],
        gen_length: int,
        no_pack: bool,
        reuses_prompt: bool,
    ) -> list[BatchPlan]:
        cfg_ = self.config
        order = sorted(range(len(windows)), key=lambda r: (windows[r], r))
        if cfg_.routing == "naive":
            return [self._make("static", order, windows, prompt_lens, gen_length, 0.0)]
        groups: list[list[int]] = []
        cur: list[int] = []
        for i, r in enumerate(order):
            cur.append(r)
            nxt = order[i + 1] if i + 1 < len(order) else None
            same = nxt is not None and self.bucket_of(windows[nxt], gen_length) == self.bucket_of(
                windows[r], gen_length
            )
            if not same and (len(cur) >= cfg_.min_group or nxt is None):
                groups.append(cur)
                cur = []

        def layout(rows: list[int]) -> BatchPlan:  # the group's path and layout
            rho = self.waste(rows, windows, prompt_lens, gen_length, reuses_prompt)
            path = self._route(rows, windows, gen_length, no_pack, rho)
            return self._make(path, rows, windows, prompt_lens, gen_length, rho)

        if cfg_.routing == "hybrid" and self.price is not None:
            price = self.price

            def seconds(rows: list[int]) -> float:
                return price.seconds(layout(rows), windows, reuses_prompt)

            groups = merge(groups, lambda a, b: seconds(a + b) <= seconds(a) + seconds(b))
        elif cfg_.waste == "computed" and cfg_.routing == "hybrid":
            waste = functools.partial(
                self.waste,
                windows=windows,
                prompt_lens=prompt_lens,
                gen_length=gen_length,
                reuses_prompt=reuses_prompt,
            )
            groups = merge(groups, lambda a, b: waste(a + b) <= cfg_.tau_pad)
        return [layout(rows) for rows in groups]

    def waste(
        self,
        rows: list[int],
        windows: list[int],
        prompt_lens: list[int],
        gen_length: int,
        reuses_prompt: bool = False,
    ) -> float:
        """The padding waste of `rows` laid out static, on `EngineConfig.waste`'s basis: the
        paper's rho over the answer windows, or the share of padding in the positions the
        forward computes (prompt, aligned to the longest, + bucket per row; windows only where
        a KV cache reuses the prompt)."""
        w = [windows[r] for r in rows]
        bucket = self.bucket_of(max(w), gen_length)
        if self.config.waste == "window" or reuses_prompt:
            return rho_of(w, bucket)
        align = self.config.prompt_align
        width = align * math.ceil(max(prompt_lens[r] for r in rows) / align)
        return 1.0 - (sum(w) + sum(prompt_lens[r] for r in rows)) / (len(rows) * (width + bucket))

    def _route(
        self, rows: list[int], windows: list[int], gen_length: int, no_pack: bool, rho: float
    ) -> str:
        c = self.config
        if c.routing != "hybrid":
            path = c.routing
        else:
            bucket = self.bucket_of(max(windows[r] for r in rows), gen_length)
            if bucket <= c.eager_bucket or len(rows) == 1:
                path = "eager"
            else:
                path = "static" if rho <= c.tau_pad else "varlen"
        return "static" if path == "varlen" and no_pack else path

    def _make(
        self,
        path: str,
        rows: list[int],
        windows: list[int],
        prompt_lens: list[int],
        gen_length: int,
        waste: float,
    ) -> BatchPlan:
        w = [windows[r] for r in rows]
        bucket = self.bucket_of(max(w), gen_length)
        longest_prompt = max(prompt_lens[r] for r in rows)
        rho = rho_of(w, bucket)
        if path == "static":
            align = self.config.prompt_align
            width = align * math.ceil(longest_prompt / align)
            return BatchPlan(path, rows, bucket, rho, waste, bucket, width)
        plan = BatchPlan(path, rows, bucket, rho, waste, max(w), longest_prompt)
        if path == "varlen":
            lengths = [prompt_lens[r] + windows[r] for r in rows]
            plan.offsets, plan.packs, plan.packed_len = pack(lengths, self.config.pack_capacity)
        return plan


def merge(
    groups: list[list[int]], joins: Callable[[list[int], list[int]], bool]
) -> list[list[int]]:
    """Coarse groups (in bucket order) merged walking upward: a group merges into the one
    before it while `joins(before, group)` holds (the computed waste within tau_pad, or one
    forward of both predicted no slower than two), so one forward replaces two."""
    out: list[list[int]] = []
    for g in groups:
        if out and joins(out[-1], g):
            out[-1] = out[-1] + g
        else:
            out.append(g)
    return out


def rho_of(windows: list[int], bucket: int) -> float:
    """The padding-waste ratio of a group padded to `bucket`."""
    return 1.0 - sum(windows) / (len(windows) * bucket)
