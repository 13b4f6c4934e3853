"""The executor seam: how one denoising step runs the model (nano-vllm's `ModelRunner` idea).

The loop asks a `Forward` (the protocol is declared beside `LoopState`, in `state.py`) for the
logits of some answer positions of a state's canvas and never knows how they were computed.
Four implementations:

- `EagerForward`: one plain model call over the whole canvas. It owns what a model call needs
  beyond ids: classifier-free guidance (the batch doubled with an unconditional half), spliced
  image embeddings, and a cache `Span` (columns, cache fill or read) when asked for one.
- `CachedForward`: asks the state's `CachePolicy` (see `cache.py`) which columns to run and
  which K/V to reuse, splits a prompt prefill off when the policy asks for one, and falls back
  to the eager forward when the policy has no span or a step-0 hook changes the sequence.
- `PackedForward` (varlen path, no cache): gathers the canvas's real tokens into packed rows
  with block-diagonal attention and per-segment positions; the LM head runs only on the slots
  whose logits the step needs. It packs again when the canvas changes (`relayout`).
- `GraphedForward` (static path on CUDA, in `graphs.py`): replays a captured CUDA graph per
  input shape; it falls back to the cached forward where a graph cannot run.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from seer.diffusion.cache import Span
from seer.diffusion.canvas import Canvas
from seer.diffusion.schedule import StepRows
from seer.diffusion.state import Forward as Forward  # the seam's protocol, beside the state
from seer.diffusion.state import LoopState
from seer.kernels.compact_ref import Compacted
from seer.kernels.dispatch import compact
from seer.models.base import DiffusionModel
from seer.models.common import KVCache
from seer.sampling import SamplingParams, TokenIds


class EagerForward:
    """A plain model call over the canvas (or over a cache span's columns)."""

    def __init__(self, model: DiffusionModel, tokens: TokenIds, shift: int) -> None:
        self.model, self.tokens, self.shift = model, tokens, shift
        # (attention_mask, positions, mask or None)
        self._layout: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None] | None = None

    def positions(self, am: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Positions (cumsum(mask) - 1) and the attention mask to pass (None: attend to all) of
        a canvas's `attention_mask` (B, S); kept while the canvas keeps that mask (a canvas's
        mask is never written in place: a new layout is a new tensor)."""
        if self._layout is None or self._layout[0] is not am:
            pos = (am.cumsum(-1) - 1).clamp(min=0)
            self._layout = (am, pos, None if bool(am.all()) else am)
        return self._layout[1], self._layout[2]

    def __call__(
        self, s: LoopState, rows: StepRows, lo: int, hi: int, hooks: dict[str, Any]
    ) -> torch.Tensor:
        s.forwarded += s.canvas.rows * s.canvas.x.shape[1]
        return self.call(s.canvas, s.params, lo, hi, None, None, hooks)[0]

    def relayout(self, canvas: Canvas) -> None:
        pass

    def call(
        self,
        c: Canvas,
        p: SamplingParams,
        lo: int,
        hi: int,
        span: Span | None,
        kv: KVCache | None,
        kw: dict[str, Any],
    ) -> tuple[torch.Tensor, KVCache | None]:
        """Logits (B, hi - lo, V) for answer positions [lo, hi), and the model's cache."""
        x, pp = c.x, c.prompt_len
        pos, mask = self.positions(c.attention_mask)
        replace = None if span is None else span.replace
        if p.cfg_scale > 0:  # the unconditional half: the prompt masked out
            un = x.clone()
            un[:, :pp] = self.tokens.mask
            x, pos = torch.cat([x, un]), torch.cat([pos, pos])
            mask = None if mask is None else torch.cat([mask, mask])
            replace = None if replace is None else torch.cat([replace, replace])
        a = 0 if span is None else span.lo  # first column run through the model
        cols = slice(pp - self.shift + lo - a, pp - self.shift + hi - a)
        if span is not None:
            cache: dict[str, Any] = {"use_cache": True} if span.fill else {"past_key_values": kv}
            kw = dict(kw, cache_start=a, replace=replace, **cache)
            x, pos = x[:, a : span.hi], pos[:, a : span.hi]
            if span.fill and mask is not None:  # a fill's keys are its own columns only
                mask = mask[:, a : span.hi]
            if span.keys is not None:  # each row's own key columns (DPad's scratchpad)
                if not span.fill:
                    raise ValueError("a span's per-row keys need a fill (no cache read)")
                keys = span.keys if p.cfg_scale == 0 else torch.cat([span.keys, span.keys])
                mask = keys.long() if mask is None else mask * keys.to(mask.dtype)
        ids: torch.Tensor | None = x
        if c.prompt_embeds is not None:  # images spliced into the prompt: feed embeddings
            h = self.model.get_input_embeddings()(x)  # (B or 2B, n, D); CFG half: [MASK]s
            if a < pp:
                h[: c.rows, : pp - a] = c.prompt_embeds[:, a:].to(h)
            kw, ids = dict(kw, inputs_embeds=h), None
        out = self.model(ids, attention_mask=mask, position_ids=pos, logits_positions=cols, **kw)
        logits = out.logits
        if p.cfg_scale > 0:
            cond, un = logits.chunk(2)
            logits = un + (p.cfg_scale + 1) * (cond - un)
        return logits, out.past_key_values


