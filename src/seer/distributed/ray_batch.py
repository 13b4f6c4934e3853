"""`seer batch --ray N` / `seer.distributed.batch(...)`: the same rows as `seer batch`, answered
by N Ray actors.

Design
------
The driver reads and checks the dataset with `seer.data` (one pass, the same errors as
`seer batch`) and hands the rows to Ray Data as a dataset of (row index, example as JSON) items;
images that are not files travel as PNG data URIs (lossless: the model sees the same pixels).
`Dataset.map_batches` runs `SeerActor` on an actor pool of N actors: each actor loads the model
once (``num_gpus=1`` per actor on a GPU cluster, one CPU and `threads` torch threads otherwise)
and answers each batch of rows with one `Engine` through the same code path as `seer batch`
(`seer.batch.answers` and `output_row`), returning one JSON output line per row. The driver
streams the finished rows back (`iter_rows`) and writes them with `seer.batch.RowWriter`,
so a ``.jsonl`` output is appended as rows finish, put in input order at the end
(`seer.batch.restore_order`) and resumable exactly like `seer batch`'s; a ``.parquet`` output
is written once, sorted, at the end. Either carries the run's record (`seer.provenance`,
resolved in the driver from the model folder without loading its weights): the ``.meta.json``
sidecar, and for Parquet the schema metadata too.

Faults: Ray Data runs actor pools with ``max_restarts=-1`` and ``max_task_retries=-1`` (its
defaults, so they are not passed again through the deprecated ``ray_remote_args``; the
killed-actor test fails if a Ray release changes them): an actor that dies is restarted (the
model is loaded again) and the batch it held is run again. A batch's rows reach the driver only
when the whole batch finished, so a killed actor's rows are neither lost nor written twice; the
writer also refuses a repeated id.

Cluster: `address` joins a running cluster (``ray.init(address=...)``, e.g. ``auto`` or
``ray://head:10001``); with none, a local one is started for the call (`num_cpus`, the
dashboard off, usage reporting off, every process on 127.0.0.1: `_local_env`) and shut down
after it.
"""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from seer import extras, provenance
from seer.batch import RowWriter, check_output, check_paths, output_row, restore_order
from seer.data import Example
from seer.engine.config import DEFAULTS as ENGINE
from seer.errors import SeerError


@dataclass(slots=True)
class RaySummary:
    """What one distributed batch did."""

    rows: int  # rows answered by this call
    skipped: int  # rows already in the output (resume)
    tokens: int  # answer tokens generated
    seconds: float  # wall time from submitting the dataset to the last row written
    actors: int  # actor pool size
    actor_seconds: float = 0.0  # time the actors spent answering (summed; model loads excluded)


def _encode(ex: Example) -> str:
    """An example as JSON for the wire (a PIL image as a lossless PNG data URI)."""
    d = asdict(ex)
    if ex.image is not None and not isinstance(ex.image, str):
        buf = io.BytesIO()
        ex.image.save(buf, format="PNG")
        d["image"] = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    return json.dumps(d)


class SeerActor:
    """Ray Data callable class: one model and one engine per actor, loaded once."""

    def __init__(
        self,
        model,
        sampling: dict,
        seer,
        max_batch: int,
        device: str,
        threads: int,
        dtype: str | None = None,
        fault: str | None = None,
    ) -> None:
        import torch

        import seer as seer_pkg

        torch.set_num_threads(threads)
        self.lm = seer_pkg.load(model, device=device, dtype=dtype)
        self.params = self.lm.sampling(**sampling)
        self.seer, self.max_batch = seer, max_batch
        self.fault = fault  # tests: a marker file; the first call that creates it kills us

    def __call__(self, batch: dict) -> dict:
        from seer.batch import answers

        if self.fault and _claim(self.fault):
            os.kill(os.getpid(), signal.SIGKILL)  # a hard crash mid-batch, as a test wants
        t0 = time.perf_counter()
        index = [int(i) for i in batch["index"]]
        examples = [Example(**json.loads(s)) for s in batch["example"]]
        lines = {}
        for ex, res in answers(self.lm, examples, self.params, self.seer, self.max_batch):
            lines[ex.id] = json.dumps(output_row(ex, res), ensure_ascii=False)
        busy = (time.perf_counter() - t0) / len(examples)  # the batch's time, shared per row
        return {
            "index": index,
            "row": [lines[ex.id] for ex in examples],
            "busy": [busy] * len(examples),
        }


