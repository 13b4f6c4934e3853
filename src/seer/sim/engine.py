"""`SimEngine`: the engine's scheduler and router on a virtual clock priced by a GPU roofline.

What is real and what is simulated:
- real: `seer.engine.scheduler.Scheduler` unchanged — admission each tick (`schedule`: fcfs or
  shortest_first within `max_batch` and the token budget) and routing (`plan`: window buckets,
  the padding-waste ratio, static / varlen / eager, or `routing="naive"`), on real `Sequence`
  objects with the request's real `SamplingParams`; `EngineConfig.merge_on="auto"` (the
  default) merges bucket groups as the engine would on the simulated GPU, priced as the
  simulated model (the engine finds its GPU from the device; here it is `hw`);
- simulated: the executor. Instead of `Runner` running the model, each tick prices the forwards
  the scheduler planned — step 0 of the arrivals over the full window, then one forward per
  planned group — by `seer.roofline.cost` on a model's shape and a GPU's datasheet peaks, and
  advances a virtual clock by their sum (one GPU, forwards one after another). The first
  forward of a static shape pays a CUDA-graph capture (the graph cache's two warm-ups and the
  capture, priced as three eager forwards), as the engine's `GraphCache` does; a second `run`
  of the same `SimEngine` replays the graphs the first one captured (a warmed-up engine).
- the decoding policies enter through their effect on each request — its window after step 0
  and its number of forwards (`seer.sim.trace.plan`: measured in a real run, or the policies'
  rules) — not by running them: no tokens are computed, so answers and accuracy are out of scope.

Caches (`Decoding.cache`) change what a forward after step 0 computes: `prefix_lm` (LaViDa)
runs only the window over the cached prompt; Fast-dLLM's `prefix` runs one full forward per
block, then the block and what follows it; `dual` the full forward, then the block alone. A
row's block is taken from its progress (forwards taken / forwards in all), and rows of one
forward share the widest row's columns (one cache span per layout). Caches never pack (varlen).

Not modelled: memory capacity (a batch that would not fit is still priced), the host's work
between forwards (detection, routing and compaction: under 5 % of the time in the paper's
Table 11), and multi-GPU serving (simulate one GPU's share of the requests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

from seer.diffusion.cache import make_cache
from seer.diffusion.state import LoopState
from seer.engine.config import EngineConfig
from seer.engine.request import Request
from seer.engine.scheduler import BatchPlan, Scheduler
from seer.engine.sequence import Sequence, Window, WindowKind
from seer.models.multimodal import PromptInput
from seer.roofline import cost
from seer.roofline.hardware import GPU, Efficiency
from seer.roofline.shapes import ModelShape
from seer.sampling import SamplingParams
from seer.sim.trace import Decoding, SimRequest, plan

RUNNING = cast(LoopState, object())  # a simulated row holds no LoopState; this marks it running


@dataclass(slots=True)
class SimResult:
    """One simulated run (predicted, never measured)."""

    seconds: float  # virtual time from the first arrival to the last answer
    answer_tokens: int  # valid answer tokens over every request
    latencies: list[float]  # per request: answer time - its step 0's start (seconds, no queue)
    waits: list[float] = field(default_factory=list)  # per request: step 0's start - arrival
    forwards: int = 0  # forwards priced (step 0 included)
    rows: int = 0  # rows over every forward after step 0 (rows / decode_forwards: per forward)
    decode_forwards: int = 0  # forwards after step 0
    computed: float = 0.0  # positions computed over every forward (padding included)
    paths: dict[str, int] = field(default_factory=dict)  # forwards per path
    captures: int = 0  # CUDA-graph captures (static shapes seen for the first time)

    @property
    def throughput(self) -> float:
        """Answer tokens per second (the paper's tokens/s)."""
        return self.answer_tokens / self.seconds if self.seconds > 0 else 0.0

    def latency(self, q: float) -> float:
        """The q-quantile of the latencies (nearest rank)."""
        xs = sorted(self.latencies)
        return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))] if xs else 0.0

    @property
    def rows_per_forward(self) -> float:
        return self.rows / self.decode_forwards if self.decode_forwards else 0.0


