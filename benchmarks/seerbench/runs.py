"""A benchmark run, the same in every script of `benchmarks/`: one set of shared arguments, one
timer, one warm-up, one machine description and one record schema, written to one folder.

A script builds its own parser, adds the shared arguments (`add_arguments`: --n, --seed,
--data, --repeats, --threads, --out), opens a `Session` (which sets the threads and starts the
clock), measures with `Timer` after `warm` has run every code path its configs use once, and
ends with `Session.finish(results, ...)`: the record below, printed as the last line of output
(the one line a caller parses) and, with --out, written to ``<out>/<bench>-<tag>.json``. The
published records live in `RESULTS` (docs/results/<bench>/).

The record (`SCHEMA`): bench, model, source, n, seed, repeats, threads, machine (`machine_info`:
platform, processor, cpus, torch, python, threads), settings (every argument), results (the
script's own), wall_seconds; a script may add keys beside them, never rename these.

Timing: `Timer` reads the wall clock (`time.perf_counter`) and the process's CPU time
(`time.process_time`) together. The machines we publish from are shared: the CPU time is the
figure another process's load inflates *less* (it does not count the time the process waits
for a core), the wall time the one a user waits. Load still changes CPU time, as measured: the
same batch-32 work measured 9-10 % apart in CPU time at two moments of one run (ParallelBench's
128-step baseline over 400 items, 1349.7 s and then 1212.7 s in a later pass, −10.2 %; the
sweep's two batch-32 processes side by side, the baselines' CPU time in one 0.915× that in the
other) — caches, memory bandwidth and clock frequency are shared with the other jobs. So a ratio
compares configs timed in one pass of one process, interleaved; at batch 32 no ratio is given
across passes or processes, scaled or not (`compare._mark_processes`,
`compare_report.one_clock_b32`).
Repeats are interleaved (`rounds`): every config runs once per round, so a slow moment of the
machine hits every config alike; intervals then cover requests *and* repeats
(`seerbench.stats.bootstrap_ratio`). `rounds(..., rotate=True)` also rotates the order by round
(batch 32 of `seerbench.compare` uses it), so a drift within a round does not always fall on the
same config.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import torch

from seerbench.machine import machine_info

RESULTS = Path("docs") / "results"  # the published records, from the repository root
SCHEMA = (
    "bench",
    "model",
    "source",
    "n",
    "seed",
    "repeats",
    "threads",
    "machine",
    "settings",
    "results",
    "wall_seconds",
)
SHARED = ("n", "seed", "data", "repeats", "threads", "out")
T = TypeVar("T")


def positive(text: str) -> int:
    """argparse type: an integer >= 1 (one line on anything else)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_arguments(
    ap: argparse.ArgumentParser,
    *,
    n: int | None = None,
    seed: int = 0,
    repeats: int = 3,
    data: str | None = None,
    threads: int = 1,
    skip: Sequence[str] = (),
    help: Mapping[str, str] | None = None,
) -> argparse.ArgumentParser:
    """The shared arguments, with this script's defaults; `skip` leaves out those a script has
    no use for (a model-free benchmark takes no --data), `help` overrides their help lines."""
    unknown = set(skip) - set(SHARED)
    if unknown:
        raise ValueError(f"no shared argument named {', '.join(sorted(unknown))}")
    h = {
        "n": "requests (unique, held out)",
        "seed": "seed of the draw and of every sampler",
        "data": "data source: a built-in model's task (builtin, builtin-vqa, builtin-v1, "
        "builtin-vqa-v1), a file, or parallelbench:ROOT/TASK (default: the model's built-in task)",
        "repeats": "timing repeats, interleaved across configs",
        "threads": "torch CPU threads",
        "out": f"also write the record to this folder (the published ones: {RESULTS}/<bench>/)",
        **(help or {}),
    }
    add = {
        "n": lambda: ap.add_argument("--n", type=positive, default=n, help=h["n"]),
        "seed": lambda: ap.add_argument("--seed", type=int, default=seed, help=h["seed"]),
        "data": lambda: ap.add_argument("--data", default=data, help=h["data"]),
        "repeats": lambda: ap.add_argument(
            "--repeats", type=positive, default=repeats, help=h["repeats"]
        ),
        "threads": lambda: ap.add_argument(
            "--threads", type=positive, default=threads, help=h["threads"]
        ),
        "out": lambda: ap.add_argument("--out", type=Path, default=None, help=h["out"]),
    }
    for name in SHARED:
        if name not in skip:
            add[name]()
    return ap


