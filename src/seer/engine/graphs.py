"""CUDA graphs moved to `seer.diffusion.graphs` (an executor of the one loop); re-exported."""

from seer.diffusion.graphs import GraphCache, GraphedForward

__all__ = ["GraphCache", "GraphedForward"]