class CachedForward:
    """The step's forward laid out by the state's cache policy (never with hooks). A window
    policy's step 0 runs as any step 0 does (under prefix_lm: the prompt prefill, then the
    answer columns); its probe reads each forward's columns (`seer.boundary.probe`)."""

    def __init__(self, eager: EagerForward) -> None:
        self.eager = eager

    def relayout(self, canvas: Canvas) -> None:
        pass

    def __call__(
        self, s: LoopState, rows: StepRows, lo: int, hi: int, hooks: dict[str, Any]
    ) -> torch.Tensor:
        c, n, shift = s.canvas, s.canvas.rows, self.eager.shift
        span = None if hooks else s.cache.span(c, rows, lo, hi, shift)
        if span is None:  # no cache, or a step-0 hook that changes the sequence: one forward
            return self.eager(s, rows, lo, hi, hooks)
        prefill = span.fill and span.hi < c.prompt_len + hi - shift
        head = None
        if prefill:  # the prompt alone, then the step's remaining positions
            mid = max(lo, span.hi - c.prompt_len + shift)  # positions it has logits for
            s.forwarded += n * (span.hi - span.lo)
            s.nfe += 1
            head, kv = self.eager.call(c, s.params, lo, mid, span, None, {})
            s.cache.store(kv)
            rest = s.cache.span(c, rows, mid, hi, shift)
            assert rest is not None  # a policy that split a prefill off has the rest's span
            lo, span = mid, rest
        s.forwarded += n * (span.hi - span.lo)
        logits, kv = self.eager.call(c, s.params, lo, hi, span, s.cache.kv, {})
        if span.fill:
            s.cache.store(kv)
        return logits if head is None else torch.cat([head, logits], dim=1)


def pack(lengths: list[int], capacity: int) -> tuple[list[int], int, int]:
    """Next-fit packing: (offsets, packs, capacity raised to fit the longest length)."""
    capacity = max(capacity, 8 * math.ceil(max(lengths, default=1) / 8))
    offsets, packs, used = [], 1, 0
    for n in lengths:
        if used + n > capacity:
            packs, used = packs + 1, 0
        offsets.append((packs - 1) * capacity + used)
        used += n
    return offsets, packs, capacity


class PackedForward:
    """Packed, block-diagonal segments (the varlen path). Runs without a KV cache or CFG."""

    def __init__(self, eager: EagerForward, capacity: int) -> None:
        self.eager, self.capacity = eager, capacity
        self.layout: tuple[Canvas, Compacted, torch.Tensor, int] | None = None
        self.compact_seconds = 0.0  # time spent packing

    def relayout(self, canvas: Canvas) -> None:
        self.layout = None

    def _pack(self, c: Canvas) -> tuple[Canvas, Compacted, torch.Tensor, int]:
        t0 = time.perf_counter()
        plen = c.prompt_lengths()
        offsets, packs, cap = pack((plen + c.window).tolist(), self.capacity)
        rows = torch.arange(c.rows, device=c.x.device)
        off = torch.tensor(offsets, dtype=torch.long, device=c.x.device)
        tok, shift = self.eager.tokens, self.eager.shift
        comp = compact(
            c.x,
            plen,
            c.window,
            rows,
            off,
            p_in=c.prompt_len,
            p_out=c.prompt_len,
            width=c.width,
            capacity=cap,
            n_packs=packs,
            shift=shift,
            pad_id=tok.pad,
            eos_id=tok.eos,
        )
        seg = comp.seg.view(-1, cap)  # (packs, C)
        mask = (seg[:, :, None] == seg[:, None, :])[:, None]  # (packs, 1, C, C) block-diagonal
        self.layout = (c, comp, mask, cap)
        self.compact_seconds += time.perf_counter() - t0
        return self.layout

    def __call__(
        self, s: LoopState, rows: StepRows, lo: int, hi: int, hooks: dict[str, Any]
    ) -> torch.Tensor:
        c, model, eos = s.canvas, self.eager.model, self.eager.tokens.eos
        layout = self.layout
        if layout is None or layout[0] is not c:
            layout = self._pack(c)
        _, comp, mask, cap = layout
        s.forwarded += comp.seg.numel()
        valid = comp.seg >= 0
        ids = torch.where(valid, c.x.flatten()[comp.src.clamp(min=0)], eos).view(-1, cap)
        kw: dict[str, torch.Tensor] = {}
        if c.prompt_embeds is not None:  # the same gather over the canvas's input embeddings
            h = model.get_input_embeddings()(c.x)  # (n, P + W, D)
            h[:, : c.prompt_len] = c.prompt_embeds.to(h)
            h = h.flatten(0, 1)[comp.src.clamp(min=0)]
            pad = model.get_input_embeddings().weight[eos].to(h)
            kw["inputs_embeds"] = torch.where(valid[:, None], h, pad).view(*ids.shape, -1)
        take = comp.cols[:, lo:hi].clamp(min=0)  # (n, hi - lo) slots; past-window ones unused
        last = len(model.layers) - 1

        def gather(i: int, h: torch.Tensor, m):  # h: (packs, C, D) -> (1, n * (hi - lo), D)
            if i != last:
                return None
            sel = h.reshape(1, -1, h.shape[-1])[:, take.flatten()]
            return sel, m, torch.zeros(sel.shape[:2], dtype=torch.long, device=h.device)

        out = model(
            None if kw else ids,
            attention_mask=mask,
            position_ids=comp.pos.view(-1, cap),
            after_layer=gather,
            **kw,
        )
        return out.logits.view(take.shape[0], hi - lo, -1)
