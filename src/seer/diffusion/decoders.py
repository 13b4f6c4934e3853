"""The decoding policies a run's options turn on (`seer.diffusion.policy`): the hooks module
of every declared policy (`seer.policies.REGISTRY`, `Declaration.hooks`), each built once, in the
registry's order. A new policy is its declaration and its hooks module, named by one line of the
registry; nothing here changes."""

from __future__ import annotations

import importlib
from types import ModuleType

import torch

from seer.diffusion.policy import DecodePolicy, Loop
from seer.policies import REGISTRY
from seer.sampling import SamplingParams


def modules() -> list[ModuleType]:
    """The hooks modules, once each (threshold/factor and early stop share theirs)."""
    names = dict.fromkeys(d.hooks for d in REGISTRY if d.hooks is not None)
    return [importlib.import_module(name) for name in names]


def for_rows(loop: Loop, rows: list[SamplingParams], device: torch.device) -> list[DecodePolicy]:
    """The policies the rows' options turn on, in calling order."""
    out = [m.build(loop, rows, device) for m in modules()]
    return [p for p in out if p is not None]
