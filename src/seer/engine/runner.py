"""Runs one `BatchPlan`: compacts the group's rows into its path's layout, then finishes their
denoising with the one loop (`DenoisingLoop.finish`), whose forward the path may replace.

- static / eager: the row layout *is* a `Canvas` (prompt left-padded to `prompt_width`, window
  padded with hidden [EOS] to `width`); the plain loop runs it (`GraphedLoop` on CUDA);
- varlen: the row layout stays the loop's logical canvas (decode, plan, guard and resize work on
  it unchanged), and `PackedLoop.forward` gathers its tokens into packed rows, runs the model
  with block-diagonal attention and per-segment positions, and hands back the window's logits
  in row order. The LM head runs only on the window slots: after the last block the hidden
  states are gathered through the model's `after_layer` hook.
When the guard grows a varlen row's window the canvas changes and the rows are packed again.
"""

from __future__ import annotations

import time

import torch

from seer.config import SamplingParams, TokenIds
from seer.diffusion.loop import Canvas, DenoisingLoop, LoopResult, LoopState
from seer.engine.scheduler import BatchPlan, pack
from seer.kernels.compact_ref import Compacted
from seer.kernels.dispatch import compact


class PackedLoop(DenoisingLoop):
    """The denoising loop whose forward runs packed, block-diagonal segments (varlen path).
    It runs without a KV cache: every step packs and runs the whole rows."""

    supports_cache = False

    def __init__(self, model, tokens: TokenIds, plen: torch.Tensor, capacity: int) -> None:
        super().__init__(model, tokens)
        self.plen = plen  # (n,) prompt length per row
        self.capacity = capacity  # slots per packed row (before raising to fit a segment)
        self.layout: tuple[Canvas, Compacted, torch.Tensor, int] | None = None
        self.compact_seconds = 0.0

    def set_layout(self, c: Canvas, comp: Compacted, packed_len: int) -> None:
        seg = comp.seg.view(-1, packed_len)  # (packs, C)
        mask = (seg[:, :, None] == seg[:, None, :])[:, None]  # (packs, 1, C, C) block-diagonal
        self.layout = (c, comp, mask, packed_len)

    def _relayout(self, c: Canvas) -> None:
        """Pack the rows again (after the guard grew windows; reads the windows back)."""
        t0 = time.perf_counter()
        lengths = (self.plen + c.window).tolist()
        offsets, packs, cap = pack(lengths, self.capacity)
        n = c.x.shape[0]
        rows = torch.arange(n, device=c.x.device)
        off = torch.tensor(offsets, dtype=torch.long, device=c.x.device)
        ids = dict(shift=self.shift, pad_id=self.tokens.pad, eos_id=self.tokens.eos)
        shape = dict(p_in=c.prompt_len, p_out=c.prompt_len, width=c.width)
        comp = compact(c.x, self.plen, c.window, rows, off, **shape, capacity=cap,
                       n_packs=packs, **ids)  # fmt: skip
        self.set_layout(c, comp, cap)
        self.compact_seconds += time.perf_counter() - t0

    def forward(self, c: Canvas, p: SamplingParams, lo: int, hi: int, **kw) -> torch.Tensor:
        if self.layout is None or self.layout[0] is not c:
            self._relayout(c)
        _, comp, mask, cap = self.layout
        ids = c.x.flatten()[comp.src.clamp(min=0)]
        ids = torch.where(comp.seg >= 0, ids, self.tokens.eos).view(-1, cap)  # (packs, C)
        embeds = None
        if c.prompt_embeds is not None:  # the same gather over the canvas's input embeddings
            h = self.model.get_input_embeddings()(c.x)  # (n, P + W, D)
            h[:, : c.prompt_len] = c.prompt_embeds.to(h)
            h = h.flatten(0, 1)[comp.src.clamp(min=0)]
            pad = self.model.get_input_embeddings().weight[self.tokens.eos].to(h)
            embeds = torch.where((comp.seg >= 0)[:, None], h, pad).view(*ids.shape, -1)
        pos = comp.pos.view(-1, cap)
        take = comp.cols[:, lo:hi].clamp(min=0)  # (n, hi - lo) slots; past-window ones unused
        last = len(self.model.layers) - 1

        def gather(i: int, h: torch.Tensor, m):  # h: (packs, C, D) -> (1, n * (hi - lo), D)
            if i != last:
                return None
            sel = h.reshape(1, -1, h.shape[-1])[:, take.flatten()]
            return sel, m, torch.zeros(sel.shape[:2], dtype=torch.long, device=h.device)

        kw = {} if embeds is None else {"inputs_embeds": embeds}
        out = self.model(
            None if embeds is not None else ids,
            attention_mask=mask,
            position_ids=pos,
            after_layer=gather,
            **kw,
        )
        return out.logits.view(take.shape[0], hi - lo, -1)


class Runner:
    """Executes `BatchPlan`s over the state left by a batched step 0."""

    def __init__(self, model, tokens: TokenIds, loop: DenoisingLoop, capacity: int) -> None:
        self.model = model
        self.tokens = tokens
        self.loop = loop  # the static/eager loop (a `GraphedLoop` on CUDA)
        self.capacity = capacity
        self.compact_seconds = 0.0  # time in compaction, over the runner's life

    def layout(self, s: LoopState, plen: torch.Tensor, plan: BatchPlan) -> Compacted:
        """Compact the plan's rows out of the step-0 canvas (one kernel, no host sync)."""
        c, dev = s.canvas, s.canvas.x.device
        rows = torch.tensor(plan.rows, dtype=torch.long, device=dev)
        off = torch.tensor(plan.offsets, dtype=torch.long, device=dev) if plan.packs else None
        return compact(c.x, plen, c.window, rows, off, p_in=c.prompt_len,
                       p_out=plan.prompt_width, width=plan.width, capacity=plan.packed_len,
                       n_packs=plan.packs, shift=self.loop.shift, pad_id=self.tokens.pad,
                       eos_id=self.tokens.eos)  # fmt: skip

    def run(self, s: LoopState, plen: torch.Tensor, plan: BatchPlan) -> LoopResult:
        """Finish the denoising of the plan's rows; result rows follow `plan.rows`."""
        t0 = time.perf_counter()
        comp = self.layout(s, plen, plan)
        rows = torch.tensor(plan.rows, dtype=torch.long, device=plen.device)
        canvas = Canvas(comp.x, comp.attention_mask, plan.prompt_width, s.canvas.window[rows])
        if s.canvas.prompt_embeds is not None:  # prompts end at P in both layouts
            pe, start = s.canvas.prompt_embeds[rows], s.canvas.prompt_len - plan.prompt_width
            if start < 0:  # a static layout may pad prompts further: embed those pad columns
                pad = self.model.get_input_embeddings()(comp.x[:, :-start]).to(pe)
                pe = torch.cat([pad, pe], dim=1)
            canvas.prompt_embeds = pe[:, max(start, 0) :]
        loop = self.loop
        if plan.path == "varlen":
            loop = PackedLoop(self.model, self.tokens, plen[rows], self.capacity)
            loop.set_layout(canvas, comp, plan.packed_len)
        self.compact_seconds += time.perf_counter() - t0
        res = loop.finish(s.select(plan.rows, canvas))
        if isinstance(loop, PackedLoop):
            self.compact_seconds += loop.compact_seconds
        return res
