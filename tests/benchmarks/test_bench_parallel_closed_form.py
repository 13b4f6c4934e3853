"""benchmarks/bench_parallel_closed_form.py: the table, the record, the figure with another
model's points, and one clear line for a bad points file."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark


@pytest.fixture(scope="module")
def bench():
    with benchmark("bench_parallel_closed_form") as module:
        yield module


def test_a_run_with_another_models_points(bench, tmp_path, capsys):
    pts = tmp_path / "model.json"
    points = [
        {"task": "shuffle", "n": 4, "k": 2, "correct": 3, "total": 10},
        {"task": "copy", "n": 4, "k": 4, "correct": 9, "total": 10},
    ]
    pts.write_text(json.dumps({"label": "a trained model", "points": points}))
    out = tmp_path / "fig.png"
    argv = ["--n", "4", "--trials", "300", "--tasks", "shuffle", "copy", "--remasking", "random"]
    assert bench.main([*argv, "--points", str(pts), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    record = json.loads(text.strip().splitlines()[-1])
    assert record["within_4sigma"] is True
    got = {(r["task"], r["k"]): r for r in record["rows"]}
    assert set(got) == {(t, k) for t in ("shuffle", "copy") for k in (1, 2, 4)}
    assert got["shuffle", 2]["closed_form"] == pytest.approx(0.359375)  # (1/2)(1/2) + ... n = 4
    assert got["shuffle", 2]["steps"] == 2 and got["copy", 4]["accuracy"] == 1.0
    assert record["extra"]["a trained model"][0]["correct"] == 3
    assert out.stat().st_size > 10_000
    assert "every point within 4 standard errors of its closed form: yes" in text


def test_curves_keep_one_line_where_the_rules_agree(bench):
    curves = bench.closed_form_curves(6)
    rules = {("replace_random", "random"), ("replace_random", "low_confidence")}
    assert set(curves) == {("copy", "random"), ("shuffle", "random")} | rules
    assert [k for k, _ in curves["shuffle", "random"]] == [1, 2, 3, 6]


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "not a points file"),
        ('{"label": "x"}', "not a points file"),
        (
            '{"label": "x", "points": '
            '[{"task": "copy", "n": 4, "k": 1, "correct": 5, "total": 3}]}',
            "0 <= correct <= total",
        ),
    ],
)
def test_a_bad_points_file_is_one_line(bench, tmp_path, capsys, content, match):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert bench.main(["--n", "4", "--points", str(bad)]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_a_bad_list_length_is_one_line(bench, capsys):
    assert bench.main(["--n", "40"]) == 2
    assert "--n must be in 2..31" in capsys.readouterr().err
