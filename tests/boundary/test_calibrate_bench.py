"""`benchmarks/bench_seer.py` on image questions (a tiny random LaViDa): every method runs on
one encoded prompt per request, the summary covers the families of the built-in image task
(`builtin-vqa`'s, `synthetic.vqa2`: a model folder's default), and the prompt time is
counted once, apart from the denoising loop."""

from __future__ import annotations

import json
from argparse import Namespace

import pytest
from conftest import benchmark

from seer.models.factory import make_random_checkpoint
from synthetic import vqa2


@pytest.fixture(scope="module")
def bench():
    with benchmark("bench_seer") as module:
        yield module


@pytest.fixture(scope="module")
def record(bench, tmp_path_factory):
    folder = make_random_checkpoint("lavida-llada", tmp_path_factory.mktemp("lv"), layers=4)
    sparsity = dict(
        signal="sparsity",
        rule="changepoint",
        tensor="gate",
        layer=2,
        theta=0.1,
        direction="rising",
        z=2.0,
    )
    meta = {
        "system_prompt": None,
        "config": {"signal": "eos_prob", "eos_tau": 0.3},
        "sparsity_config": sparsity,
    }
    (folder / "seer.json").write_text(json.dumps(meta))
    args = Namespace(model=str(folder), task=None, n=5, seed=11, gen_length=16, threads=1)
    return bench.run(args)


def test_every_method_runs_on_the_vqa_families(record, bench):
    assert record["task"] == "vqa" and record["n"] == 5
    assert set(record["results"]) == set(bench.METHODS)  # seer-step0 from sparsity_config
    for r in record["results"].values():
        assert set(r["per_family"]) <= set(vqa2.FAMILIES) and r["per_family"]
        assert 0 <= r["accuracy"] <= 1
    assert record["results"]["oracle"]["boundary_mae"] == 0
    assert record["results"]["baseline"]["same_as_baseline"] == 1


def test_prompt_time_is_counted_once_and_end_to_end_is_reported(record, bench, capsys):
    ps = record["prompt_seconds"]
    assert ps > 0
    for r in record["results"].values():
        assert r["e2e_seconds"] == pytest.approx(r["seconds"] + ps)
        lo, hi = sorted((1.0, r["speedup"]))  # prompt time pulls the speedup towards 1
        assert lo - 1e-9 <= r["e2e_speedup"] <= hi + 1e-9
    bench.show(record)
    out = capsys.readouterr().out
    assert "e2e speedup" in out and "prompt processing" in out


def test_summarise_reads_rows_of_any_family(bench):
    from seer.data import Example

    class Stats:
        seconds, detect_seconds, nfe, tokens, grown, window = 1.0, 0.0, 16, 3, 0, 16

    class Gen:
        text, token_ids, stats, boundary = "red", [1, 2, 3], Stats(), None

    rows = [
        bench.Row(
            Example(str(i), "q", answer="red", family=f), 0.5, {"baseline": Gen(), "oracle": Gen()}
        )
        for i, f in enumerate(("colour", "chart", "colour"))
    ]
    args = Namespace(threads=1)
    lm = Namespace(name="m")
    out = bench.summarise(rows, 16, lm, bench.SeerConfig(), args)
    fams = out["results"]["baseline"]["per_family"]
    assert fams == {"chart": 1.0, "colour": 1.0}
    assert out["prompt_seconds"] == 1.5 and out["results"]["oracle"]["e2e_speedup"] == 1.0
