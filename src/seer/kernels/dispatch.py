"""The one dispatch point for optional kernels: Triton when it can run, else the reference.

`backend(device)` is decided per call from cheap facts: Triton importable, and either the
tensors are on CUDA or Triton's interpreter is on (`TRITON_INTERPRET=1`, read through Triton's
own knobs, not `os.environ`). `use_backend("reference" | "triton")` forces one (tests,
benchmarks); `use_backend(None)` restores the automatic choice.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from contextvars import ContextVar

import torch

from seer.errors import SeerError
from seer.extras import install_hint
from seer.kernels.compact_ref import Compacted, compact_reference

BACKENDS = ("reference", "triton")
# the override set by `use_backend`: per thread / task, so a server's threads do not share it
_forced: ContextVar[str | None] = ContextVar("seer_kernel_backend", default=None)


@functools.cache
def triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def _interpreting() -> bool:
    import triton

    return bool(triton.knobs.runtime.interpret)


def backend(device: torch.device | str) -> str:
    """The kernel backend for tensors on `device`."""
    forced = _forced.get()
    if forced is not None:
        return forced
    if not triton_available():
        return "reference"
    return "triton" if torch.device(device).type == "cuda" or _interpreting() else "reference"


@contextmanager
def use_backend(name: str | None):
    """Force a backend inside the `with` block (None: automatic)."""
    if name is not None and name not in BACKENDS:
        raise SeerError(f"unknown kernel backend {name!r}; choose {', '.join(BACKENDS)}")
    if name == "triton" and not triton_available():
        raise SeerError(
            f"the triton kernel backend needs the kernels extra (triton is not "
            f"installed): {install_hint('kernels')}"
        )
    token = _forced.set(name)
    try:
        yield
    finally:
        _forced.reset(token)


def compact(x: torch.Tensor, *args, **kw) -> Compacted:
    """Step-0 compaction (see `compact_ref.py` for the contract) on the chosen backend."""
    if backend(x.device) == "triton":
        from seer.kernels.compact_triton import compact_triton

        return compact_triton(x, *args, **kw)
    return compact_reference(x, *args, **kw)
