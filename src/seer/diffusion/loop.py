"""THE denoising loop. Policies are injected, never copied into a variant of the loop:

- the unmasking rule and its schedule (`SamplingParams.remasking`, see `unmask.py`,
  `schedule.py`): which tokens to reveal at each step;
- the window policy (`WindowPolicy`, e.g. Seer's truncation in `seer.boundary`): how long each
  row's answer window is. It sees step 0's forward (to attach a probe and cut), and the end of the
  plan (to grow a window whose answer has not ended);
- the cache policy (`CachePolicy`, `SamplingParams.cache`, see `cache.py`): which columns each
  step runs through the model and which keys/values it reuses. The cache follows every change of
  the canvas layout (the cut, the guard's growth, a split into another layout); rows whose
  columns changed (cut or grown) refill theirs at the next step;
- stop sequences (`SamplingParams.stop`, see `stop.py`): after every step, rows whose answer
  holds one reveal only the masks before it and end once those are filled.
Banned ids (`SamplingParams.banned_ids`) are a logits transform of the unmasking rule.

Canvas layout: every row is `[left padding | prompt | answer window]`; all prompts end at column
P, so the answer window of every row starts at P. A row whose window is shorter than the canvas
has [EOS] there, hidden from attention, so its tokens equal those it gets alone. A generation
suffix (`SamplingParams.suffix`, LLaDA-V) adds fixed columns after the window:
`[prompt | answer window | suffix]`; they are attended to and never revealed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import torch

from seer.config import SamplingParams, TokenIds
from seer.diffusion.cache import CachePolicy, NoCache, Span, make_cache
from seer.diffusion.schedule import COUNTS, Plan, Stage, lay_blocks, reveal_prob
from seer.diffusion.schedule import steps_per_block as _steps_per_block
from seer.diffusion.stop import StopWords
from seer.diffusion.unmask import propose, select
from seer.errors import SeerError
from seer.models.common import KVCache


@dataclass(slots=True)
class Canvas:
    """The sequences being denoised."""

    x: torch.Tensor  # (B, P + W) token ids: left-padded prompt, then the answer window
    attention_mask: torch.Tensor  # (B, P + W) 1 = attend; 0 = left padding or cut-off window
    prompt_len: int  # P: the column where every row's answer window starts
    window: torch.Tensor  # (B,) long: answer positions in use per row (<= W)
    prompt_embeds: torch.Tensor | None = None  # (B, P, D) prompt input embeddings (images spliced)

    @property
    def width(self) -> int:
        return self.x.shape[1] - self.prompt_len


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
    `grow(window, end_pos, gen_length)` when all steps are done; `end_pos` (B,) is the position
    of the first end token in each row's window, or -1 if the answer has none. Returns a larger
    window per row, or None to stop.
    `report()` returns what the policy wants the caller to see (put in `LoopResult.extras`).
    """

    def start(self, model, canvas: Canvas) -> dict: ...

    def cut(self, canvas: Canvas, logits: torch.Tensor) -> torch.Tensor | None: ...

    def grow(
        self, window: torch.Tensor, end_pos: torch.Tensor, gen_length: int
    ) -> torch.Tensor | None: ...

    def report(self) -> dict: ...


def make_canvas(
    prompts: list[list[int]],
    gen_length: int,
    tokens: TokenIds,
    device: torch.device | str,
    embeds: list[torch.Tensor | None] | None = None,
    embedding: torch.nn.Embedding | None = None,
) -> Canvas:
    """Left-pad the prompts to a common length P and append gen_length [MASK]s to each.

    `embeds` (one (len(prompt), D) tensor or None per prompt) gives prompts whose input
    embeddings are not their tokens' (images spliced in); `embedding` embeds the others."""
    b, p = len(prompts), max(len(q) for q in prompts)
    x = torch.full((b, p + gen_length), tokens.pad, dtype=torch.long)
    am = torch.zeros((b, p + gen_length), dtype=torch.long)
    for r, q in enumerate(prompts):
        x[r, p - len(q) : p] = torch.tensor(q, dtype=torch.long)
        am[r, p - len(q) :] = 1
    x[:, p:] = tokens.mask
    window = torch.full((b,), gen_length, dtype=torch.long)
    x = x.to(device)
    pe = None
    if embeds is not None and any(e is not None for e in embeds):
        if embedding is None:
            raise ValueError("prompt embeddings need the model's input embedding for the rest")
        pe = embedding(x[:, :p]).clone()  # (B, P, D)
        for r, e in enumerate(embeds):
            if e is not None:
                pe[r, p - e.shape[0] :] = e.to(pe)
    return Canvas(x, am.to(device), p, window.to(device), pe)


