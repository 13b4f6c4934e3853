"""`Engine`: batched generation with Seer truncation and padding-waste-aware routing.

One tick (`_tick`) serves one batch of compatible requests (same `SamplingParams` and window
policy, up to `max_batch` rows) in three phases, schedule -> execute -> update:

1. step 0 runs batched over the full window with the one loop (`DenoisingLoop.begin/step`); the
   window policy (Seer's detector, or a fixed oracle window) gives each row its window and its
   `BoundaryReport`;
2. the scheduler reads the windows back once and splits the rows into `BatchPlan`s (static /
   varlen / eager, see `scheduler.py`); the runner compacts each group into its layout and
   finishes it with the same loop (`DenoisingLoop.finish`), guard growth included;
3. the rows' answers are written back in request order.

Every row's answer equals its answer when run alone (temperature 0): the layouts only add
padding that attention never sees, or pack segments that cannot see each other. Requests are not
admitted between denoising steps (no continuous batching): a tick runs its batch to the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from seer.boundary.truncation import FixedWindowPolicy, SeerPolicy, resolve
from seer.config import LLADA_RULES, SamplingParams
from seer.diffusion.loop import make_canvas
from seer.engine.config import EngineConfig
from seer.engine.graphs import GraphCache, GraphedLoop
from seer.engine.request import Request, RequestResult
from seer.engine.runner import Runner
from seer.engine.scheduler import BatchPlan, Scheduler
from seer.errors import SeerError
from seer.kernels.dispatch import use_backend


@dataclass(slots=True)
class EngineStats:
    """Where the engine's time went and how rows were routed (summed over `generate` calls)."""

    total: float = 0.0  # seconds inside generate()
    detect: float = 0.0  # boundary detection: probe reduction, detector, cut
    route: float = 0.0  # reading the windows back and planning the groups
    compact: float = 0.0  # building the path layouts (compaction kernel, packing masks)
    rows: dict[str, int] = field(default_factory=dict)  # rows per path
    plans: list[BatchPlan] = field(default_factory=list)  # every group's plan, in order

    @property
    def model(self) -> float:
        """Everything else: model forwards and token selection (step 0 included)."""
        return max(0.0, self.total - self.detect - self.route - self.compact)


@dataclass(slots=True)
class _Row:
    """A request admitted into the engine."""

    index: int  # position in the request list
    ids: list[int]  # prompt token ids
    params: SamplingParams  # sampling, with the model's defaults filled in
    policy: tuple  # ("none",) | ("seer", SeerConfig) | ("fixed",)
    window: int | None  # fixed window (oracle)
    embeds: torch.Tensor | None = None  # (len(ids), D) prompt embeddings (image spliced in)


