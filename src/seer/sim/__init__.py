"""What Seer buys on a GPU we cannot run: the engine's real scheduler and router on a virtual
clock priced by a GPU roofline and a model's config (weights not needed). Every figure it
produces is a prediction, printed as one with its validation error (`VALIDATION`).

- the roofline it prices forwards with (GPUs, model shapes, the cost of one forward, the fitted
  efficiencies and their validation) is `seer.roofline`, which the engine uses too;
- `trace.py`: the requests (measured records or the paper's answer-length spreads) and what
  each method does to each (window, forwards);
- `engine.py`: `SimEngine`, the scheduler on the virtual clock.
"""

from __future__ import annotations

from seer.roofline import validation
from seer.roofline.hardware import GPUS, Efficiency, gpu
from seer.roofline.shapes import ModelShape, builtin_shapes, load_shape

__all__ = ["GPUS", "Efficiency", "ModelShape", "builtin_shapes", "gpu", "load_shape", "validation"]
