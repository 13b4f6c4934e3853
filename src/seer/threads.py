"""How many intra-op threads torch uses on the CPU, chosen for the model's size.

torch starts with one intra-op thread per core. For a small model that is slower, not faster: a
forward of the built-in models (about 1.7 M parameters) is a few small matrix products, and
spreading each over every core costs more in hand-offs than it saves; on a machine whose cores are
busy with other work it costs far more (a 128-step `seer generate` on the built-in text model took
165 s with torch's default threads and 19 s with one, on a 2-core machine running other jobs).
`benchmarks/bench_threads.py` measures one thread against every core for the shipped models and
random LLaDA models of growing width; `SMALL_MODEL` is read off its table (docs/benchmarks.md).

`seer.load` calls `choose` once per CPU model: a model below `SMALL_MODEL` parameters gets one
thread; a larger one keeps torch's count (one per core again if Seer had lowered it for a small
model loaded before). The user's choice always wins: `threads=` (the CLI's `--threads`),
`OMP_NUM_THREADS` / `MKL_NUM_THREADS` in the environment (torch reads them at start-up), or a
`torch.set_num_threads(n)` the user's code called before are left alone. (A count equal to
torch's own start-up count cannot be told from torch's default: pass `threads=` to be sure.)
"""

from __future__ import annotations

import os
from typing import Any

import torch

# parameters below which Seer picks one thread: on a 2-core machine running other jobs, one
# thread was 9-25x faster than every core for every model measured, 1.8 M to 46 M parameters
# (benchmarks/bench_threads.py, docs/results/threads.txt); above 50 M nothing was measured, so
# torch's own count is kept there
SMALL_MODEL = 50_000_000
ENVIRONMENT = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # torch's own start-up settings

_STATE: dict[str, int | None] = {"ours": None}  # the count Seer set last (a later load may change)


def _cores() -> set[int]:
    """The counts torch may start with: the usable CPUs, and the physical cores (half)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n = n or 1
    return {n, max(1, n // 2), os.cpu_count() or n}


def user_set() -> bool:
    """Whether the user chose torch's thread count (the environment, or set_num_threads)."""
    if any(os.environ.get(k, "").strip() for k in ENVIRONMENT):
        return True
    now = torch.get_num_threads()
    return now != _STATE["ours"] and now not in _cores()


def for_size(n_params: int) -> int:
    """The thread count Seer picks for a model of `n_params` parameters: one below
    `SMALL_MODEL`, else one per usable CPU (torch's own start-up count)."""
    return 1 if n_params < SMALL_MODEL else max(_cores())


def choose(model: Any, device: torch.device, threads: int | None = None) -> int:
    """Set torch's intra-op threads for `model` (an `nn.Module`: its parameters are counted) on
    `device` (see the module docstring); returns the count in use. `threads`: the user's count
    (always applied)."""
    if threads is not None:  # the user's count: a later load keeps it too
        if threads < 1:
            from seer.errors import SeerError

            raise SeerError(f"threads must be at least 1, not {threads}")
        torch.set_num_threads(threads)
        _STATE["ours"] = None
    elif device.type == "cpu" and not user_set():
        n = for_size(sum(p.numel() for p in model.parameters()))
        if n == 1 or _STATE["ours"] is not None:  # a larger model: only undo Seer's own change
            if n != torch.get_num_threads():
                torch.set_num_threads(n)
            _STATE["ours"] = n
    return torch.get_num_threads()
