"""THE denoising loop. Policies are injected, never copied into a variant of the loop:

- the unmasking rule and its schedule (`remasking`, `unmask.py`, `schedule.py`): which tokens
  to reveal at each step;
- the window policy (`WindowPolicy`, e.g. Seer's truncation in `seer.boundary`): each row's
  answer window. It sees step 0's forward (to probe and cut) and the end of a row's plan (to
  grow a window whose answer has not ended);
- the cache policy (`CachePolicy`, `SamplingParams.cache`, see `cache.py`): which columns each
  step runs and which keys/values it reuses; it follows every change of the canvas layout;
- decoding policies (`DecodePolicy`, see `policy.py`: stop sequences, block closing and early
  stop, DAEDAL's and ρ-EOS's re-planning), built from the rows' options: they size the window,
  take or limit a step's reveal, end rows after it and cut the answer; the loop names none;
- per-row options (`LoopState.rows`): rows of a forward agree on its layout only (`layout_key`);
  each has its own options, generator, blocks and window policy (`LoopState.reveal_groups`);
- the executor (`Forward`, see `forward.py`): how a step's forward runs (eager, cached, packed,
  CUDA-graphed). A state may carry its own; otherwise the loop's cached forward runs it.
Banned ids (`SamplingParams.banned_ids`) are a logits transform of the unmasking rule.

Every row has its own place in its plan: a row ends (or is grown by the guard) the step its own
plan runs out, so rows at different steps can share a state (`state.gather`). The canvas layout
is described in `canvas.py`.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from seer.diffusion.cache import CachePolicy, Span, make_cache
from seer.diffusion.canvas import Canvas, add_suffix, end_positions, make_canvas, resize
from seer.diffusion.decoders import for_rows
from seer.diffusion.forward import CachedForward, EagerForward
from seer.diffusion.policy import DecodePolicy, check
from seer.diffusion.schedule import COUNTS, Plan, Stage, StepRows, lay_blocks, reveal_prob
from seer.diffusion.schedule import steps_per_block as spb
from seer.diffusion.state import LoopResult, LoopState, WindowPolicy, seeded
from seer.diffusion.unmask import propose, select
from seer.errors import SeerError
from seer.models.base import DiffusionModel
from seer.models.common import KVCache
from seer.sampling import SUFFIX_RULE, SamplingParams, TokenIds

__all__ = ["Canvas", "DenoisingLoop", "LoopResult", "LoopState", "WindowPolicy", "make_canvas"]


class DenoisingLoop:
    """Runs masked-diffusion denoising of a `Canvas` with a model and injected policies."""

    def __init__(self, model: DiffusionModel, tokens: TokenIds) -> None:
        self.model = model
        self.tokens = tokens
        self.shift = model.logits_shift  # the model protocol (seer.models.base)
        # dtype of the official sampler's confidences (LLaDA-V: float64), else the logits'
        self.confidence_dtype = model.confidence_dtype
        self.compact_topk = model.compact_topk  # the official top-k's layout (unmask.select)
        self.eager = EagerForward(model, tokens, self.shift)
        self.cached = CachedForward(self.eager)

    # -- planning and single forwards ---------------------------------------------------------
    def plan(
        self, window: torch.Tensor, p: SamplingParams | list[SamplingParams], lead: int = 0
    ) -> Plan:
        """Blocks over each row's window (`p`: every row's options, or each row's). `lead`
        positions (see `CachePolicy.lead`) come first, revealed alone in one step; the first
        block then keeps its full share of steps."""
        rows, ps = [], p if isinstance(p, list) else [p] * len(window)
        for w, q in zip(window.tolist(), ps, strict=True):
            stages = lay_blocks(0, int(w), q.block, spb(q))
            if lead and stages:
                first = stages.pop(0)
                stages[:0] = [Stage(0, min(lead, first.end), 1)]
                if first.end > lead:
                    stages.insert(1, Stage(lead, first.end, first.steps))
            rows.append(stages)
        return Plan(rows)

    def forward(self, c: Canvas, p: SamplingParams, lo: int, hi: int, **kw: Any) -> torch.Tensor:
        """Logits (B, hi - lo, V) for answer positions [lo, hi) of one plain forward."""
        return self.eager.call(c, p, lo, hi, None, None, kw)[0]

    def forward_cached(
        self, c: Canvas, p: SamplingParams, lo: int, hi: int, span: Span, kv: KVCache | None
    ) -> tuple[torch.Tensor, KVCache | None]:
        """`forward` over the columns of `span`, reading `kv` or filling a new cache."""
        return self.eager.call(c, p, lo, hi, span, kv, {})

    # -- the run ------------------------------------------------------------------------------
    @torch.inference_mode()
    def run(
        self,
        c: Canvas,
        p: SamplingParams,
        policy: WindowPolicy | None = None,
        generator: torch.Generator | None = None,
        cache: CachePolicy | None = None,
    ) -> LoopResult:
        """Denoise `c` to the end: `begin`, `step` until every row finished, `result`."""
        s = self.begin(c, p, policy, generator, cache)
        while not bool(s.finished.all()):
            self.step(s)
        return self.result(s)

    def begin(
        self,
        c: Canvas,
        p: SamplingParams,
        policy: WindowPolicy | None = None,
        generator: torch.Generator | None = None,
        cache: CachePolicy | None = None,
        rows: list[SamplingParams] | None = None,
    ) -> LoopState:
        """A fresh run over `c`: the plan laid over the windows, the window policy started.
        `cache` overrides the cache policy that `p.cache` names. `rows`: each row's own options
        (with `p`'s `layout_key`), each seeded row drawing from a generator of its own; without
        them every row has `p` and the rows share one generator (`generator`, else `p.seed`)."""
        t0, dev = time.perf_counter(), c.x.device
        if generator is None and p.seed is not None and rows is None:
            generator = torch.Generator(device=dev).manual_seed(p.seed)
        gens = None if rows is None else [seeded(q.seed, dev) for q in rows]
        cache = cache if cache is not None else make_cache(p.cache, p.dpad_window)
        if p.suffix:
            if policy is not None or p.cache != "none":
                raise SeerError(SUFFIX_RULE)
            c = add_suffix(c, p.suffix)
        plan = self.plan(c.window, rows or p, cache.lead(self.shift))
        decoders = for_rows(self, rows or [p] * c.rows, dev)
        s = LoopState.new(
            c,
            p,
            plan,
            policy,
            generator,
            cache=cache,
            rows=rows,
            generators=gens,
            decoders=decoders,
            t0=t0,
        )
        check(s.decoders, policy, p.cache)  # the traits, once
        for d in s.decoders:
            d.start(s, policy)
        if policy is not None:
            s.first_kw = policy.start(self.model, c)
            s.policy_seconds += time.perf_counter() - t0
        return s

    @torch.inference_mode()
    def step(self, s: LoopState) -> None:
        """One step of every unfinished row of `s`: forward, (step 0: cut), reveal; then rows a
        decoding policy ends end, and rows whose plan ran out end or are grown by the guard."""
        fwd = s.forward or self.cached
        now = s.rows_now()
        if s.first_kw is not None:  # step 0 under a window policy: full window, then cut
            logits = fwd(s, now, 0, s.canvas.width, s.first_kw)
            now, logits = self._cut(s, logits)
            lo, hi = now.span()  # reveal from this step's positions only, as without a policy
            logits = logits[:, lo:hi]
        else:
            whole = any(d.traits.whole_window for d in s.decoders)
            lo, hi = (0, s.canvas.width) if whole else now.span()
            logits = fwd(s, now, lo, hi, {})
        s.nfe += 1
        s.row_nfe += (~s.finished).long()
        if not any(d.reveal(s, logits, now) for d in s.decoders):  # else a policy's own
            self._reveal(s, logits, lo, now)
        s.plan.step += 1
        s.now = None
        for d in s.decoders:  # after the step: rows a policy ended
            c = s.canvas
            done = d.after(s, c.x[:, c.prompt_len : c.x.shape[1] - len(s.params.suffix)])
            if done is not None:
                s.finished |= done
        nxt = s.rows_now()
        if nxt.bounds is not None and nxt.bounds[2] == s.canvas.rows:
            return  # every row has a step left: none ended
        ended = ~nxt.active & ~s.finished
        if any(s.window_policies) and bool(ended.any()):
            self._guard(s, ended)
            ended &= ~s.rows_now().active
        s.finished |= ended

    def _reveal(self, s: LoopState, logits: torch.Tensor, lo: int, now: StepRows) -> None:
        """`decode` per reveal group (`LoopState.reveal_groups`): a group of every row over the
        step's columns; a smaller one over its own rows' blocks, so that a row drawing from its
        own generator draws exactly what it draws alone."""
        c = s.canvas
        lim = next((d for d in s.decoders if d.traits.limits), None)
        kw: dict[str, DecodePolicy] = {} if lim is None else {"limit": lim}
        for rows, p, g in s.reveal_groups():
            if len(rows) == c.rows:
                self.decode(c, logits, lo, now, p, g, **kw)
                continue
            idx = torch.tensor(rows, device=c.x.device)
            sub = StepRows(
                now.start[idx], now.end[idx], now.j[idx], now.steps[idx], now.active[idx]
            )
            if not bool(sub.active.any()):
                continue
            a, b = sub.span()
            part = Canvas(c.x[idx], c.attention_mask[idx], c.prompt_len, c.window[idx])
            sel = {} if lim is None else {"limit": lim.select(idx)}
            self.decode(part, logits[idx, a - lo : b - lo], a, sub, p, g, **sel)
            c.x[idx] = part.x

    def decode(
        self,
        c: Canvas,
        logits: torch.Tensor,
        lo: int,
        now: StepRows,
        p: SamplingParams,
        g: torch.Generator | None,
        limit: DecodePolicy | None = None,
    ) -> None:
        """Reveal this step's tokens. logits: (B, n, V) for answer positions [lo, lo + n);
        `limit`: a policy that limits which masks may be revealed (`DecodePolicy.limit`)."""
        pp, n = c.prompt_len, logits.shape[1]
        win = c.x[:, pp + lo : pp + lo + n]
        pos = torch.arange(lo, lo + n, device=c.x.device)[None]
        masked = win == self.tokens.mask
        block = (pos >= now.start[:, None]) & (pos < now.end[:, None])
        eligible = masked & block
        if limit is not None:  # e.g. rows past a stop sequence: their block's masks before it
            eligible = limit.limit(eligible, masked, pos) & block
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
        """After step 0's forward: the policy's windows, the plan of the rows at their step 0
        laid over them again (rows past it, beside them in the forward, keep their steps)."""
        tp, c = time.perf_counter(), s.canvas
        assert s.policy is not None  # a pending step 0 is a window policy's (`begin`)
        window = s.policy.cut(c, logits)
        if window is not None:  # cut rows refill their cache at the next step
            self._resize(s, window, window != c.window)
            plan = self.plan(s.canvas.window, s.rows, s.cache.lead(self.shift))
            for r in torch.nonzero(s.row_nfe == 0).flatten().tolist():
                s.plan.relay(r, plan.stages[r])
        s.policy_seconds += time.perf_counter() - tp
        s.first_kw, s.now = None, None
        return s.rows_now(), logits

    def _guard(self, s: LoopState, ended: torch.Tensor) -> None:
        """Each row's window policy's guard, for the rows whose plan just ran out."""
        tp, c, rows = time.perf_counter(), s.canvas, s.rows
        window = s.grow(ended, end_positions(c, self.tokens))
        s.policy_seconds += time.perf_counter() - tp
        grew = window > c.window
        for r in torch.nonzero(grew).flatten().tolist():
            p = rows[r]
            more = lay_blocks(int(c.window[r]), int(window[r]), p.block, spb(p))
            s.plan.extend(r, more)
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
        """(B, G): each row's kept window tokens (before any stop sequence), then [EOS], G the
        longest row's gen_length (a row's answer: its first `rows[r].gen_length`); the suffix
        is not part of the answer."""
        c, p, g = s.canvas, s.params, s.gen_length
        w = min(c.width - len(p.suffix), g)
        answer = c.x.new_full((c.rows, g), self.tokens.eos)
        answer[:, :w] = c.x[:, c.prompt_len : c.prompt_len + w]
        pos = torch.arange(g, device=answer.device)[None]
        answer[pos >= c.window[:, None]] = self.tokens.eos
        for d in s.decoders:  # e.g. a stop sequence and what follows it are not the answer
            d.finish(s, answer, pos)
        return answer

    def result(self, s: LoopState) -> LoopResult:
        answer = self.answers(s)
        if answer.is_cuda:
            torch.cuda.synchronize()
        extras = s.policy.report() if s.policy is not None else {}
        seconds = time.perf_counter() - s.t0
        return LoopResult(
            answer, s.canvas.window, s.nfe, seconds, s.grown, s.policy_seconds, extras, s.forwarded
        )
