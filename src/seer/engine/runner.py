"""The model runner: how a tick's rows are laid out and stepped (nano-vllm's `ModelRunner`).

- `prefill`: the step 0 of arrivals of one kind, batched over the full window with the one
  loop; the window policy (Seer's probe and detector, or a fixed window) decides each row's
  window and its `BoundaryReport`. Arrivals whose step 0 is an ordinary forward (no hooks,
  no cache to fill: `joins`) are only `begin`-ned: they take their step 0 in `run`, in the
  running rows' forward, where their window policy (if any) cuts their rows alone.
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
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, cast

import torch

from seer.boundary.truncation import FixedWindowPolicy, SeerPolicy
from seer.diffusion.canvas import Canvas, make_canvas, resize
from seer.diffusion.forward import Forward, PackedForward
from seer.diffusion.graphs import GraphedForward
from seer.diffusion.state import LoopState, WindowPolicy, gather
from seer.engine.config import EngineConfig
from seer.engine.model import EngineModel
from seer.engine.scheduler import BatchPlan, Scheduler
from seer.engine.sequence import Sequence, WindowKind

if TYPE_CHECKING:
    from seer.boundary.config import SeerConfig
    from seer.boundary.detector import BoundaryReport


class Runner:
    """Runs the engine's forwards (see the module docstring)."""

    def __init__(self, lm: EngineModel, config: EngineConfig, scheduler: Scheduler) -> None:
        self.lm, self.config, self.scheduler = lm, config, scheduler
        self.loop = lm.loop
        cuda = config.cuda_graphs and lm.device.type == "cuda"
        self.graphs = lm.graph_cache() if cuda else None
        self.compact_seconds = 0.0  # time laying rows out (gather, packing)

    # -- step 0 -------------------------------------------------------------------------------
    def prefill(self, seqs: list[Sequence], s: LoopState | None = None) -> LoopState:
        """Step 0 of `seqs` (one kind), batched over the full window; the policy cuts. Each
        row keeps its own sampling options and generator (`DenoisingLoop.begin(rows=...)`).
        `s`: their run, if `begin` made it already."""
        s = s if s is not None else self.begin(seqs)
        self.loop.step(s)
        windows = s.canvas.window.tolist()  # Seer's predicted cost of every arrival
        for k, q in enumerate(seqs):
            q._window = windows[k]
        self.boundaries(seqs, s, s.policy_seconds)
        return s

    @staticmethod
    def boundaries(seqs: list[Sequence], s: LoopState, seconds: float) -> None:
        """After the step 0 of `seqs`, the rows of run `s` in order: each one's `BoundaryReport`
        from the run's window policy, and the seconds its step 0 spent in the policy."""
        policy = s.policy
        reports = policy.reports if isinstance(policy, (SeerPolicy, CapWindows)) else None
        for k, q in enumerate(seqs):
            q.detect_seconds = seconds
            if reports and len(reports) == len(seqs):
                q.boundary = reports[k]

    def begin(self, seqs: list[Sequence]) -> LoopState:
        """The run of `seqs` (one kind) begun over the full window, before its step 0. Rows of
        different window caps (a kind that allows it, `Window.any_cap`) are laid over the
        longest, each row's columns past its own cap hidden, as padding is."""
        lm, t0 = self.lm, time.perf_counter()
        caps = [q.params.gen_length for q in seqs]
        p = seqs[caps.index(max(caps))].params
        emb = lm.model.get_input_embeddings()
        ids, embeds = [q.prompt.ids for q in seqs], [q.prompt.embeds for q in seqs]
        canvas = make_canvas(ids, p.gen_length, lm.tokens, lm.device, embeds, emb)
        if len(set(caps)) > 1:
            canvas = resize(canvas, torch.tensor(caps, device=canvas.x.device), lm.tokens)
        s = self.loop.begin(canvas, p, self._policy(seqs), rows=[q.params for q in seqs])
        windows = s.canvas.window.tolist()
        for k, q in enumerate(seqs):
            q.state, q.row, q.started, q._window = s, k, t0, windows[k]
        return s

    @staticmethod
    def joins(s: LoopState) -> bool:
        """Whether a begun run's step 0 is an ordinary forward, which its rows may take in any
        layout beside running rows: no forward hooks (a window policy cuts from the logits
        after it; the engine begins early only policies that attach no probe,
        `Window.any_cap`), no KV cache to fill, no decoding policy that sets the length."""
        return (
            not s.first_kw
            and s.params.cache == "none"
            and not any(d.traits.sets_length for d in s.decoders)
        )

    def _policy(self, seqs: list[Sequence]) -> WindowPolicy | None:
        window = seqs[0].policy
        if window.kind is WindowKind.SEER:
            cfg, tokens = cast("SeerConfig", window.value), self.lm.tokens
            caps = [q.params.gen_length for q in seqs]
            if len(set(caps)) > 1:
                return CapWindows(lambda: SeerPolicy(cfg, tokens, fitted=True), caps)
            return SeerPolicy(cfg, tokens, fitted=True)
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
            reuse = state.cache.reuses_prompt  # a KV cache: the prompt is not recomputed
            for plan in self.scheduler.plan(windows, plens, cap, no_pack, reuse):
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


class CapWindows:
    """The `WindowPolicy` of one step 0 shared by rows of different window caps (gen_length):
    one policy per cap (Seer's, deciding from the logits after the forward), each cutting its
    rows over their own cap's columns of the shared forward's logits, as it does alone
    (columns past a row's cap are hidden from its attention), and growing them up to that cap
    (the loop's guard asks per row policy and cap)."""

    def __init__(self, make: Callable[[], SeerPolicy], caps: list[int]) -> None:
        self.caps = caps
        self.by = {g: make() for g in sorted(set(caps))}
        self.reports: list[BoundaryReport] = []

    def start(self, model: object, canvas: Canvas) -> dict[str, object]:
        for pol in self.by.values():
            if pol.start(model, canvas):  # Window.any_cap lets in none that hooks step 0
                raise AssertionError("a window policy hooked into a shared step 0")
        self.reports = []
        return {}

    def cut(self, canvas: Canvas, logits: torch.Tensor) -> torch.Tensor | None:
        window = canvas.window.clone()
        reports: list[BoundaryReport | None] = [None] * len(self.caps)
        for g, pol in self.by.items():
            rows = [r for r, c in enumerate(self.caps) if c == g]
            idx = torch.tensor(rows, device=canvas.x.device)
            got = pol.cut(canvas.part(rows, g), logits[idx, :g])
            if got is not None:
                window[idx] = got.to(window)
            for k, r in enumerate(rows):
                reports[r] = pol.reports[k]
        self.reports = cast("list[BoundaryReport]", reports)
        return window

    def grow(
        self, window: torch.Tensor, end_pos: torch.Tensor, gen_length: int
    ) -> torch.Tensor | None:
        grown: torch.Tensor | None = self.by[gen_length].grow(window, end_pos, gen_length)
        return grown

    def report(self) -> dict[str, object]:
        parts = [pol.report() for pol in self.by.values()]
        return {
            "boundaries": self.reports,
            "guard_fired": sum(r["guard_fired"] for r in parts),
            "detect_seconds": sum(r["detect_seconds"] for r in parts),
            "detect_cpu_seconds": sum(r["detect_cpu_seconds"] for r in parts),
        }
