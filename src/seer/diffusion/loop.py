"""THE denoising loop. Policies are injected, never copied into a variant of the loop:

- the unmasking rule and its schedule (`SamplingParams.remasking`, see `unmask.py`,
  `schedule.py`): which tokens to reveal at each step;
- the window policy (`WindowPolicy`, e.g. Seer's truncation in `seer.boundary`): how long each
  row's answer window is. It sees step 0's forward (to attach a probe and cut), and the end of a
  row's plan (to grow a window whose answer has not ended);
- the cache policy (`CachePolicy`, `SamplingParams.cache`, see `cache.py`): which columns each
  step runs and which keys/values it reuses; it follows every change of the canvas layout;
- stop sequences (`SamplingParams.stop`, see `stop.py`): rows whose answer holds one reveal
  only the masks before it and end once those are filled;
- a re-planning policy (`LoopState.replan`, see `replan.py`: DAEDAL `daedal.py`, ρ-EOS
  `rho_eos.py`): it takes each step's logits over the whole window in place of the reveal, may
  grow or shrink the window or insert masks inside it, and re-lays each row's remaining blocks
  (`Plan.replan`);
- the executor (`Forward`, see `forward.py`): how a step's forward runs (eager, cached, packed,
  CUDA-graphed). A state may carry its own; otherwise the loop's cached forward runs it.
Banned ids (`SamplingParams.banned_ids`) are a logits transform of the unmasking rule.

Every row has its own place in its plan: a row ends (or is grown by the guard) the step its own
plan runs out, so rows at different steps can share a state (`state.gather`). The canvas layout
is described in `canvas.py`.
"""

from __future__ import annotations

import time

import torch

from seer.diffusion.cache import CachePolicy, make_cache
from seer.diffusion.canvas import Canvas, add_suffix, end_positions, make_canvas, resize
from seer.diffusion.forward import CachedForward, EagerForward, StepRows
from seer.diffusion.replan import make_replan
from seer.diffusion.schedule import COUNTS, Plan, Stage, lay_blocks, reveal_prob
from seer.diffusion.schedule import steps_per_block as _steps_per_block
from seer.diffusion.state import LoopResult, LoopState, WindowPolicy
from seer.diffusion.stop import StopWords
from seer.diffusion.unmask import propose, select
from seer.errors import SeerError
from seer.sampling import SUFFIX_RULE, SamplingParams, TokenIds

__all__ = ["Canvas", "DenoisingLoop", "LoopResult", "LoopState", "WindowPolicy", "make_canvas"]


