"""Our ParallelBench metrics and prompts against the official code's, recorded in its own
environment (tests/fixtures/golden/parallelbench/golden.json, tools/goldens/
make_parallelbench_golden.py): every hand-made prediction gets the official score and strict
score, every row of our fake checkout the official chat."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from seer.data import load_examples
from seer.data.parallelbench_metrics import METRICS, check_reference

FIXTURES = Path(__file__).parents[1] / "fixtures"
GOLDEN = json.loads((FIXTURES / "golden" / "parallelbench" / "golden.json").read_text())


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_every_recorded_prediction_gets_the_official_score(metric):
    cases = [c for c in GOLDEN["metrics"] if c["metric"] == metric]
    assert len(cases) >= 100
    wrong = []
    for c in cases:
        assert check_reference(metric, c["reference"]) is None, c["reference"]
        got = METRICS[metric](c["prediction"], c["reference"])
        strict = METRICS[metric](c["prediction"], c["reference"], strict=True)
        if (got, strict) != (c["score"], c["score_strict"]):
            wrong.append((c["prediction"], c["reference"], got, strict, c["score"]))
    assert not wrong, f"{len(wrong)} of {len(cases)} differ, e.g. {wrong[:3]}"


def test_the_golden_tells_right_from_wrong_and_strict_from_not():
    seen = Counter((c["metric"], c["score"], c["score_strict"]) for c in GOLDEN["metrics"])
    for metric in METRICS:
        assert seen[(metric, 1.0, 1.0)] >= 10 and seen[(metric, 0.0, 0.0)] >= 10, metric
        if metric != "latin_square_score":  # the official Latin square ignores strict
            assert seen[(metric, 1.0, 0.0)] >= 10, metric


def test_the_fake_checkouts_chats_are_the_official_ones():
    ours = {e.id: e for e in load_examples(f"parallelbench:{FIXTURES / 'parallelbench'}")}
    recorded = {f"{p['task']}/{p['index']}": p for p in GOLDEN["prompts"]}
    assert recorded.keys() == ours.keys()
    for key, p in recorded.items():
        assert ours[key].messages == p["messages"], key
        assert ours[key].reference == p["label"], key
