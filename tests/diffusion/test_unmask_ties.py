"""`select(compact=True)`: the top-k of LaViDa's Dream sampler, `torch.topk(confidence, n)` over
the masked positions' confidences alone; ties (common in bfloat16) then go where the official
sampler sends them, which a top-k over the whole window with -inf elsewhere need not do."""

from __future__ import annotations

import torch

from seer.diffusion.unmask import select
from seer.sampling import SamplingParams

P = SamplingParams(gen_length=512, steps=512, remasking="entropy", temperature=0.2)


def _tied_row(w: int = 512, n_masked: int = 50, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    eligible = torch.zeros(1, w, dtype=torch.bool)
    eligible[0, torch.randperm(w, generator=g)[:n_masked]] = True
    conf = (-0.5 - torch.rand(1, w, generator=g)).to(torch.bfloat16)
    pos = torch.nonzero(eligible[0]).flatten()
    conf[0, pos[[3, 40]]] = -0.25  # two masked positions tie for the best confidence
    return conf, eligible, pos


def test_compact_topk_ranks_the_masked_confidences_alone():
    window_differs = 0
    for seed in range(8):
        conf, eligible, pos = _tied_row(seed=seed)
        for n in (1, 2, 5):
            k = torch.tensor([n])
            chosen = select(conf, eligible, k, P, None, None, compact=True)
            official = pos[torch.topk(conf[0][eligible[0]], n).indices]  # LaViDa's _sample
            assert sorted(torch.nonzero(chosen[0]).flatten().tolist()) == sorted(official.tolist())
            window_differs += not torch.equal(chosen, select(conf, eligible, k, P, None, None))
    assert window_differs  # the whole-window layout sends some of these ties elsewhere


def test_compact_and_window_topk_agree_without_ties():
    g = torch.Generator().manual_seed(1)
    conf = torch.randn(2, 64, generator=g, dtype=torch.float64)
    eligible = torch.rand(2, 64, generator=g) < 0.5
    k = torch.tensor([3, 5])
    window = select(conf, eligible, k, P, None, None)
    compact = select(conf, eligible, k, P, None, None, compact=True)
    assert torch.equal(window, compact) and window.sum(1).tolist() == [3, 5]
