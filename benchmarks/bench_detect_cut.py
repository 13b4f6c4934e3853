"""The detector alone: `SeerPolicy.cut` on fixed step-0 logits of the built-in text model.

Times the end-probability detector after step 0 (softmax at the end tokens, the rule, the
reports, the new windows) in this thread's CPU time (a shared machine's load does not inflate
it), best of 5 x 500 calls, at the given batch sizes. It uses only API that older trees have too,
so an old and a new source tree can be compared on the same machine (docs/results/detect_cut.txt):

    PYTHONPATH=OLD/src python benchmarks/bench_detect_cut.py OLD/src 1 64
    PYTHONPATH=src python benchmarks/bench_detect_cut.py src 1 64

Last line: one JSON record.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import timeit

import torch

import seer
from seer.boundary.config import SeerConfig
from seer.boundary.truncation import SeerPolicy
from seer.diffusion.loop import make_canvas


def time_cut(lm, batch: int) -> float:
    """Best per-call CPU seconds of `cut` over a (batch, 64) window whose answers end at 12."""
    tokens = lm.tokens
    torch.manual_seed(0)
    canvas = make_canvas([[5, 6, 7]] * batch, 64, tokens, "cpu")
    logits = torch.randn(batch, 64, lm.model.get_input_embeddings().num_embeddings)
    logits[:, 12:, tokens.eos] = 20.0
    policy = SeerPolicy(SeerConfig(signal="eos_prob", eos_run=2), tokens)
    policy.start(lm.model, canvas)

    def cut():
        policy.windows, policy.reports = None, []
        policy.cut(canvas, logits)

    return min(timeit.repeat(cut, number=500, repeat=5, timer=time.process_time)) / 500


def main() -> None:
    src, batches = sys.argv[1], [int(b) for b in sys.argv[2:]] or [1, 64]
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)
    lm = seer.load(f"{src}/seer/assets/builtin")
    out = {b: time_cut(lm, b) for b in batches}
    for b, s in out.items():
        print(f"{src} B={b}: cut {s * 1e6:.1f} us CPU")
    print(
        json.dumps(
            {"bench": "detect_cut", "src": src, "cpu_us": {b: s * 1e6 for b, s in out.items()}}
        )
    )


if __name__ == "__main__":
    main()
