"""`Engine`: step-level serving of a `DiffusionLM` — continuous batching with Seer at admission.

Every `step()` is one tick, schedule -> execute -> update (vLLM v1's engine core shape):

1. schedule: the scheduler picks this tick's rows (`scheduler.py`): running rows (their window
   known since their step 0) and waiting requests, in policy order (`fcfs` or `shortest_first`),
   within the token budget and `max_batch`;
2. execute: the admitted arrivals run their step 0 over the full window, where Seer detects
   and cuts each row's window: in the running rows' forwards when that step 0 is an ordinary
   forward, else batched per kind in a forward of its own; the running rows are routed by
   window bucket and padding waste (static / varlen / eager) and each group takes one step in
   one forward, whatever step each row is at (`runner.py`);
3. update: rows whose answer is complete leave at once and their results are returned this tick;
   blocks that became final are reported to their request's `on_block`, and each step's canvas
   to its `on_step` (read back only for the states of rows that ask for it).

Rows share a forward when they agree on its layout (`SamplingParams.layout_key`: the KV cache,
classifier-free guidance, a suffix): mixed traffic batches as uniform traffic does, each row
with its own temperature, top-p/top-k, seed (a generator of its own), threshold, stop
sequences, window cap (`gen_length`) and window policy. An arrival whose step 0 is an
ordinary forward takes it in the running rows' forward, whatever its cap: one with no window
policy, or with Seer deciding its window from the logits after that forward (no probe hooked
into it, `Window.any_cap`), whose policy then cuts its rows alone, each over its own cap's
columns (`state.RowCuts`). Other arrivals share a step 0 of their own when their window
policy agrees, and their gen_length unless the policy cuts each row over its own cap
(`runner.CapWindows`). `EngineConfig.grouping="params"` groups by every option instead (the
engine before mixed batching), `"apart"` gives every kind of arrival (layout, gen_length,
window policy) a step-0 forward of its own, and `"policy-apart"` every arrival with a window
policy (any caps together); all three are kept for comparisons.

A request is resolved once, at the front end's boundary (`seer.engine.request.resolve`: the
model's defaults, Seer's settings fitted, the rules between options), and the engine takes only
resolved requests: `add` refuses one that is not, in one line. `submit` (one request) and
`generate` (a list) are the conveniences for requests as built: they resolve those that are
not, once, then add them. `add` encodes and checks the prompt (`seer.engine.prompts`) and
makes the window policy a typed `Window`. Its state (waiting -> running -> done) lives in the
scheduler, which the engine moves only through `add`, `started`, `finish` and `abort` (vLLM v1's
contract). The engine reads a run through `LoopState`'s accessors (`masks_left`, `revealed`,
`held_bytes`) and the model through `EngineModel` (`model.py`), never their internals.

A row's reveal does not depend on what runs beside it (temperature 0): layouts only add padding
that attention never sees, every row keeps its own plan, stop position and cache columns, and
ties between confidences go to the earlier position. A batched forward sums in another order
than a solo one, so its logits may differ in the last bits; `EngineConfig.batch_invariant`
runs each row alone, bit for bit its solo run.
The engine is single-threaded: one thread calls `add`, `abort` and `step`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable
from dataclasses import dataclass, field

import torch

from seer.diffusion.state import LoopState, WindowPolicy
from seer.engine.config import EngineConfig
from seer.engine.model import EngineModel
from seer.engine.pricing import AUTO, OFF, served_shape
from seer.engine.prompts import prompt_inputs
from seer.engine.request import PartialResult, Request, RequestResult, StepView, resolve
from seer.engine.runner import Runner
from seer.engine.scheduler import BatchPlan, Scheduler, SchedulerOutput
from seer.engine.sequence import Sequence, Window, WindowKind
from seer.errors import SeerError
from seer.kernels.dispatch import use_backend
from seer.roofline.hardware import GPU, GPUS, profile_of
from seer.roofline.shapes import ModelShape

log = logging.getLogger("seer.engine")


def device_gpu(device: torch.device) -> GPU | None:
    """merge_on="auto"'s GPU profile for `device`: the one its CUDA name names
    (`seer.roofline.hardware.profile_of`); None (auto off) on CPU or MPS, and on a GPU the
    simulator does not know, said in one log line."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    if (key := profile_of(name)) is None:
        log.warning(
            f"merge_on auto: off: the simulator has no profile for {name!r}; price forwards "
            f"as a known GPU with --merge-on {'|'.join(GPUS)} (EngineConfig(merge_on=...)), "
            "or set none to silence this"
        )
        return None
    log.info(f"merge_on auto: forwards priced as {key} ({name}), as the served model")
    return GPUS[key]


