"""The GPU roofline: what one forward of a model costs on a GPU, from the GPU's datasheet and the
model's config (weights not needed). The engine prices forwards with it (`EngineConfig.merge_on`)
and the simulator (`seer.sim`) runs the engine's scheduler on a clock it sets.

- `hardware.py`: named GPUs (datasheet peaks, launch and graph-replay costs), `Efficiency` (the
  two fitted factors) and the profile a CUDA device's name names;
- `shapes.py`: a model's shape from a config.json, and the released models by name;
- `cost.py`: the roofline price of one forward per path;
- `validation.json`: the fitted factors (on a third of the development set) and the error on
  the test set, published figures never used to build or fit it (written by
  `benchmarks/validate_sim.py`; `held_out_set` says which set the printed error is from).

Every price is a prediction: its error is `validation()`'s.
"""

from __future__ import annotations

import json
from pathlib import Path

from seer.roofline.hardware import Efficiency

__all__ = ["efficiency", "validation"]


def validation() -> dict:
    """The fitted efficiencies and the validation error (`validation.json`)."""
    return json.loads((Path(__file__).parent / "validation.json").read_text())


def efficiency() -> Efficiency:
    """The validated efficiencies (`validation.json`)."""
    e = validation()["efficiency"]
    return Efficiency(e["compute"], e["memory"])
