"""`ForwardPrice`: the predicted GPU seconds of a planned forward, for the cost-aware merge.

`EngineConfig.merge_on` names a GPU profile of `seer.roofline.hardware` ("h100"), optionally with a
model shape `seer.roofline.shapes.load_shape` accepts ("h100:llada-8b"); without one, the served
model's own shape (its typed config read as a config.json, `served_shape`). Every forward is priced
as a 16-bit one (bf16 weights and compute peak). "auto" (the
default) is the profile of the GPU the engine runs on, as the served model: the engine finds
it (`seer.engine.engine.device_gpu`: the CUDA device's name, `seer.roofline.hardware.profile_of`)
and hands it to the scheduler; on CPU, MPS, a GPU the simulator does not know or weights that
are not 16-bit (the default float32: load with dtype bfloat16), auto is off,
as "none", "off" and None are. The scheduler then
merges two adjacent bucket groups when one forward of both is predicted to cost no more than
the two apart (`seer.engine.scheduler`). A forward is priced by the simulator's roofline
(`seer.roofline.cost`: seconds = the slower of compute and memory + the start) at the validated
efficiencies (`seer.roofline.efficiency`), over the columns it computes: prompt + window per
row without a KV cache, the windows only where a cache reuses the prompt (as `Scheduler.waste`
counts them; a prefix or dual cache's whole-canvas forward at a block's start is not seen).

These are the simulator's predictions, not measurements: its median error is 28 % on batch-1
text figures, and batched forwards are untested (`seer/roofline/validation.json`, `held_out_scope`).

Layering: `seer.roofline` sits beside the engine and imports nothing from it; the simulator
(`seer.sim`), which drives the engine's scheduler, sits above both.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Protocol

from seer.errors import SeerError
from seer.roofline import cost, efficiency
from seer.roofline.hardware import GPU, Efficiency, gpu
from seer.roofline.shapes import ModelShape, builtin_shapes, load_shape, shape_of

AUTO = "auto"  # merge_on: the engine's own GPU, as the served model (off where it knows none)
OFF = ("none", "off")  # merge_on values that turn it off, as None does


class Planned(Protocol):
    """What a price reads of a planned forward (`seer.engine.scheduler.BatchPlan`)."""

    path: str
    rows: list[int]
    packs: int
    packed_len: int
    prompt_width: int
    width: int


@dataclass(slots=True, frozen=True)
class ForwardPrice:
    """Prices a planned forward (`Planned`) on one GPU as one model shape (predicted seconds)."""

    shape: ModelShape  # the model the forwards are priced as
    hw: GPU  # the GPU profile
    eff: Efficiency  # the simulator's validated efficiencies
    graphs: bool = True  # static forwards replay a CUDA graph (else they launch every kernel)

    def seconds(self, plan: Planned, windows: list[int], reuses_prompt: bool) -> float:
        """One forward of `plan` (windows: every row's, indexed by `plan.rows`)."""
        w = cost.Work()
        if plan.path == "varlen":  # dense block-diagonal mask per packed row
            for _ in range(plan.packs):
                w.add(plan.packed_len, plan.packed_len, 0)
            w.logits = sum(windows[r] for r in plan.rows)
        else:  # every row of the layout computes the same columns, padding included
            kv = plan.prompt_width + plan.width
            q = plan.width if reuses_prompt else kv
            n = len(plan.rows)
            w = cost.Work(n * q, n * q * kv, n * min(q, plan.width), n * kv)
        path = plan.path if self.graphs or plan.path != "static" else "eager"
        return cost.seconds(self.shape, self.hw, self.eff, w, path)


def parse(spec: str) -> tuple[GPU, ModelShape | None]:
    """`merge_on`'s GPU profile and model shape (None: the served model's); one `SeerError`
    line for a bad value."""
    name, _, model = spec.partition(":")
    if name.lower() == AUTO:
        raise SeerError(
            f"merge_on {spec!r}: auto prices the GPU found as the served model; name both "
            "to price as another model, e.g. 'h100:llada-8b'"
        )
    try:
        hw = gpu(name)
    except SeerError as e:
        raise SeerError(f"merge_on {spec!r}: {e}") from None
    if not model:
        if ":" in spec:
            raise SeerError(f"merge_on {spec!r}: name a model shape after ':' or drop the ':'")
        return hw, None
    if model.lower() not in builtin_shapes() and not Path(model).exists():
        names = ", ".join(builtin_shapes())
        raise SeerError(
            f"merge_on {spec!r}: unknown model shape {model!r}; choose one of {names}, "
            "or a model folder / config.json"
        )
    try:
        return hw, load_shape(model)
    except SeerError as e:
        raise SeerError(f"merge_on {spec!r}: {e}") from None


def absolute(spec: str | None) -> str | None:
    """`spec` with the model folder it names, if any, made absolute (for processes that run
    in another working folder: Ray Serve's replicas); anything else unchanged."""
    if spec is None or ":" not in spec:
        return spec
    name, _, model = spec.partition(":")
    if not model or model.lower() in builtin_shapes() or not Path(model).exists():
        return spec
    return f"{name}:{Path(model).resolve()}"


def served_shape(config: object, name: str = "served model") -> ModelShape:
    """A loaded model's shape from its typed config (its config.json fields, `extra` included),
    read as `seer.roofline.shapes.shape_of` reads a config.json."""
    if not is_dataclass(config):
        raise SeerError(
            f"merge_on: the shape of {name} is unknown (its config is not a config.json "
            "dataclass); name one, e.g. merge_on='h100:llada-8b'"
        )
    raw = {f.name: getattr(config, f.name) for f in fields(config) if f.name != "extra"}
    raw |= getattr(config, "extra", None) or {}
    return shape_of({k: v for k, v in raw.items() if v is not None}, name)


def forward_price(
    spec: str | None, served: ModelShape | None, graphs: bool, device: GPU | None = None
) -> ForwardPrice | None:
    """The price `merge_on` asks for (None: off). `served`: the served model's shape (used
    when the value names none); `device`: the GPU the engine runs on, which "auto" prices as
    (None: auto is off)."""
    if spec is None or spec.lower() in OFF:
        return None
    auto = spec.lower() == AUTO
    hw, shape = (device, served) if auto else parse(spec)
    shape = shape or served
    if hw is None or shape is None:
        if auto:  # no GPU found, or a model of unknown shape
            return None
        raise SeerError(f"merge_on {spec!r}: no model shape: name one, e.g. '{spec}:llada-8b'")
    return ForwardPrice(shape, hw, efficiency(), graphs)
