"""Step-0 activation probe: per answer position, the fraction of near-zero MLP activations.

A forward pre-hook on the down projection of layer k reads its input a = act(gate(x)) * up(x),
shape (B, L, intermediate), keeps only the answer window's columns of the real (conditional)
rows, and reduces immediately to sparsity(b, j) = mean_i [|a[b, j, i]| < theta]: nothing of
size B x L x intermediate is kept. `tensor="gate"` reads act(gate(x)) instead, through a forward
hook on the gate projection. Hooks exist only while a probe is attached (`attach`/`detach`), so a
run without Seer pays nothing.

Column bookkeeping: every row's window starts at column `start` (the prompt length after left
padding, or after image splicing); Dream's hidden state at column j-1 predicts token j, so for a
model with `logits_shift` s the window is read at columns [start - s, start - s + width).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn


def mlp_modules(model: nn.Module, layer: int, tensor: str) -> nn.Module:
    """The module whose input (down) or output (gate) is probed at `layer`."""
    blocks = model.layers
    if not 0 <= layer < len(blocks):
        from seer.errors import SeerError

        raise SeerError(f"probe layer {layer} does not exist; the model has {len(blocks)} layers")
    return blocks[layer].down_proj if tensor == "down" else blocks[layer].gate_proj


@dataclass(slots=True)
class SparsityProbe:
    """Records step-0 sparsity profiles at some layers."""

    layers: tuple[int, ...]  # layers to record
    theta: float = 1e-3  # |a| < theta counts as zero
    tensor: str = "down"  # "down": input of the down projection; "gate": act(gate)
    profiles: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> (B, W) float32
    _handles: list = field(default_factory=list)
    _cols: tuple[int, int, int] = (0, 0, 0)  # (first column, width, real rows)

    def attach(self, model: nn.Module, start: int, width: int, rows: int) -> SparsityProbe:
        shift = getattr(model, "logits_shift", 0)
        self._cols = (start - shift, width, rows)
        self.profiles.clear()
        for layer in self.layers:
            module = mlp_modules(model, layer, self.tensor)
            if self.tensor == "down":
                hook = module.register_forward_pre_hook(self._pre_hook(layer))
            else:
                hook = module.register_forward_hook(self._gate_hook(layer))
            self._handles.append(hook)
        return self

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def _record(self, layer: int, a: torch.Tensor) -> None:
        if layer in self.profiles:  # only the first forward after attach (step 0)
            return
        lo, width, rows = self._cols
        win = a[:rows, lo : lo + width]  # (B, W, intermediate); columns may be fewer if cut
        self.profiles[layer] = (win.abs() < self.theta).float().mean(dim=-1)

    def _pre_hook(self, layer: int):
        def hook(module, args):
            self._record(layer, args[0])

        return hook

    def _gate_hook(self, layer: int):
        def hook(module, args, output):
            self._record(layer, torch.nn.functional.silu(output))

        return hook


def sparsity_profiles(
    model: nn.Module,
    input_ids: torch.Tensor,
    start: int,
    width: int,
    layers: tuple[int, ...] | None = None,
    theta: float = 1e-3,
    tensor: str = "down",
    attention_mask: torch.Tensor | None = None,
    prompt_embeds: torch.Tensor | None = None,
) -> torch.Tensor:
    """One forward; returns (n_layers, B, W) sparsity for every (or the given) layer.
    `prompt_embeds` (B, start, D): the prompt's input embeddings (images spliced in)."""
    layers = tuple(range(len(model.layers))) if layers is None else layers
    probe = SparsityProbe(layers, theta, tensor).attach(model, start, width, input_ids.shape[0])
    kw = {}
    if prompt_embeds is not None:
        with torch.inference_mode():
            h = model.get_input_embeddings()(input_ids)
            h[:, :start] = prompt_embeds.to(h)
        kw, input_ids = {"inputs_embeds": h}, None
    try:
        with torch.inference_mode():
            model(input_ids, attention_mask=attention_mask, logits_positions=slice(0, 1), **kw)
    finally:
        probe.detach()
    return torch.stack([probe.profiles[k] for k in layers])
