"""`EngineConfig`: how the engine admits, schedules, groups and routes rows (per-request
options live in `SamplingParams` and the request's Seer config)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from seer import extras
from seer.errors import SeerError

ROUTINGS = ("hybrid", "naive", "static", "varlen", "eager")
Policy = Literal["fcfs", "shortest_first"]  # admission order (seer.engine.scheduler)
POLICIES: tuple[Policy, ...] = get_args(Policy)


@dataclass(slots=True, frozen=True)
class EngineConfig:
    """Scheduling, batching and routing options, validated on construction."""

    max_batch: int = 64  # rows running at once (requests past their step 0)
    max_tokens_per_step: int | None = None  # token budget per tick: rows x (prompt + window)
    max_queue: int | None = None  # waiting requests before `add` raises QueueFull; None: no bound
    policy: Policy = "fcfs"  # fcfs | shortest_first (Seer's predicted remaining work, with aging)
    aging: float = 16.0  # shortest_first: a row's priority halves every `aging` ticks it waits
    buckets: tuple[int, ...] | None = None  # window buckets; None: 8, 16, 32, ... up to gen_length
    tau_pad: float = 0.4  # padding-waste ratio above which a group is packed (varlen)
    eager_bucket: int = 4  # groups whose bucket is <= this run eagerly, unpadded
    min_group: int = 4  # bucket groups smaller than this merge with the next larger bucket
    routing: str = "hybrid"  # hybrid | naive (pad all to the longest) | static | varlen | eager
    pack_capacity: int = 256  # varlen: slots per packed row (raised to fit the longest segment)
    prompt_align: int = 8  # static: prompt width rounded up to a multiple (fewer graph shapes)
    cuda_graphs: bool = True  # static path on CUDA: capture and replay graphs per shape
    kernel: str | None = None  # compaction backend: None (auto) | "reference" | "triton"
    # every row in a forward of its own, at its solo layout: answers bit for bit their solo runs
    # in any dtype (batched forwards sum in another order), at the cost of batching
    batch_invariant: bool = False

    def __post_init__(self) -> None:
        if self.routing not in ROUTINGS:
            raise SeerError(f"unknown routing {self.routing!r}; choose {', '.join(ROUTINGS)}")
        if self.policy not in POLICIES:
            raise SeerError(f"unknown policy {self.policy!r}; choose {', '.join(POLICIES)}")
        if not 0 <= self.tau_pad <= 1:
            raise SeerError(f"tau_pad must be in [0, 1], got {self.tau_pad}")
        if min(self.max_batch, self.min_group, self.pack_capacity, self.prompt_align) < 1:
            raise SeerError("max_batch, min_group, pack_capacity and prompt_align must be >= 1")
        if self.max_tokens_per_step is not None and self.max_tokens_per_step < 1:
            raise SeerError("max_tokens_per_step must be >= 1 (or None for no budget)")
        if self.max_queue is not None and self.max_queue < 1:
            raise SeerError(f"max_queue must be >= 1 (or None for no bound), got {self.max_queue}")
        if self.aging <= 0:
            raise SeerError(f"aging must be > 0 ticks, got {self.aging}")
        if self.buckets is not None and (
            not self.buckets or list(self.buckets) != sorted(set(self.buckets))
            or self.buckets[0] < 1
        ):  # fmt: skip
            raise SeerError(f"buckets must be increasing positive sizes, got {self.buckets}")
        if self.kernel not in (None, "reference", "triton"):
            raise SeerError(f"kernel must be None, 'reference' or 'triton', got {self.kernel!r}")
        if self.batch_invariant and self.routing not in ("hybrid", "eager"):
            raise SeerError(
                f"batch_invariant runs every row alone (eager); it cannot take routing "
                f"{self.routing!r}: leave routing at 'hybrid'"
            )
        if self.kernel == "triton":
            extras.require("kernels", "kernel='triton'")