class DenoisingLoop:
    """Runs masked-diffusion denoising of a `Canvas` with a model and injected policies."""

    supports_cache = True  # False where `forward` is replaced by a layout without a KV cache

    def __init__(self, model: torch.nn.Module, tokens: TokenIds) -> None:
        self.model = model
        self.tokens = tokens
        self.shift = getattr(model, "logits_shift", 0)
        # dtype of the official sampler's confidences (LLaDA-V: float64), else the logits'
        self.confidence_dtype = getattr(model, "confidence_dtype", None)

    # -- planning ---------------------------------------------------------------------------
    @staticmethod
    def steps_per_block(p: SamplingParams) -> int:
        return _steps_per_block(p)

    def plan(self, window: torch.Tensor, p: SamplingParams, lead: int = 0) -> Plan:
        """Blocks over each row's window. `lead` positions (the cache policy's, see
        `CachePolicy.lead`) come first, revealed alone in one step; the first block then starts
        after them with its full share of steps."""
        spb = self.steps_per_block(p)
        rows = []
        for w in window.tolist():
            stages = lay_blocks(0, int(w), p.block, spb)
            if lead and stages:
                first = stages.pop(0)
                stages[:0] = [Stage(0, min(lead, first.end), 1)]
                if first.end > lead:
                    stages.insert(1, Stage(lead, first.end, first.steps))
            rows.append(stages)
        return Plan(rows)

    # -- model ------------------------------------------------------------------------------
    def forward(self, c: Canvas, p: SamplingParams, lo: int, hi: int, **kw) -> torch.Tensor:
        """Logits (B, hi - lo, V) for answer positions [lo, hi), after the logit shift and CFG."""
        return self._call(c, p, lo, hi, None, None, kw)[0]

    def forward_cached(
        self, c: Canvas, p: SamplingParams, lo: int, hi: int, span: Span, kv: KVCache | None
    ) -> tuple[torch.Tensor, KVCache | None]:
        """`forward` over the columns of `span` only, reading `kv` (or filling a new cache when
        `span.fill`); returns the logits and the cache the model filled or updated."""
        return self._call(c, p, lo, hi, span, kv, {})

    def _call(self, c: Canvas, p: SamplingParams, lo: int, hi: int, span, kv, kw):
        x, am, pp = c.x, c.attention_mask, c.prompt_len
        pos = (am.cumsum(-1) - 1).clamp(min=0)
        mask = None if bool(am.all()) else am
        replace = None if span is None else span.replace
        if p.cfg_scale > 0:
            un = x.clone()
            un[:, :pp] = self.tokens.mask
            x, pos = torch.cat([x, un]), torch.cat([pos, pos])
            mask = None if mask is None else torch.cat([mask, mask])
            replace = None if replace is None else torch.cat([replace, replace])
        a = 0 if span is None else span.lo  # first column run through the model
        cols = slice(pp - self.shift + lo - a, pp - self.shift + hi - a)
        hi_col = x.shape[1] if span is None else span.hi
        if span is not None:
            cache = {"use_cache": True} if span.fill else {"past_key_values": kv}
            kw = dict(kw, cache_start=a, replace=replace, **cache)
            x, pos = x[:, a:hi_col], pos[:, a:hi_col]
            if span.fill and mask is not None:  # a fill's keys are its own columns only
                mask = mask[:, a:hi_col]
        if c.prompt_embeds is not None:  # images spliced into the prompt: feed embeddings
            kw["inputs_embeds"] = self._embeds(c, p, x, a)
            x = None
        out = self.model(x, attention_mask=mask, position_ids=pos, logits_positions=cols, **kw)
        logits = out.logits
        if p.cfg_scale > 0:
            cond, un = logits.chunk(2)
            logits = un + (p.cfg_scale + 1) * (cond - un)
        return logits, getattr(out, "past_key_values", None)

    def _embeds(self, c: Canvas, p: SamplingParams, x: torch.Tensor, a: int) -> torch.Tensor:
        """Input embeddings of columns [a, a + x.shape[1]): the canvas's prompt embeddings, then
        the token embeddings of the answer window (CFG's unconditional rows: all [MASK])."""
        embed = self.model.get_input_embeddings()
        pp, b = c.prompt_len, c.x.shape[0]
        h = embed(x)  # (B or 2B, n, D)
        if a < pp:
            h[:b, : pp - a] = c.prompt_embeds[:, a:].to(h)
        return h

    def _step_forward(self, s: LoopState, now, lo: int, hi: int, **kw) -> torch.Tensor:
        """The step's forward: plain, or laid out by the cache policy (never with hooks)."""
        c, rows = s.canvas, s.canvas.x.shape[0]
        span = None
        if self.supports_cache and not kw:
            span = s.cache.span(c, now, lo, hi, self.shift)
        if span is None:
            s.forwarded += rows * c.x.shape[1]
            return self.forward(c, s.params, lo, hi, **kw)
        head = None
        prefill = span.fill and span.hi < c.prompt_len + hi - self.shift
        if prefill and s.first_kw is not None:  # a window policy's step 0 probes the whole
            s.forwarded += rows * c.x.shape[1]  # canvas in one forward: no prefill split
            return self.forward(c, s.params, lo, hi, **kw)
        if prefill:  # the prompt alone, then the step's remaining positions
            mid = max(lo, span.hi - c.prompt_len + self.shift)  # positions it has logits for
            s.forwarded += rows * (span.hi - span.lo)
            s.nfe += 1
            head, kv = self.forward_cached(c, s.params, lo, mid, span, None)
            s.cache.store(kv)
            lo, span = mid, s.cache.span(c, now, mid, hi, self.shift)
        s.forwarded += rows * (span.hi - span.lo)
        logits, kv = self.forward_cached(c, s.params, lo, hi, span, s.cache.kv)
        if span.fill:
            s.cache.store(kv)
        return logits if head is None else torch.cat([head, logits], dim=1)

    # -- one step ---------------------------------------------------------------------------
    def decode(
        self, c: Canvas, logits: torch.Tensor, lo: int, now, p: SamplingParams, g, stop=None
    ):
        """Reveal this step's tokens. logits: (B, n, V) for answer positions [lo, lo + n);
        `now` is the plan's (start, end, j, steps, active) for this step; `stop` the run's
        `StopWords` (rows past a stop sequence reveal only masks before it)."""
        pp, n = c.prompt_len, logits.shape[1]
        win = c.x[:, pp + lo : pp + lo + n]
        start, end, j, steps, active = now
        pos = torch.arange(lo, lo + n, device=c.x.device)[None]
        masked = win == self.tokens.mask
        eligible = masked & (pos >= start[:, None]) & (pos < end[:, None])
        if stop is not None:
            eligible = stop.eligible(eligible, masked, pos)
        eligible &= active[:, None]
        counter = COUNTS[p.counting]
        k = counter(j, steps, eligible.sum(1), end - start, p.eps) * active
        if self.confidence_dtype is not None:
            logits = logits.to(self.confidence_dtype)
        x0, conf = propose(logits, p, self.tokens, g)
        reveal = reveal_prob(j, steps, p.eps) if p.remasking == "origin" else None
        chosen = select(conf, eligible, k, p, reveal, g)
        c.x[:, pp + lo : pp + lo + n] = torch.where(chosen, x0, win)

    # -- windows ----------------------------------------------------------------------------
    def resize(self, c: Canvas, window: torch.Tensor) -> Canvas:
        """Set each row's window; positions past it are [EOS] and hidden, new ones are [MASK]."""
        pp, w = c.prompt_len, int(window.max())
        x, am = c.x, c.attention_mask
        if w > c.width:  # grow the canvas
            extra = w - c.width
            x = torch.cat([x, x.new_full((x.shape[0], extra), self.tokens.eos)], dim=1)
            am = torch.cat([am, am.new_zeros((am.shape[0], extra))], dim=1)
        x, am = x[:, : pp + w].clone(), am[:, : pp + w].clone()
        pos = torch.arange(w, device=x.device)[None]
        old, new = c.window[:, None], window[:, None]
        opened = (pos >= old) & (pos < new)
        closed = pos >= new
        x[:, pp:] = torch.where(opened, self.tokens.mask, x[:, pp:])
        x[:, pp:] = torch.where(closed, self.tokens.eos, x[:, pp:])
        am[:, pp:] = torch.where(pos < new, 1, 0)
        return Canvas(x, am, pp, window.clone(), c.prompt_embeds)

    def _resize(self, s: LoopState, window: torch.Tensor, changed: torch.Tensor) -> Canvas:
        """Resize `s`'s canvas and carry its cache over; `changed` (B,) rows refill it."""
        old = s.canvas
        s.canvas = self.resize(old, window)
        rows = torch.arange(old.x.shape[0], device=old.x.device)
        s.cache = s.cache.relayout(rows, len(rows), 0, s.canvas.x.shape[1])
        s.cache.invalidate(changed)
        return s.canvas

    def end_positions(self, c: Canvas) -> torch.Tensor:
        """(B,) position of the first end token inside each row's window, -1 if none."""
        win = c.x[:, c.prompt_len :]
        pos = torch.arange(c.width, device=win.device)[None]
        hit = torch.zeros_like(win, dtype=torch.bool)
        for t in self.tokens.enders:
            hit |= win == t
        hit &= pos < c.window[:, None]
        first = torch.where(hit, pos, c.width).min(dim=1).values
        return torch.where(first < c.width, first, -1)

    # -- the loop ---------------------------------------------------------------------------
    # `run` is `begin`, then `step` until the plan is done, then `result`. The batched engine
    # (seer.engine) calls the same three pieces: it runs step 0 over a whole group, splits the
    # state by rows (`LoopState.select`) and finishes each part in its own layout.
    @torch.inference_mode()
    def run(
        self,
        c: Canvas,
        p: SamplingParams,
        policy: WindowPolicy | None = None,
        generator: torch.Generator | None = None,
        cache: CachePolicy | None = None,
    ) -> LoopResult:
        s = self.begin(c, p, policy, generator, cache)
        return self.finish(s)

    @torch.inference_mode()
    def finish(self, s: LoopState) -> LoopResult:
        """Run the remaining steps of `s` (and the guard's growth) and build the result."""
        while not s.plan.done():
            self.step(s)
        return self.result(s)

    def begin(
        self,
        c: Canvas,
        p: SamplingParams,
        policy: WindowPolicy | None = None,
        generator: torch.Generator | None = None,
        cache: CachePolicy | None = None,
    ) -> LoopState:
        """A fresh run over `c`: plan laid over the windows, the window policy started. `cache`
        overrides the cache policy that `p.cache` names."""
        t0 = time.perf_counter()
        if generator is None and p.seed is not None:
            generator = torch.Generator(device=c.x.device).manual_seed(p.seed)
        cache = cache if cache is not None else make_cache(p.cache)
        if p.suffix:
            c = self.add_suffix(c, p, policy)
        plan = self.plan(c.window, p, cache.lead(self.shift))
        s = LoopState(c, p, plan, policy, generator, None, torch.zeros_like(c.window), cache=cache)
        s.t0 = t0
        if p.stop:
            s.stop = StopWords.new(p.stop, c.x.shape[0], c.x.device)
        if policy is not None:
            tp = time.perf_counter()
            s.first_kw = policy.start(self.model, c)
            s.policy_seconds += time.perf_counter() - tp
        return s

    @torch.inference_mode()
    def step(self, s: LoopState) -> None:
        """One denoising step of `s`: forward, (step 0: cut), reveal, (plan done: guard)."""
        c, p, policy = s.canvas, s.params, s.policy
        now = s.plan.current(c.x.device)
        if s.first_kw is not None:  # step 0 under a window policy: full window, then cut
            logits = self._step_forward(s, now, 0, c.width, **s.first_kw)
            tp = time.perf_counter()
            window = policy.cut(c, logits)
            if window is not None:  # cut rows refill their cache at the next step
                c = self._resize(s, window, window != c.window)
                s.plan = self.plan(c.window, p, s.cache.lead(self.shift))
                now = s.plan.current(c.x.device)
                logits = logits[:, : c.width]
            s.policy_seconds += time.perf_counter() - tp
            lo, s.first_kw = 0, None
        else:
            lo, hi = _span(now)
            logits = self._step_forward(s, now, lo, hi)
        s.nfe += 1
        stop = {} if s.stop is None else {"stop": s.stop}
        self.decode(c, logits, lo, now, p, s.generator, **stop)
        s.plan.step += 1
        if p.parallel:  # threshold/factor: a filled block has no more steps (Fast-dLLM)
            s.plan.drop_filled(c.x[:, c.prompt_len :], self.tokens.mask)
        if s.stop is not None:  # rows whose answer ended at a stop sequence have no more steps
            w = c.width - len(p.suffix)
            done = s.stop.update(c.x[:, c.prompt_len : c.prompt_len + w], self.tokens.mask)
            for r in torch.nonzero(done).flatten().tolist():
                s.plan.finish(r)
        if s.plan.done() and policy is not None:
            window = policy.grow(c.window, self.end_positions(c), p.gen_length)
            if window is not None and bool((window > c.window).any()):
                spb = self.steps_per_block(p)
                for r in torch.nonzero(window > c.window).flatten().tolist():
                    old, new = int(c.window[r]), int(window[r])
                    s.plan.extend(r, lay_blocks(old, new, p.block, spb))
                s.grown += (window > c.window).long()
                self._resize(s, window, window > c.window)

    def add_suffix(self, c: Canvas, p: SamplingParams, policy) -> Canvas:
        """`c` with the suffix columns after the answer window (attended, never revealed)."""
        if policy is not None or p.cache != "none":
            raise SeerError("a generation suffix needs cache='none' and no window policy (Seer)")
        b, n = c.x.shape[0], len(p.suffix)
        tail = torch.tensor(p.suffix, dtype=c.x.dtype, device=c.x.device).expand(b, n)
        x = torch.cat([c.x, tail], dim=1)
        am = torch.cat([c.attention_mask, c.attention_mask.new_ones((b, n))], dim=1)
        return Canvas(x, am, c.prompt_len, c.window, c.prompt_embeds)

    def result(self, s: LoopState) -> LoopResult:
        c = s.canvas
        w = c.width - len(s.params.suffix)  # the suffix is not part of the answer
        answer = c.x.new_full((c.x.shape[0], s.params.gen_length), self.tokens.eos)
        answer[:, :w] = c.x[:, c.prompt_len : c.prompt_len + w]
        if s.stop is not None:  # the stop sequence and what follows it are not the answer
            at = s.stop.at[:, None]
            pos = torch.arange(answer.shape[1], device=answer.device)[None]
            answer[(at >= 0) & (pos >= at)] = self.tokens.eos
        if c.x.is_cuda:
            torch.cuda.synchronize()
        extras = s.policy.report() if s.policy is not None else {}
        seconds = time.perf_counter() - s.t0
        return LoopResult(
            answer, c.window, s.nfe, seconds, s.grown, s.policy_seconds, extras, s.forwarded
        )


