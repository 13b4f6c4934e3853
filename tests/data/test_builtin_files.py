"""The built-in requests ship as data (`seer/assets/requests/*.jsonl.gz`), written once by the
task generators beside the package (`synthetic.export`): the files hold the same requests, in the
same order, with the same scoring fields and the same split sides as the generators' seed-0 pool,
so `--data builtin` gives the same requests and scores as when the package generated them."""

from __future__ import annotations

import pytest

from seer.data import builtin_examples, score
from seer.data.builtin import ROWS, task_of
from seer.errors import SeerError
from synthetic import pool

SOURCES = ["builtin", "builtin-vqa", "builtin-v1", "builtin-vqa-v1"]


def _fields(e):
    return (e.id, e.key, e.prompt, e.messages, e.answer, e.family, e.metric, e.reference)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("part", [None, "calib", "eval"])
def test_shipped_requests_are_the_generators(source, part):
    n = 120 if source in ("builtin-vqa", "builtin-vqa-v1") else 400
    shipped = builtin_examples(source, n, part=part)
    generated = pool.examples(source, n, 0, part)
    assert [_fields(e) for e in shipped] == [_fields(e) for e in generated]
    for s, g in zip(shipped, generated, strict=True):
        wrong = "certainly not the answer"
        assert (score(s, s.answer), score(s, wrong)) == (score(g, s.answer), score(g, wrong))
        if g.image is not None:  # the decoded picture is the drawn one, pixel for pixel
            assert (s.image.mode, s.image.size) == (g.image.mode, g.image.size)
            assert s.image.tobytes() == g.image.tobytes()
    if part == "eval" and task_of(source) in ("text", "vqa"):  # the v1 tuning draw stays out
        assert not {e.key for e in shipped} & pool.tuned_keys(task_of(source))


def test_the_shipped_draw_is_finite_and_seed_zero():
    every = builtin_examples("builtin-v1", ROWS["text"])
    assert [e.id for e in every] == [str(i) for i in range(ROWS["text"])]
    with pytest.raises(SeerError, match="ships .* fewer than"):
        builtin_examples("builtin-v1", ROWS["text"], part="eval")
    with pytest.raises(SeerError, match="ships one draw .* not seed 3"):
        builtin_examples("builtin", 5, seed=3)
    other = pool.examples("builtin", 5, 3)  # the generators draw any seed
    assert [e.key for e in other] != [e.key for e in builtin_examples("builtin", 5)]
