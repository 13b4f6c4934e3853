"""seerbench.draws: held-out draws (unique, scorable, disjoint from calibration; a
ParallelBench task whole, in a seeded order) and seeded samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seer.data import example_key, in_calibration, load_examples
from seer.errors import SeerError
from seerbench.draws import held_out, permuted, sample

FAKE = Path(__file__).parents[1] / "fixtures" / "parallelbench" / "waiting_line"


def test_a_builtin_draw_is_the_evaluation_part_and_a_prefix_of_a_larger_one():
    small, large = held_out("builtin-v1", 5, 0), held_out("builtin-v1", 9, 0)
    assert [e.id for e in small] == [e.id for e in large[:5]]
    assert not any(in_calibration(e) for e in large)
    assert len({example_key(e) for e in large}) == 9


def test_a_parallelbench_task_is_kept_whole_in_a_seeded_order():
    whole = load_examples(f"parallelbench:{FAKE}")
    drawn = held_out(f"parallelbench:{FAKE}", 10**6, 3)
    assert sorted(e.id for e in drawn) == sorted(e.id for e in whole)  # both parts
    assert [e.id for e in held_out(f"parallelbench:{FAKE}", 2, 3)] == [e.id for e in drawn[:2]]
    assert {in_calibration(e) for e in drawn} == {True, False}  # both halves of the split


def test_an_unscorable_request_is_refused_in_one_line(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"add {i} and 2"}) + "\n" for i in range(8)))
    with pytest.raises(SeerError, match=r"every request must be scorable; \d+: no reference"):
        held_out(str(data), 2, 0)
    with pytest.raises(SeerError, match="n must be >= 1"):
        held_out("builtin-v1", 0, 0)


def test_sample_is_all_or_a_seeded_random_subset():
    assert sample(5, None, 0) == ([0, 1, 2, 3, 4], "all")
    assert sample(5, 9, 0) == ([0, 1, 2, 3, 4], "all")
    idx, label = sample(100, 10, 7)
    assert label == "random:7" and idx == sorted(idx) and len(set(idx)) == 10
    assert idx != list(range(10))  # not the first ten
    assert sample(100, 10, 7) == (idx, label)
    assert permuted([1, 2, 3, 4], 1) == permuted([1, 2, 3, 4], 1)
    with pytest.raises(SeerError, match="at least one"):
        sample(5, 0, 0)
