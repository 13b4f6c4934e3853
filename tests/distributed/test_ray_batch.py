"""`seer batch --ray`: the same rows as the single-process batch, from Ray actors on a local
loopback cluster, and no row lost or repeated when an actor is killed mid-batch.

Bounded: one 2-CPU cluster for the module, a few rows of the built-in model, and an alarm that
fails a test (and the fixture then shuts Ray down) if it runs past its deadline."""

from __future__ import annotations

import contextlib
import json
import signal

import pytest

ray = pytest.importorskip("ray")

from seer import provenance  # noqa: E402
from seer.batch import run_batch  # noqa: E402
from seer.data import load_examples  # noqa: E402
from seer.distributed import batch  # noqa: E402

GEN = 16
DEADLINE = 240  # seconds per test: actor start-up dominates on a busy 2-core machine


@pytest.fixture(scope="module")
def cluster():
    from seer.distributed.ray_batch import _local_env

    _local_env()  # loopback only, no usage reporting (effective when ray is first imported)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@contextlib.contextmanager
def deadline(seconds: int):
    def fail(*_):
        raise TimeoutError(f"the Ray test ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _strip(rows, group=("seconds",)):
    """Rows without the fields of the engine group a row ran in (time; NFE too when the
    batches differ)."""
    return [{k: v for k, v in r.items() if k not in group} for r in rows]


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The single-process `seer batch` rows of the first 9 built-in requests, with Seer."""
    import seer

    out = tmp_path_factory.mktemp("single") / "out.jsonl"
    lm = seer.load("builtin-v1")
    run_batch(
        lm,
        load_examples("builtin-v1", n=9),
        out,
        params=lm.sampling(gen_length=GEN),
        seer=True,
        max_batch=3,
    )
    return _rows(out)


def test_two_actors_one_killed_every_row_once_with_the_single_process_answers(
    cluster, single, tmp_path
):
    out, marker = tmp_path / "out.jsonl", tmp_path / "killed"
    with deadline(DEADLINE):
        s = batch(
            "builtin-v1",
            load_examples("builtin-v1", n=9),
            out,
            actors=2,
            sampling={"gen_length": GEN},
            seer=True,
            max_batch=3,
            _fault=str(marker),
        )
    assert marker.exists()  # an actor did SIGKILL itself while holding a batch
    assert (s.rows, s.skipped, s.actors) == (9, 0, 2)
    assert _strip(_rows(out)) == _strip(single)  # every id once, in input order, same answers


def test_seer_batch_ray_command_writes_parquet_in_input_order(cluster, single, tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    from seer.cli import main

    out = tmp_path / "out.parquet"
    argv = [
        "batch",
        "--model",
        "builtin-v1",
        "--data",
        "builtin-v1",
        "--n",
        "5",
        "--out",
        str(out),
        "--ray",
        "1",
        "--seer",
        "--gen-length",
        str(GEN),
        "--max-batch",
        "3",
    ]
    with deadline(DEADLINE):
        assert main(argv) == 0
    err = capsys.readouterr().err
    assert "5 rows (0 already in" in err and "mean score" in err  # the per-family table
    group = ("seconds", "nfe")  # 5 rows in batches of 3 group rows 3-4 apart from row 5
    table = pq.read_table(out)
    # (the settings hash too: this run records its data source, the fixture's none)
    group = (*group, "settings")
    assert _strip(table.to_pylist(), group) == _strip(single[:5], group)
    assert all(r["score"] == float(r["exact_match"]) for r in table.to_pylist())  # exact match
    record = json.loads(table.schema.metadata[b"seer"])  # the run's record, in the file too
    assert record == json.loads(out.with_name("out.parquet.meta.json").read_text())
    assert set(table.column("settings").to_pylist()) == {provenance.settings_hash(record)}
    assert record["seer"]["enabled"] and record["sampling"]["gen_length"] == GEN


def test_a_ray_resume_with_other_settings_is_refused(tmp_path):
    """The driver checks the output's record (written here by the single-process batch)
    before any actor starts."""
    import seer
    from seer.errors import SeerError

    out = tmp_path / "out.jsonl"
    lm = seer.load("builtin-v1")
    ex = load_examples("builtin-v1", n=3)
    run_batch(lm, ex[:1], out, params=lm.sampling(gen_length=GEN), data="builtin-v1")
    with pytest.raises(SeerError, match="seer.enabled=false, this run has seer.enabled=true"):
        batch(
            "builtin-v1",
            ex,
            out,
            sampling={"gen_length": GEN},
            seer=True,
            resume=True,
            data="builtin-v1",
        )
    assert len(out.read_text().splitlines()) == 1