def _claim(marker: str) -> bool:
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def batch(
    model: str | Path,
    examples: list[Example],
    out: str | Path,
    *,
    actors: int = 2,
    sampling: dict | None = None,
    seer=None,
    resume: bool = False,
    max_batch: int = ENGINE["max_batch"],
    address: str | None = None,
    num_cpus: int | None = None,
    gpus_per_actor: float = 0,
    device: str = "cpu",
    dtype: str | None = None,
    threads: int = 1,
    progress=None,
    data: str | Path | None = None,
    _fault: str | None = None,
) -> RaySummary:
    """Answer `examples` with `actors` Ray actors; rows as `seer.batch.run_batch` writes them.

    `model`: a folder reachable from every node (or a built-in model's name), loaded with
    `device` / `dtype` and `threads` torch threads per actor; `sampling`: options
    for `lm.sampling(**sampling)`; `max_batch`: rows per actor call and engine batch;
    `progress(rows, tokens)` as rows arrive; `data`: the examples' source, recorded with the
    run as `seer batch` records it (`seer.provenance`). See the module docstring for the
    cluster options."""
    extras.require("ray", "seer batch --ray")
    if not address:
        _local_env()
    import ray

    if actors < 1:
        raise SeerError(f"actors must be >= 1, got {actors}")
    out = Path(out)
    check_paths(out, data, parquet=True)
    parquet = out.suffix.lower() == ".parquet"
    if resume and parquet:
        raise SeerError("--resume needs a .jsonl output (a Parquet file is written at the end)")
    done = check_output(out, examples, resume)
    record = _record(model, out, sampling or {}, seer, resume, len(done), dtype, device, data)
    todo = [(i, ex) for i, ex in enumerate(examples) if ex.id not in done]
    started = _connect(ray, address, num_cpus or max(2, actors))
    try:
        t0 = time.perf_counter()
        load = dict(model=str(model), device=device, dtype=dtype, threads=threads)
        rows, busy = _run(
            ray,
            load,
            todo,
            out,
            parquet,
            actors,
            sampling or {},
            seer,
            max_batch,
            gpus_per_actor,
            progress,
            _fault,
            record,
        )
        seconds = time.perf_counter() - t0
    finally:
        if started:
            ray.shutdown()
    if not parquet:
        restore_order(out, [ex.id for ex in examples])
    tokens = sum(r["tokens"] for r in rows)
    return RaySummary(len(todo), len(done), tokens, seconds, actors, busy)


def _record(model, out, sampling, seer, resume, done, dtype, device, data) -> dict:
    """The run's record (`seer.provenance`), resolved as the actors will resolve it: the
    model's defaults read from its folder without its weights. Checked against the output's
    record on resume, and written before any row."""
    old = provenance.read(out) if resume else None
    record = provenance.unloaded_record(model, sampling, seer, dtype, device, data, known=old)
    return provenance.start(out, record, old, done)


def _connect(ray, address: str | None, num_cpus: int) -> bool:
    """Join `address`, or start a local loopback cluster. True when this call started one."""
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
        return False
    ray.init(
        num_cpus=num_cpus, include_dashboard=False, logging_level="WARNING", log_to_driver=False
    )
    return True


def _local_env() -> None:
    """Ray settings for a local cluster, read when ray is first imported (so set before): no
    usage reporting, and every Ray process bound to 127.0.0.1 (Ray otherwise resolves even
    ``_node_ip_address="127.0.0.1"`` to the machine's routable address on Linux)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def _run(
    ray, load, todo, out, parquet, actors, sampling, seer, max_batch, gpus, progress, fault, record
) -> tuple[list[dict], float]:
    if not todo:
        return [], 0.0
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    items = [{"index": i, "example": _encode(ex)} for i, ex in todo]
    ds = ray.data.from_items(items, override_num_blocks=max(1, -(-len(items) // max_batch)))
    kwargs = {"num_gpus": gpus} if gpus else {"num_cpus": 1}
    ds = ds.map_batches(
        SeerActor,
        batch_size=max_batch,
        compute=ray.data.ActorPoolStrategy(size=actors),
        fn_constructor_kwargs=dict(
            **load, sampling=sampling, seer=seer, max_batch=max_batch, fault=fault
        ),
        **kwargs,
    )
    order = [ex.id for _, ex in todo]
    rows: list[dict] = []
    busy = 0.0
    writer = None if parquet else RowWriter(out, order, provenance.settings_hash(record))
    try:
        for item in ds.iter_rows():
            busy += float(item["busy"])
            row = json.loads(item["row"])
            rows.append(row)
            if writer is not None:
                writer.put(row)
            if progress is not None:
                progress(1, row["tokens"])
    finally:
        if writer is not None:
            writer.close()
    if len(rows) != len(order) or {r["id"] for r in rows} != set(order):
        raise SeerError(f"Ray returned {len(rows)} rows for {len(order)} inputs")  # a Ray bug
    if parquet:
        position = {k: i for i, k in enumerate(order)}
        _write_parquet(out, sorted(rows, key=lambda r: position[r["id"]]), record)
    return rows, busy


def _write_parquet(out: Path, rows: list[dict], record: dict) -> None:
    """The rows as one Parquet table, each with the run's settings hash as a JSON Lines row
    has it; the run's record also in its schema metadata ("seer")."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.parent.mkdir(parents=True, exist_ok=True)
    stamp = {provenance.ROW_KEY: provenance.settings_hash(record)}
    table = pa.Table.from_pylist([{**row, **stamp} for row in rows])
    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), b"seer": json.dumps(record).encode()}
    )
    pq.write_table(table, out)
