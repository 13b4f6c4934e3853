"""What a new user hits first: the `<image>` placeholder, words the tokenizer does not know,
options that do nothing together, reports piped to a file."""

from __future__ import annotations

import io
import logging

import pytest

import seer
from seer.errors import SeerError


@pytest.fixture(scope="module")
def vqa():
    return seer.load("builtin-vqa")


@pytest.fixture(scope="module")
def image():
    from seer.demo import sample_images

    return sample_images()[0]["file"]


def test_the_image_placeholder_marks_where_the_image_goes(vqa, image):
    plain = vqa.prompt("what colour is the shape ?", image)
    marked = vqa.prompt("<image>\nwhat colour is the shape ?", image)  # as samples.json writes it
    assert marked.ids == plain.ids  # the official template puts it there too
    assert (marked.embeds == plain.embeds).all()
    moved = vqa.prompt("what colour is <image> the shape ?", image)
    assert moved.ids != plain.ids and len(moved.ids) == len(plain.ids)  # the same features, moved
    with pytest.raises(SeerError, match=r"has 2 <image> placeholder\(s\) but 1 image\(s\) were "):
        vqa.prompt("<image> <image> what colour ?", image)
    with pytest.raises(SeerError, match=r"has 1 <image> placeholder\(s\) but no image was given"):
        vqa.prompt("<image> what colour ?")


def test_a_word_outside_the_vocabulary_is_one_warning(caplog):
    lm = seer.load("builtin-v1")
    with caplog.at_level(logging.WARNING, "seer.models"):
        known = lm.encode("copy : cat dog")
        assert caplog.records == []
        ids = lm.encode("copy : zebra cat xylophone")
    assert lm.tokenizer.unk_token_id in ids and lm.tokenizer.unk_token_id not in known
    assert [r.getMessage() for r in caplog.records] == [
        "seer: warning: 2 piece(s) of the prompt are not in the model's vocabulary and are read "
        "as <|unk|>: 'zebra', 'xylophone'"
    ]


def test_early_stop_with_one_block_says_it_does_nothing(capsys, caplog):
    from seer.cli import main

    argv = ["generate", "--model", "builtin-v1", "--prompt", "spell sun", "--gen-length", "8"]
    with caplog.at_level(logging.WARNING, "seer.cli"):
        assert main([*argv, "--early-stop"]) == 0
        assert main([*argv, "--early-stop", "--block-length", "4"]) == 0
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "seer: warning: --early-stop does nothing here: it ends a row after a finished block, "
        "and the window (8) is one block (8); give --block-length below --gen-length"
    ]


def test_a_piped_table_is_not_squeezed_to_80_columns():
    from rich.table import Table

    from seer import progress

    out = io.StringIO()  # not a terminal
    table = Table(*(f"column {i}" for i in range(12)))
    table.add_row(*(f"value {i:03d}" for i in range(12)))
    progress.console(out).print(table)
    lines = out.getvalue().splitlines()
    assert max(map(len, lines)) > 80 and any("value 011" in line for line in lines)
    assert sum("value" in line for line in lines) == 1  # the row on one line, not wrapped
