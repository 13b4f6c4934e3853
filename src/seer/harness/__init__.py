"""Evaluation-harness adapters: lm-evaluation-harness and lmms-eval drive Seer's models.

- `seer.harness.lm_eval`: model `seer` for lm-evaluation-harness (text). Importing it registers
  the model; `python -m seer.harness.lm_eval ...` runs the harness's own command line with it.
- `seer.harness.lmms_eval`: model `seer` for lmms-eval (multimodal). lmms-eval finds it through
  the `lmms_eval.models` entry point this package declares (`lmms_manifest` below), or when the
  module is imported.
- `seer.harness.options`: what both share: model arguments, loading, sampling, batching.

Both are edges: they build sampling parameters through `DiffusionLM.sampling` (the defaults of
`seer generate`) and answer through the library (`DiffusionLM.generate` on batches); neither
re-implements the denoising loop. Install them with the `eval` extra (`pip install -e ".[eval]"`).
"""

from __future__ import annotations


def lmms_manifest():
    """The `lmms_eval.models` entry point: lmms-eval's manifest for model `seer`.

    Kept here, away from `seer.harness.lmms_eval`, so that lmms-eval can read it while its own
    model registry is being built (importing the adapter then would be circular)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return ModelManifest(model_id="seer", simple_class_path="seer.harness.lmms_eval.SeerLMMs")