class Engine:
    """Serve many requests on one `DiffusionLM` (see the module docstring)."""

    def __init__(self, lm, config: EngineConfig | None = None) -> None:
        self.lm = lm
        self.config = config or EngineConfig()
        self.scheduler = Scheduler(self.config)
        model, tokens = lm.model, lm.tokens
        self.loop = lm.loop
        static = self.loop
        if self.config.cuda_graphs and lm.device.type == "cuda":
            static = GraphedLoop(model, tokens, GraphCache(model))
        self.runner = Runner(model, tokens, static, self.config.pack_capacity)
        self.stats = EngineStats()

    # -- the public call ------------------------------------------------------------------------
    def generate(self, requests: list[Request]) -> list[RequestResult]:
        """Answer every request; results come back in request order."""
        t0 = time.perf_counter()
        compact0 = self.runner.compact_seconds
        waiting = [self._admit(i, r) for i, r in enumerate(requests)]
        results: list[RequestResult | None] = [None] * len(requests)
        with use_backend(self.config.kernel), torch.inference_mode():
            while waiting:
                batch, waiting = self._schedule(waiting)
                for res in self._tick(batch, t0):
                    results[res.index] = res
        self.stats.compact += self.runner.compact_seconds - compact0
        self.stats.total += time.perf_counter() - t0
        assert all(r is not None for r in results), "a request was lost"
        return results  # type: ignore[return-value]

    # -- schedule -------------------------------------------------------------------------------
    def _admit(self, index: int, req: Request) -> _Row:
        lm = self.lm
        p = req.params.with_defaults(lm.default_rule)
        if p.cfg_scale > 0 and p.remasking not in LLADA_RULES:
            raise SeerError("cfg_scale is only defined for LLaDA's remasking rules")
        if p.suffix or p.stop:  # per-row early finish / fixed tail columns: not in the layouts
            raise SeerError("the engine takes no stop words or suffix; use DiffusionLM.generate")
        inputs = lm.prompt_inputs(req.prompt, p, req.image, req.chat)
        if len(inputs) != 1:
            raise SeerError("a Request holds one prompt (text or one id list), not a batch")
        ids, embeds = inputs[0].ids, inputs[0].embeds
        if req.window is not None:
            if req.seer:
                raise SeerError("give a request either a fixed window or a Seer config")
            return _Row(index, ids, p, ("fixed",), min(req.window, p.gen_length), embeds)
        policy = ("seer", resolve(lm, req.seer)) if req.seer else ("none",)
        return _Row(index, ids, p, policy, None, embeds)

    def _schedule(self, waiting: list[_Row]) -> tuple[list[_Row], list[_Row]]:
        """The next batch: the oldest request and up to max_batch - 1 compatible ones."""
        key = (waiting[0].params, waiting[0].policy)
        batch, rest = [], []
        for r in waiting:
            fits = (r.params, r.policy) == key and len(batch) < self.config.max_batch
            (batch if fits else rest).append(r)
        return batch, rest

    # -- execute + update -----------------------------------------------------------------------
    def _policy(self, batch: list[_Row]):
        kind = batch[0].policy
        if kind[0] == "seer":
            return SeerPolicy(kind[1], self.lm.tokens)
        if kind[0] == "fixed":
            return FixedWindowPolicy([r.window for r in batch])
        return None

    def _tick(self, batch: list[_Row], t0: float) -> list[RequestResult]:
        p, lm = batch[0].params, self.lm
        policy = self._policy(batch)
        embeds = [r.embeds for r in batch]
        emb = lm.model.get_input_embeddings()
        canvas = make_canvas(
            [r.ids for r in batch], p.gen_length, lm.tokens, lm.device, embeds, emb
        )
        s = self.loop.begin(canvas, p, policy)
        self.loop.step(s)  # step 0, batched over the full window; the policy cuts
        self.stats.detect += s.policy_seconds
        reports = policy.reports if isinstance(policy, SeerPolicy) else None

        tr = time.perf_counter()
        plens = [len(r.ids) for r in batch]
        no_pack = p.cfg_scale > 0 or p.cache != "none"  # packed rows run without CFG or cache
        plans = self.scheduler.plan(s.canvas.window.tolist(), plens, p.gen_length, no_pack)
        plen = torch.tensor(plens, dtype=torch.long, device=lm.device)
        self.stats.route += time.perf_counter() - tr

        out = []
        for plan in plans:
            res = self.runner.run(s, plen, plan)
            self.stats.detect += res.policy_seconds - s.policy_seconds  # the guard's checks
            self.stats.plans.append(plan)
            self.stats.rows[plan.path] = self.stats.rows.get(plan.path, 0) + len(plan.rows)
            done = time.perf_counter() - t0
            for k, r in enumerate(plan.rows):
                out.append(self._result(batch[r], res, k, plan.path, done, reports, r))
        return out

    def _result(self, row: _Row, res, k: int, path: str, latency: float, reports, r: int):
        ids = res.answer[k].tolist()
        n = self.lm.tokens.answer_length(ids)
        return RequestResult(
            index=row.index,
            text=self.lm.decode(ids[:n]),
            token_ids=ids,
            tokens=n,
            window=int(res.window[k]),
            path=path,
            nfe=res.nfe,
            latency=latency,
            grown=int(res.grown[k]),
            boundary=reports[r] if reports else None,
        )


__all__ = ["Engine", "EngineStats"]
