"""Tests for the demo task generators and the word-level tokenizer."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from synthetic.tasks import (
    ARITH_TEMPLATES,
    DESCRIBE_WORDS_PER_ITEM,
    FAMILIES,
    MAX_ANSWER_WORDS,
    SPELL_TEMPLATES,
    SPELL_WORDS,
    Example,
    all_words,
    generate_examples,
    is_heldout,
)
from training.tokenizer import (
    SPECIAL_TOKENS,
    build_tokenizer,
    encode_chat,
    vocabulary,
)

N = 2100  # 300 per family


@pytest.fixture(scope="module")
def train() -> list[Example]:
    return generate_examples(N, seed=0, split="train")


@pytest.fixture(scope="module")
def heldout() -> list[Example]:
    return generate_examples(N, seed=0, split="heldout")


@pytest.fixture(scope="module")
def tok(tmp_path_factory: pytest.TempPathFactory):
    transformers = pytest.importorskip("transformers")
    out_dir: Path = tmp_path_factory.mktemp("tok")
    build_tokenizer(out_dir)
    return transformers.AutoTokenizer.from_pretrained(out_dir, local_files_only=True)


def by_family(examples: list[Example], family: str) -> list[Example]:
    return [ex for ex in examples if ex.family == family]


# --------------------------------------------------------------------------- generation


def test_deterministic(train: list[Example]) -> None:
    assert generate_examples(N, seed=0, split="train") == train
    assert generate_examples(N, seed=1, split="train") != train


def test_balanced_and_family_selection(train: list[Example]) -> None:
    counts = Counter(ex.family for ex in train)
    assert set(counts) == set(FAMILIES)
    assert max(counts.values()) - min(counts.values()) <= 1
    only = generate_examples(10, seed=0, split="train", families=("arith", "spell"))
    assert {ex.family for ex in only} == {"arith", "spell"}
    # Each family has its own RNG stream: selecting families does not change their examples.
    mixed = generate_examples(35, seed=0, split="train")
    assert Counter(by_family(only, "arith")) == Counter(by_family(mixed, "arith"))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        generate_examples(3, seed=0, split="test")
    with pytest.raises(ValueError):
        generate_examples(3, seed=0, split="train", families=("nope",))


def test_train_heldout_disjoint(train: list[Example], heldout: list[Example]) -> None:
    train_prompts = {ex.prompt for ex in train}
    heldout_prompts = {ex.prompt for ex in heldout}
    assert not train_prompts & heldout_prompts
    assert not any(is_heldout(p) for p in train_prompts)
    assert all(is_heldout(p) for p in heldout_prompts)


def test_heldout_share_is_about_ten_percent() -> None:
    prompts = [f"copy : w{i}" for i in range(5000)]
    share = sum(map(is_heldout, prompts)) / len(prompts)
    assert 0.08 < share < 0.12


def test_unique_prompts() -> None:
    exs = generate_examples(70, seed=0, split="heldout", unique=True)
    assert len({ex.prompt for ex in exs}) == 70
    with pytest.raises(ValueError):  # ~16 held-out spelling prompts exist
        generate_examples(100, seed=0, split="heldout", families=("spell",), unique=True)


def test_every_arith_pair_and_spelling_is_trained() -> None:
    """Held-out arith/spell prompts only rephrase sums and spellings that training shows."""
    for a in range(10):
        for b in range(10):
            assert any(not is_heldout(t.format(a=a, b=b)) for t in ARITH_TEMPLATES)
    for w in SPELL_WORDS:
        assert any(not is_heldout(t.format(w=w)) for t in SPELL_TEMPLATES)


def test_answer_lengths(train: list[Example]) -> None:
    lengths = [len(ex.answer.split(" ")) for ex in train]
    assert min(lengths) == 1
    assert 45 <= max(lengths) <= MAX_ANSWER_WORDS
    assert sum(n == 1 for n in lengths) > 0.2 * len(lengths)  # many short answers
    assert sum(n > 16 for n in lengths) > 0.1 * len(lengths)  # a fair share of long ones


def test_closed_vocabulary(train: list[Example], heldout: list[Example]) -> None:
    words = set(all_words())
    assert all_words() == sorted(words)
    for ex in train + heldout:
        assert set(ex.prompt.split()) <= words, ex
        assert set(ex.answer.split()) <= words, ex
        assert ex.answer == " ".join(ex.answer.split()), ex  # single spaces, no specials
        assert "<|" not in ex.prompt + ex.answer


# --------------------------------------------------------------------------- answers


def test_lookup_answers(train: list[Example]) -> None:
    for ex in by_family(train, "lookup"):
        (obj,) = re.findall(r"what color is the (\w+) \?", ex.prompt)
        facts = dict(re.findall(r"the (\w+) is (\w+)", ex.prompt))
        assert ex.answer == facts[obj]


def test_count_answers(train: list[Example]) -> None:
    for ex in by_family(train, "count"):
        items = ex.prompt.removeprefix("how many items : ").split()
        assert ex.answer == str(len(items)) and 1 <= len(items) <= 9


def test_arith_answers(train: list[Example]) -> None:
    for ex in by_family(train, "arith"):
        a, b = (int(x) for x in re.findall(r"\d+", ex.prompt))
        assert ex.answer == f"{a} plus {b} is {a + b}"


def test_spell_answers(train: list[Example]) -> None:
    for ex in by_family(train, "spell"):
        word = next(w for w in ex.prompt.split() if w in SPELL_WORDS and w != "spell")
        assert ex.answer.replace(" ", "") == word and 3 <= len(word) <= 9


def test_copy_answers(train: list[Example]) -> None:
    for ex in by_family(train, "copy"):
        assert ex.answer == ex.prompt.removeprefix("copy : ")


def test_repeat_answers(train: list[Example]) -> None:
    for ex in by_family(train, "repeat"):
        _, word, n, _ = ex.prompt.split()
        assert ex.answer.split() == [word] * int(n)


def test_describe_answers(train: list[Example]) -> None:
    for ex in by_family(train, "describe"):
        items = ex.prompt.removeprefix("describe : ").split(" , ")
        expected = [f"there is a {item} ." for item in items]
        assert ex.answer == " ".join(expected)
        assert len(ex.answer.split()) == DESCRIBE_WORDS_PER_ITEM * len(items)


# --------------------------------------------------------------------------- tokenizer


def test_special_token_ids(tok) -> None:
    assert [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == list(range(7))
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (0, 1, 1)
    assert tok.mask_token == "<|mdm_mask|>" and tok.unk_token == "<|unk|>"
    assert len(tok) == len(vocabulary())


def test_no_word_maps_to_unk(tok) -> None:
    ids = tok.convert_tokens_to_ids([*all_words(), "user", "assistant"])
    assert tok.unk_token_id not in ids


def test_chat_template_ids(tok, heldout: list[Example]) -> None:
    for ex in heldout[:50]:
        ids = encode_chat(tok, ex.prompt)
        assert isinstance(ids, list) and all(type(i) is int for i in ids)
        words = tok.convert_tokens_to_ids(ex.prompt.split())
        assert tok.convert_tokens_to_ids(["user", "assistant"]) == [ids[2], ids[-2]]
        # bos, start_header, user, end_header, <prompt>, eot, start_header, assistant, end_header
        assert ids == [0, 3, ids[2], 4, *words, 5, 3, ids[-2], 4]
        assert tok.unk_token_id not in ids


def test_answer_round_trip(tok, train: list[Example]) -> None:
    for ex in train[:200]:
        ids = tok(ex.answer, add_special_tokens=False)["input_ids"]
        assert len(ids) == len(ex.answer.split()) and tok.unk_token_id not in ids
        padded = ids + [tok.convert_tokens_to_ids("<|eot_id|>")] + [tok.pad_token_id] * 3
        assert tok.decode(padded, skip_special_tokens=True) == ex.answer
