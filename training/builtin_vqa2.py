"""Train the built-in multimodal model v2 (shipped as `builtin-vqa`): a small LaViDa-LLaDA on the
v2 image questions.

Architecture (LaViDa's, shrunk; sized to train on one CPU thread): a SigLIP tower (128 px
pictures, patch 8 -> 16 x 16 patches, hidden 128, 4 layers of which 3 run), the `mlp2x_gelu`
projector, LaViDa's 2 x 2 average pool (8 x 8 = 64 image tokens, one per 16 px glyph cell of
:mod:`synthetic.scenes2`) and a LLaDA (d_model 128, 6 layers, 4 heads). The LM starts from
the first built-in text model (`--init-from builtin-v1`; rows copied by token string, a v2 piece
``" red"`` from the word ``red``), which already knows the chat format and [EOS]-padded windows.

Recipe: the first models' (`training.trainer`): LLaDA SFT, answer + <|eot_id|> + [EOS] padding
to the 128-position window, mask ratio t ~ U(0, 1) per row, CE on masked positions / t. A batch is
either a *full* batch (every row the whole window, probability `full_window_prob`) or a *cut*
batch (each row its answer plus 0-24 [EOS], as a Seer cut leaves it); batches are drawn four at a
time and grouped by answer length, so most batches are short and cheap. Families are drawn with
`synthetic.vqa2.WEIGHTS`. Prompts and image features are
spliced exactly as `LlavaProcessor` does at inference; the held-out evaluation runs the real
pipeline (`DiffusionLM.generate` with images, one token per step) and scores with
`synthetic.vqa2.score`. Everything trains, the tower included.

Run: `python -m training.builtin_vqa2 --out runs/builtin-vqa2 --minutes 170` (resumes from
`--out`, saving every 5 minutes); `--out/export` is a LaViDa-layout checkpoint `seer.load` loads.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from synthetic import scenes2, vqa2
from synthetic.vqa2 import VQA2Example
from training import multimodal, trainer
from training.trainer import JITTER, Run, Schedule
from training.vocab_vqa2 import build_tokenizer

GROUP = 4  # batches drawn at once and grouped by answer length
SEER_JSON = {
    "system_prompt": None,
    "gen_length": vqa2.WINDOW,
    "config": {"signal": "eos_prob", "eos_tau": 0.5, "eos_run": 3},
}


@dataclass(slots=True)
class TrainConfig:
    """Model size and optimisation of the built-in multimodal model v2."""

    d_model: int = 128
    n_layers: int = 6
    n_heads: int = 4
    mlp_hidden_size: int = 384
    vision_hidden: int = 128
    vision_layers: int = 4  # in the config; LLaVA drops the last (select layer -2): 3 run
    vision_heads: int = 4
    patch: int = 8
    window: int = vqa2.WINDOW  # answer window (answer + eot + [EOS] padding)
    batch_size: int = 16
    lr: float = 3e-4  # at 1.5e-3 the LM never used the picture (docs/builtin-vqa2/MODEL_CARD.md)
    min_lr: float = 1e-4
    warmup: int = 100
    total_steps: int = 30000  # cosine horizon; a session stops earlier on its time budget
    weight_decay: float = 0.01
    full_window_prob: float = 0.2  # share of batches whose rows all get the full window
    cycle_start: int = 0
    init_from: str = "builtin-v1"  # the text model whose LM weights start the LM ("" for none)
    eval_n: int = 45  # held-out requests per evaluation (balanced over the families)
    warm_until: int = 0  # before this step, only `vqa2.warmup_examples` (one shape, glyph or word)
    warm_share: float = 0.2  # ... and this share of them in every batch afterwards (if warm_until)
    read_share: float = 0.0  # share of every batch from `vqa2.reading_examples` (repeated text)
    reading: str = "digits"  # ... of this stage (`vqa2.READING`: "digits", "runs", "rows")
    until: int = 0  # stop at this step (0: at the time budget or the cycle's end)
    seed: int = 0

    CHOICES: ClassVar[dict[str, tuple]] = {"reading": tuple(vqa2.READING)}


class Batcher(multimodal.ImageBatcher):
    """v2 pieces as answers (cut to the window); a batch is full or cut as a whole (`full`, a
    bool)."""

    def __init__(self, processor, tok, window: int) -> None:
        super().__init__(processor, tok, window, scenes2.SIZE)

    def answer(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"][: self.window - 1] + [self.eot]

    def windows(self, answers: list[list[int]], rng: random.Random, full: bool) -> list[int]:
        w = self.window
        return [w if full else min(w, len(a) + rng.randint(0, JITTER)) for a in answers]


def heldout_score(lm, examples, window: int, batch: int = 48, **kw) -> dict:
    """Mean `vqa2.score` per family of greedy generations through the real pipeline (prompt
    processor, images), one token per step over `window` unless `kw` says otherwise."""
    return trainer.pipeline_score(lm, examples, window, batch, vqa2.score, **kw)


def write_tokenizer(export: Path) -> None:
    """The export's tokenizer files, SigLIP processor config and `seer.json`: no system prompt,
    the 128 window, and the end-token detector with the v1 model's calibrated setting (not yet
    calibrated on this model)."""
    build_tokenizer(export)
    (export / "seer.json").write_text(json.dumps(SEER_JSON, indent=2) + "\n")
    multimodal.write_processor(export, scenes2.SIZE)


def build(out: Path, c: TrainConfig):
    """Tokenizer, config, model (fresh or from the text model), processor and LM wrapper."""
    return multimodal.build(out, c, build_tokenizer, scenes2.SIZE, "builtin-vqa2")


def draw(c: TrainConfig, rng: random.Random, step: int) -> list[VQA2Example]:
    """GROUP batches' examples at `step`: warm-up examples only before `c.warm_until`, then
    the family mix with a `c.warm_share` of them (none in a run without a warm-up); a
    `c.read_share` of every batch is the reading warm-up's."""
    n = GROUP * c.batch_size
    read = trainer.share_count(rng, n, c.read_share)
    if step < c.warm_until:
        warm = n - read
    else:
        warm = trainer.share_count(rng, n - read, c.warm_share if c.warm_until else 0)
    return (
        vqa2.reading_examples(read, rng, c.reading)
        + vqa2.warmup_examples(warm, rng)
        + vqa2.training_examples(n - read - warm, rng)
    )


