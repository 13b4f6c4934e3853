"""Train the built-in text model v2: a small LLaDA on the tasks of :mod:`synthetic.lines`.

The recipe is the first model's (:mod:`training.trainer`: LLaDA SFT, answers padded with [EOS]
to the window, [EOS] a target, per-row windows), with a 128-position window, the v2 tokenizer
(:func:`training.tokenizer.build_v2_tokenizer`: exact round trip, names and punctuation)
and multi-turn prompts (an in-context example turn, as ParallelBench's prompts have). Batches are
drawn four at a time and grouped by length, so a batch pads little.

Run: ``python -m training.builtin_v2 --out runs/builtin-v2 --minutes 120`` (resumes from
``--out``); a checkpoint in the official LLaDA layout is written to ``--out/export`` at each save.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from seer.errors import SeerError
from seer.models.factory import random_model
from seer.models.tokens import chat_ids, load_tokenizer
from seer.sampling import TokenIds
from synthetic import lines
from training import trainer, vocab2
from training.tokenizer import build_v2_tokenizer
from training.trainer import Run, Schedule, pack

GROUP = 4  # batches drawn at once and grouped by length


@dataclass(slots=True)
class TrainConfig:
    """Model size and optimisation of the text model v2."""

    CHOICES: ClassVar[dict[str, tuple]] = {"windows": ("row", "batch", "full")}

    d_model: int = 128
    n_layers: int = 6
    n_heads: int = 4
    mlp_hidden_size: int = 384
    rope_theta: float = 10000.0
    weight_tying: bool = True  # the LM head is the embedding: copying a rare name is free
    window: int = 128
    long_windows: str = ""  # e.g. "128,256,512": each batch's full window drawn from these
    batch_size: int = 16
    lr: float = 3e-4  # 1.5e-3 never started copying (docs/builtin-v2/MODEL_CARD.md)
    min_lr: float = 5e-5
    warmup: int = 100
    total_steps: int = 20000  # cosine horizon; a phase may stop earlier on its time budget
    weight_decay: float = 0.01
    full_window_prob: float = 0.3
    cycle_start: int = 0
    windows: str = "row"  # "full": every row the full window (the control model: no cut window)
    seed: int = 0
    bare_steps: int = 1500  # the copy warm-up: only `lines.bare_item` requests until this step
    bare_people: int = 400  # ... whose lines grow by one person (up to 8) every this many steps
    bare_share: float = 0.2  # the share of warm-up requests in every batch afterwards
    until: int = 0  # stop at this step (0: at the time budget or the cycle's end)
    device: str = "cpu"  # "cuda" on a GPU machine (the masks are drawn on the CPU either way)


class ChatEncoder:
    """Ids of an item's chat (the tokenizer's chat template) and of its answer window."""

    def __init__(self, tok) -> None:
        self.tok = tok
        self.eot = tok.convert_tokens_to_ids("<|eot_id|>")
        self.eos = tok.eos_token_id
        self.mask = tok.mask_token_id
        self.pad = self.eos

    def prompt(self, item: lines.Item) -> list[int]:
        return chat_ids(self.tok, item.messages())

    def answer(self, item: lines.Item) -> list[int]:
        return self.tok(item.answer, add_special_tokens=False)["input_ids"] + [self.eot]


def batches(enc: ChatEncoder, c: TrainConfig, rng: random.Random, step: Callable[[], int]):
    """GROUP batches of training items at a time, grouped by total length, in random order; the
    curriculum by `step()`: warm-up requests only before `c.bare_steps`, then the task mix with
    a `c.bare_share` of them."""
    while True:
        yield from _group(enc, c, rng, step())


def _items(c: TrainConfig, rng: random.Random, step: int) -> list[lines.Item]:
    n = GROUP * c.batch_size
    bare = n if step < c.bare_steps else trainer.share_count(rng, n, c.bare_share)
    warm = lines.bare_items(bare, rng, people=min(8, 1 + step // c.bare_people))
    return warm + lines.generate(n - bare, seed=rng.randrange(1 << 30), split="train")


def _group(enc: ChatEncoder, c: TrainConfig, rng: random.Random, step: int):
    items = _items(c, rng, step)
    rows = sorted(
        ((enc.prompt(it), enc.answer(it)) for it in items), key=lambda r: sum(map(len, r))
    )
    chunks = [rows[i : i + c.batch_size] for i in range(0, len(rows), c.batch_size)]
    rng.shuffle(chunks)
    for chunk in chunks:
        prompts, answers = zip(*chunk, strict=True)
        window = batch_window(c, rng)
        answers = [a[:window] for a in answers]
        yield pack(list(prompts), answers, enc.pad, window, rng, c.full_window_prob, c.windows)


def batch_window(c: TrainConfig, rng: random.Random) -> int:
    """A batch's full window: `c.window`, or one of `c.long_windows` drawn uniformly (the
    fine-tune that teaches the model to answer in longer windows). No RNG call without
    `long_windows`, so a run without them replays as before."""
    if not c.long_windows:
        return c.window
    return rng.choice(window_choices(c))


def window_choices(c: TrainConfig) -> list[int]:
    """`c.long_windows` as positive window sizes, or one `SeerError` line."""
    try:
        out = [int(w) for w in c.long_windows.split(",")]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise SeerError(
            f"--long-windows {c.long_windows!r}: give positive window sizes, "
            "comma-separated (e.g. 128,256,512)"
        )
    return out


def evaluate(model, enc: ChatEncoder, items: list[lines.Item], window: int, batch: int = 32):
    """Held-out score per family: greedy, one token per step, low-confidence remasking."""
    tokens = TokenIds(mask=enc.mask, eos=enc.eos, pad=enc.pad, eot=enc.eot)

    def score(it: lines.Item, row: list[int]) -> float:
        end = row.index(enc.eot) if enc.eot in row else len(row)
        return lines.score(it, enc.tok.decode(row[:end], skip_special_tokens=True))

    return trainer.loop_score(model, tokens, items, window, batch, enc.prompt, score)


def write_tokenizer(out: Path) -> None:
    build_v2_tokenizer(out, vocab2.words())


def train(out: Path, minutes: float, c: TrainConfig, eval_every: int, threads: int, eval_n: int):
    if c.long_windows:
        window_choices(c)  # a bad list fails here, before the model loads
    torch.set_num_threads(threads)
    torch.manual_seed(c.seed)
    export = out / "export"
    write_tokenizer(export)
    enc = ChatEncoder(load_tokenizer(export))
    raw = trainer.lm_config(c, len(enc.tok), enc.mask, enc.eos, enc.pad)
    raw["rope_theta"] = c.rope_theta
    raw["weight_tying"] = c.weight_tying
    raw["max_sequence_length"] = 1024
    model = random_model(raw, seed=c.seed, std=0.02).to(c.device).train()
    run = Run(out, model, c, raw, write_tokenizer)
    rng = random.Random(f"train2/{c.seed}/{run.step}")
    gen = torch.Generator().manual_seed(c.seed * 1000 + run.step)
    heldout = lines.generate(eval_n, seed=1, split="heldout", families=tuple(lines.FAMILIES))
    trainer.fit(
        run,
        batches(enc, c, rng, lambda: run.step),
        lambda b: trainer.loss_fn(model, *trainer.to_device(b, c.device), enc.mask, gen),
        lambda: evaluate(model, enc, heldout, c.window),
        Schedule(minutes, eval_every, log_every=25, rate="tok/s"),
    )
    return model, run.log


def main(argv: list[str] | None = None) -> None:
    trainer.main(argv, TrainConfig, __doc__, Path("runs/builtin-v2"), 120.0, train, eval_n=19 * 5)


if __name__ == "__main__":
    main()
