"""`seer.batch`: rows in input order, appended as they finish, one line each; a killed run
resumes without losing or repeating a row."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import seer
from seer import batch as batch_mod
from seer.batch import RowWriter, done_ids, family_scores, output_row, restore_order, run_batch
from seer.data import Example, load_examples, score
from seer.errors import SeerError
from seer.sampling import SamplingParams

P = SamplingParams(gen_length=16)
PB = Path(__file__).parent / "fixtures" / "parallelbench"  # a tiny fake ParallelBench checkout


@pytest.fixture(scope="module")
def lm():
    return seer.load("builtin-v1")


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rows_in_input_order_with_costs_and_the_answers_of_generate(lm, tmp_path):
    ex = load_examples("builtin-v1", n=10)
    out = tmp_path / "out.jsonl"
    summary = run_batch(lm, ex, out, params=P, seer=True, max_batch=4)
    rows = _rows(out)
    assert [r["id"] for r in rows] == [e.id for e in ex] and summary.rows == 10
    assert summary.tokens == sum(r["tokens"] for r in rows) > 0
    for e, r in zip(ex[:3], rows, strict=False):
        g = lm.generate(e.prompt, P, seer=True)
        assert (r["answer"], r["tokens"], r["window"]) == (g.text, g.stats.tokens, g.stats.window)
        assert r["detected"] == g.boundary.length and r["seconds"] > 0 and r["nfe"] >= 1
        assert r["reference"] == e.answer and r["exact_match"] == (g.text == e.answer)
    with pytest.raises(SeerError, match="exists; pass --resume"):
        run_batch(lm, ex, out, params=P)


def test_writer_writes_each_row_as_it_finishes_and_the_end_restores_input_order(tmp_path):
    out = tmp_path / "o.jsonl"
    w = RowWriter(out, ["a", "b", "c"])
    assert w.put({"id": "c"}) == 1 and w.put({"id": "b"}) == 1
    assert [r["id"] for r in _rows(out)] == ["c", "b"]  # on disk at once, nothing held back
    with pytest.raises(SeerError, match="already written"):
        w.put({"id": "c"})
    assert w.put({"id": "a"}) == 1
    w.close()
    restore_order(out, ["a", "b", "c"])
    assert [r["id"] for r in _rows(out)] == ["a", "b", "c"]
    assert not (tmp_path / "o.jsonl.tmp").exists()


def test_resume_drops_a_torn_line_and_refuses_foreign_output(lm, tmp_path):
    ex = load_examples("builtin-v1", n=6)
    out = tmp_path / "out.jsonl"
    run_batch(lm, ex[:3], out, params=P, max_batch=2)
    with out.open("a") as f:
        f.write('{"id": "3", "answ')  # a crash in the middle of a line
    summary = run_batch(lm, ex, out, params=P, resume=True, max_batch=2)
    assert (summary.skipped, summary.rows) == (3, 3)
    assert [r["id"] for r in _rows(out)] == [e.id for e in ex]
    with pytest.raises(SeerError, match="not in the data"):
        run_batch(lm, ex[:2], out, params=P, resume=True)
    (tmp_path / "junk.jsonl").write_text("hello\n")
    with pytest.raises(SeerError, match="junk.jsonl:1: not a seer batch output"):
        done_ids(tmp_path / "junk.jsonl")


def test_a_row_the_model_cannot_take_is_an_error_row_and_the_rest_are_answered(lm, tmp_path):
    chat = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "add 1 and 2"},
    ]
    rows = [
        Example("ok", "add 2 and 3"),
        Example("chat", "add 1 and 2", messages=chat),
        Example("long", "copy : " + "cat " * 600),
        Example("after", "add 4 and 1"),
    ]
    s = run_batch(lm, rows, tmp_path / "o.jsonl", params=P, max_batch=1, inflight=1)
    out = _rows(tmp_path / "o.jsonl")
    assert [r["id"] for r in out] == ["ok", "chat", "long", "after"] and s.failed == 1
    assert out[2]["finish_reason"] == "error" and "exceeds the model's context" in out[2]["error"]
    assert out[3]["answer"] == lm.generate("add 4 and 1", P).text  # the rest are answered
    with pytest.raises(SeerError, match="no row could be answered; row long: prompt of"):
        run_batch(lm, rows[2:3], tmp_path / "alone.jsonl", params=P)
    assert not (tmp_path / "alone.jsonl").exists()  # nothing left to trip the next run


def _slow_batch(lm, out, n):
    """Runs in a forked child: a batch slowed down so the parent can kill it mid-way."""
    slow = lambda rows, tokens: time.sleep(0.1)  # noqa: E731
    run_batch(lm, load_examples("builtin-v1", n=n), out, params=P, max_batch=2, progress=slow)


def test_killed_mid_way_then_resumed_every_id_exactly_once(lm, tmp_path):
    out, n = tmp_path / "out.jsonl", 16
    child = multiprocessing.get_context("fork").Process(target=_slow_batch, args=(lm, out, n))
    child.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.is_alive():
        if out.is_file() and out.read_text().count("\n") >= 4:
            break
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.join(timeout=30)
    assert child.exitcode == -signal.SIGKILL
    assert 4 <= out.read_text().count("\n") < n  # killed mid-way, not after the end
    summary = run_batch(lm, load_examples("builtin-v1", n=n), out, params=P, resume=True)
    assert summary.skipped >= 4 and summary.skipped + summary.rows == n
    ids = [r["id"] for r in _rows(out)]
    assert ids == [e.id for e in load_examples("builtin-v1", n=n)]  # each once, in input order
    fresh = tmp_path / "fresh.jsonl"
    run_batch(lm, load_examples("builtin-v1", n=n), fresh, params=P, max_batch=5)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(_rows(out)) == strip(_rows(fresh))  # resuming changes no answer


def _logged_cli_batch(argv, log):
    """Runs in a forked child: `seer batch ARGV`, each finished row's id appended (fsync'ed) to
    `log` the moment the engine hands it over, before the output is written."""
    from seer.cli import main

    os.environ["SEER_NO_PROGRESS"] = "1"
    real = batch_mod.output_row

    def finished(ex, res):
        with open(log, "a") as f:
            f.write(ex.id + "\n")
            f.flush()
            os.fsync(f.fileno())
        time.sleep(0.03)  # time for the parent to kill at any row
        return real(ex, res)

    batch_mod.output_row = finished
    os._exit(main(argv))


def _ids(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_batch_killed_at_random_points_loses_only_the_rows_in_flight(tmp_path, sig):
    """Seer on makes rows finish out of input order; each kill (at a seeded random row) may
    lose at most the one row between the engine and the file, then --resume completes the
    output: every id once, in input order."""
    import random

    n, rng = 20, random.Random(int(sig))
    out = tmp_path / "o.jsonl"
    argv = [
        "batch",
        "--model",
        "builtin-v1",
        "--data",
        "builtin-v1",
        "--n",
        str(n),
        "--out",
        str(out),
        "--gen-length",
        "16",
        "--seer",
        "--max-batch",
        "4",
    ]
    for round_ in range(2 if sig == signal.SIGKILL else 1):  # SIGKILL: kill a resume too
        log = tmp_path / f"finished{round_}.txt"
        before = _ids(out)
        kill_at = rng.randrange(3, (n - len(before)) // 2)
        child = multiprocessing.get_context("fork").Process(
            target=_logged_cli_batch, args=(argv + ["--resume"] * bool(round_), log)
        )
        child.start()
        deadline = time.monotonic() + 120
        while child.is_alive() and time.monotonic() < deadline:
            if log.is_file() and log.read_text().count("\n") >= kill_at:
                break
            time.sleep(0.005)
        os.kill(child.pid, sig)
        child.join(timeout=60)
        handed = log.read_text().count("\n") if log.is_file() else 0
        assert child.exitcode is not None and child.exitcode != 0, (  # killed, not finished
            f"round {round_}: exit {child.exitcode}, {handed} rows handed over, kill at {kill_at}"
        )
        finished, written = log.read_text().split(), _ids(out)
        assert len(written) == len(set(written))  # no row twice, no torn line
        assert out.read_text().endswith("\n")
        lost = set(finished) - set(written)
        assert len(lost) <= 1, f"finished rows lost by {sig!r}: {sorted(lost)}"
        assert set(before) <= set(written) and len(written) < n
    from seer.cli import main

    assert main([*argv, "--resume"]) == 0
    assert _ids(out) == [e.id for e in load_examples("builtin-v1", n=n)]


def test_seer_batch_command_writes_resumes_and_reports_bad_rows_in_one_line(tmp_path, capsys):
    from seer.cli import main

    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"r{i}", "prompt": f"add {i} and 2"}) + "\n" for i in range(5))
    )
    out = tmp_path / "o.jsonl"
    argv = [
        "batch",
        "--model",
        "builtin-v1",
        "--data",
        str(data),
        "--out",
        str(out),
        "--gen-length",
        "16",
        "--seer",
        "--max-batch",
        "2",
    ]
    assert main([*argv, "--n", "3"]) == 0
    assert "3 rows (0 already in" in capsys.readouterr().err
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1  # "exists; pass --resume": one line
    assert main([*argv, "--resume"]) == 0
    assert "2 rows (3 already in" in capsys.readouterr().err
    assert [r["id"] for r in _rows(out)] == [f"r{i}" for i in range(5)]
    assert all(r["detected"] is not None for r in _rows(out))  # --seer reached the engine
    with data.open("a") as f:
        f.write('{"id": "r9", "prompt": "x", "image": "nope.png"}\n')
    assert main([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"seer: error: {data}:6: field 'image': 'nope.png' is not a file (relative "
        "paths start at the data file)\n"
    )
    assert main([*argv, "--resume", "--ray-address", "auto"]) == 2
    assert "--ray-address needs --ray" in capsys.readouterr().err


def _result(text: str):
    return SimpleNamespace(
        text=text,
        tokens=1,
        token_ids=[0],
        window=8,
        detected=None,
        seconds=0.0,
        nfe=1,
        finish_reason="stop",
        boundary=None,
        hit_window=False,
        grown=0,
    )


def test_a_row_carries_its_family_and_its_tasks_score():
    examples = load_examples(f"parallelbench:{PB}")
    for ex in examples:
        right, wrong = output_row(ex, _result(ex.answer)), output_row(ex, _result("[]"))
        assert right["family"] == wrong["family"] == ex.family
        if ex.family == "words_to_sentence/easy":  # needs a grammar checker: no score
            assert "score" not in right and "score" not in wrong
        else:
            assert (right["score"], wrong["score"]) == (1.0, 0.0)
    plain = output_row(Example("p", "add 1 and 2"), _result("3"))
    assert not {"family", "score", "reference", "exact_match"} & set(plain)


def test_family_scores_per_family_then_all():
    ex = [
        Example("a", "x", answer="1", family="f"),
        Example("b", "y", answer="1", family="f"),
        Example("c", "z", family="g"),
        Example("d", "w", answer="2"),
    ]
    rows = [
        {"id": "a", "score": 1.0},
        {"id": "b", "score": 0.0},
        {"id": "c"},
        {"id": "d", "score": 1.0},
        {"id": "zz", "score": 1.0},
    ]
    got = [(s.family, s.rows, s.scored, s.mean) for s in family_scores(ex, rows)]
    assert got == [("f", 2, 2, 0.5), ("g", 1, 0, None), ("-", 1, 1, 1.0), ("all", 4, 3, 2 / 3)]


def test_seer_batch_on_parallelbench_scores_rows_and_prints_a_table_per_task(lm, tmp_path, capsys):
    from seer.cli import main

    out = tmp_path / "pb.jsonl"
    argv = [
        "batch",
        "--model",
        "builtin-v1",
        "--data",
        f"parallelbench:{PB}",
        "--out",
        str(out),
        "--gen-length",
        "8",
        "--max-batch",
        "4",
    ]
    assert main([*argv, "--n", "6"]) == 0
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0  # the table covers the resumed rows too
    err = capsys.readouterr().err
    examples = {e.id: e for e in load_examples(f"parallelbench:{PB}")}
    rows = _rows(out)
    assert [r["id"] for r in rows] == list(examples)
    for r in rows:
        ex = examples[r["id"]]
        assert r.get("score") == (
            None if ex.metric == "sentence_to_words_score" else score(ex, r["answer"])
        )
    mean = sum(r.get("score", 0) for r in rows) / 9
    lines = {line.split()[0]: line.split()[1:] for line in err.splitlines() if line.strip()}
    assert lines["waiting_line/copy"][:2] == ["3", "3"]
    assert lines["words_to_sentence/easy"][:3] == ["1", "0", "-"]
    assert lines["all"] == ["10", "9", f"{mean:.3f}"]
    assert "words_to_sentence/easy: not scored: metric sentence_to_words_score is left out" in err


def test_the_shipped_text_model_answers_parallelbench_as_the_readme_runs_it(tmp_path, capsys):
    """`seer batch --model builtin --data parallelbench:ROOT/waiting_line/copy --out F` with the
    model's own defaults (the 128 window, one token per step): every row answered and scored by
    the official metric."""
    from seer.cli import main

    out = tmp_path / "copy.jsonl"
    task = f"parallelbench:{PB}/waiting_line/copy"
    assert main(["batch", "--model", "builtin", "--data", task, "--out", str(out), "-q"]) == 0
    examples = load_examples(task)
    rows = _rows(out)
    assert [r["id"] for r in rows] == [e.id for e in examples]
    for ex, r in zip(examples, rows, strict=True):
        assert r["window"] == 128 and r["nfe"] == 128
        assert r["score"] == score(ex, r["answer"])
    assert "waiting_line/copy" in capsys.readouterr().err
