"""The model runner: how a tick's rows are laid out and stepped (nano-vllm's `ModelRunner`).

- `prefill`: the step 0 of arrivals of one kind, batched over the full window with the one
  loop; the window policy (Seer's probe and detector, or a fixed window) decides each row's
  window and its `BoundaryReport`.
- `run`: one step of a group of running rows that the scheduler routed to one path. The rows
  are laid into the path's layout (`state.gather`), unless they already form exactly that
  state from the last tick, and the loop steps them with the path's `Forward`:
  static: prompts padded to `prompt_width`, windows to the bucket, hidden padding (CUDA graphs
  replay on GPU); eager: each row at its exact window, one forward; varlen: the same logical
  canvas, run packed (block-diagonal segments, `PackedForward`).
With `EngineConfig.batch_invariant` every row runs alone, step 0 included, in the layout of its
solo run: a batched forward sums in another order (its logits differ in the last bits), which
can flip a near-tie between two confidences; a row alone cannot.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, cast

from seer.boundary.truncation import FixedWindowPolicy, SeerPolicy
from seer.diffusion.canvas import make_canvas
from seer.diffusion.forward import Forward, PackedForward
from seer.diffusion.graphs import GraphedForward
from seer.diffusion.state import LoopState, WindowPolicy, gather
from seer.engine.config import EngineConfig
from seer.engine.model import EngineModel
from seer.engine.scheduler import BatchPlan, Scheduler
from seer.engine.sequence import Sequence, WindowKind

if TYPE_CHECKING:
    from seer.boundary.config import SeerConfig


class Runner:
    """Runs the engine's forwards (see the module docstring)."""

    def __init__(self, lm: EngineModel, config: EngineConfig, scheduler: Scheduler) -> None:
        self.lm, self.config, self.scheduler = lm, config, scheduler
        self.loop = lm.loop
        cuda = config.cuda_graphs and lm.device.type == "cuda"
        self.graphs = lm.graph_cache() if cuda else None
        self.compact_seconds = 0.0  # time laying rows out (gather, packing)

    # -- step 0 -------------------------------------------------------------------------------
    def prefill(self, seqs: list[Sequence]) -> LoopState:
        """Step 0 of `seqs` (one kind), batched over the full window; the policy cuts. Each
        row keeps its own sampling options and generator (`DenoisingLoop.begin(rows=...)`)."""
        lm, p, t0 = self.lm, seqs[0].params, time.perf_counter()
        emb = lm.model.get_input_embeddings()
        ids, embeds = [q.prompt.ids for q in seqs], [q.prompt.embeds for q in seqs]
        canvas = make_canvas(ids, p.gen_length, lm.tokens, lm.device, embeds, emb)
        policy = self._policy(seqs)
        s = self.loop.begin(canvas, p, policy, rows=[q.params for q in seqs])
        self.loop.step(s)
        reports = policy.reports if isinstance(policy, SeerPolicy) else None
        windows = s.canvas.window.tolist()  # Seer's predicted cost of every arrival
        for k, q in enumerate(seqs):
            q.state, q.row, q.started, q._window = s, k, t0, windows[k]
            q.detect_seconds = s.policy_seconds
            if reports and len(reports) == len(seqs):
                q.boundary = reports[k]
        return s

    def _policy(self, seqs: list[Sequence]) -> WindowPolicy | None:
        window = seqs[0].policy
        if window.kind is WindowKind.SEER:
            return SeerPolicy(cast("SeerConfig", window.value), self.lm.tokens, fitted=True)
        if window.kind is WindowKind.FIXED:
            return FixedWindowPolicy([cast(int, q.policy.value) for q in seqs])
        return cast(WindowPolicy, window.value) if window.kind is WindowKind.CUSTOM else None

    # -- later steps --------------------------------------------------------------------------
    def groups(self, seqs: list[Sequence]) -> list[tuple[BatchPlan, list[Sequence]]]:
        """The tick's forwards: rows of one layout kind, routed by window bucket and padding
        waste."""
        kinds: dict[tuple[Hashable, ...], list[Sequence]] = {}
        for q in seqs:
            kinds.setdefault(q.key(), []).append(q)
        out: list[tuple[BatchPlan, list[Sequence]]] = []
        for rows in kinds.values():
            p, state = rows[0].params, rows[0].state
            assert state is not None  # running rows (past step 0) hold a state
            no_pack = p.cfg_scale > 0 or state.cache.kv is not None or p.cache != "none"
            if self.config.batch_invariant:  # each row alone: one row plans eager, unpadded
                for q in rows:
                    g = q.params.gen_length
                    one = self.scheduler.plan([q.window], [q.prompt_len], g, no_pack)
                    out.append((one[0], [q]))
                continue
            windows, plens = [q.window for q in rows], [q.prompt_len for q in rows]
            cap = max(q.params.gen_length for q in rows)  # each row's window is within its own
            for plan in self.scheduler.plan(windows, plens, cap, no_pack):
                out.append((plan, [rows[r] for r in plan.rows]))
        return out

    def run(self, plan: BatchPlan, seqs: list[Sequence]) -> tuple[LoopState, bool]:
        """One step of `seqs` in `plan`'s layout; returns the state and whether it is new."""
        width = plan.width + len(seqs[0].params.suffix)
        s = seqs[0].state
        assert s is not None  # running rows (past step 0) hold a state
        same = (
            s.path == plan.path
            and all(q.state is s for q in seqs)
            and [q.row for q in seqs] == list(range(s.canvas.rows))
            and (s.canvas.prompt_len, s.canvas.width) == (plan.prompt_width, width)
        )
        if not same:
            t0 = time.perf_counter()
            parts = [(cast(LoopState, q.state), q.row) for q in seqs]
            emb = self.lm.model.get_input_embeddings()
            s = gather(parts, plan.prompt_width, width, self.lm.tokens, emb)
            s.forward, s.path = self._forward(plan.path), plan.path
            for k, q in enumerate(seqs):
                q.state, q.row, q.path = s, k, plan.path
            self.compact_seconds += time.perf_counter() - t0
        self.loop.step(s)
        if isinstance(s.forward, PackedForward):
            self.compact_seconds += s.forward.compact_seconds
            s.forward.compact_seconds = 0.0
        return s, not same

    def _forward(self, path: str) -> Forward | None:
        if path == "varlen":
            return PackedForward(self.loop.eager, self.config.pack_capacity)
        if path == "static" and self.graphs is not None:
            return GraphedForward(self.loop.cached, self.graphs)
        return None  # the loop's own (cached) forward
