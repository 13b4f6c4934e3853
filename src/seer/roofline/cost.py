"""The roofline price of one forward, per path (static with a CUDA-graph replay, varlen, eager).

A forward computes `tokens` positions, `pairs` query-key pairs of attention and `logits`
output rows; it reads the weights once and `kv_tokens` keys and values per layer. Its time is
the slower of the two roofs, each at its fitted share of the datasheet peak (`Efficiency`),
plus the cost of starting it:

    flops   = 2 N_layers tokens + 4 layers hidden pairs + 2 hidden vocab logits
    bytes   = weight_bytes N + 2 (K and V) x 2 bytes x layers x kv_dim x kv_tokens
    seconds = max(flops / (peak x compute), bytes / (bandwidth x memory)) + start

`start` is one graph replay for a static forward on a GPU, and one host launch per kernel
(`KERNELS_PER_LAYER` x layers) for eager and varlen forwards (the engine's packed forward is not
captured in a graph). Varlen attention is priced as the engine computes it: one dense
block-diagonal mask per packed row of `capacity` slots (packs x capacity^2 pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

from seer.roofline.hardware import GPU, KERNELS_PER_LAYER, Efficiency
from seer.roofline.shapes import ModelShape


@dataclass(slots=True)
class Work:
    """What one forward computes (sums over its rows)."""

    tokens: float = 0.0  # positions run through the layers
    pairs: float = 0.0  # query x key pairs of attention, summed over rows (or packs)
    logits: float = 0.0  # positions the output layer runs on
    kv_tokens: float = 0.0  # key/value positions read or written per layer

    def add(self, q: float, kv: float, logits: float) -> None:
        """One row computing `q` positions over `kv` keys, `logits` of them through the head."""
        self.tokens += q
        self.pairs += q * kv
        self.logits += logits
        self.kv_tokens += kv


def flops(shape: ModelShape, w: Work) -> float:
    return (
        2 * shape.layer_params * w.tokens
        + 4 * shape.layers * shape.hidden * w.pairs
        + 2 * shape.hidden * shape.vocab * w.logits
    )


def nbytes(shape: ModelShape, w: Work) -> float:
    return shape.weight_bytes * shape.params + 4 * shape.layers * shape.kv_dim * w.kv_tokens


def roof(hw: GPU, eff: Efficiency, f: float, b: float) -> float:
    """Seconds of `f` FLOPs and `b` bytes: the slower roof, each at its efficiency."""
    return max(f / (hw.flops * eff.compute), b / (hw.bandwidth * eff.memory))


def start(shape: ModelShape, hw: GPU, path: str) -> float:
    """Seconds to start one forward: a graph replay (static) or the host's kernel launches."""
    return hw.graph_s if path == "static" else hw.launch_s * KERNELS_PER_LAYER * shape.layers


def seconds(shape: ModelShape, hw: GPU, eff: Efficiency, w: Work, path: str) -> float:
    """One forward of `w` on `hw` by `path` (static | varlen | eager)."""
    return roof(hw, eff, flops(shape, w), nbytes(shape, w)) + start(shape, hw, path)


def bound(shape: ModelShape, hw: GPU, eff: Efficiency, w: Work) -> str:
    """Which roof a forward meets: compute or memory."""
    c = flops(shape, w) / (hw.flops * eff.compute)
    return "compute" if c >= nbytes(shape, w) / (hw.bandwidth * eff.memory) else "memory"
