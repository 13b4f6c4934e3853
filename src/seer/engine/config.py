"""`EngineConfig`: how the engine admits, schedules, groups and routes rows (per-request
options live in `SamplingParams` and the request's Seer config).

Each field declares its help, range and (for the ones users set) its CLI flag (`seer.spec`):
`seer serve`, `seer batch`, Ray and the harness read their flags and defaults from here, and
`__post_init__` checks every field against its spec; the rules between fields are code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from seer import extras
from seer.engine.pricing import AUTO, OFF, parse
from seer.errors import SeerError
from seer.spec import defaults, option, validate

ROUTINGS = ("hybrid", "naive", "static", "varlen", "eager")
Policy = Literal["fcfs", "shortest_first"]  # admission order (seer.engine.scheduler)
POLICIES: tuple[Policy, ...] = get_args(Policy)
# which rows may share a forward (seer.engine.engine)
GROUPINGS = ("layout", "policy-apart", "apart", "params")
# what the padding waste that routes a group counts (seer.engine.scheduler)
WASTES = ("window", "computed")
KERNELS = ("reference", "triton")  # compaction backends (seer.kernels.dispatch); None: auto
ENGINE = "engine"  # the CLI group of the engine's options


def _engine(default: Any, help: str, **kw: Any) -> Any:
    return option(default, help, group=ENGINE, **kw)


@dataclass(slots=True, frozen=True)
class EngineConfig:
    """Scheduling, batching and routing options, validated on construction."""

    # rows running at once (requests past their step 0); also `seer batch`'s rows per engine
    # and per Ray actor call, and the harness's batch_size
    max_batch: int = _engine(64, "rows per engine batch", lo=1, flag="--max-batch")
    # token budget per tick: rows x (prompt + window); None: no budget
    max_tokens_per_step: int | None = _engine(
        None,
        "token budget of one engine step",
        lo=1,
        none="no budget",
        flag="--max-tokens-per-step",
    )
    # waiting requests before `add` raises QueueFull (the server's 429); None: no bound
    max_queue: int | None = _engine(
        None,
        "waiting requests before 429 (default: unbounded)",
        lo=1,
        none="no bound",
        flag="--max-queue",
    )
    # fcfs | shortest_first (Seer's predicted remaining work, with aging)
    policy: str = _engine("fcfs", "admission order", choices=POLICIES, noun="policy")
    # shortest_first: a row's priority halves every `aging` ticks it waits
    aging: float = _engine(
        16.0,
        "shortest_first: ticks that halve a waiting row's priority",
        lo=0,
        open_lo=True,
        says="> 0 ticks",
    )
    # window buckets; None: 8, 16, 32, ... up to gen_length
    buckets: tuple[int, ...] | None = _engine(None, "window buckets (default: powers of 2)")
    tau_pad: float = _engine(
        0.4,
        "padding-waste ratio above which a group is packed (varlen)",
        lo=0,
        hi=1,
        flag="--tau-pad",
    )
    eager_bucket: int = _engine(4, "groups whose bucket is <= this run eagerly, unpadded", lo=0)
    min_group: int = _engine(4, "bucket groups smaller than this merge with the next", lo=1)
    # window: the paper's rho, over the answer windows only; computed: over the positions the
    # forward computes (prompt + window per row, the prompt left out where a KV cache reuses
    # it), and adjacent bucket groups merge while the merged group's waste stays <= tau_pad
    waste: str = _engine(
        "window",
        "padding waste over answer windows (the paper's) or computed positions (prompt + "
        "window; merges adjacent buckets within tau_pad)",
        choices=WASTES,
        noun="waste basis",
    )
    # auto: the GPU the engine runs on (its CUDA name, seer.roofline.hardware.profile_of), priced as
    # the served model; off on CPU, MPS, a GPU the simulator does not know or weights that are not
    # 16-bit (one log line: the roofline prices bf16 forwards).
    # none | off | None: off. A GPU profile of seer.roofline.hardware ("h100"), optionally
    # ":<model shape>" (seer.roofline.shapes.load_shape: "h100:llada-8b"; without it, the served
    # model's shape): under hybrid routing, walking the bucket groups upward, a group merges into
    # the next when one forward of both is predicted to take no longer than the two apart (each
    # laid out as it would run). Replaces the computed basis's tau_pad merge; the waste basis
    # still picks each group's path. The prices are the simulator's predictions (seer.roofline.cost
    # at the validated efficiencies: median error 28 % on batch-1 text, batched forwards
    # untested)
    merge_on: str | None = _engine(
        "auto",
        "merge adjacent bucket groups when one forward of both is predicted (seer.roofline) "
        "to cost no more than two: auto (the GPU found, as the served model in 16 bits; off "
        "on CPU, an unknown GPU or float32 weights), none, or GPU[:MODEL] (e.g. h100 or "
        "h100:llada-8b)",
        none="off",
        flag="--merge-on",
        metavar="auto|none|GPU[:MODEL]",
    )
    # hybrid | naive (pad all to the longest) | static | varlen | eager
    routing: str = _engine("hybrid", "how groups run", choices=ROUTINGS, noun="routing")
    pack_capacity: int = _engine(256, "varlen: slots per packed row (raised to fit)", lo=1)
    prompt_align: int = _engine(8, "static: prompt width rounded up to a multiple", lo=1)
    cuda_graphs: bool = _engine(True, "static path on CUDA: capture and replay graphs")
    # compaction backend: None (auto) | "reference" | "triton"
    kernel: str | None = _engine(
        None, "compaction backend", choices=KERNELS, noun="kernel", hint=" (or None: auto)"
    )
    # every row in a forward of its own, at its solo layout: answers bit for bit their solo runs
    # in any dtype (batched forwards sum in another order), at the cost of batching
    batch_invariant: bool = _engine(False, "every row in a forward of its own (bit-exact)")
    # layout: rows share a forward when they agree on what changes it (cache, guidance, suffix;
    # SamplingParams.layout_key), each with its own sampling options, and an arrival whose
    # step 0 is an ordinary forward (no window policy, or Seer cutting from its logits, no
    # probe) takes it in the running rows' forward; policy-apart: the same, but arrivals with a
    # window policy take their step 0 in a forward of their own (any window caps together);
    # apart: every arrival's step 0 is a forward of its kind (gen_length, window policy);
    # params: only rows with equal options and window policy share (the grouping before mixed
    # batching). policy-apart, apart and params are kept for comparisons
    grouping: str = _engine(
        "layout",
        "which rows may share a forward",
        choices=GROUPINGS,
        noun="grouping",
        flag="--grouping",
    )

    def __post_init__(self) -> None:
        validate(self)  # each field's type and declared range or choices
        if self.buckets is not None and (
            not self.buckets
            or list(self.buckets) != sorted(set(self.buckets))
            or self.buckets[0] < 1
        ):
            raise SeerError(f"buckets must be increasing positive sizes, got {self.buckets}")
        if self.batch_invariant and self.routing not in ("hybrid", "eager"):
            raise SeerError(
                f"batch_invariant runs every row alone (eager); it cannot take routing "
                f"{self.routing!r}: leave routing at 'hybrid'"
            )
        if self.merge_on is not None and self.merge_on.lower() not in (AUTO, *OFF):
            parse(self.merge_on)  # one line for a GPU or model shape it does not know
        if self.kernel == "triton":
            extras.require("kernels", "kernel='triton'")


DEFAULTS = defaults(EngineConfig)  # field -> its one default (every front end's)