class DenoisingLoop:
    """Runs masked-diffusion denoising of a `Canvas` with a model and injected policies."""

    def __init__(self, model: torch.nn.Module, tokens: TokenIds) -> None:
        self.model = model
        self.tokens = tokens
        self.shift = model.logits_shift  # the model protocol (seer.models.base)
        # dtype of the official sampler's confidences (LLaDA-V: float64), else the logits'
        self.confidence_dtype = model.confidence_dtype
        self.compact_topk = model.compact_topk  # the official top-k's layout (unmask.select)
        self.eager = EagerForward(model, tokens, self.shift)
        self.cached = CachedForward(self.eager)

    # -- planning and single forwards ---------------------------------------------------------
    @staticmethod
    def steps_per_block(p: SamplingParams) -> int:
        return _steps_per_block(p)

    def plan(self, window: torch.Tensor, p: SamplingParams, lead: int = 0) -> Plan:
        """Blocks over each row's window. `lead` positions (see `CachePolicy.lead`) come first,
        revealed alone in one step; the first block then keeps its full share of steps."""
        spb, rows = self.steps_per_block(p), []
        for w in window.tolist():
            stages = lay_blocks(0, int(w), p.block, spb)
            if lead and stages:
                first = stages.pop(0)
                stages[:0] = [Stage(0, min(lead, first.end), 1)]
                if first.end > lead:
                    stages.insert(1, Stage(lead, first.end, first.steps))
            rows.append(stages)
        return Plan(rows)

    def forward(self, c: Canvas, p: SamplingParams, lo: int, hi: int, **kw) -> torch.Tensor:
        """Logits (B, hi - lo, V) for answer positions [lo, hi) of one plain forward."""
        return self.eager.call(c, p, lo, hi, None, None, kw)[0]

    def forward_cached(self, c: Canvas, p: SamplingParams, lo: int, hi: int, span, kv):
        """`forward` over the columns of `span`, reading `kv` or filling a new cache."""
        return self.eager.call(c, p, lo, hi, span, kv, {})

    # -- the run ------------------------------------------------------------------------------
    @torch.inference_mode()
    def run(self, c: Canvas, p: SamplingParams, policy: WindowPolicy | None = None,
            generator: torch.Generator | None = None, cache: CachePolicy | None = None,
            ) -> LoopResult:  # fmt: skip
        """Denoise `c` to the end: `begin`, `step` until every row finished, `result`."""
        s = self.begin(c, p, policy, generator, cache)
        while not bool(s.finished.all()):
            self.step(s)
        return self.result(s)

    def begin(self, c: Canvas, p: SamplingParams, policy: WindowPolicy | None = None,
              generator: torch.Generator | None = None, cache: CachePolicy | None = None,
              ) -> LoopState:  # fmt: skip
        """A fresh run over `c`: the plan laid over the windows, the window policy started.
        `cache` overrides the cache policy that `p.cache` names."""
        t0 = time.perf_counter()
        if generator is None and p.seed is not None:
            generator = torch.Generator(device=c.x.device).manual_seed(p.seed)
        cache = cache if cache is not None else make_cache(p.cache, p.dpad_window)
        if p.suffix:
            if policy is not None or p.cache != "none":
                raise SeerError(SUFFIX_RULE)
            c = add_suffix(c, p.suffix)
        plan = self.plan(c.window, p, cache.lead(self.shift))
        s = LoopState(c, p, plan, policy, generator, t0=t0, cache=cache)
        s.replan = make_replan(self, p)  # sizes each row's window, re-plans every step
        if s.replan is not None:
            s.replan.start(s, policy)
        if p.stop:
            s.stop = StopWords.new(p.stop, c.rows, c.x.device)
        if policy is not None:
            s.first_kw = policy.start(self.model, c)
            s.policy_seconds += time.perf_counter() - t0
        return s

    @torch.inference_mode()
    def step(self, s: LoopState) -> None:
        """One step of every unfinished row of `s`: forward, (step 0: cut), reveal; then rows
        past a stop sequence end, and rows whose plan ran out end or are grown by the guard."""
        fwd = s.forward or self.cached
        now = s.rows_now()
        if s.first_kw is not None:  # step 0 under a window policy: full window, then cut
            logits = fwd(s, now, 0, s.canvas.width, s.first_kw)
            now, logits = self._cut(s, logits)
            lo, hi = now.span()  # reveal from this step's positions only, as without a policy
            logits = logits[:, lo:hi]
        else:
            lo, hi = now.span() if s.replan is None else (0, s.canvas.width)  # re-planning: all
            logits = fwd(s, now, lo, hi, {})
        s.nfe += 1
        s.row_nfe += (~s.finished).long()
        if s.replan is not None:  # its own reveal, then it re-plans the rows' blocks
            s.replan.step(s, logits, now)
        else:
            stop = {} if s.stop is None else {"stop": s.stop}
            self.decode(s.canvas, logits, lo, now, s.params, s.generator, **stop)
        s.plan.step += 1
        s.now = None
        p = s.params
        if p.parallel or p.early_stop:  # a filled block ends (Fast-dLLM) / ends the row (dInfer)
            c, end = s.canvas, (self.tokens.eos if p.early_stop else None)
            answer = c.x[:, c.prompt_len : c.x.shape[1] - len(p.suffix)]
            s.plan.close_blocks(answer, self.tokens.mask, p.parallel, end)
        if s.stop is not None:
            c = s.canvas
            answer = c.x[:, c.prompt_len : c.prompt_len + c.width - len(s.params.suffix)]
            done = s.stop.update(answer, self.tokens.mask) & ~s.finished
            for r in torch.nonzero(done).flatten().tolist():
                s.plan.finish(r)
            s.finished |= done
        nxt = s.rows_now()
        if nxt.bounds is not None and nxt.bounds[2] == s.canvas.rows:
            return  # every row has a step left: none ended
        ended = ~nxt.active & ~s.finished
        if s.policy is not None and bool(ended.any()):
            self._guard(s, ended)
            ended &= ~s.rows_now().active
        s.finished |= ended

    def decode(self, c: Canvas, logits: torch.Tensor, lo: int, now: StepRows,
               p: SamplingParams, g, stop: StopWords | None = None) -> None:  # fmt: skip
        """Reveal this step's tokens. logits: (B, n, V) for answer positions [lo, lo + n)."""
        pp, n = c.prompt_len, logits.shape[1]
        win = c.x[:, pp + lo : pp + lo + n]
        pos = torch.arange(lo, lo + n, device=c.x.device)[None]
        masked = win == self.tokens.mask
        eligible = masked & (pos >= now.start[:, None]) & (pos < now.end[:, None])
        if stop is not None:  # rows past a stop sequence: every mask before it
            eligible = stop.eligible(eligible, masked, pos)
        eligible &= now.active[:, None]
        count = COUNTS[p.counting]
        k = count(now.j, now.steps, eligible.sum(1), now.end - now.start, p.eps) * now.active
        if self.confidence_dtype is not None:
            logits = logits.to(self.confidence_dtype)
        if p.remasking == "origin":  # Dream: which positions first, then tokens there only
            chosen = select(None, eligible, k, p, reveal_prob(now.j, now.steps, p.eps), g)
            x0, _ = propose(logits, p, self.tokens, g, chosen)
        else:  # sampled tokens are drawn at masked positions only, as the official samplers do
            x0, conf = propose(logits, p, self.tokens, g, masked)
            chosen = select(conf, eligible, k, p, None, g, self.compact_topk)
        c.x[:, pp + lo : pp + lo + n] = torch.where(chosen, x0, win)

    # -- windows ------------------------------------------------------------------------------
    def _cut(self, s: LoopState, logits: torch.Tensor) -> tuple[StepRows, torch.Tensor]:
        """After step 0's forward: the policy's windows, the plan laid over them again."""
        tp, c = time.perf_counter(), s.canvas
        window = s.policy.cut(c, logits)
        if window is not None:  # cut rows refill their cache at the next step
            self._resize(s, window, window != c.window)
            s.plan = self.plan(s.canvas.window, s.params, s.cache.lead(self.shift))
        s.policy_seconds += time.perf_counter() - tp
        s.first_kw, s.now = None, None
        return s.rows_now(), logits

    def _guard(self, s: LoopState, ended: torch.Tensor) -> None:
        """The window policy's guard for the rows whose plan just ran out."""
        tp, c, p = time.perf_counter(), s.canvas, s.params
        idx = torch.nonzero(ended).flatten()
        bigger = s.policy.grow(c.window[idx], end_positions(c, self.tokens)[idx], p.gen_length)
        s.policy_seconds += time.perf_counter() - tp
        if bigger is None:
            return
        window = c.window.clone()
        window[idx] = bigger.to(window)
        grew = window > c.window
        spb = self.steps_per_block(p)
        for r in torch.nonzero(grew).flatten().tolist():
            s.plan.extend(r, lay_blocks(int(c.window[r]), int(window[r]), p.block, spb))
        if bool(grew.any()):
            s.grown += grew.long()
            self._resize(s, window, grew)
            s.now = None

    def _resize(self, s: LoopState, window: torch.Tensor, changed: torch.Tensor) -> None:
        """Resize `s`'s canvas; the cache follows it and `changed` (B,) rows refill theirs."""
        s.canvas = resize(s.canvas, window, self.tokens)
        rows = torch.arange(s.canvas.rows, device=window.device)
        s.cache = s.cache.relayout(rows, len(rows), 0, s.canvas.x.shape[1])
        s.cache.invalidate(changed)
        (s.forward or self.cached).relayout(s.canvas)

    # -- the answer ---------------------------------------------------------------------------
    def answers(self, s: LoopState) -> torch.Tensor:
        """(B, gen_length): each row's kept window tokens (before any stop sequence), then
        [EOS]; the suffix is not part of the answer."""
        c, p = s.canvas, s.params
        w = min(c.width - len(p.suffix), p.gen_length)
        answer = c.x.new_full((c.rows, p.gen_length), self.tokens.eos)
        answer[:, :w] = c.x[:, c.prompt_len : c.prompt_len + w]
        pos = torch.arange(p.gen_length, device=answer.device)[None]
        answer[pos >= c.window[:, None]] = self.tokens.eos
        if s.stop is not None:  # the stop sequence and what follows it are not the answer
            at = s.stop.at[:, None]
            answer[(at >= 0) & (pos >= at)] = self.tokens.eos
        return answer

    def result(self, s: LoopState) -> LoopResult:
        answer = self.answers(s)
        if answer.is_cuda:
            torch.cuda.synchronize()
        extras = s.policy.report() if s.policy is not None else {}
        seconds = time.perf_counter() - s.t0
        return LoopResult(answer, s.canvas.window, s.nfe, seconds, s.grown, s.policy_seconds,
                          extras, s.forwarded)  # fmt: skip
