"""`seer bench` (seer.throughput): the held-out workload is the model's own task as
`seer batch` sends it — a chat's in-context turn for the text model, the picture for the
multimodal one — and every method answers it."""

from __future__ import annotations

import pytest

import seer
from seer import throughput


@pytest.mark.parametrize("name", ["builtin", "builtin-vqa"])
def test_the_heldout_workload_is_the_models_own_task(name):
    lm = seer.load(name)
    p = lm.sampling(gen_length=16, steps=16, temperature=0.0)
    w = throughput.heldout(lm, 4, p)
    if lm.multimodal:
        assert all(r.image is not None for r in w.base)
    else:
        # a chat with an in-context turn goes as the whole chat's ids (`seer batch`'s request)
        assert sum(isinstance(r.prompt, list) for r in w.base) == 3
    cfg = throughput.seer_config(lm)
    for method in throughput.METHODS:
        r = throughput.run_case(lm, w, method, 4, p, cfg, 0.4)
        assert len(r["answers"]) == 4 and r["tok_s"] > 0
