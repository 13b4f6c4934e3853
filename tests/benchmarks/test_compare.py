"""seerbench.compare / compare_report on recorded rows (no model): answers changed against
the reference, what Seer adds to a method, the headline, detection's share, the batch-32
sample and repeats, the Pareto fronts; and the configs of the published run."""

from __future__ import annotations

import pytest

from seer.data import Example
from seerbench.compare import Config, build_configs
from seerbench.compare_report import detection, headline, mark_frontier, summarise

N = 8


def row(i: int, texts: dict, secs: dict) -> dict:
    res = {}
    for name, text in texts.items():
        s = secs[name]
        res[name] = {
            "text": text,
            "tokens": len(text),
            "window": 64 if "seer" not in name else 16,
            "nfe": 64 if "seer" not in name else 16,
            "seconds": sorted(s)[1],
            "seconds_repeats": s,
            "ids_hash": hash(text),
            "detect": 0.01,
        }
    return {"request": i, "prompt_seconds": 0.001, "results": res}


@pytest.fixture()
def record():
    configs = [
        Config("baseline", "k=1", {"steps": 64}, ref="baseline@k=1"),
        Config("seer", "k=1", {"steps": 64}, seer=True, ref="baseline@k=1"),
        Config("threshold", "t=0.9", {"threshold": 0.9}, ref="baseline@k=1"),
        Config("seer+threshold", "t=0.9", {"threshold": 0.9}, seer=True, ref="baseline@k=1"),
    ]
    examples = [Example(str(i), f"q{i}", answer="yes") for i in range(N)]
    rows = []
    for i in range(N):
        wrong = "no" if i == 0 else "yes"  # Seer changes one answer, and it is wrong
        texts = {
            "baseline@k=1": "yes",
            "seer@k=1": wrong,
            "threshold@t=0.9": "yes",
            "seer+threshold@t=0.9": "yes",
        }
        secs = {
            "baseline@k=1": [1.0, 1.1, 1.2],
            "seer@k=1": [0.25, 0.26, 0.24],
            "threshold@t=0.9": [0.2, 0.21, 0.19],
            "seer+threshold@t=0.9": [0.1, 0.1, 0.1],
        }
        rows.append(row(i, texts, secs))
    idx = list(range(0, N, 2))
    eng = {
        c.name: {
            "correct": [1.0] * len(idx),
            "sample": "random:0",
            "repeats": 3,
            "wall_seconds": 1.0,
            "cpu_seconds": t,
            "cpu_repeats": [t, t, t],
            "same_text_as_batch1": 1.0,
            "nfe": [8] * len(idx),
            "hashes": [hash("yes")] * len(idx),
        }
        for c, t in zip(configs, (2.0, 0.5, 0.4, 0.2), strict=True)
    }
    res = summarise(rows, eng, configs, 64, examples)
    mark_frontier(res)
    return res


def test_changed_answers_and_paired_accuracy_against_the_reference(record):
    seer = record["seer@k=1"]
    assert seer["changed"] == 1 and seer["changed_vs_baseline"] == 1
    assert seer["accuracy"] == pytest.approx(7 / 8) and seer["accuracy_minus_ref"] == -1 / 8
    lo, hi = seer["ci95_minus_ref"]
    assert lo <= -1 / 8 <= hi <= 0 and seer["p_vs_ref"] == 1.0  # one discordant pair
    assert record["baseline@k=1"]["changed"] == 0 and record["baseline@k=1"]["repeats"] == 3
    assert seer["b1_speedup_vs_ref"] == pytest.approx(1.1 / 0.25)  # no call times: loop wall


def test_what_seer_adds_and_the_headline(record):
    adds = record["seer+threshold@t=0.9"]["seer_adds"]
    assert adds["config"] == "threshold@t=0.9" and adds["b1_speedup"] == pytest.approx(2.0)
    assert adds["changed"] == 0 and adds["b32_speedup"] == pytest.approx(2.0)
    assert record["seer@k=1"]["seer_adds"]["config"] == "baseline@k=1"
    h = headline(record, "baseline@k=1")
    assert (
        h["b1"]["fastest"] == "seer+threshold@t=0.9" and h["b32"]["fastest"] == h["b1"]["fastest"]
    )
    # one wrong answer of 8 (-12.5 points): the paired interval reaches 0, but the one-sided
    # lower bound is far below the 3-point margin, so it is not "at the baseline's accuracy"
    assert "seer@k=1" not in h["equal_accuracy"] and "threshold@t=0.9" in h["equal_accuracy"]
    assert (
        record["seer@k=1"]["ci95_minus_baseline"][1] >= 0 and not record["seer@k=1"]["noninferior"]
    )
    assert h["b1"]["share"] == pytest.approx(1.0) and h["b1"]["clear"]
    oracle = dict(record["seer+threshold@t=0.9"], method="oracle", loop_ms=0.001, b32_ms=0.001)
    assert headline({**record, "oracle@k=1": oracle}, "baseline@k=1") == h  # a bound, not a method


