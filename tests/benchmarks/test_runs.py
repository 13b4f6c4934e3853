"""seerbench.runs: the shared arguments, the timer, interleaved rounds, the warm-up and the
one record schema written to one folder."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from seerbench import runs


def parse(argv, **kw):
    return runs.add_arguments(argparse.ArgumentParser(), **kw).parse_args(argv)


def test_shared_arguments_with_a_script_s_defaults_and_skips():
    a = parse([], n=7, repeats=2, seed=3)
    assert (a.n, a.repeats, a.seed, a.threads, a.data, a.out) == (7, 2, 3, 1, None, None)
    a = parse(["--n", "4", "--threads", "2", "--out", "x", "--data", "builtin-v2"])
    assert (a.n, a.threads, str(a.out), a.data) == (4, 2, "x", "builtin-v2")
    assert not hasattr(parse([], skip=("data", "n")), "data")
    with pytest.raises(SystemExit):
        parse(["--repeats", "0"])
    with pytest.raises(ValueError, match="no shared argument"):
        parse([], skip=("nope",))


def test_bad_counts_get_one_line(capsys):
    with pytest.raises(SystemExit):
        parse(["--n", "many"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "expected an integer, got 'many'" in err


def test_timer_reads_wall_and_cpu_time():
    with runs.Timer() as t:
        sum(i * i for i in range(20_000))
    assert t.wall > 0 and t.cpu > 0
    value, t2 = runs.timed(lambda x: x + 1, 1)
    assert value == 2 and t2.wall >= 0


def test_rounds_interleave_and_warm_runs_every_case_once():
    assert list(runs.rounds(["a", "b"], 2)) == [(0, "a"), (0, "b"), (1, "a"), (1, "b")]
    seen = []
    assert runs.warm(seen.append, ["x", "y", "z"]) == 3 and seen == ["x", "y", "z"]


def test_rotated_rounds_move_every_case_through_the_round():
    """With `rotate`, no round repeats another's order and each case runs in every round once;
    over 3 rounds of 6 the first case runs first, then in the middle, then late."""
    cases = list("abcdef")
    got = list(runs.rounds(cases, 3, rotate=True))
    orders = [[c for r, c in got if r == k] for k in range(3)]
    assert all(sorted(o) == cases for o in orders)
    assert len({tuple(o) for o in orders}) == 3
    assert [o.index("a") for o in orders] == [0, 4, 2]
    assert orders == [runs.round_order(cases, k, 3) for k in range(3)]
    assert runs.round_order([], 0, 3) == [] and runs.round_order(cases, 0, 1) == cases


def test_warm_windows_calls_every_bucket_shape():
    calls = []

    class LM:
        def generate(self, prompt, **kw):
            calls.append((kw["gen_length"], kw["steps"]))

    # one forward per shape: the shape's first-call costs, not a whole answer at every width
    assert runs.warm_windows(LM(), "q", 64, 16) == 4
    assert calls == [(16, 1), (32, 1), (48, 1), (64, 1)]


def test_one_record_schema_printed_last_and_written_to_the_folder(tmp_path, capsys):
    args = parse(["--n", "3", "--threads", "1", "--out", str(tmp_path / "res")], n=5)
    args.model = "/work/runs/builtin-v2/export"
    s = runs.Session("demo", args)
    assert torch.get_num_threads() == 1
    rec = s.finish({"x": 1}, extra_key="kept")
    assert list(rec)[: len(runs.SCHEMA)] == list(runs.SCHEMA)
    assert rec["bench"] == "demo" and rec["n"] == 3 and rec["results"] == {"x": 1}
    assert rec["extra_key"] == "kept" and rec["machine"]["cpus"] >= 1
    assert rec["settings"]["out"] == str(tmp_path / "res")
    out = capsys.readouterr().out.strip().splitlines()
    assert json.loads(out[-1]) == rec
    path = tmp_path / "res" / "demo-builtin-v2.json"  # an export folder takes its run's name
    assert runs.read(path) == rec
    with pytest.raises(ValueError, match="belong to the schema"):
        s.record({}, machine="mine")


def test_tag_of_model_names():
    assert runs.tag("builtin-v1") == "builtin-v1"
    assert runs.tag("/a/b/builtin-vqa2/export") == "builtin-vqa2"
    assert runs.tag(None) == "all"
    assert runs.tag("a b") == "a_b"


def test_tag_names_the_data_a_run_was_given():
    from pathlib import Path

    root = Path(__file__).parents[1] / "fixtures" / "parallelbench"
    pb = "parallelbench:" + str(root)
    copy = runs.tag("builtin", pb + "/waiting_line/copy")
    assert copy == "builtin-parallelbench-waiting_line-copy"
    assert runs.tag("builtin", pb + "/waiting_line") == "builtin-parallelbench-waiting_line"
    assert runs.tag("builtin", pb) == "builtin-parallelbench"
    assert runs.tag("/r/x/export", "/data/rows.jsonl") == "x-rows"
    assert runs.tag("builtin", None) == "builtin"
    assert runs.tag("builtin", "builtin") == "builtin"  # its own task: no suffix
    # a record made on a machine with another checkout still gets a name
    assert runs.tag("builtin", "parallelbench:/gone/waiting_line/copy") == (
        "builtin-parallelbench-waiting_line-copy"
    )


def test_read_bench_is_one_line_for_anything_but_that_benchs_record(tmp_path):
    from seer.errors import SeerError

    good = tmp_path / "compare-x.json"
    good.write_text(json.dumps({"bench": "compare", "results": {}}))
    assert runs.read_bench(good, "compare")["bench"] == "compare"
    for text in ("", "not json", json.dumps({"bench": "loop", "results": {}}), "[1, 2]"):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(SeerError) as e:
            runs.read_bench(bad, "compare")
        assert "\n" not in str(e.value) and "compare record" in str(e.value)
    with pytest.raises(SeerError):
        runs.read_bench(tmp_path / "missing.json", "compare")
