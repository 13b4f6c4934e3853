"""What Seer buys on a GPU we cannot run: the engine's real scheduler and router on a virtual
clock priced by a GPU roofline and a model's config (weights not needed). Every figure it
produces is a prediction, printed as one with its validation error (`VALIDATION`).

- `hardware.py`: named GPUs (datasheet peaks, launch and graph-replay costs) and `Efficiency`,
  the two fitted factors;
- `shapes.py`: a model's shape from a config.json, and the released models by name;
- `cost.py`: the roofline price of one forward per path;
- `trace.py`: the requests (measured records or the paper's answer-length spreads) and what
  each method does to each (window, forwards);
- `engine.py`: `SimEngine`, the scheduler on the virtual clock;
- `validation.json`: the fitted factors (on a third of the development set) and the error on
  the test set, published figures never used to build or fit the simulator (written by
  `benchmarks/validate_sim.py`; `held_out_set` says which set the printed error is from).
"""

from __future__ import annotations

import json
from pathlib import Path

from seer.sim.hardware import GPUS, Efficiency, gpu
from seer.sim.shapes import ModelShape, builtin_shapes, load_shape

__all__ = ["GPUS", "Efficiency", "ModelShape", "builtin_shapes", "gpu", "load_shape", "validation"]


def validation() -> dict:
    """The fitted efficiencies and the validation error (`validation.json`)."""
    return json.loads((Path(__file__).parent / "validation.json").read_text())
