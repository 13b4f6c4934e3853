"""Calibration: choosing a model's Seer defaults on the user's own prompts (`seer calibrate`).

* `seer.calibrate.run`: the run behind `seer calibrate` (split, baseline, candidates, choice,
  held-out check, `--write`);
* `seer.calibrate.sweep`: every detector setting scored on the step-0 profiles;
* `seer.calibrate.trials`: the shortlisted settings answered for real with the guard on;
* `seer.calibrate.report`: report.json, the figures, the verdict, seer.json's defaults;
* `seer.calibrate.profile`: one prompt's step-0 profile (`seer profile`).

torch and the library are imported inside the functions: `seer --help` stays fast.
"""

from __future__ import annotations

from seer.calibrate.report import chosen_config, verdict, write_defaults
from seer.calibrate.run import data_for, run_calibration

__all__ = ["chosen_config", "data_for", "run_calibration", "verdict", "write_defaults"]
