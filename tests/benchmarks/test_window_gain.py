"""benchmarks/window_gain.py: records of several windows side by side, answers compared by text
(else by answer hash, else a lower bound by length), one line for records that do not belong
together."""

from __future__ import annotations

import json

import pytest
from conftest import benchmark

from seer.errors import SeerError


def _record(tmp_path, window: int, texts: list[str | None], seer_x: float, data=None, raw=None):
    """A compare record (the keys window_gain reads) and its raw file, as bench_compare writes
    (`raw`: each request's baseline entry, in place of its text alone)."""
    res = {
        "baseline@k=1": dict(
            accuracy=0.5,
            b1_ms=100.0 * window,
            b32_ms=50.0 * window,
            ref="baseline@k=1",
            mean_window=window,
        ),
        "oracle@k=1": dict(accuracy=0.5, ref="baseline@k=1", mean_window=20.0),
        "seer@k=1": dict(
            accuracy=0.48,
            accuracy_minus_ref=-0.02,
            ci95_minus_ref=[-0.06, 0.02],
            b1_speedup_vs_ref=seer_x,
            b32_speedup_vs_ref=seer_x + 1,
            ref="baseline@k=1",
            mean_window=21.0,
        ),
        "threshold@t=0.9": dict(
            accuracy=0.5,
            accuracy_minus_ref=0.0,
            b1_speedup_vs_ref=10.0,
            b32_speedup_vs_ref=12.0,
            ref="baseline@k=1",
            mean_window=window,
        ),
        "seer+threshold@t=0.9": dict(
            accuracy=0.49,
            accuracy_minus_ref=-0.01,
            b1_speedup_vs_ref=10.0 * seer_x / 4,
            ref="baseline@k=1",
            mean_window=21.0,
            seer_adds=dict(
                b1_speedup=seer_x / 4,
                b1_speedup_ci95=[1.0, 2.0],
                accuracy_difference=-0.01,
                ci95=[-0.05, 0.03],
            ),
        ),
    }
    rec = dict(
        bench="compare",
        model="builtin",
        n=len(texts),
        gen_length=window,
        results=res,
        settings={"data": data},
    )
    path = tmp_path / f"compare-builtin-g{window}.json"
    path.write_text(json.dumps(rec))
    with (tmp_path / f"raw-builtin-g{window}.jsonl").open("w") as f:
        for i, t in enumerate(texts):
            entry = raw[i] if raw else {"text": t}
            f.write(
                json.dumps({"request": i, "id": str(i), "results": {"baseline@k=1": entry}}) + "\n"
            )
        f.write('{"request": 0, "id": "0", "resu')  # a line cut by a stopped run
    return path


def test_windows_side_by_side_with_the_answers_that_changed(tmp_path, capsys):
    a = _record(tmp_path, 128, ["x", "y", "z"], 4.0)
    b = _record(tmp_path, 256, ["x", "Y", "z", "w"], 8.0)
    with benchmark("window_gain") as wg:
        assert wg.main([str(b), str(a), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    record = json.loads(out[-1])
    rows = record["results"]
    assert [r["window"] for r in rows] == [128, 256]  # sorted by window
    assert rows[1]["changed_vs_first"] == {"common": 3, "changed": 1, "by": "text"}
    assert rows[1]["seer"]["b1"] == 8.0 and rows[1]["seer_adds"]["threshold"]["b1"] == 2.0
    assert rows[1]["seer_adds"]["dual+threshold/b64"] is None  # not in these records: a dash
    text = "\n".join(out)
    assert "| 256 | baseline (n = 4, 25600 ms b1) | 50.0 |" in text
    assert "| 256 | seer | 48.0 | -2.0 [-6.0, +2.0] | 8.00× | 9.00× | 21.0 (oracle 20.0) |" in text
    assert "| 256 | 2.00× [1.00, 2.00], -1.0 [-5.0, +3.0] | - | 1 of 3 |" in text
    assert "1 of 3" in "\n".join(out)
    assert (tmp_path / "out" / "window_gain-builtin.png").stat().st_size > 0


def test_records_without_text_say_so(tmp_path, capsys):
    a = _record(tmp_path, 128, [None, None], 4.0)
    b = _record(tmp_path, 256, [None, None], 6.0)
    with benchmark("window_gain") as wg:
        wg.main([str(a), str(b)])
    out = capsys.readouterr().out
    assert "| 256 | 1.50× [1.00, 2.00], -1.0 [-5.0, +3.0] | - | no text kept |" in out


def test_records_without_text_compare_answer_hashes_else_count_other_lengths(tmp_path, capsys):
    """Without text, answers are compared by the hash of their ids before the end token (the
    same at any window); raw files from before that hash give a lower bound: other lengths."""
    a = _record(
        tmp_path,
        128,
        [None] * 3,
        4.0,
        raw=[dict(answer_hash=h, tokens=n) for h, n in ((1, 5), (2, 6), (3, 7))],
    )
    b = _record(
        tmp_path,
        256,
        [None] * 3,
        6.0,
        raw=[dict(answer_hash=h, tokens=n) for h, n in ((1, 5), (9, 6), (8, 8))],
    )
    with benchmark("window_gain") as wg:
        wg.main([str(a), str(b)])
    out = capsys.readouterr().out
    assert json.loads(out.strip().splitlines()[-1])["results"][1]["changed_vs_first"] == {
        "common": 3,
        "changed": 2,
        "by": "answer ids",
    }
    assert "| 2 of 3 |" in out
    a = _record(tmp_path, 128, [None] * 3, 4.0, raw=[dict(tokens=n) for n in (5, 6, 7)])
    b = _record(tmp_path, 256, [None] * 3, 6.0, raw=[dict(tokens=n) for n in (5, 6, 8)])
    with benchmark("window_gain") as wg:
        wg.main([str(a), str(b)])
    assert "| ≥ 1 of 3 (lengths differ; no text kept) |" in capsys.readouterr().out


@pytest.mark.parametrize("case", ["other data", "same window", "not a record"])
def test_records_that_do_not_belong_together_are_one_line(tmp_path, case):
    a = _record(tmp_path, 128, ["x"], 4.0)
    if case == "other data":
        b = _record(tmp_path, 256, ["x"], 4.0, data="parallelbench:/pb/waiting_line")
    elif case == "same window":
        b = tmp_path / "copy.json"
        b.write_text(a.read_text())
    else:
        b = tmp_path / "x.json"
        b.write_text('{"bench": "profile"}')
    with benchmark("window_gain") as wg, pytest.raises(SeerError) as e:
        wg.main([str(a), str(b)])
    assert "\n" not in str(e.value)
