"""A word-level tokenizer for the demo tasks, saved in Hugging Face format with LLaDA's names.

Design
------
The demo vocabulary is closed (:func:`seer.demo.tasks.all_words`), so one token per word is
the simplest tokenizer that never emits ``<|unk|>``; it also keeps sequences short, which
matters on a CPU. The files written by :func:`build_tokenizer` load with
``transformers.AutoTokenizer.from_pretrained(out_dir)`` as a ``PreTrainedTokenizerFast`` and
mirror LLaDA-8B-Instruct's conventions:

* special tokens ``<|startoftext|>`` (BOS), ``<|endoftext|>`` (EOS *and* padding),
  ``<|mdm_mask|>`` (the diffusion mask), ``<|start_header_id|>``, ``<|end_header_id|>``,
  ``<|eot_id|>`` and ``<|unk|>`` take ids 0..6, in :data:`SPECIAL_TOKENS` order;
* the chat template is LLaDA's (Llama-3 style), so code written against the real model runs
  unchanged on the demo model.

Special tokens are registered as *added* tokens, so they are matched inside raw text before
pre-tokenization. The ``WhitespaceSplit`` pre-tokenizer then splits on any whitespace, which
makes the template's ``"\\n\\n"`` vanish instead of producing an unknown token. Words are
decoded joined by single spaces (no clean-up of spaces before punctuation).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from seer.demo.tasks import all_words

BOS_TOKEN = "<|startoftext|>"
EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = EOS_TOKEN
MASK_TOKEN = "<|mdm_mask|>"
START_HEADER_TOKEN = "<|start_header_id|>"
END_HEADER_TOKEN = "<|end_header_id|>"
EOT_TOKEN = "<|eot_id|>"
UNK_TOKEN = "<|unk|>"

SPECIAL_TOKENS: tuple[str, ...] = (
    BOS_TOKEN,
    EOS_TOKEN,
    MASK_TOKEN,
    START_HEADER_TOKEN,
    END_HEADER_TOKEN,
    EOT_TOKEN,
    UNK_TOKEN,
)
"""Special tokens; their ids are their positions (0..6)."""

CHAT_ROLES: tuple[str, ...] = ("system", "user", "assistant")
"""Role names that the chat template writes as plain words."""

CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}"
    "{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    " + message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}"
)
"""LLaDA-8B-Instruct's chat template (Llama-3 style headers, BOS before the first message)."""

MODEL_MAX_LENGTH = 512


def vocabulary() -> dict[str, int]:
    """Token -> id: special tokens first, then every task and chat-role word, sorted."""
    words = sorted(set(all_words()) | set(CHAT_ROLES))
    tokens = list(SPECIAL_TOKENS) + [w for w in words if w not in SPECIAL_TOKENS]
    return {tok: i for i, tok in enumerate(tokens)}


def build_backend() -> Tokenizer:
    """The ``tokenizers`` object: word-level model, whitespace splitting, space-joining decoder."""
    tok = Tokenizer(models.WordLevel(vocab=vocabulary(), unk_token=UNK_TOKEN))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # WordPiece's decoder joins tokens with spaces; with no "##" tokens it only does that.
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    return tok


def build_tokenizer(out_dir: Path) -> None:
    """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    build_backend().save(str(out_dir / "tokenizer.json"))
    _write_json(out_dir / "tokenizer_config.json", _tokenizer_config())
    _write_json(out_dir / "special_tokens_map.json", _special_tokens_map())


def encode_chat(tok: Any, prompt: str) -> list[int]:
    """Ids of a one-turn user chat plus the assistant header (see `seer.models.loader.chat_ids`)."""
    from seer.models.loader import chat_ids

    return chat_ids(tok, prompt)


def _special_tokens_map() -> dict[str, str]:
    return {
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "unk_token": UNK_TOKEN,
        "mask_token": MASK_TOKEN,
    }


def _tokenizer_config() -> dict[str, Any]:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **_special_tokens_map(),
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": MODEL_MAX_LENGTH,
        "padding_side": "right",
        "add_bos_token": False,
        "add_eos_token": False,
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
