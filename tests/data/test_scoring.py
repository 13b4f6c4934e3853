"""seer.data.score: a ParallelBench row by its task's metric, anything else with a reference by
exact match of the stripped texts; the left-out metrics and rows without a reference say why in
one line. (The metrics against the official code: test_parallelbench_metrics.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from seer.data import Example, load_examples, scorable, score, unscorable
from seer.errors import SeerError

ROOT = Path(__file__).parents[1] / "fixtures" / "parallelbench"


def _task(name: str) -> Example:
    return load_examples(f"parallelbench:{ROOT}/{name}")[0]


def test_exact_match_of_stripped_texts_by_default_and_for_the_builtin_tasks():
    ex = Example("0", "add 1 and 2", answer=" 1 plus 2 is 3")
    assert score(ex, "1 plus 2 is 3\n") == 1.0 and score(ex, "1 plus 2 is 4") == 0.0
    for source in ("builtin-v1", "builtin-vqa-v1"):  # the first models' tasks
        for e in load_examples(source, n=7):
            assert scorable(e) and score(e, e.answer) == 1.0 and score(e, e.answer + " x") == 0.0


def test_parallelbench_rows_use_their_tasks_metric():
    copy = _task("waiting_line/copy")
    assert score(copy, 'Sure: ["Ada Quill", "Bram Osei", "Cleo Marsh"] done') == 1.0
    assert score(copy, '["Ada Quill", "Cleo Marsh", "Bram Osei"]') == 0.0
    shuffle = _task("waiting_line/shuffle")
    assert score(shuffle, '["Cleo Marsh", "Ada Quill", "Bram Osei"]') == 1.0  # not the example
    assert score(shuffle, '["Ada Quill", "Bram Osei", "Cleo Marsh"]') == 0.0  # the input itself
    insert = _task("waiting_line/insert_random")
    assert score(insert, '["Ada Quill", "Bram Osei", "Juno Park", "Cleo Marsh"]') == 1.0
    latin = _task("puzzle/latin_square_n4")
    assert score(latin, "2,Q,7,M\nQ,7,M,2\n7,M,2,Q\nM,2,Q,7") == 1.0  # any valid square
    sudoku = _task("puzzle/sudoku_n4_12")
    assert score(sudoku, "2 1 3 4\n4 3 1 2\n1 2 4 3\n3 4 2 1") == 1.0
    assert score(sudoku, "2 1 3 4\n4 3 1 2\n1 2 4 3\n3 4 2 1", strict=True) == 0.0


def test_rows_that_cannot_be_scored_say_why_in_one_line():
    words = _task("words_to_sentence/easy")
    assert not scorable(words) and "LanguageTool" in unscorable(words)
    with pytest.raises(SeerError) as e:
        score(words, "We fly a kite by the river.")
    assert str(e.value).startswith("example words_to_sentence/easy/0 cannot be scored: metric")
    assert "\n" not in str(e.value)
    assert unscorable(Example("a", "hi")) == "no reference answer"
    assert "seer does not re-implement it" in unscorable(Example("b", "hi", metric="domino_score"))


def test_a_row_whose_answer_does_not_fit_its_metric_is_refused_at_load(tmp_path):
    import shutil

    root = tmp_path / "pb"
    shutil.copytree(ROOT, root)
    path = root / "dataset/parallel_bench/data/output/test/waiting_line/shuffle.jsonl"
    path.write_text('{"input": {"context": "[]"}, "answer": "[]"}\n')
    with pytest.raises(SeerError) as e:
        load_examples(f"parallelbench:{root}/waiting_line/shuffle")
    assert str(e.value) == (
        f"{path}:1: field 'answer': must be an object with an 'input' list of strings for "
        "list_shuffle_score"
    )