def test_detection_share_and_the_batch32_part(record):
    det = detection(record)
    assert set(det) == {"seer@k=1", "seer+threshold@t=0.9"}
    assert det["seer@k=1"]["share"] == pytest.approx(0.01 / 0.25)
    b = record["threshold@t=0.9"]
    assert (b["b32_sample"], b["b32_repeats"], b["b32_n"]) == ("random:0", 3, N // 2)
    assert b["b32_changed"] == 0 and b["b32_speedup_vs_ref_range"] == [5.0, 5.0]
    assert (
        record["seer+threshold@t=0.9"]["pareto_b1"] and record["seer+threshold@t=0.9"]["pareto_b32"]
    )
    assert not record["baseline@k=1"]["pareto_b1"]


def test_the_published_configs_cover_every_method():
    class LM:
        class tokens:
            enders = (1, 2)

    names = {c.name for c in build_configs(LM, 64, [1, 2, 4, 8], quick=False)}
    for method in ("baseline", "seer", "stop", "oracle", "seer-eos"):
        assert all(f"{method}@k={k}" in names for k in (1, 2, 4, 8)), method
    for method in (
        "blocks",
        "early-stop",
        "prefix",
        "dual",
        "dpad",
        "seer+dpad",
        "seer+prefix",
        "seer+dual",
        "seer+early-stop",
    ):
        assert all(f"{method}/b8@k={k}" in names for k in (1, 2, 4, 8)), method
        assert f"{method}/b64@k=1" in names and f"{method}/b32@k=8" in names
    for extra in (
        "baseline@k=16",
        "baseline@k=32",
        "threshold@t=0.5",
        "seer+threshold@t=0.7",
        "factor@f=1.0",
        "seer+dual+factor/b8@f=1.0",
        "dual+threshold/b32@t=0.9",
        "oracle+threshold@t=0.9",
        "seer-eos+threshold@t=0.9",
        "daedal@official",
        "daedal@i8",
        "rho-eos@official",
        "rho-eos@i8",
    ):
        assert extra in names
    dpad = next(c for c in build_configs(LM, 64, [8], quick=False) if c.family == "dpad")
    assert dpad.params["cache"] == "dpad" and dpad.engine  # by name, through the engine too
    quick = {
        c.method
        for c in build_configs(LM, 64, [8], quick=True, daedal=False, static=16, rho_eos=False)
    }
    assert quick == {
        "baseline",
        "seer",
        "stop",
        "oracle",
        "static+guard",
        "threshold",
        "seer+threshold",
    }
    own_eos = {c.method for c in build_configs(LM, 64, [8], False, seer_signal="eos_prob")}
    assert not any(m.startswith("seer-eos") for m in own_eos)  # it would repeat seer


def test_the_tables_say_what_seer_adds_at_each_batch_size(record):
    from seerbench.compare_report import markdown

    rec = {
        "results": record,
        "gen_length": 64,
        "model": "m",
        "n": N,
        "clock": "e2e_cpu",
        "headline": headline(record, "baseline@k=1"),
    }
    md = markdown(rec)
    assert "at batch 1 (end to end, CPU time) is seer+threshold@t=0.9" in md
    assert "at batch 32 (end to end, CPU time) is seer+threshold" in md
    adds = record["seer+threshold@t=0.9"]["seer_adds"]
    assert f"{adds['b1_speedup']:.2f}× over threshold@t=0.9 at batch 1." in md
    assert f"{adds['b32_speedup']:.2f}× over threshold@t=0.9 at batch 32." in md


def test_a_raw_file_torn_by_a_kill_loses_only_its_last_line(tmp_path):
    from seer.errors import SeerError
    from seerbench.compare import raw_lines

    raw = tmp_path / "raw.jsonl"
    raw.write_text('{"request": 0}\n{"request": 1}\n{"requ')
    assert raw_lines(raw) == [{"request": 0}, {"request": 1}]
    assert raw.read_text() == '{"request": 0}\n{"request": 1}\n'  # the next record starts a line
    raw.write_text('{"request": 0}\n{"requ\n{"request": 2}\n')
    with pytest.raises(SeerError, match=r"raw.jsonl:2: not a JSON record"):
        raw_lines(raw)