@dataclass(slots=True)
class LoopState:
    """A run in progress: what `DenoisingLoop.step` advances, one step at a time."""

    canvas: Canvas  # the sequences, in their current layout
    params: SamplingParams  # the group's sampling options
    plan: Plan  # per-row stages and the global step counter
    policy: WindowPolicy | None  # the window policy (cut at step 0, guard at the end)
    generator: torch.Generator | None  # every random draw of the run
    first_kw: dict | None  # forward kwargs of a pending step 0 under a policy; None after it
    grown: torch.Tensor  # (B,) times the policy grew each row's window
    nfe: int = 0  # forward passes so far
    policy_seconds: float = 0.0  # time inside the policy so far
    t0: float = 0.0  # perf_counter() when the run began
    cache: CachePolicy = field(default_factory=NoCache)  # the KV-cache policy and its cache
    forwarded: int = 0  # rows x columns fed to the model so far
    stop: StopWords | None = None  # stop sequences and each row's stop position, if any

    def select(self, rows: list[int], canvas: Canvas) -> LoopState:
        """The state of some rows, moved onto `canvas` (the same rows in another layout, whose
        prompts end at `canvas.prompt_len`); the cache's columns move with them."""
        idx = torch.tensor(rows, dtype=torch.long, device=self.grown.device)
        offset = self.canvas.prompt_len - canvas.prompt_len
        cache = self.cache.relayout(idx, self.canvas.x.shape[0], offset, canvas.x.shape[1])
        return LoopState(
            canvas,
            self.params,
            self.plan.select(rows),
            self.policy,
            self.generator,
            self.first_kw,
            self.grown[idx].clone(),
            self.nfe,
            self.policy_seconds,
            self.t0,
            cache,
            self.forwarded,
            None if self.stop is None else self.stop.select(idx),
        )


def _span(now) -> tuple[int, int]:
    """The answer positions touched by the current step of any active row."""
    start, end, _, _, active = now
    if not bool(active.any()):
        return 0, 1
    return int(start[active].min()), int(end[active].max())
