"""Tests for the synthetic image question-answer data and the multimodal demo tokenizer."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from seer.errors import SeerError
from seer.models.loader import builtin_path
from synthetic import scenes, vqa
from synthetic.scenes import render_batch
from synthetic.vqa import (
    CANVAS,
    CELL,
    COLOURS,
    FAMILIES,
    FRUITS,
    IMAGE_SIZE,
    LINE_CHARS,
    READ_WORDS,
    ImageSpec,
    VQAExample,
    all_words,
    generate_examples,
    is_heldout,
    render,
    save_samples,
)
from training.tokenizer import (
    IMAGE_TOKEN,
    SPECIAL_TOKENS,
    UNK_TOKEN,
    build_multimodal_tokenizer,
    build_tokenizer,
    multimodal_words,
)

N = 1000  # 200 per family
BUILTIN = builtin_path("builtin-v1")
# the first VQA model's sample images (the package's until the VQA model v2 shipped)
SAMPLES = builtin_path("builtin-vqa-v1") / "images"


@pytest.fixture(scope="module")
def train() -> list[VQAExample]:
    return generate_examples(N, seed=0, split="train")


@pytest.fixture(scope="module")
def heldout() -> list[VQAExample]:
    return generate_examples(N, seed=0, split="heldout")


@pytest.fixture(scope="module")
def mm_tok(tmp_path_factory: pytest.TempPathFactory):
    transformers = pytest.importorskip("transformers")
    out_dir: Path = tmp_path_factory.mktemp("mm_tok")
    build_multimodal_tokenizer(out_dir)
    return transformers.AutoTokenizer.from_pretrained(out_dir, local_files_only=True)


def lengths_by_family(examples: list[VQAExample]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for ex in examples:
        out[ex.family].append(len(ex.answer.split(" ")))
    return out


def key(ex: VQAExample) -> str:
    return f"{ex.spec.canonical()}\n{ex.question}"


# --------------------------------------------------------------------------- generation


def test_deterministic(train: list[VQAExample]) -> None:
    assert generate_examples(N, seed=0, split="train") == train
    assert generate_examples(N, seed=1, split="train") != train
    spec = train[0].spec
    assert render(spec).tobytes() == render(ImageSpec.from_dict(spec.to_dict())).tobytes()


def test_family_streams_are_independent(train: list[VQAExample]) -> None:
    alone = generate_examples(N // len(FAMILIES), seed=0, split="train", families=("chart",))
    assert sorted(map(key, alone)) == sorted(key(ex) for ex in train if ex.family == "chart")


def test_balanced_and_mixed(train: list[VQAExample]) -> None:
    counts = {f: len(v) for f, v in lengths_by_family(train).items()}
    assert counts == {f: N // len(FAMILIES) for f in FAMILIES}
    assert len({ex.family for ex in train[:20]}) > 2  # shuffled, not grouped by family


def test_splits_disjoint(train: list[VQAExample], heldout: list[VQAExample]) -> None:
    assert not {key(ex) for ex in train} & {key(ex) for ex in heldout}
    assert not any(is_heldout(ex.spec, ex.question) for ex in train)
    assert all(is_heldout(ex.spec, ex.question) for ex in heldout)


def test_heldout_share_about_ten_percent() -> None:
    rng = random.Random(0)
    draws = [vqa._GENERATORS[f](rng) for f in FAMILIES for _ in range(400)]
    share = sum(is_heldout(spec, q) for spec, q, _ in draws) / len(draws)
    assert 0.07 < share < 0.13


def test_unique_and_errors() -> None:
    exs = generate_examples(300, seed=3, split="heldout", unique=True)
    assert len({key(ex) for ex in exs}) == 300
    with pytest.raises(SeerError):
        generate_examples(10, seed=0, split="test")
    with pytest.raises(SeerError):
        generate_examples(10, seed=0, split="train", families=("colour", "smell"))


# --------------------------------------------------------------------------- answers


def test_answer_length_spread(train: list[VQAExample]) -> None:
    lengths = lengths_by_family(train)
    assert set(lengths["colour"]) == {1}
    assert set(lengths["count"]) == {1}
    assert set(lengths["read"]) == {1, 2, 3}
    assert set(lengths["describe"]) == {4 * k - 1 for k in range(1, 7)}  # 1-6 objects
    assert set(lengths["chart"]) == {3 * k + 2 for k in range(2, 5)}  # 2-4 bars
    assert max(max(v) for v in lengths.values()) <= vqa.MAX_ANSWER_WORDS


def test_answers_match_specs(train: list[VQAExample]) -> None:
    for ex in train:
        spec, words = ex.spec, ex.answer.split(" ")
        if ex.family == "colour":
            assert words == [spec.shapes[0].colour]
            assert ex.question.split()[-2] in ("shape", spec.shapes[0].kind)
        elif ex.family == "count":
            assert words == [str(len(spec.shapes))]
        elif ex.family == "read":
            assert " ".join(spec.text).split(" ") == words
            assert len(spec.text) <= 2 and all(len(line) <= LINE_CHARS for line in spec.text)
        elif ex.family == "chart":
            values = [v for _, v in spec.bars]
            assert values.count(max(values)) == 1
            top = FRUITS[spec.bars[values.index(max(values))][0]]
            want = [f"{FRUITS[c]} {v}" for c, v in spec.bars] + [f"most {top}"]
            assert ex.answer == " , ".join(want)


def test_describe_reading_order_well_defined(train: list[VQAExample]) -> None:
    for ex in (ex for ex in train if ex.family == "describe"):
        shapes = ex.spec.shapes
        items = [item.split(" ") for item in ex.answer.split(" , ")]
        assert [(c, k) for _, c, k in items] == [(s.colour, s.kind) for s in shapes]
        assert all(a == ("an" if c == "orange" else "a") for a, c, _ in items)
        cells = []
        for s in shapes:  # each shape lies wholly inside one grid cell ...
            row, col = s.y // CELL, s.x // CELL
            half = s.size / 2
            assert row * CELL < s.y - half and s.y + half < (row + 1) * CELL
            assert col * CELL < s.x - half and s.x + half < (col + 1) * CELL
            cells.append((row, col))
        assert cells == sorted(set(cells))  # ... and they are listed row by row, left to right


def test_words_in_vocabulary_and_tokenize(train: list[VQAExample], mm_tok) -> None:
    vocab = set(all_words())
    unk = mm_tok.convert_tokens_to_ids(UNK_TOKEN)
    image_id = mm_tok.convert_tokens_to_ids(IMAGE_TOKEN)
    for ex in train[:300]:
        assert set(ex.question.split()) <= vocab and set(ex.answer.split(" ")) <= vocab
        q_ids = mm_tok(ex.prompt, add_special_tokens=False)["input_ids"]
        a_ids = mm_tok(ex.answer, add_special_tokens=False)["input_ids"]
        assert unk not in q_ids and unk not in a_ids
        assert q_ids[0] == image_id and q_ids.count(image_id) == 1
        assert len(q_ids) == 1 + len(ex.question.split())
        assert len(a_ids) == len(ex.answer.split(" "))
        assert mm_tok.decode(a_ids) == ex.answer


# --------------------------------------------------------------------------- tokenizers


def test_text_tokenizer_unchanged(tmp_path: Path) -> None:
    build_tokenizer(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (tmp_path / name).read_bytes() == (BUILTIN / name).read_bytes(), name


def test_multimodal_tokenizer(mm_tok) -> None:
    from seer.models.tokens import chat_ids

    assert [mm_tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == list(range(7))
    image_id = mm_tok.convert_tokens_to_ids(IMAGE_TOKEN)
    assert image_id == len(SPECIAL_TOKENS)
    assert len(mm_tok) == len(SPECIAL_TOKENS) + 1 + len(
        set(multimodal_words()) | {"user"} | {"system", "assistant"}
    )
    ids = chat_ids(mm_tok, f"{IMAGE_TOKEN}\nwhat colour is the shape ?")
    tokens = mm_tok.convert_ids_to_tokens(ids)
    assert tokens[:5] == [
        "<|startoftext|>",
        "<|start_header_id|>",
        "user",
        "<|end_header_id|>",
        IMAGE_TOKEN,
    ]
    assert tokens[-3:] == ["<|start_header_id|>", "assistant", "<|end_header_id|>"]
    assert ids.count(image_id) == 1 and mm_tok.convert_tokens_to_ids(UNK_TOKEN) not in ids


# --------------------------------------------------------------------------- images


def test_images_size_mode_and_colours(train: list[VQAExample]) -> None:
    for ex in train[:200]:
        img = ex.image()
        assert img.mode == "RGB" and img.size == (IMAGE_SIZE, IMAGE_SIZE)
        for s in ex.spec.shapes:  # the centre pixel of every shape has the shape's colour
            assert img.getpixel((s.x, s.y)) == COLOURS[s.colour]
            assert min(s.x, s.y) - s.size / 2 >= 0 and max(s.x, s.y) + s.size / 2 <= CANVAS
        if ex.spec.text:  # some pixels are (close to) the text colour
            want = np.array(COLOURS[ex.spec.text_colour])
            assert (np.abs(np.asarray(img).astype(int) - want).sum(-1) < 30).sum() > 20
    assert render(train[0].spec, 192).size == (192, 192)
    batch = render_batch([ex.spec for ex in train[:4]])
    assert batch.shape == (4, IMAGE_SIZE, IMAGE_SIZE, 3) and batch.dtype == np.uint8


def test_every_text_line_fits() -> None:
    font = scenes._font(scenes.TEXT_SIZE)  # the pictures moved to synthetic.scenes
    pairs = [
        f"{a} {b}" for a in READ_WORDS for b in READ_WORDS if len(a) + len(b) + 1 <= LINE_CHARS
    ]
    widest = max([*READ_WORDS, *pairs], key=font.getlength)
    tall = max(READ_WORDS, key=lambda w: font.getbbox(w)[3] - font.getbbox(w)[1])
    jx, jy = vqa.TEXT_JITTER
    for lines in ((widest,), (widest, tall), (tall, widest)):
        for dx in (-jx, jx):
            for dy in (-jy, jy):
                spec = ImageSpec("white", text=lines, text_xy=(CANVAS // 2 + dx, CANVAS // 2 + dy))
                px = np.asarray(render(spec))
                frame = np.concatenate(
                    [
                        px[:2].reshape(-1, 3),
                        px[-2:].reshape(-1, 3),
                        px[:, :2].reshape(-1, 3),
                        px[:, -2:].reshape(-1, 3),
                    ]
                )
                assert (frame == 255).all(), (lines, dx, dy)  # 2 px border stays clear


def test_save_samples_and_shipped_samples(tmp_path: Path) -> None:
    paths = save_samples(tmp_path, n=6)
    records = json.loads((tmp_path / "samples.json").read_text(encoding="utf-8"))
    assert [r["file"] for r in records] == [p.name for p in paths]
    assert {r["family"] for r in records} == set(FAMILIES)
    for r in records:
        spec = ImageSpec.from_dict(r["spec"])
        assert is_heldout(spec, r["question"])
        assert r["prompt"] == f"{IMAGE_TOKEN}\n{r['question']}"
    # builtin-vqa-v1's samples are exactly these (regenerate with save_samples(folder, 6))
    shipped = (SAMPLES / "samples.json").read_text(encoding="utf-8")
    assert shipped == (tmp_path / "samples.json").read_text(encoding="utf-8")
    assert all((SAMPLES / r["file"]).is_file() for r in records)
