"""`seer.load(folder).generate(...)` on checkpoints made by the factory (word-level tokenizer)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

import seer
from seer import CheckpointError, Generation, SamplingParams, SeerError
from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.engine.prompts import encode_chat
from seer.models.configs import dream_config, llada_config
from seer.models.factory import make_random_checkpoint, random_model, save_checkpoint
from training.tokenizer import build_tokenizer, vocabulary

PROMPT = "repeat star 3 times"
PROMPTS = ["repeat star 3 times", "spell cat", "what is 2 plus 3"]


@pytest.fixture(scope="module", params=["llada", "dream"])
def lm(request, tmp_path_factory):
    folder = make_random_checkpoint(request.param, tmp_path_factory.mktemp(request.param) / "m")
    return seer.load(folder)


@pytest.fixture(scope="module")
def llada(tmp_path_factory):
    return seer.load(make_random_checkpoint("llada", tmp_path_factory.mktemp("l") / "m"))


@pytest.fixture(scope="module")
def dream(tmp_path_factory):
    return seer.load(make_random_checkpoint("dream", tmp_path_factory.mktemp("d") / "m"))


def _enders(lm) -> set[int]:
    return set(lm.tokens.enders)


def _check_generation(lm, g, gen_length: int, nfe: int) -> None:
    assert isinstance(g, Generation)
    assert isinstance(g.text, str)
    assert len(g.token_ids) == gen_length
    assert all(isinstance(t, int) for t in g.token_ids)
    assert g.stats.nfe == nfe
    assert g.stats.gen_length == gen_length == g.stats.window
    assert g.stats.seconds > 0
    # `tokens` counts the answer before its first end token, and `text` decodes exactly those
    n = g.stats.tokens
    assert not _enders(lm) & set(g.token_ids[:n])
    assert n == gen_length or g.token_ids[n] in _enders(lm)
    assert g.text == lm.decode(g.token_ids[:n])


# -- loading -----------------------------------------------------------------------------------


def test_load_reads_model_tokenizer_and_special_ids(lm):
    vocab = lm.tokenizer.get_vocab()
    assert lm.tokens.mask == vocab["<|mdm_mask|>"]
    assert lm.tokens.eos == vocab["<|endoftext|>"]
    assert lm.tokens.eot == vocab["<|eot_id|>"]
    assert lm.max_length == 512
    assert lm.default_rule == ("entropy" if lm.model.logits_shift else "low_confidence")


def test_chat_encoding(llada):
    ids = llada.encode(PROMPT)
    vocab = llada.tokenizer.get_vocab()
    plain = llada.encode(PROMPT, chat=False)
    assert plain == [vocab[w] for w in PROMPT.split()]
    assert ids[0] == vocab["<|startoftext|>"]
    assert ids[-3:] == [
        vocab["<|start_header_id|>"],
        vocab["assistant"],
        vocab["<|end_header_id|>"],
    ]
    assert plain == ids[4 : 4 + len(plain)]


def test_folder_without_tokenizer(tmp_path):
    folder = make_random_checkpoint("llada", tmp_path / "m", layers=1, width=32)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / f).unlink()
    with pytest.raises(CheckpointError, match="tokenizer"):
        seer.load(folder)
    lm = seer.load(folder, tokenizer=False)  # token ids still work
    g = lm.generate([[10, 11, 12]], gen_length=4)[0]
    assert len(g.token_ids) == 4
    with pytest.raises(SeerError, match="without a tokenizer"):
        lm.generate(PROMPT, gen_length=4)


# -- generation --------------------------------------------------------------------------------


def test_text_prompt_gives_a_generation(lm):
    g = lm.generate(PROMPT, gen_length=16)
    _check_generation(lm, g, 16, nfe=16)
    assert lm.generate(PROMPT, gen_length=16).token_ids == g.token_ids  # greedy: deterministic


def test_steps_and_blocks_set_the_cost(lm):
    g = lm.generate(PROMPT, gen_length=16, steps=8, block_length=8)
    _check_generation(lm, g, 16, nfe=8)
    g = lm.generate(PROMPT, SamplingParams(gen_length=8, steps=4))
    _check_generation(lm, g, 8, nfe=4)


def test_text_goes_through_the_chat_template_and_the_loop(lm):
    """generate(text) == the loop run on encode(text) with the model's default rule."""
    p = lm.sampling(gen_length=16, steps=16)  # the model's defaults (Dream: top_k 50, ...)
    canvas = make_canvas([lm.encode(PROMPT)], 16, lm.tokens, "cpu")
    want = DenoisingLoop(lm.model, lm.tokens).run(canvas, p).answer[0].tolist()
    assert lm.generate(PROMPT, gen_length=16).token_ids == want
    canvas = make_canvas([lm.encode(PROMPT, chat=False)], 16, lm.tokens, "cpu")
    plain = DenoisingLoop(lm.model, lm.tokens).run(canvas, p).answer[0].tolist()
    assert lm.generate(PROMPT, gen_length=16, chat=False).token_ids == plain