@dataclass(slots=True)
class _Row:
    request: SimRequest
    seq: Sequence
    window: int  # after step 0
    nfe: int  # forwards in all, step 0 included
    done: int = 0  # forwards taken
    started: float = 0.0  # virtual time its step 0 began


class SimEngine:
    """Serve a trace on a simulated GPU (see the module docstring)."""

    def __init__(
        self, shape: ModelShape, hw: GPU, eff: Efficiency, config: EngineConfig, decoding: Decoding
    ) -> None:
        self.shape, self.hw, self.eff, self.config, self.d = shape, hw, eff, config, decoding
        self.graphs = config.cuda_graphs  # static forwards replay CUDA graphs (else: launched)
        # routing's forward work: a KV cache that reads the prompt does not recompute it
        self.no_pack, self.reuses_prompt = (
            decoding.cache != "none",
            make_cache(decoding.cache).reuses_prompt,
        )
        # every priced forward as (flops, bytes, start seconds), when a caller wants to re-price
        # a run at other efficiencies (the schedule does not depend on the clock without arrivals)
        self.ledger: list[tuple[float, float, float]] | None = None
        # static shapes captured so far: kept across runs, as the engine's GraphCache keeps its
        # graphs across `generate` calls (a second run is a warm one)
        self.captured: set[tuple[int, int, int]] = set()
        self.params = SamplingParams(
            gen_length=decoding.gen_length, steps=decoding.gen_length // decoding.tokens_per_step
        )

    def run(self, requests: list[SimRequest], method: str) -> SimResult:
        """Every request of `requests` answered by `method`; the clock starts at 0."""
        # merge_on prices as the simulated model ("auto": on the simulated GPU)
        sched = Scheduler(self.config, self.shape, self.hw)
        pending = sorted(requests, key=lambda r: r.arrival)[::-1]  # pop() takes the earliest
        rows: dict[int, _Row] = {}
        res = SimResult(0.0, 0, [])
        captured = self.captured
        clock, tick, next_id = 0.0, 0, 0
        while pending or sched.has_unfinished():
            while pending and pending[-1].arrival <= clock:
                r = pending.pop()
                q = self._sequence(r, next_id, tick)
                w, n = plan(r, method, self.d)
                rows[next_id] = _Row(r, q, w, n)
                sched.add(q)
                next_id += 1
            if not sched.has_unfinished():
                clock = pending[-1].arrival  # idle until the next arrival
                continue
            masks = (
                {q: self._masks_left(rows[q.id]) for q in sched.running}
                if self.config.policy == "shortest_first"
                else {}
            )
            out = sched.schedule(tick, masks)
            spent = 0.0
            finished: list[Sequence] = []
            if out.decode:
                spent += self._decode(sched, [rows[q.id] for q in out.decode], res, captured)
            if out.prefill:
                for q in out.prefill:
                    rows[q.id].started = clock + spent
                    res.waits.append(clock + spent - rows[q.id].request.arrival)
                spent += self._prefill([rows[q.id] for q in out.prefill], res)
                sched.started(out.prefill)
            for q in out.prefill + out.decode:
                q.last_run = tick
            clock += spent
            for q in out.prefill + out.decode:
                row = rows[q.id]
                if row.done >= row.nfe:
                    finished.append(q)
                    res.latencies.append(clock - row.started)
                    res.answer_tokens += min(row.request.answer, self.d.gen_length)
            sched.finish(finished)
            tick += 1
        res.seconds = clock - min((r.arrival for r in requests), default=0.0)
        return res

    def _sequence(self, r: SimRequest, i: int, tick: int) -> Sequence:
        p = r.prompt + (self.shape.image_tokens if r.image else 0)
        prompt = PromptInput([0] * p)  # positions only: no token is ever computed
        return Sequence(
            i,
            Request(prompt.ids, params=self.params),
            self.params,
            prompt,
            Window(WindowKind.FULL),
            0.0,
            tick,
        )

    def _masks_left(self, row: _Row) -> int:
        """shortest_first's remaining work: the window's share not yet decoded."""
        return math.ceil(row.window * (1 - row.done / row.nfe))

    def _prefill(self, rows: list[_Row], res: SimResult) -> float:
        """Step 0 of the arrivals: one forward over prompts (left-padded to the longest) and
        the full window; the vision tower once per image."""
        g, shape = self.d.gen_length, self.shape
        width = max(r.seq.prompt_len for r in rows) + g
        w = cost.Work()
        for _ in rows:
            w.add(width, width, width if self.d.full_logits else g)
        t = self._price(w, "eager")
        images = sum(r.request.image for r in rows)
        if images and shape.vision_flops:
            t += self._price(None, "vision", images * shape.vision_flops)
        for r in rows:
            r.done = 1
            r.seq.state, r.seq._window = RUNNING, r.window
        res.forwards += 1
        res.computed += w.tokens
        return t

    def _decode(
        self,
        sched: Scheduler,
        rows: list[_Row],
        res: SimResult,
        captured: set[tuple[int, int, int]],
    ) -> float:
        """One step of the running rows: the scheduler's plans, one forward each."""
        windows = [r.window for r in rows]
        plens = [r.seq.prompt_len for r in rows]
        spent = 0.0
        for p in sched.plan(windows, plens, self.d.gen_length, self.no_pack, self.reuses_prompt):
            group = [rows[i] for i in p.rows]
            w = self._work(p, group)
            path = p.path if self.graphs or p.path != "static" else "eager"
            t = self._price(w, path)
            if path == "static":
                key = (len(group), p.prompt_width, p.width)
                if key not in captured:  # GraphCache: two warm-ups and the capture
                    captured.add(key)
                    t += 3 * self._price(w, "eager")
                    res.captures += 1
            spent += t
            for r in group:
                r.done += 1
            res.forwards += 1
            res.decode_forwards += 1
            res.rows += len(group)
            res.computed += w.tokens
            res.paths[p.path] = res.paths.get(p.path, 0) + 1
        return spent

    def _price(self, w: cost.Work | None, path: str, flops: float = 0.0) -> float:
        """Seconds of one forward (`w` by `path`), or of `flops` of pure compute (the vision
        tower); kept in the ledger when there is one."""
        if w is None:
            f, b, start = flops, 0.0, 0.0
        else:
            f, b = cost.flops(self.shape, w), cost.nbytes(self.shape, w)
            start = cost.start(self.shape, self.hw, path)
        if self.ledger is not None:
            self.ledger.append((f, b, start))
        return cost.roof(self.hw, self.eff, f, b) + start

    def _work(self, p: BatchPlan, group: list[_Row]) -> cost.Work:
        """What the plan's forward computes: static and eager rows at the layout's width
        (padding included), varlen packs of `packed_len` slots with a dense block mask."""
        w = cost.Work()
        if p.path == "varlen":
            for _ in range(p.packs):
                w.add(p.packed_len, p.packed_len, 0)
            w.logits = sum(r.window for r in group)
            return w
        kv = p.prompt_width + p.width
        q = max(self._columns(r, p.prompt_width, p.width) for r in group)
        n = len(group)  # every row of the layout computes the same columns
        head = q if self.d.full_logits else min(q, p.width)
        return cost.Work(n * q, n * q * kv, n * head, n * kv)

    def _columns(self, row: _Row, prompt: int, width: int) -> int:
        """Positions `row`'s next forward computes in a layout of `prompt` + `width` columns."""
        c = self.d.cache
        if c == "none":
            return prompt + width
        if c == "prefix_lm":
            return width
        b = min(self.d.block, width)
        nb = math.ceil(width / b)
        j = min(nb - 1, row.done * nb // row.nfe)  # the block the row is in
        if (row.done * nb) % row.nfe < nb:  # the block's first forward: the whole canvas
            return prompt + width
        return width - j * b if c == "prefix" else b