def next_batch(queue: list, c: TrainConfig, rng: random.Random, batcher: Batcher, step: int = 0):
    """The next (examples, full) batch: GROUP batches are drawn at once (`draw`), sorted by
    answer length and chunked, so a cut batch pads little; each chunk is full with the
    configured probability."""
    if not queue:
        drawn = draw(c, rng, step)
        drawn.sort(key=lambda e: len(batcher.answer(e.answer)))
        chunks = [drawn[i : i + c.batch_size] for i in range(0, len(drawn), c.batch_size)]
        rng.shuffle(chunks)
        queue.extend((chunk, rng.random() < c.full_window_prob) for chunk in chunks)
    return queue.pop()


def batches(batcher: Batcher, c: TrainConfig, rng: random.Random, step=lambda: 0):
    """Training batches without end (`next_batch` at `step()`)."""
    queue: list = []
    while True:
        examples, full = next_batch(queue, c, rng, batcher, step())
        yield batcher(examples, rng, full)


def train(
    out: Path,
    minutes: float,
    c: TrainConfig,
    eval_every: int = 1000,
    save_seconds: float = 300,
    threads: int | None = None,
):
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(c.seed)
    tok, raw, model, proc, lm = build(out, c)
    model.train()
    run = Run(out, model, c, raw, write_tokenizer)
    rng = random.Random(f"train-vqa2/{c.seed}/{run.step}")
    gen = torch.Generator().manual_seed(c.seed * 1000 + run.step)
    heldout = vqa2.generate_examples(c.eval_n, seed=1, split="heldout", unique=True)
    trainer.fit(
        run,
        batches(Batcher(proc, tok, c.window), c, rng, lambda: run.step),
        multimodal.image_loss(model, proc, lm.tokens.mask, gen, scenes2.SIZE),
        lambda: heldout_score(lm, heldout, c.window),
        Schedule(minutes, eval_every, save_seconds=save_seconds, timed_evals=True),
    )
    return model, run.log


def main(argv: list[str] | None = None) -> None:
    trainer.main(argv, TrainConfig, __doc__, Path("runs/builtin-vqa2"), 170.0, train)


if __name__ == "__main__":
    main()
