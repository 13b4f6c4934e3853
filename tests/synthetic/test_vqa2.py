"""The v2 image questions: every family draws, answers round-trip through the v2 tokenizer, the
checkers accept every valid form and reject wrong ones, the splits are disjoint, and the
vocabulary (which the training run's weights depend on) is pinned."""

from __future__ import annotations

import hashlib
import itertools
import random
import statistics
from pathlib import Path

import numpy as np
import pytest

from seer.errors import SeerError
from seer.models.tokens import load_tokenizer
from synthetic import scenes2, vqa2
from synthetic.scenes2 import Item, Picture
from training import vocab_vqa2


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tok")
    vocab_vqa2.build_tokenizer(folder)
    return load_tokenizer(folder)


def test_vocabulary_is_pinned(tok):
    vocab = tok.get_vocab()
    assert [tok.convert_ids_to_tokens(i) for i in range(8)] == [
        "<|startoftext|>",
        "<|endoftext|>",
        "<|mdm_mask|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|unk|>",
        "<image>",
    ]
    listing = "\n".join(t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1]))
    # changing the task texts' words changes this: the training run's weights depend on it
    assert len(vocab) == 274
    assert hashlib.sha256(listing.encode()).hexdigest()[:16] == PINNED


PINNED = "f8266cf96c09a0b6"


def test_every_answer_and_question_round_trips_without_unknown_tokens(tok):
    lengths: dict[str, list[int]] = {}
    for e in vqa2.generate_examples(360, seed=0, split="train"):
        for text in (e.answer, e.question):
            ids = tok(text, add_special_tokens=False)["input_ids"]
            assert tok.unk_token_id not in ids and tok.decode(ids) == text
        lengths.setdefault(e.family, []).append(len(tok(e.answer)["input_ids"]))
    assert set(lengths) == set(vqa2.FAMILIES)
    assert max(lengths["read"]) <= 2 and max(lengths["number"]) <= 4  # reading: 1-5 tokens
    assert min(lengths["describe"]) >= 40 and max(lengths["describe"]) <= 100  # long answers
    median = statistics.median(x for v in lengths.values() for x in v)
    assert median <= vqa2.WINDOW // 4


def test_references_score_one_and_reading_families_print_their_answer():
    for e in vqa2.generate_examples(180, seed=1, split="heldout"):
        assert vqa2.score(e, e.answer) == 1.0
        assert vqa2.score(e, e.answer + " extra") == 0.0
        if e.family in ("read", "number"):
            assert " ".join(t.text for t in e.picture.texts) == e.answer


def test_list_accepts_any_order_and_rejects_missing_or_extra_objects():
    items = (Item("circle", "red", 0), Item("bar", "blue", 4), Item("square", "green", 8))
    e = vqa2.VQA2Example("list", Picture("white", items=items), "list every object", "")
    names = [i.name for i in items]
    for order in itertools.permutations(names):
        assert vqa2.score(e, ", ".join(order)) == 1.0
    assert vqa2.score(e, " Red circle,  blue bar, green square ") == 1.0  # case and spaces
    assert vqa2.score(e, "red circle, blue bar") == 0.0
    assert vqa2.score(e, "red circle, blue bar, green square, red circle") == 0.0
    assert vqa2.score(e, "red circle, blue bar, green circle") == 0.0


def test_pair_accepts_any_two_of_the_shared_colour_in_any_order():
    items = (
        Item("circle", "red", 0),
        Item("bar", "red", 1),
        Item("square", "red", 5),
        Item("triangle", "blue", 7),
    )
    e = vqa2.VQA2Example("pair", Picture("white", items=items), "name two", "")
    reds = ["red circle", "red bar", "red square"]
    for a, b in itertools.permutations(reds, 2):
        assert vqa2.score(e, f"{a} and {b}") == 1.0
    for wrong in (
        "red circle and blue triangle",
        "red circle and red circle",
        "red circle",
        "red circle and red triangle",
        "red circle and red bar and red square",
    ):
        assert vqa2.score(e, wrong) == 0.0


def test_generated_pairs_have_one_repeated_colour():
    for e in vqa2.generate_examples(40, seed=2, split="train", families=("pair",)):
        counts = [
            c
            for c in (sum(i.colour == col for i in e.picture.items) for col in scenes2.COLOURS)
            if c > 1
        ]
        assert len(counts) == 1


def test_splits_are_disjoint_and_deterministic():
    train = vqa2.generate_examples(300, seed=3, split="train")
    held = vqa2.generate_examples(300, seed=3, split="heldout")
    assert not {e.key for e in train} & {e.key for e in held}
    assert all(vqa2.is_heldout(e.picture, e.question) for e in held)
    assert [e.key for e in held] == [e.key for e in vqa2.generate_examples(300, 3, "heldout")]
    with pytest.raises(SeerError, match="split"):
        vqa2.generate_examples(3, 0, "test")
    with pytest.raises(SeerError, match="unknown family"):
        vqa2.generate_example("poem", random.Random(0), "train")


def test_training_draw_follows_the_weights():
    counts: dict[str, int] = {}
    for e in vqa2.training_examples(900, random.Random(0)):
        counts[e.family] = counts.get(e.family, 0) + 1
    assert counts["read"] > 1.5 * counts["colour"]