def test_list_of_prompts_gives_a_list_matching_single_calls(lm):
    out = lm.generate(PROMPTS, gen_length=8)
    assert isinstance(out, list) and len(out) == len(PROMPTS)
    for prompt, g in zip(PROMPTS, out, strict=True):
        _check_generation(lm, g, 8, nfe=8)
        assert g.token_ids == lm.generate(prompt, gen_length=8).token_ids
    assert len({tuple(g.token_ids) for g in out}) > 1  # the prompts matter
    one = lm.generate([PROMPT], gen_length=8)
    assert isinstance(one, list) and len(one) == 1


def test_chat_prompts_are_the_whole_conversation(lm):
    """A chat (OpenAI-style role/content dicts) is one prompt; a list of chats is a batch; an
    earlier turn changes the prompt, and a malformed chat is one line."""
    chat = [{"role": "user", "content": PROMPT}]
    assert lm.generate(chat, gen_length=8).token_ids == lm.generate(PROMPT, gen_length=8).token_ids
    turns = [{"role": "user", "content": PROMPTS[1]}, {"role": "assistant", "content": "a"}, *chat]
    assert (
        encode_chat(lm, turns) != lm.encode(PROMPT)
        and encode_chat(lm, turns)[-3:] == lm.encode(PROMPT)[-3:]
    )
    both = lm.generate([chat, turns], gen_length=8)
    assert [g.token_ids for g in both] == [
        lm.generate(c, gen_length=8).token_ids for c in (chat, turns)
    ]
    for bad in ([{"role": "user"}], [chat, PROMPT], [[1, 2], ["x"]]):
        with pytest.raises(SeerError, match="chat message|prompts must be"):
            lm.generate(bad, gen_length=8)


def test_token_id_inputs(lm):
    ids = [lm.encode(q) for q in PROMPTS]
    want = [g.token_ids for g in lm.generate(PROMPTS, gen_length=8)]
    # list of id lists
    assert [g.token_ids for g in lm.generate(ids, gen_length=8)] == want
    # 1-D tensor: one prompt, one Generation
    single = lm.generate(torch.tensor(ids[0]), gen_length=8)
    assert isinstance(single, Generation) and single.token_ids == want[0]
    # (B, L) tensor, left-padded, with an attention mask
    width = max(map(len, ids))
    x = torch.full((len(ids), width), lm.tokens.pad)
    am = torch.zeros((len(ids), width), dtype=torch.long)
    for r, q in enumerate(ids):
        x[r, width - len(q) :] = torch.tensor(q)
        am[r, width - len(q) :] = 1
    out = lm.generate(x, attention_mask=am, gen_length=8)
    assert [g.token_ids for g in out] == want
    # right padding works too: the mask says which ids are the prompt
    x = torch.full((len(ids), width), lm.tokens.pad)
    am = torch.zeros((len(ids), width), dtype=torch.long)
    for r, q in enumerate(ids):
        x[r, : len(q)] = torch.tensor(q)
        am[r, : len(q)] = 1
    out = lm.generate(x, attention_mask=am, gen_length=8)
    assert [g.token_ids for g in out] == want
    # (1, L) tensor without a mask: the whole row is the prompt
    out = lm.generate(torch.tensor([ids[1]]), gen_length=8)
    assert isinstance(out, list) and out[0].token_ids == want[1]


def test_seed_makes_sampling_reproducible(lm):
    kw = {"gen_length": 16, "temperature": 0.7}
    a = lm.generate(PROMPT, seed=1, **kw).token_ids
    assert lm.generate(PROMPT, seed=1, **kw).token_ids == a
    others = [lm.generate(PROMPT, seed=s, **kw).token_ids for s in (2, 3, 4)]
    assert any(o != a for o in others)


def test_llada_cfg_runs_and_changes_the_answer(llada):
    plain = llada.generate(PROMPT, gen_length=16)
    g = llada.generate(PROMPT, gen_length=16, cfg_scale=2.0)
    _check_generation(llada, g, 16, nfe=16)  # a cond/uncond pair counts as one pass
    assert g.token_ids != plain.token_ids


# -- errors ------------------------------------------------------------------------------------


