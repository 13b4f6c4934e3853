"""THE step-0 probe: what Seer reads of the first denoising forward, per answer position.

Every reader of step-0 signals goes through this module: the window policy inside `generate`
(`truncation.SeerPolicy`), calibration (`calibrate.collect`), the demo's profile plots and
`seer profile`. Two kinds of signal:

- MLP sparsity at a probe point of layer k, sparsity(b, j) = mean_i [|a[b, j, i]| < theta], where
  `a` is either the input of the down projection, act(gate(x)) * up(x) (`tensor="down"`, the
  paper's), or the activation's output act(gate(x)) (`tensor="gate"`). The activation is the
  model's own module (SiLU, GELU, ... whatever the checkpoint's config names), hooked where the
  model applies it, never re-implemented here. A hook reads only the answer window's columns of
  the real (conditional) rows and reduces them at once, for every requested theta: nothing of
  size B x L x intermediate outlives the hook. Hooks exist only while a probe is attached
  (`attach`/`detach`), so a run without Seer pays nothing.
- the step-0 probability that a position holds an end token, from the window's logits
  (`end_probability`; the loop computes those logits anyway).
- the hidden state after block k (the residual stream, `hidden=(k,)`), kept as it is over the
  window's columns of the real rows: (B, W, d) float32, read by a linear probe
  (`seer.boundary.linear`). The hook copies those columns out at once; nothing of size
  B x L x d outlives it.

Column bookkeeping: every row's window starts at column `start` (the prompt length after left
padding, or after image splicing); a model whose hidden state at column j-1 predicts token j
(Dream: `logits_shift` 1) is read at columns [start - shift, start - shift + width). Step 0 may
be more than one forward: under LaViDa's prefix_lm cache the prompt runs alone first (a prefill)
and the answer columns then run against its keys/values. A hook on the model reads which canvas
columns each forward runs (`cache_start` and the input's width), so each window column is read
from the forward that computes it; the probe stops after the forward that reaches the window's
end (step 0's last), and the profile is the same whichever way step 0 was laid out.

`step0(lm, prompts, gen_length, ...)` runs one step-0 forward on `lm`'s own canvas (the canvas
`generate` denoises) with a probe attached and returns both signals (`Step0Profiles`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from torch import nn

from seer.boundary.config import TENSORS
from seer.diffusion.cache import make_cache
from seer.diffusion.state import LoopState
from seer.errors import SeerError
from seer.models.base import DiffusionModel

if TYPE_CHECKING:
    from seer.boundary.model import ProbedModel


def n_layers(model: DiffusionModel) -> int:
    """Transformer blocks of `model` (the probe's layer range is [0, n_layers))."""
    return len(model.layers)


def probe_module(model: DiffusionModel, layer: int, tensor: str) -> nn.Module:
    """The module whose input (`down`) or output (`gate`: the model's own activation module,
    applied to the gate projection) is probed at `layer` (the model protocol's probe points)."""
    n = n_layers(model)
    if not 0 <= layer < n:
        raise SeerError(f"probe layer {layer} does not exist; the model has {n} layers")
    if tensor not in TENSORS:
        raise SeerError(f"unknown probe tensor {tensor!r}; choose {', '.join(TENSORS)}")
    return model.probe_point(layer, "down" if tensor == "down" else "act")


@dataclass(slots=True)
class StepZeroProbe:
    """Records step-0 sparsity profiles at (tensor, layer) points for one or more thetas, and
    the hidden state after each block in `hidden` (`hidden_states`; `layers=()` records only
    those).

    Only step 0 is recorded: the forwards after `attach` up to the first whose columns reach the
    window's end (one full forward, or a prompt prefill and then the answer forward); each
    window column is read from the first of them that computes it. Later forwards are ignored
    until the probe is detached and attached again."""

    layers: tuple[int, ...]  # layers to record
    thetas: tuple[float, ...] = (1e-3,)  # |a| < theta counts as zero
    tensors: tuple[str, ...] = ("down",)  # probe points, see TENSORS
    hidden: tuple[int, ...] = ()  # layers whose output hidden state is kept (see `states`)
    profiles: dict[tuple[str, int], torch.Tensor] = field(default_factory=dict)
    # (tensor, layer) -> (B, n_thetas, W) float32 sparsity of the window's real rows
    states: dict[int, torch.Tensor] = field(default_factory=dict)
    # layer -> (B, W, d) float32 hidden state after that block, window columns of the real rows
    seconds: float = 0.0  # wall time spent inside the hooks (part of the cost of detection)
    cpu_seconds: float = 0.0  # the same in this thread's CPU time (robust on a shared machine)
    _handles: list = field(default_factory=list)
    _cols: tuple[int, int, int] = (0, 0, 0)  # (first column, width, real rows)
    _run: tuple[int, int] | None = None  # canvas columns [a, b) of the running forward
    _done: bool = False  # step 0's forwards are over: record nothing more

    def attach(self, model: DiffusionModel, start: int, width: int, rows: int) -> StepZeroProbe:
        """Hook the probe points; the window is columns [start, start + width) of rows [0, rows)
        (a model's logit shift is applied here)."""
        self._cols = (start - model.logits_shift, width, rows)
        self.profiles.clear()
        self.states.clear()
        self.seconds = self.cpu_seconds = 0.0
        self._run, self._done = None, False
        self._handles.append(model.register_forward_pre_hook(self._begin, with_kwargs=True))
        self._handles.append(model.register_forward_hook(self._end))
        try:
            for tensor in self.tensors:
                for layer in self.layers:
                    module = probe_module(model, layer, tensor)
                    if tensor == "down":
                        hook = module.register_forward_pre_hook(self._pre_hook(layer))
                    else:
                        hook = module.register_forward_hook(self._out_hook(layer))
                    self._handles.append(hook)
            for layer in self.hidden:
                block = model.layers[_layer(model, layer)]
                self._handles.append(block.register_forward_hook(self._state_hook(layer)))
        except SeerError:
            self.detach()
            raise
        return self

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def profile(self, layer: int, tensor: str | None = None, theta: float | None = None):
        """(B, W) sparsity at one point (defaults: the first tensor and theta)."""
        tensor = self.tensors[0] if tensor is None else tensor
        k = 0 if theta is None else self.thetas.index(theta)
        return self.profiles[tensor, layer][:, k]

    def hidden_states(self, layer: int) -> torch.Tensor:
        """(B, W, d) float32: the hidden state after block `layer` over the window's columns."""
        if layer not in self.states:
            kept = ", ".join(map(str, self.hidden)) or "none"
            raise SeerError(f"no hidden state of layer {layer} was recorded (layers: {kept})")
        return self.states[layer]

    def stacked(self) -> torch.Tensor:
        """(n_tensors, n_layers, n_thetas, B, W), in the order of `tensors` and `layers`."""
        if not self.layers:  # a probe of hidden states only
            _, width, rows = self._cols
            return torch.zeros(len(self.tensors), 0, len(self.thetas), rows, width)
        return torch.stack(
            [
                torch.stack([self.profiles[t, k].transpose(0, 1) for k in self.layers])
                for t in self.tensors
            ]
        )

    def _begin(self, model, args, kwargs) -> None:
        """Model pre-hook: the canvas columns this forward runs (a cached forward's inputs
        start at `cache_start`)."""
        x = args[0] if args and args[0] is not None else kwargs.get("input_ids")
        if x is None:
            x = kwargs["inputs_embeds"]
        a = kwargs.get("cache_start", 0)
        self._run = (a, a + x.shape[1])

    def _end(self, model, args, output) -> None:
        """Model hook: a forward that ran up to the window's end was step 0's last."""
        lo, width, _ = self._cols
        if self._run is not None and self._run[1] >= lo + width:
            self._done = True
        self._run = None

    def _unread(self, a: torch.Tensor, have: int) -> torch.Tensor | None:
        """a: (B', L', X), this forward's columns -> (rows, W', X), the window's columns after
        the `have` already read that this forward computes (fewer if cut inside it), or None."""
        lo, width, rows = self._cols
        first = lo + have  # first column not yet read
        at = 0 if self._run is None else self._run[0]  # canvas column of a's column 0
        win = a[:rows, max(0, first - at) : max(0, lo + width - at)]
        if first < at or win.shape[1] == 0:  # not contiguous with what was read: skip
            return None
        return win

    def _record(self, key: tuple[str, int], a: torch.Tensor) -> None:
        if self._done:  # only step 0's forwards
            return
        t0, c0 = time.perf_counter(), time.thread_time()
        have = self.profiles.get(key)
        # (B, W', I): the window's unread columns this forward computes
        win = self._unread(a, 0 if have is None else have.shape[-1])
        if win is None:
            return
        win = win.abs()
        # (B, n_thetas, W'): one comparison per theta keeps the temporary at B x W' x I
        frac = torch.stack([(win < t).sum(-1, dtype=torch.float32) for t in self.thetas], 1)
        frac /= win.shape[-1]
        self.profiles[key] = frac if have is None else torch.cat([have, frac], -1)
        self.seconds += time.perf_counter() - t0
        self.cpu_seconds += time.thread_time() - c0

    def _record_state(self, layer: int, h: torch.Tensor) -> None:
        if self._done:
            return
        t0, c0 = time.perf_counter(), time.thread_time()
        have = self.states.get(layer)
        win = self._unread(h, 0 if have is None else have.shape[1])
        if win is None:
            return
        win = win.to(torch.float32, copy=True)  # (B, W', d) a copy: the forward's h is freed
        self.states[layer] = win if have is None else torch.cat([have, win], 1)
        self.seconds += time.perf_counter() - t0
        self.cpu_seconds += time.thread_time() - c0

    def _state_hook(self, layer: int):
        def hook(module, args, output):  # a block returns h, or a tuple whose first item is h
            self._record_state(layer, output[0] if isinstance(output, tuple) else output)

        return hook

    def _pre_hook(self, layer: int):
        def hook(module, args):
            self._record(("down", layer), args[0])

        return hook

    def _out_hook(self, layer: int):
        def hook(module, args, output):
            self._record(("gate", layer), output)

        return hook


def _layer(model: DiffusionModel, layer: int) -> int:
    n = n_layers(model)
    if not 0 <= layer < n:
        raise SeerError(f"hidden-state layer {layer} does not exist; the model has {n} layers")
    return layer


def end_probability(logits: torch.Tensor, enders) -> torch.Tensor:
    """Step-0 probability that each window position holds an end token. (B, W, V) -> (B, W)."""
    prob = logits.softmax(dim=-1, dtype=torch.float32)
    return prob[..., list(enders)].sum(dim=-1)


@dataclass(slots=True)
class Step0Profiles:
    """Both step-0 signals of a batch, over its answer window."""

    sparsity: torch.Tensor  # (n_tensors, n_layers, n_thetas, B, W) sparsity at every point
    end_prob: torch.Tensor  # (B, W) probability of an end token at each position
    layers: tuple[int, ...]  # layers of `sparsity`'s second axis
    thetas: tuple[float, ...]  # thetas of its third axis
    tensors: tuple[str, ...]  # probe points of its first axis
    hidden: dict[int, torch.Tensor] = field(default_factory=dict)
    # layer -> (B, W, d) float32 hidden state after that block (only the layers asked for)

    def at(self, layer: int, theta: float, tensor: str = "down") -> torch.Tensor:
        """(B, W) sparsity at one point."""
        t, k = self.tensors.index(tensor), self.layers.index(layer)
        return self.sparsity[t, k, self.thetas.index(theta)]


@torch.inference_mode()
def step0(
    lm: ProbedModel,
    prompts,
    gen_length: int | None = None,
    *,
    params=None,
    layers: tuple[int, ...] | None = None,
    thetas: tuple[float, ...] = (1e-3,),
    tensors: tuple[str, ...] = ("down",),
    image=None,
    hidden: tuple[int, ...] = (),
) -> Step0Profiles:
    """One step-0 forward of `lm` over `prompts` (anything `lm.canvas` takes: text, ids,
    `PromptInput`s; `image` for a multimodal model) with a window of [MASK]; returns the sparsity
    at every requested point (every layer by default) and the end probability. `params`: the
    request's `SamplingParams` (default: the model's, `lm.sampling(gen_length=gen_length)`), so
    the forward is the one `generate` runs at step 0 (classifier-free guidance included, laid
    out by `p.cache`: under prefix_lm the prompt prefill and then the answer forward).
    `hidden`: layers whose output hidden state is returned too (`Step0Profiles.hidden`)."""
    model = lm.model
    layers = tuple(range(n_layers(model))) if layers is None else tuple(layers)
    p = lm.sampling(gen_length=gen_length) if params is None else params
    gen_length = p.gen_length
    canvas = lm.canvas(prompts, p, image)
    probe = StepZeroProbe(layers, tuple(thetas), tuple(tensors), tuple(hidden))
    probe.attach(model, canvas.prompt_len, gen_length, canvas.x.shape[0])
    try:  # step 0 as the loop runs it under a window policy (`DenoisingLoop.step`)
        cache = make_cache(p.cache, p.dpad_window)
        plan = lm.loop.plan(canvas.window, p, cache.lead(model.logits_shift))
        s = LoopState.new(canvas, p, plan, cache=cache)
        logits = lm.loop.cached(s, s.rows_now(), 0, gen_length, {})
    finally:
        probe.detach()
    ends = end_probability(logits, lm.tokens.enders)
    states = {k: probe.hidden_states(k) for k in probe.hidden}
    return Step0Profiles(probe.stacked(), ends, layers, probe.thetas, probe.tensors, states)


def sparsity_profiles(
    model: DiffusionModel,
    input_ids: torch.Tensor,
    start: int,
    width: int,
    layers: tuple[int, ...] | None = None,
    theta: float = 1e-3,
    tensor: str = "down",
    attention_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """A bare model's step-0 sparsity (no tokenizer, no canvas): one forward over `input_ids`
    (B, start + width), returns (n_layers, B, W) for every (or the given) layer."""
    layers = tuple(range(n_layers(model))) if layers is None else layers
    probe = StepZeroProbe(layers, (theta,), (tensor,))
    probe.attach(model, start, width, input_ids.shape[0])
    try:
        with torch.inference_mode():
            model(input_ids, attention_mask=attention_mask, logits_positions=slice(0, 1))
    finally:
        probe.detach()
    return torch.stack([probe.profile(k) for k in layers])