@dataclass(slots=True)
class Timer:
    """`with Timer() as t: ...` -> t.wall, t.cpu (seconds): the wall clock and this process's
    CPU time over the block."""

    wall: float = 0.0  # seconds, time.perf_counter
    cpu: float = 0.0  # seconds, time.process_time (all threads of this process)
    _start: tuple[float, float] = (0.0, 0.0)

    def __enter__(self) -> Timer:
        self._start = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self._start[0]
        self.cpu = time.process_time() - self._start[1]


def timed(fn: Callable, *args, **kwargs) -> tuple[object, Timer]:
    """fn(*args, **kwargs) and its `Timer`."""
    with Timer() as t:
        value = fn(*args, **kwargs)
    return value, t


def rounds(cases: Sequence[T], repeats: int, rotate: bool = False) -> Iterator[tuple[int, T]]:
    """(repeat, case) in interleaved order: every case once per round, `repeats` rounds. With
    `rotate`, round r runs the cases in `round_order(cases, r, repeats)`, so no case is always
    first or last in its round (a drift within a round is then spread over the cases)."""
    for r in range(repeats):
        for case in round_order(cases, r, repeats) if rotate else cases:
            yield r, case


def round_order(cases: Sequence[T], r: int, repeats: int) -> list[T]:
    """Round r's order under `rounds(..., rotate=True)`: `cases` rotated left by r * n // repeats
    (n cases), so over the rounds each case's place moves evenly through the round (3 rounds of
    15: places 0, 10, 5 for the first case) rather than one step a round."""
    n = len(cases)
    k = (r * n // max(repeats, 1)) % n if n else 0
    return [*cases[k:], *cases[:k]]


def warm(run: Callable[[object], object], cases: Iterable) -> int:
    """Run every case once, untimed, before any timing: each code path a config uses (a cache
    policy, the threshold rule, DAEDAL's growing window, DPad's dropped suffix, Seer's cut
    windows, the engine's grouping) pays its first-call costs here. Returns the calls made."""
    k = 0
    for case in cases:
        run(case)
        k += 1
    return k


def warm_windows(lm, prompt, gen_length: int, bucket: int) -> int:
    """Every window shape Seer can cut to (multiples of `bucket` up to gen_length), once: one
    step each (a forward at that width pays the shape's first-call costs; `w` steps each would
    cost sum(w) forwards, 16,640 at 512 positions)."""
    k = 0
    for w in range(bucket, gen_length + 1, bucket):
        lm.generate(prompt, gen_length=w, steps=1)
        k += 1
    return k


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


@dataclass(slots=True)
class Session:
    """One benchmark run: its name, its parsed arguments and its clock."""

    bench: str  # the record's "bench" (the script's name without bench_)
    args: argparse.Namespace  # the parsed arguments (shared and the script's own)
    t0: float = field(default_factory=time.perf_counter)  # wall clock at the start

    def __post_init__(self) -> None:
        threads = getattr(self.args, "threads", None)
        if threads:
            torch.set_num_threads(threads)
        seed = getattr(self.args, "seed", None)
        torch.manual_seed(0 if seed is None else seed)

    def record(
        self,
        results,
        *,
        model: str | None = None,
        source: str | None = None,
        n: int | None = None,
        **extra,
    ) -> dict:
        """The record of `SCHEMA` (missing shared arguments are None), then `extra`."""
        a = self.args
        rec = {
            "bench": self.bench,
            "model": model if model is not None else getattr(a, "model", None),
            "source": source if source is not None else getattr(a, "data", None),
            "n": n if n is not None else getattr(a, "n", None),
            "seed": getattr(a, "seed", None),
            "repeats": getattr(a, "repeats", None),
            "threads": torch.get_num_threads(),
            "machine": machine_info(),
            "settings": _jsonable(vars(a)),
            "results": results,
            "wall_seconds": round(time.perf_counter() - self.t0, 2),
        }
        clash = set(extra) & set(SCHEMA)
        if clash:
            raise ValueError(f"record keys {sorted(clash)} belong to the schema")
        rec.update(extra)
        return rec

    def adopt(self, legacy: dict) -> dict:
        """A script's own dict (its `results` and any of model, source, n, beside its other
        keys) as a record of `SCHEMA`; the session's fields (machine, threads, seed, repeats,
        settings, wall time) replace the script's."""
        own = {"model", "source", "n"}
        rest = {k: v for k, v in legacy.items() if k not in SCHEMA and k != "torch"}
        kw = {k: legacy[k] for k in own if legacy.get(k) is not None}
        return self.record(legacy.get("results"), **kw, **rest)

    def emit(self, record: dict, tag: str | None = None) -> dict:
        """Write `record` under --out (when given) and print it as the last line of output."""
        out = getattr(self.args, "out", None)
        if out is not None:
            path = write(record, out, tag)
            print(f"[{self.bench}] wrote {path}", flush=True)
        print(json.dumps(record), flush=True)
        return record

    def finish(self, results, *, tag: str | None = None, **fields) -> dict:
        """`record(results, **fields)`, then `emit` it."""
        return self.emit(self.record(results, **fields), tag)


def tag(model, data: str | None = None) -> str:
    """A file-name tag of a model name or folder (the folder's name; `export` folders take their
    parent's, as checkpoints/builtin-vqa2/export -> builtin-vqa2), and of the data a run was
    given, if any (`--data`), so that a model's runs on other data do not overwrite its own:
    builtin + parallelbench:/x/ParallelBench/waiting_line/copy ->
    builtin-parallelbench-waiting_line-copy, builtin + /x/rows.jsonl -> builtin-rows."""
    if model is None:
        return "all"
    p = Path(str(model))
    name = p.parent.name if p.name == "export" and p.parent.name else p.name
    if data and str(data) != str(model):  # `--model builtin --data builtin` is the model's own
        from seer.data.parallelbench import is_parallelbench, label

        if is_parallelbench(data):  # its task selector (ROOT is the machine's, not the data's)
            selector = label(data)
            name += "-parallelbench" + (f"-{selector.replace('/', '-')}" if selector else "")
        else:
            name += f"-{Path(str(data)).stem}"
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "model"


def write(record: dict, folder: str | Path, name: str | None = None) -> Path:
    """`<folder>/<bench>-<name>.json` (indented; `name` defaults to the `tag` of the record's
    model and `--data`); returns the path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = (record.get("settings") or {}).get("data")
    path = folder / f"{record['bench']}-{name or tag(record.get('model'), data)}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def read(path: str | Path) -> dict:
    """A written record, or the last line of a script's output saved to a file."""
    text = Path(path).read_text().strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(text.splitlines()[-1])


def read_bench(path: str | Path, bench: str) -> dict:
    """A record of benchmark `bench` (its "results" included), or one `SeerError` line."""
    from seer.errors import SeerError

    try:
        record = read(path)
    except (OSError, ValueError, IndexError) as e:
        raise SeerError(f"{path}: not a readable {bench} record ({e})") from None
    if not isinstance(record, dict) or record.get("bench") != bench or "results" not in record:
        raise SeerError(f"{path}: not a {bench} record (bench_{bench}'s JSON)")
    return record