class QueueFull(SeerError):
    """`Engine.add` refused a request: `max_queue` requests are already waiting."""


UNRESOLVED = (
    "resolve the request first: seer.engine.request.resolve(lm, request) "
    "(Engine.submit(request) resolves and adds it)"
)


@dataclass(slots=True)
class EngineStats:
    """Where the engine's time went and how rows were routed (over the engine's life)."""

    total: float = 0.0  # seconds inside submit(), add(), step() and generate()
    detect: float = 0.0  # window policy: probe reduction, detector, cut, guard
    route: float = 0.0  # scheduling, reading windows back and planning the groups
    compact: float = 0.0  # laying rows out (gathering states, packing)
    ticks: int = 0  # step() calls
    peak_bytes: int = 0  # most bytes the running rows' canvases and KV caches held at once
    rows: dict[str, int] = field(default_factory=dict)  # requests per path, as routed after step 0
    plans: list[BatchPlan] = field(default_factory=list)  # each step-0 batch's routing (a
    # joining arrival's: the plan of the forward it took its step 0 in)

    @property
    def model(self) -> float:
        """Everything else: model forwards and token selection (step 0 included)."""
        return max(0.0, self.total - self.detect - self.route - self.compact)


class Engine:
    """Serve many requests on one `DiffusionLM` (see the module docstring)."""

    def __init__(self, lm: EngineModel, config: EngineConfig | None = None) -> None:
        self.lm = lm
        self.config = config or EngineConfig()
        self.scheduler = Scheduler(self.config, *self._pricing())
        self.runner = Runner(lm, self.config, self.scheduler)
        self.stats = EngineStats()
        self._ready: list[RequestResult] = []  # results to hand out at the next step()
        self._next_id = 0
        self._tick = 0
        self._kinds: dict[tuple[Hashable, ...], int] = {}  # grouping key -> kind number

    def _pricing(self) -> tuple[ModelShape | None, GPU | None]:
        """What `merge_on` prices forwards as: the served model's shape (where the value names
        no model) and, for "auto", the GPU this engine runs on (None: auto is off)."""
        spec = (self.config.merge_on or "none").lower()
        if spec in OFF or ":" in spec:
            return None, None
        name = self.lm.name or "the served model"
        if spec != AUTO:
            return served_shape(self.lm.model.config, name), None
        if (hw := device_gpu(self.lm.device)) is None:
            return None, None
        dtype = next((p.dtype for p in self.lm.model.parameters() if p.is_floating_point()), None)
        if dtype not in (torch.bfloat16, torch.float16):  # the roofline prices 16-bit forwards
            log.warning(
                f"merge_on auto: off (the served weights are {dtype}; the roofline prices "
                "16-bit forwards: load the model with dtype bfloat16 to merge by cost)"
            )
            return None, None
        try:
            return served_shape(self.lm.model.config, name), hw
        except SeerError as e:  # auto never refuses a model: it is off for this one
            log.warning(f"merge_on auto: off ({e})")
            return None, None

    @property
    def waiting(self) -> list[Sequence]:
        """Requests added whose step 0 has not run (the scheduler's)."""
        return self.scheduler.waiting

    @property
    def running(self) -> list[Sequence]:
        """Requests past step 0 whose answer is not complete (the scheduler's)."""
        return self.scheduler.running

    # -- the public calls ---------------------------------------------------------------------
    def add(self, request: Request) -> int:
        """Queue a resolved request (`seer.engine.request.resolve`); returns its id. Raises
        `SeerError` (one line) for a request not resolved or that cannot be served, and
        `QueueFull` when `max_queue` requests wait."""
        return self._queue(self._sequence(request, None))

    def submit(self, request: Request) -> int:
        """`add` a request as built: resolved here (`resolve`: the model's defaults, Seer's
        settings fitted, the rules between options), once, then queued; returns its id."""
        if not request.resolved:
            t0 = time.perf_counter()
            request = resolve(self.lm, request)
            self.stats.total += time.perf_counter() - t0
        return self.add(request)

    def abort(self, request_id: int) -> bool:
        """Stop a request; its result (finish_reason "abort") comes with the next `step()`.
        False if it is unknown or already finished."""
        q = self.scheduler.abort(request_id)
        if q is not None:
            self._ready.append(self._result(q, time.perf_counter(), "abort"))
        return q is not None

    def in_flight_done(self) -> float:
        """How many requests' worth of the running rows is done: the sum over running rows of
        the share of their window already revealed (for an estimate of the time left)."""
        if not self.running:
            return 0.0
        left = self._masks_left()
        return sum(min(1.0, max(0.0, 1 - left[q] / max(1, q.window))) for q in self.running)

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished() or bool(self._ready)

    def step(self) -> list[RequestResult]:
        """One tick; returns the requests that finished in it (and any aborted since)."""
        t0 = time.perf_counter()
        out, self._ready = self._ready, []
        masks = self._masks_left() if self.config.policy == "shortest_first" else {}
        sched = self.scheduler.schedule(self._tick, masks)
        with use_backend(self.config.kernel), torch.inference_mode():
            touched = self._execute(sched)
        for q in sched.prefill + sched.decode:
            q.last_run = self._tick
        held = sum(s.held_bytes() for s in {id(s): s for s, _ in touched}.values())
        out += self._update(touched)
        self.stats.peak_bytes = max(self.stats.peak_bytes, held)
        self._tick += 1
        self.stats.ticks += 1
        self.stats.total += time.perf_counter() - t0
        return out

    def generate(
        self, requests: list[Request], policy: WindowPolicy | None = None
    ) -> list[RequestResult]:
        """Answer every request (running the engine until they are done); results in request
        order. Results of other requests that finish meanwhile wait for the next `step()`.
        A request not yet resolved is resolved here, once (as `submit` does).
        `policy`: one `WindowPolicy` object for the whole list, whose rows then share one
        step 0 (`DiffusionLM.generate(policy=...)`); they must fit in `max_batch`."""
        t0, total = time.perf_counter(), self.stats.total
        if policy is not None and len(requests) + len(self.running) > self.config.max_batch:
            raise SeerError("requests sharing a window policy must fit in max_batch together")
        requests = [
            r if r.resolved else resolve(self.lm, r, policy=policy is not None) for r in requests
        ]
        seqs = [self._sequence(r, policy) for r in requests]  # all checked before any is queued
        ids = [self._queue(q) for q in seqs]
        mine, got = set(ids), dict[int, RequestResult]()
        while len(got) < len(ids):
            for res in self.step():
                if res.request_id in mine:
                    got[res.request_id] = res
                else:
                    self._ready.append(res)
        self.stats.total = total + time.perf_counter() - t0  # the calls and the gaps between
        return [got[i] for i in ids]

    # -- add: a resolved request made a `Sequence`, then queued ------------------------------
    def _sequence(self, req: Request, policy: WindowPolicy | None) -> Sequence:
        """Resolved `req` made a `Sequence`: its prompt encoded and checked against the model,
        its window policy made a `Window`. A request not resolved, or that cannot be served, is
        one `SeerError` line."""
        if not req.resolved or req.params is None:
            raise SeerError(UNRESOLVED)
        t0, lm = time.perf_counter(), self.lm
        p = req.params
        assert p is not None  # resolved
        inputs = prompt_inputs(lm, req.prompt, p, req.image, req.chat)
        if len(inputs) != 1:
            raise SeerError("a Request holds one prompt (text or one id list), not a batch")
        window = self._window(req, policy)
        q = Sequence(-1, req, p, inputs[0], window, time.perf_counter(), self._tick)
        self.stats.total += time.perf_counter() - t0
        return q

    def _queue(self, q: Sequence) -> int:
        """Queue a resolved request; returns its id (`QueueFull` when `max_queue` wait)."""
        if self.config.max_queue is not None and len(self.waiting) >= self.config.max_queue:
            raise QueueFull(f"the engine's queue is full ({self.config.max_queue} waiting); retry")
        t0 = time.perf_counter()
        p, window = q.params, q.policy.key  # hashed once per request
        layout: tuple[Hashable, ...]
        step0: tuple[Hashable, ...]
        if self.config.grouping == "params":  # every option and the window policy alike
            layout = step0 = (p, window)
        else:  # the forward's layout alike; step 0 also the window policy and gen_length
            layout = ("layout", p.layout_key)
            any_cap = self.config.grouping != "apart" and q.policy.any_cap
            step0 = (layout, None if any_cap else p.gen_length, window)
        q.kind = self._kinds.setdefault(step0, len(self._kinds))
        q.layout = self._kinds.setdefault(layout, len(self._kinds))
        q.id, q.arrival, q.tick = self._next_id, t0, self._tick
        self._next_id += 1
        self.scheduler.add(q)
        self.stats.total += time.perf_counter() - t0
        return q.id

    @staticmethod
    def _window(req: Request, policy: WindowPolicy | None) -> Window:
        """The resolved request's window policy (its rules were checked by `resolve`)."""
        if policy is not None:
            return Window(WindowKind.CUSTOM, policy)
        if req.window is not None:
            assert req.params is not None  # resolved
            return Window(WindowKind.FIXED, min(req.window, req.params.gen_length))
        if req.seer is not None:
            return Window(WindowKind.SEER, req.seer)  # a SeerConfig fitted to the model
        return Window(WindowKind.FULL)

    # -- execute ------------------------------------------------------------------------------
    def _execute(self, sched: SchedulerOutput) -> list[tuple[LoopState, list[Sequence]]]:
        tr = time.perf_counter()
        joined, apart = self._arrivals(sched.prefill)
        cuts: dict[int, tuple[LoopState, list[Sequence]]] = {}  # joining runs with a policy
        for q in joined:
            if q.state is not None and q.state.policy is not None:
                cuts.setdefault(id(q.state), (q.state, []))[1].append(q)
        groups = self.runner.groups(sched.decode + joined)
        self.stats.route += time.perf_counter() - tr
        touched: list[tuple[LoopState, list[Sequence]]] = []
        compact0 = self.runner.compact_seconds
        for plan, seqs in groups:
            state = seqs[0].state
            assert state is not None  # running rows (past step 0) hold a state
            before = state.policy_seconds
            arrived = sum(q.path == "" for q in seqs)  # joining arrivals, at their step 0
            s, new = self.runner.run(plan, seqs)
            self.stats.detect += s.policy_seconds - (0.0 if new else before)
            touched.append((s, seqs))
            if arrived:  # the path they took
                self.stats.plans.append(plan)
                self.stats.rows[plan.path] = self.stats.rows.get(plan.path, 0) + arrived
        for s0, seqs in cuts.values():  # their window policy's reports (cut in that forward)
            self.runner.boundaries(seqs, s0, s0.policy_seconds)
        for seqs, began in apart:
            s = self.runner.prefill(seqs, began)
            self.stats.detect += s.policy_seconds
            tr = time.perf_counter()
            for plan, rows in self.runner.groups(seqs):  # the path each arrival is routed to
                self.stats.plans.append(plan)
                self.stats.rows[plan.path] = self.stats.rows.get(plan.path, 0) + len(rows)
                for q in rows:
                    q.path = plan.path
            self.stats.route += time.perf_counter() - tr
            self.scheduler.started(seqs)
            touched.append((s, seqs))
        self.stats.compact += self.runner.compact_seconds - compact0
        return touched

    def _arrivals(
        self, prefill: list[Sequence]
    ) -> tuple[list[Sequence], list[tuple[list[Sequence], LoopState | None]]]:
        """This tick's arrivals: those that join the running rows, whatever their window cap
        (their step 0 an ordinary forward, `Runner.joins`: no window policy, or one that cuts
        from the logits after it and hooks nothing into it, `Window.any_cap`; begun here, per
        window cap, they run it in this tick's forwards beside the running rows, and their
        policy cuts their rows alone, `state.RowCuts`), and per kind the others, whose step 0
        is a forward of its own (with the run already begun, if it was)."""
        joined: list[Sequence] = []
        apart: list[tuple[list[Sequence], LoopState | None]] = []
        cfg = self.config
        join = cfg.grouping in ("layout", "policy-apart") and not cfg.batch_invariant
        for seqs in _by_kind(prefill, cfg.batch_invariant):
            s, w = None, seqs[0].policy
            policy = cfg.grouping == "layout" and w.any_cap
            if join and (w.kind is WindowKind.FULL or policy):
                caps = sorted({q.params.gen_length for q in seqs}) if policy else []
                parts = [[q for q in seqs if q.params.gen_length == g] for g in caps]
                runs = [self.runner.begin(part) for part in (parts if len(parts) > 1 else [seqs])]
                if all(self.runner.joins(r) for r in runs):  # one run per cap, if a policy cuts
                    self.scheduler.started(seqs)
                    joined += seqs
                    continue
                s = runs[0] if len(runs) == 1 else None  # else the step 0 begins them together
            apart.append((seqs, s))
        return joined, apart

    def _masks_left(self) -> dict[Sequence, int]:
        """Masks left in each running row's window (shortest_first's remaining work)."""
        left: dict[int, list[int]] = {}
        for q in self.running:
            if id(q.state) not in left:
                assert q.state is not None  # running rows (past step 0) hold a state
                left[id(q.state)] = q.state.masks_left(self.lm.tokens.mask)
        return {q: left[id(q.state)][q.row] for q in self.running}

    # -- update -------------------------------------------------------------------------------
    def _update(self, touched: list[tuple[LoopState, list[Sequence]]]) -> list[RequestResult]:
        out: list[RequestResult] = []
        done: list[Sequence] = []
        now = time.perf_counter()
        for s, seqs in touched:
            assert s.finished is not None  # set by the state's first step
            finished, windows = s.finished.tolist(), s.canvas.window.tolist()
            for q in seqs:
                q._window = windows[q.row]
            watch = any(q.needs_blocks() for q in seqs)
            revealed = s.revealed(self.lm.tokens.mask) if watch else None
            if any(q.request.on_step is not None for q in seqs):
                self._views(s, seqs, finished)
            for q in seqs:
                if revealed is not None or finished[q.row]:
                    self._partials(q, revealed[q.row] if revealed else 0, finished[q.row], now)
                if finished[q.row]:
                    done.append(q)
                    out.append(self._result(q, now))
        self.scheduler.finish(done)
        return out

    def _views(self, s: LoopState, seqs: list[Sequence], finished: list[bool]) -> None:
        """Each watching row's canvas after this step, to its request's `on_step`."""
        canvas, nfe = self.runner.loop.answers(s).tolist(), s.row_nfe.tolist()
        for q in seqs:
            if q.request.on_step is not None:
                ids = canvas[q.row][: q.params.gen_length]
                view = StepView(
                    q.id,
                    nfe[q.row],
                    ids,
                    q.window,
                    q.params.gen_length,
                    q.boundary,
                    finished[q.row],
                )
                q.request.on_step(view)

    def _partials(self, q: Sequence, revealed: int, finished: bool, now: float) -> None:
        p = q.params
        total = -(-q.window // p.block)  # blocks over the window
        blocks = total if finished else revealed // p.block
        if blocks <= q.blocks:
            return
        if q.first_block is None:
            q.first_block = now
        if q.request.on_block is not None:
            ids = self._answer(q)[: min(blocks * p.block, q.window)]
            n = self.lm.tokens.answer_length(ids)
            text = self.lm.decode(ids[:n])
            q.request.on_block(PartialResult(q.id, text, ids[:n], blocks - 1, finished))
        q.blocks = blocks

    def _answer(self, q: Sequence) -> list[int]:
        if q.state is None:
            return []
        return self.runner.loop.answers(q.state)[q.row, : q.params.gen_length].tolist()

    def _result(self, q: Sequence, now: float, reason: str | None = None) -> RequestResult:
        s, ids = q.state, self._answer(q)
        if reason == "abort" and self.lm.tokens.mask in ids:  # the answer so far
            ids = ids[: ids.index(self.lm.tokens.mask)]
        n = self.lm.tokens.answer_length(ids)
        if reason is None:
            stopped = s is not None and s.stop is not None and int(s.stop.at[q.row]) >= 0
            reason = "stop" if stopped or n < q.window else "length"
        first = q.first_block if q.first_block is not None else now
        boundary = q.boundary
        return RequestResult(
            request_id=q.id,
            text=self.lm.decode(ids[:n]),
            token_ids=ids,
            tokens=n,
            prompt_tokens=q.prompt_len,
            window=q.window,
            detected=None if boundary is None else boundary.length,
            nfe=0 if s is None else int(s.row_nfe[q.row]),
            latency=now - q.arrival,
            first_block_latency=first - q.arrival,
            finish_reason=reason,
            path=q.path,
            grown=0 if s is None else int(s.grown[q.row]),
            boundary=boundary,
            seconds=now - q.started if q.started else 0.0,
            gen_length=q.params.gen_length,
            detect_seconds=q.detect_seconds,
        )


def _by_kind(seqs: list[Sequence], alone: bool = False) -> list[list[Sequence]]:
    """Arrivals of one kind (same layout and window policy, and gen_length unless the policy
    cuts each row over its own, `Window.any_cap`) share their step 0.
    `alone`: each arrival has its own, but the rows of a caller's policy object (one
    `generate(policy=...)` call) still share theirs: the policy holds all of them."""
    kinds: dict[tuple[int, int], list[Sequence]] = {}
    for q in seqs:
        own = alone and q.policy.kind is not WindowKind.CUSTOM
        kinds.setdefault((q.kind, q.id if own else -1), []).append(q)
    return list(kinds.values())


__all__ = ["Engine", "EngineStats", "QueueFull"]