def test_warmup_draws_one_thing_and_the_trainer_switches_to_the_mix():
    """Warm-up pictures hold one shape, glyph or word (or 1-3 shapes to count), pass their
    checker and are never held out; the trainer draws only them before `warm_until`, a
    `warm_share` of them later, and a run without a warm-up draws exactly as before."""
    from training.builtin_vqa2 import GROUP, TrainConfig, draw

    warm = vqa2.warmup_examples(200, random.Random(0))
    assert {e.family for e in warm} == set(vqa2.WARMUP)
    for e in warm:
        things = len(e.picture.items) + len(e.picture.texts)
        assert things == 1 or (e.family == "count" and things <= 3)
        assert vqa2.score(e, e.answer) == 1.0 and not vqa2.is_heldout(e.picture, e.question)
    c = TrainConfig(batch_size=8, warm_until=50, warm_share=0.25)
    first = draw(c, random.Random(1), step=0)
    assert len(first) == GROUP * 8 and all(e.question in _warm_questions() for e in first)
    later = [e.family for e in draw(c, random.Random(1), step=50)]
    assert {"describe", "list"} & set(later) and len(later) == GROUP * 8
    plain = draw(TrainConfig(batch_size=8), random.Random(3), step=0)
    assert [e.key for e in plain] == [e.key for e in vqa2.training_examples(32, random.Random(3))]


def test_reading_warmup_prints_one_digit_apart_and_takes_its_share():
    """`glyphs` prints one digit 1-32 times, never two copies side by side (each reads as the
    number alone), answered by the digit; `read_share` puts that share of every batch in it."""
    from training.builtin_vqa2 import TrainConfig, draw

    rng = random.Random(0)
    seen = set()
    for _ in range(300):
        picture, question, answer = vqa2.glyphs(rng)
        cells = {(t.row, t.col) for t in picture.texts}
        assert {t.text for t in picture.texts} == {answer} and len(answer) == 1
        assert not any((r, c + 1) in cells or (r + 1, c) in cells for r, c in cells)
        assert question in vqa2.QUESTIONS["number"]
        seen.add(len(cells))
    assert seen == set(vqa2.GLYPH_COPIES)
    assert all(
        not vqa2.is_heldout(e.picture, e.question) and vqa2.score(e, e.answer) == 1.0
        for e in vqa2.reading_examples(50, rng)
    )
    drawn = draw(TrainConfig(batch_size=64, read_share=0.5), random.Random(1), step=0)
    share = sum(
        len({t.text for t in e.picture.texts}) == 1
        and e.family == "number"
        and len(e.answer) == 1
        and len(e.picture.texts) > 0
        for e in drawn
    ) / len(drawn)
    assert 0.4 < share < 0.65


def test_reading_runs_print_one_number_or_word_per_row():
    """The second reading stage: a number of 2-4 digits or a word in 1-8 rows, one copy a row,
    each inside the grid, answered by the text; the first stage's stream is unchanged."""
    rng = random.Random(0)
    for _ in range(200):
        picture, question, answer = vqa2.rows(rng, rng.choice(("number", "read")))
        texts = picture.texts
        assert {t.text for t in texts} == {answer} and len({t.row for t in texts}) == len(texts)
        assert all(t.col + len(t.text) <= scenes2.CELLS for t in texts)
        assert len(texts) in vqa2.ROW_COPIES
        assert (answer.isdigit() and 2 <= len(answer) <= 4) == (
            question in vqa2.QUESTIONS["number"]
        )
    runs = vqa2.reading_examples(300, random.Random(1), "runs")
    assert {e.family for e in runs} == {"number", "read"}
    assert all(vqa2.score(e, e.answer) == 1.0 for e in runs)
    digits = vqa2.reading_examples(20, random.Random(1))
    assert all(len(e.answer) == 1 for e in digits)
    later = vqa2.reading_examples(60, random.Random(1), "rows")  # no single digits any more
    assert {e.family for e in later} == {"number", "read"}
    assert all(len(e.answer) >= 2 for e in later)
    from training import trainer
    from training.builtin_vqa2 import TrainConfig

    _, c = trainer.parse_args(["--reading", "runs"], TrainConfig, "x", Path("r"), 1.0)
    assert c.reading == "runs"
    with pytest.raises(SystemExit):  # argparse's one-line usage error
        trainer.parse_args(["--reading", "words"], TrainConfig, "x", Path("r"), 1.0)


def _warm_questions() -> set[str]:
    return {
        q.format(kind=k)
        for f in ("colour", "number", "read")
        for q in vqa2.QUESTIONS[f]
        for k in scenes2.KINDS
    } | {vqa2.QUESTIONS["count"][0]}


def test_pictures_round_trip_and_render_glyphs_in_their_cells():
    e = vqa2.generate_examples(1, seed=0, split="train", families=("number",))[0]
    assert Picture.from_dict(e.picture.to_dict()) == e.picture
    img = e.image()
    assert img.size == (scenes2.SIZE, scenes2.SIZE)
    t = e.picture.texts[0]
    cell = img.crop((t.col * 16, t.row * 16, (t.col + 1) * 16, (t.row + 1) * 16))
    background = scenes2.BACKGROUNDS[e.picture.background]
    assert (np.asarray(cell) != background).any()  # ink inside the first glyph cell
