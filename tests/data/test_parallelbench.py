"""seer.data.parallelbench: a ParallelBench checkout as a data source (a tiny fake checkout under
tests/fixtures/parallelbench, written for these tests in the official file format), the prompt
built as the official loader builds it, and one-line errors for every bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from seer.data import load_examples
from seer.errors import SeerError

ROOT = Path(__file__).parents[1] / "fixtures" / "parallelbench"
TEST = Path("dataset/parallel_bench/data/output/test")
ALL = [
    "puzzle/latin_square_n4",
    "puzzle/sudoku_n4_12",
    "waiting_line/copy",
    "waiting_line/insert_random",
    "waiting_line/remove_random",
    "waiting_line/replace_random",
    "waiting_line/shuffle",
    "words_to_sentence/easy",
]


def _families(source: str) -> list[str]:
    return list(dict.fromkeys(e.family for e in load_examples(source)))


def test_a_task_a_group_and_every_task_are_selected_by_the_path():
    assert _families(f"parallelbench:{ROOT}/waiting_line/copy") == ["waiting_line/copy"]
    assert _families(f"parallelbench:{ROOT}/puzzle") == ALL[:2]
    assert _families(f"parallelbench:{ROOT}") == ALL
    assert _families(f"parallelbench:{ROOT}/") == ALL


def test_a_row_becomes_the_official_chat_with_its_reference_and_metric():
    a, b, c = load_examples(f"parallelbench:{ROOT}/waiting_line/copy")
    assert [e.id for e in (a, b, c)] == [
        "waiting_line/copy/0",
        "waiting_line/copy/1",
        "waiting_line/copy/2",
    ]
    ask = "A queue holds these people:\n{}\nWrite the queue again, unchanged, as a list.\n"
    icl = '["Hana Vell", "Ivo Crane"]'
    own = '["Ada Quill", "Bram Osei", "Cleo Marsh"]'
    assert a.messages == [
        {"role": "user", "content": ask.format(icl)},
        {"role": "assistant", "content": icl},
        {"role": "user", "content": ask.format(own)},
    ]
    assert a.prompt == ask.format(own) and a.answer == own == a.reference
    assert (a.family, a.metric) == ("waiting_line/copy", "list_match_score")
    assert c.messages[0] == {"role": "user", "content": ask.format(b.prompt.split("\n")[1])}
    (r,) = load_examples(f"parallelbench:{ROOT}/waiting_line/remove_random")
    assert r.messages == [{"role": "user", "content": r.prompt}]  # no in-context example


def test_literal_backslash_n_becomes_a_newline_and_dict_answers_give_their_example():
    (s,) = load_examples(f"parallelbench:{ROOT}/waiting_line/shuffle")
    assert s.prompt.startswith("A queue holds these people:\n[") and "\\n" not in s.prompt
    assert s.messages[1]["content"] == '["Ivo Crane", "Hana Vell"]'  # the ICL answer's example
    assert s.reference["input"] == ["Ada Quill", "Bram Osei", "Cleo Marsh"]
    assert s.answer == s.reference["example"]
    (q,) = load_examples(f"parallelbench:{ROOT}/puzzle/sudoku_n4_12")
    assert (
        q.prompt
        == "Solve this 4x4 sudoku (0 = empty).\n\nGrid:\n2100\n0012\n1003\n3201\nSolution:\n"
    )
    (w,) = load_examples(f"parallelbench:{ROOT}/words_to_sentence/easy")
    assert w.metric == "sentence_to_words_score" and w.answer == "We fly a kite by the river."


def test_n_and_the_split_apply_as_for_any_source():
    assert len(load_examples(f"parallelbench:{ROOT}", n=4)) == 4
    calib = load_examples(f"parallelbench:{ROOT}", part="calib")
    evaluation = load_examples(f"parallelbench:{ROOT}", part="eval")
    assert len(calib) + len(evaluation) == 10 and not {e.id for e in calib} & {
        e.id for e in evaluation
    }


def _checkout(tmp_path) -> Path:
    root = tmp_path / "pb"
    shutil.copytree(ROOT, root)
    return root


@pytest.mark.parametrize(
    "spec, message",
    [
        ("{tmp}/nowhere/waiting_line/copy", "does not exist; give a ParallelBench checkout"),
        ("{tmp}", "is not a ParallelBench checkout (no dataset/parallel_bench/data/output/test)"),
        (
            "{root}/waiting_line/cpy",
            "no task 'waiting_line/cpy'; waiting_line holds: copy, "
            "insert_random, remove_random, replace_random, shuffle",
        ),
        (
            "{root}/queue",
            "no task or group 'queue'; groups: puzzle, waiting_line, words_to_sentence",
        ),
        ("", "give the checkout's folder"),
    ],
)
def test_bad_sources_are_one_line(tmp_path, spec, message):
    with pytest.raises(SeerError) as e:
        load_examples("parallelbench:" + spec.format(tmp=tmp_path, root=ROOT))
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "line, message",
    [
        ("{", ":2: not valid JSON"),
        ("[1]", ":2: a row must be a JSON object, not list"),
        ('{"answer": "[]"}', ":2: field 'input': must be a JSON object"),
        ('{"input": {"context": "[]"}}', ":2: field 'answer': must be a string or an object"),
        ('{"input": {"context": "[]"}, "answer": 3}', ":2: field 'answer': must be a string"),
        ('{"input": {"ctx": "[]"}, "answer": "[]"}', ":2: field 'input': no 'context' for the"),
        (
            '{"input": {"context": "[]", "icl_examples": [{"input": {"context": "[]"}, "answer": '
            '{"input": []}}]}, "answer": "[]"}',
            ":2: in-context example 0: field 'answer': an object needs an 'example' string",
        ),
    ],
)
def test_a_malformed_row_is_one_line_naming_file_and_line(tmp_path, line, message):
    root = _checkout(tmp_path)
    path = root / TEST / "waiting_line" / "copy.jsonl"
    path.write_text(path.read_text().splitlines()[0] + "\n" + line + "\n")
    with pytest.raises(SeerError) as e:
        load_examples(f"parallelbench:{root}/waiting_line/copy")
    assert str(e.value).startswith(f"{path}") and message in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_config_problems_are_one_line(tmp_path):
    root = _checkout(tmp_path)
    config = root / TEST / "puzzle" / "task_config.yaml"
    config.write_text("puzzle/latin_square_n4: {metric: latin_square_score}\n")
    with pytest.raises(SeerError, match="task 'puzzle/latin_square_n4' has no 'prompt' string"):
        load_examples(f"parallelbench:{root}/puzzle/latin_square_n4")
    with pytest.raises(SeerError, match="no entry for task 'puzzle/sudoku_n4_12'"):
        load_examples(f"parallelbench:{root}/puzzle/sudoku_n4_12")
    config.write_text("a: [\n")
    with pytest.raises(SeerError, match="not valid YAML"):
        load_examples(f"parallelbench:{root}/puzzle")
    config.unlink()
    with pytest.raises(SeerError, match="task_config.yaml is missing"):
        load_examples(f"parallelbench:{root}/puzzle")


def test_blank_lines_are_skipped_and_underscore_groups_are_not_tasks(tmp_path):
    root = _checkout(tmp_path)
    path = root / TEST / "waiting_line" / "copy.jsonl"
    path.write_text("\n" + path.read_text().replace("\n", "\n\n"))
    assert [e.id for e in load_examples(f"parallelbench:{root}/waiting_line/copy")][-1] == (
        "waiting_line/copy/2"
    )
    (root / TEST / "_old").mkdir()
    (root / TEST / "_old" / "copy.jsonl").write_text(json.dumps({"input": {}, "answer": ""}))
    assert "_old/copy" not in _families(f"parallelbench:{root}")
