"""Train the first built-in multimodal model (`builtin-vqa-v1`): a small LaViDa-LLaDA on the
synthetic image questions of `synthetic.vqa` (the v2 model: `builtin_vqa2`).

Architecture (LaViDa's, shrunk): a SigLIP tower (96 px images, patch 8 -> 12 x 12 patches,
hidden 96), the `mlp2x_gelu` projector, LaViDa's 2 x 2 pool (36 image tokens), and a LLaDA
(d_model 128, 6 layers) that starts from the built-in *text* model's weights (rows of shared
words copied, new words initialised at random): it already knows the chat format and the
[EOS]-padded windows, so the budget goes to seeing. `image_aspect_ratio` "pad" (the images are
square) and `mm_patch_merge_type` "flat"; no system prompt (`seer.json`), to keep prompts short.

Recipe: the text model's (see `training.trainer`): LLaDA SFT, answer + <|eot_id|> + [EOS]
padding to the window, per-row windows (half the rows full, half cut a little after the answer, as
Seer leaves them). Prompts and image features are spliced exactly as `LlavaProcessor` does at
inference, and the held-out evaluation runs the real pipeline (`DiffusionLM.generate` with
images). Everything trains, the tower included.

Run: `python -m training.builtin_vqa --out runs/builtin-vqa --minutes 90` (resumes from
`--out`). The checkpoint at `--out/export` is in the LaViDa layout and loads with `seer.load`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from synthetic import vqa
from training import multimodal, trainer
from training.tokenizer import build_multimodal_tokenizer
from training.trainer import Run, Schedule


@dataclass(slots=True)
class TrainConfig:
    """Model size and optimisation of the built-in multimodal model."""

    d_model: int = 128
    n_layers: int = 6
    n_heads: int = 4
    mlp_hidden_size: int = 384
    vision_hidden: int = 96
    vision_layers: int = 4  # in the config; LLaVA drops the last (select layer -2): 3 run
    vision_heads: int = 4
    patch: int = 8
    window: int = 64  # answer window (answer + eot + [EOS] padding)
    batch_size: int = 32
    lr: float = 1.5e-3
    min_lr: float = 1e-4
    warmup: int = 200
    total_steps: int = 8000  # cosine horizon; may stop earlier on the time budget
    weight_decay: float = 0.01
    full_window_prob: float = 0.5
    cycle_start: int = 0
    init_from: str = "builtin-v1"  # the text model whose LM weights start the LM ("" for none)
    seed: int = 0


class Batcher(multimodal.ImageBatcher):
    """Word-level answers; each row's window full with probability `full` (a float)."""

    def __init__(self, processor, tok, window: int) -> None:
        super().__init__(processor, tok, window, vqa.IMAGE_SIZE)
        self.vocab = tok.get_vocab()

    def answer(self, text: str) -> list[int]:
        return [self.vocab[w] for w in text.split()] + [self.eot]

    def windows(self, answers: list[list[int]], rng: random.Random, full: float) -> list[int]:
        return trainer.draw_windows(answers, self.window, rng, full)


def exact_match(lm, examples, window: int, batch: int = 50, **kw) -> dict:
    """Greedy generation through the real pipeline (prompt processor, images) on `examples`."""
    return trainer.pipeline_score(
        lm, examples, window, batch, lambda e, text: int(text == e.answer), **kw
    )


def write_tokenizer(export: Path) -> None:
    """The export's tokenizer files, SigLIP processor config and `seer.json` (no system prompt)."""
    build_multimodal_tokenizer(export)
    (export / "seer.json").write_text(json.dumps({"system_prompt": None}, indent=2) + "\n")
    multimodal.write_processor(export, vqa.IMAGE_SIZE)


def build(out: Path, c: TrainConfig):
    """Tokenizer, config, model (fresh or from the text model), processor and LM wrapper."""
    return multimodal.build(out, c, build_multimodal_tokenizer, vqa.IMAGE_SIZE, "builtin-vqa")


def batches(batcher: Batcher, c: TrainConfig, rng: random.Random):
    """Training batches without end: `c.batch_size` fresh image questions each."""
    while True:
        examples = vqa.generate_examples(c.batch_size, rng.randrange(1 << 30), "train")
        yield batcher(examples, rng, c.full_window_prob)


def train(
    out: Path,
    minutes: float,
    c: TrainConfig,
    eval_every: int = 500,
    eval_n: int = 100,
    threads: int | None = None,
):
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(c.seed)
    tok, raw, model, proc, lm = build(out, c)
    model.train()
    run = Run(out, model, c, raw, write_tokenizer)
    rng = random.Random(f"train-vqa/{c.seed}/{run.step}")
    gen = torch.Generator().manual_seed(c.seed * 1000 + run.step)
    heldout = vqa.generate_examples(eval_n, seed=1, split="heldout", unique=True)
    trainer.fit(
        run,
        batches(Batcher(proc, tok, c.window), c, rng),
        multimodal.image_loss(model, proc, lm.tokens.mask, gen, vqa.IMAGE_SIZE),
        lambda: exact_match(lm, heldout, c.window),
        Schedule(minutes, eval_every),
    )
    return model, run.log


def main(argv: list[str] | None = None) -> None:
    trainer.main(argv, TrainConfig, __doc__, Path("runs/builtin-vqa"), 90.0, train)


if __name__ == "__main__":
    main()