def _small_context(folder: Path, arch: str, context: int) -> Path:
    build_tokenizer(folder)
    vocab = vocabulary()
    ids = {"mask_token_id": vocab["<|mdm_mask|>"], "eos_token_id": vocab["<|endoftext|>"]}
    ids["pad_token_id"] = ids["eos_token_id"]
    if arch == "llada":
        raw = llada_config(len(vocab), d_model=32, n_layers=1, max_sequence_length=context, **ids)
    else:
        raw = dream_config(
            len(vocab), hidden_size=32, num_hidden_layers=1, max_position_embeddings=context, **ids
        )
    return save_checkpoint(random_model(raw, std=0.2), raw, folder)


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_prompt_plus_gen_length_longer_than_the_context(tmp_path, arch):
    lm = seer.load(_small_context(tmp_path, arch, context=24))
    assert lm.max_length == 24
    n = len(lm.encode(PROMPT))
    assert n == 12
    g = lm.generate(PROMPT, gen_length=24 - n)  # exactly fills the context: fine
    assert len(g.token_ids) == 24 - n
    with pytest.raises(SeerError, match="context of 24") as info:
        lm.generate(PROMPT, gen_length=24 - n + 4)
    assert "gen_length" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(SeerError, match="context"):  # any row of a batch
        lm.generate([[5] * 3, [5] * 20], gen_length=8)


def test_gen_length_not_divisible_by_block_length(llada):
    with pytest.raises(SeerError, match="not a multiple of block_length 5"):
        llada.generate(PROMPT, gen_length=16, block_length=5)


def test_steps_not_divisible_by_the_number_of_blocks(llada):
    with pytest.raises(SeerError, match=r"steps 6 .*4 blocks"):
        llada.generate(PROMPT, gen_length=16, block_length=4, steps=6)


def test_unknown_remasking_rule(lm):
    with pytest.raises(SeerError, match="unknown remasking rule 'greedy'") as info:
        lm.generate(PROMPT, gen_length=8, remasking="greedy")
    assert "low_confidence" in str(info.value)  # lists the choices


@pytest.mark.parametrize(
    "prompt",
    [[], [[]], [[4, 5], []], torch.tensor([], dtype=torch.long), torch.zeros((2, 0), dtype=int)],
    ids=["no-prompts", "empty-ids", "one-empty-row", "empty-1d", "empty-2d"],
)
def test_empty_prompt(llada, prompt):
    with pytest.raises(SeerError, match="prompt"):
        llada.generate(prompt, gen_length=8)


def test_empty_text_prompt_without_chat(llada):
    with pytest.raises(SeerError, match="empty prompt"):
        llada.generate("", chat=False, gen_length=8)


def test_empty_text_prompt_with_chat(llada):
    with pytest.raises(SeerError, match="empty"):
        llada.generate("", gen_length=8)


@pytest.mark.parametrize("rule", ["entropy", "maskgit_plus", "topk_margin", "origin"])
def test_cfg_scale_with_a_dream_rule(lm, rule):
    with pytest.raises(SeerError, match="cfg_scale"):
        lm.generate(PROMPT, gen_length=8, cfg_scale=1.0, remasking=rule)


def test_cfg_scale_with_dreams_default_rule(dream):
    with pytest.raises(SeerError, match="cfg_scale"):
        dream.generate(PROMPT, gen_length=8, cfg_scale=1.0)


@pytest.mark.parametrize(
    ("prompt", "match"),
    [([[1, 3, 10_000]], r"\[0, \d+\)"), ([[-1, 3]], r"\[0, \d+\)"), ([[2, 5]], "MASK")],
)
def test_bad_token_ids(llada, prompt, match):
    prompt = [[llada.tokens.mask if t == 2 else t for t in q] for q in prompt]
    with pytest.raises(SeerError, match=match):
        llada.generate(prompt, gen_length=8)


@pytest.mark.parametrize(
    "kw",
    [
        {"gen_length": 0},
        {"steps": 0},
        {"temperature": -1.0},
        {"top_p": 0.0},
        {"top_k": 0},
        {"cfg_scale": -1.0},
        {"no_such_option": 1},
    ],
)
def test_bad_sampling_options(llada, kw):
    with pytest.raises(SeerError) as info:
        llada.generate(PROMPT, **{"gen_length": 8, **kw})
    assert next(iter(kw)) in str(info.value)


@pytest.mark.parametrize("t", [math.nan, math.inf])
def test_non_finite_temperature(t):
    with pytest.raises(SeerError, match="temperature"):
        SamplingParams(temperature=t)


def test_flat_list_of_ids(llada):
    ids = llada.encode(PROMPT)
    try:
        out = llada.generate(ids, gen_length=8)
    except SeerError:
        return
    want = llada.generate([ids], gen_length=8)[0].token_ids
    assert isinstance(out, Generation) and out.token_ids == want
