"""The text model v2's tasks (`synthetic.lines`), its checkers, its tokenizer and its
trainer."""

from __future__ import annotations

import hashlib
import json
import random
import statistics
from pathlib import Path

import pytest
import torch

import seer
from seer.data.parallelbench_metrics import parse_list
from seer.models.tokens import load_tokenizer
from synthetic import lines
from training import vocab2
from training.tokenizer import build_v2_tokenizer, pieces

N = 19 * 40


@pytest.fixture(scope="module")
def items() -> list[lines.Item]:
    return lines.generate(N, seed=0, split="train", families=tuple(lines.FAMILIES))


@pytest.fixture(scope="module")
def tok(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("tok2")
    build_v2_tokenizer(out, vocab2.words())
    return load_tokenizer(out)


def test_every_reference_answer_passes_its_checker(items):
    assert {it.family for it in items} == set(lines.FAMILIES)
    assert all(lines.score(it, it.answer) == 1.0 for it in items)
    assert all(lines.score(it, " " + it.answer + "\n") == 1.0 for it in items)


def wrong_answers(it: lines.Item, rng: random.Random) -> list[str]:
    """Answers that must fail: a dropped, duplicated or swapped list item, an extra row..."""
    got = parse_list(it.answer, strict=True)
    if got is None:  # puzzles, sums, short answers: change one character
        i = rng.randrange(len(it.answer))
        swap = "9" if it.answer[i] != "9" else "8"
        return [it.answer[:i] + swap + it.answer[i + 1 :], ""]
    out = [lines.list_str(got[:-1]), lines.list_str(got + got[:1]), ""]
    if it.family != "pick":
        out.append(lines.list_str([got[0], got[0], *got[2:]]) if len(got) > 1 else "[]")
    return out


def test_checkers_reject_wrong_answers(items):
    rng = random.Random(0)
    for it in items:
        for bad in wrong_answers(it, rng):
            if it.family in ("sum", "count", "where", "who") and bad and bad[0].isdigit():
                continue  # a changed digit may still be a number; checked by exact match below
            assert lines.score(it, bad) == 0.0, (it.family, it.answer, bad)


def test_multi_answer_checkers_accept_other_valid_answers():
    rng = random.Random(1)
    it = lines.make_item(rng, "shuffle")
    people = it.ref["input"]
    assert lines.score(it, lines.list_str(people[::-1])) == float(people[::-1] != people)
    assert lines.score(it, lines.list_str(people)) == 0.0  # the input's own order is no shuffle
    it = lines.make_item(rng, "insert_random")
    assert lines.score(it, lines.list_str([it.ref["word"], *it.ref["input"]])) == 1.0
    it = lines.make_item(rng, "remove_random")
    assert lines.score(it, lines.list_str(it.ref["input"][1:])) == 1.0
    it = lines.make_item(rng, "replace_random")
    assert lines.score(it, lines.list_str([it.ref["word"], *it.ref["input"][1:]])) == 1.0
    it = lines.make_item(rng, "latin_square")
    a, b, c, d = it.ref["symbols"]
    square = [[a, b, c, d], [b, a, d, c], [c, d, a, b], [d, c, b, a]]
    assert lines.score(it, "\n".join(",".join(r) for r in square)) == 1.0
    square[0][0], square[0][1] = b, a  # rows still hold every symbol, columns do not
    assert lines.score(it, "\n".join(",".join(r) for r in square)) == 0.0


def test_sudoku_checker_keeps_the_givens():
    it = lines.make_item(random.Random(2), "sudoku")
    assert lines.score(it, it.answer) == 1.0
    grid = [list(row) for row in it.answer.splitlines()]
    grid[0], grid[1] = grid[1], grid[0]  # still a Latin square, but breaks a given or a box
    assert lines.score(it, "\n".join("".join(r) for r in grid)) == 0.0


def test_worked_sum():
    assert (
        lines.worked_sum(47, 85)
        == "7 + 5 = 12, carry 1. 4 + 8 + 1 = 13, carry 1. The answer is 132."
    )
    assert lines.worked_sum(12, 30).endswith("The answer is 42.")


def test_splits_are_disjoint_and_deterministic(items):
    held = lines.generate(300, seed=0, split="heldout")
    assert not {it.text for it in held} & {it.text for it in items}
    assert all(lines.is_heldout(it) for it in held) and not any(map(lines.is_heldout, items))
    assert [it.text for it in lines.generate(50, seed=3)] == [
        it.text for it in lines.generate(50, seed=3)
    ]


def test_overlap_finds_a_shared_item(items):
    test_set = [(it.prompt, it.answer) for it in items[:3]] + [("other", "x")]
    assert lines.overlap(items, test_set) == items[:3]
    assert lines.overlap(items, [("other", "x")]) == []


def test_tokenizer_round_trips_every_item_without_unknown_tokens(items, tok):
    unk = tok.convert_tokens_to_ids("<|unk|>")
    for it in items:
        ids = tok(it.answer, add_special_tokens=False)["input_ids"]
        assert unk not in ids and tok.decode(ids) == it.answer
        for msg in it.messages():
            assert unk not in tok(msg["content"], add_special_tokens=False)["input_ids"]
    assert pieces('["Ann Lee", "Bo"]\n1,2') == [
        "[",
        '"',
        "Ann",
        " Lee",
        '"',
        ",",
        ' "',
        "Bo",
        '"',
        "]",
        "\n",
        "1",
        ",",
        "2",
    ]


def test_answer_lengths_have_a_long_tail(tok):
    mix = lines.generate(600, seed=5, split="heldout")
    lengths = sorted(len(tok(it.answer, add_special_tokens=False)["input_ids"]) for it in mix)
    window = 128
    assert statistics.median(lengths) <= 0.25 * window
    assert lengths[int(0.9 * len(lengths))] >= 0.4 * window
    assert max(lengths) >= 0.6 * window and max(lengths) < window
    assert min(lengths) <= 2


def test_trainer_runs_resumes_and_exports_a_loadable_checkpoint(tmp_path):
    from training.builtin_v2 import TrainConfig, train

    cfg = TrainConfig(
        d_model=32,
        n_layers=2,
        n_heads=2,
        mlp_hidden_size=64,
        batch_size=4,
        window=32,
        total_steps=2,
        warmup=1,
    )
    _, log = train(tmp_path, minutes=5, c=cfg, eval_every=2, threads=1, eval_n=4)
    assert log[-1]["step"] == 2 and 0 <= log[-1]["heldout_exact_match"]["all"] <= 1
    lm = seer.load(tmp_path / "export")
    out = lm.generate(lines.generate(1, seed=0)[0].prompt, gen_length=16)
    assert len(out.token_ids) == 16
    cfg.total_steps = 3
    train(tmp_path, minutes=5, c=cfg, eval_every=100, threads=1, eval_n=4)
    assert torch.load(tmp_path / "state.pt", weights_only=False)["step"] == 3
    cfg.total_steps, cfg.until = 100, 5  # a phase that ends at a fixed step
    train(tmp_path, minutes=5, c=cfg, eval_every=100, threads=1, eval_n=4)
    assert torch.load(tmp_path / "state.pt", weights_only=False)["step"] == 5
    assert json.loads((tmp_path / "train_config.json").read_text())["window"] == 32
    assert Path(tmp_path / "export" / "tokenizer.json").is_file()


def test_vocabulary_is_frozen():
    """The v2 model was trained on this vocabulary: any change breaks its embedding rows."""
    words = vocab2.words()
    digest = hashlib.sha256("\n".join(words).encode()).hexdigest()[:16]
    assert (len(words), digest) == (3992, "286da1debae3e0c6")


def test_the_copy_curriculum_starts_bare_and_grows(tok):
    """Warm-up requests are the line alone (copy) or the line and a position (who), pass their
    checker, tokenize without unknown pieces, and the trainer draws only them before
    `bare_steps`, with lines that grow by one person every `bare_people` steps, then a
    `bare_share` of them in the mix."""
    from training.builtin_v2 import TrainConfig, _items

    rng = random.Random(0)
    for _ in range(50):
        it = lines.bare_item(rng, 3)
        assert it.family in ("copy", "who") and not it.turns
        assert lines.score(it, it.answer) == 1.0
        line = it.prompt.rsplit(" ", 1)[0] if it.family == "who" else it.prompt
        assert 1 <= len(parse_list(line)) <= 3
        assert tok.unk_token_id not in tok(it.prompt)["input_ids"]
    c = TrainConfig(batch_size=8, bare_steps=100, bare_people=40, bare_share=0.25)
    early = _items(c, random.Random(1), step=0)
    assert all(it.prompt.startswith("[") and not it.turns for it in early)
    assert max(len(parse_list(it.answer)) for it in early if it.family == "copy") == 1
    grown = _items(c, random.Random(1), step=99)  # 1 + 99 // 40 = 3 people at most
    assert max(len(parse_list(it.answer)) for it in grown if it.family == "copy") == 3
    later = _items(c, random.Random(2), step=100)
    bare = sum(it.prompt.startswith("[") for it in later)  # templated prompts start with words
    assert 0 < bare < len(later) // 2
    assert not any(lines.is_heldout(it) for it in early + later)


def test_bare_items_keep_to_their_split_and_family():
    """`lines.bare_items` draws warm-up requests of one split (and family, when asked) only:
    the trainer's come from the training side, `tools/copy_signal.py --bare`'s from the held-out
    side."""
    held = lines.bare_items(12, random.Random(3), 4, split="heldout", family="who")
    assert len(held) == 12 and all(lines.is_heldout(it) and it.family == "who" for it in held)
    train = lines.bare_items(40, random.Random(3), 4)
    assert not any(lines.is_heldout(it) for it in train)
    assert {it.family for it in train} == {"copy", "who"}
