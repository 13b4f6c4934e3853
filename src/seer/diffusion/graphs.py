"""CUDA graphs for the static path: one captured model forward per input shape, replayed.

The static path gives every group a fixed shape (rows x (prompt_width + bucket)), so after a
warm-up each forward can be a graph replay: inputs are copied into the graph's static buffers
and the kernels launch as one. To keep the captured work free of host syncs the key-padding mask
goes in as a (B, 1, 1, L) boolean mask (the model's 2-D path asks the host whether it is all
ones), and the logits cover the whole answer window (the loop's per-step slice changes shape);
`GraphedForward` slices them after the replay.

Off CUDA, under a KV cache, with classifier-free guidance, spliced image prompts or step-0
hooks, `GraphedForward` runs the cached forward instead. The graphs are keyed by (batch, length,
prompt column) and kept for the engine's life.
"""

from __future__ import annotations

import torch

from seer.diffusion.cache import NoCache
from seer.diffusion.forward import CachedForward, StepRows


class GraphCache:
    """Captured forwards of `model`, keyed by input shape."""

    def __init__(self, model: torch.nn.Module, warmup: int = 2) -> None:
        self.model = model
        self.warmup = warmup
        self.graphs: dict[tuple, tuple] = {}  # key -> (graph, static inputs, static logits)

    def __call__(
        self, x: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, cols: slice
    ) -> torch.Tensor:
        """Logits (B, cols, V) of `model(x, mask, pos)`; overwritten by the next replay."""
        key = (*x.shape, cols.start, cols.stop)
        if key not in self.graphs:
            self.graphs[key] = self._capture(x, mask, pos, cols)
        graph, (sx, sm, sp), out = self.graphs[key]
        sx.copy_(x)
        sm.copy_(mask)
        sp.copy_(pos)
        graph.replay()
        return out

    def _capture(self, x, mask, pos, cols):
        static = (x.clone(), mask.clone(), pos.clone())

        def run():
            sx, sm, sp = static
            return self.model(sx, attention_mask=sm, position_ids=sp, logits_positions=cols).logits

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.warmup):  # allocator and lazy-init work outside the capture
                run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = run()
        return graph, static, out


class GraphedForward:
    """The static path's forward, replayed from CUDA graphs where it can be."""

    def __init__(self, cached: CachedForward, graphs: GraphCache) -> None:
        self.cached, self.graphs = cached, graphs

    def relayout(self, canvas) -> None:
        pass

    def __call__(self, s, rows: StepRows, lo: int, hi: int, hooks: dict) -> torch.Tensor:
        c = s.canvas
        plain = isinstance(s.cache, NoCache) and s.params.cfg_scale == 0
        if hooks or not plain or c.prompt_embeds is not None or not c.x.is_cuda:
            return self.cached(s, rows, lo, hi, hooks)
        s.forwarded += c.rows * c.x.shape[1]
        am = c.attention_mask
        pos = (am.cumsum(-1) - 1).clamp(min=0)
        start = c.prompt_len - self.cached.eager.shift
        logits = self.graphs(c.x, am.bool()[:, None, None, :], pos, slice(start, start + c.width))
        return logits[:, lo:hi]
