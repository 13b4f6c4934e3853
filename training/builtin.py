"""Train the built-in model: a small LLaDA on the synthetic tasks, with LLaDA's SFT recipe
(`training.trainer`: the prompt never masked, answers padded with [EOS] to the window,
per-row windows).

Per-row windows: a trial here showed that a model trained only on full windows collapses when the
window is cut, and ours, first trained with one window per batch (almost always long, since a
batch's longest answer sets it), lost spelling accuracy under an exact (oracle) cut; per-row
windows fix both.

Run: `python -m training.builtin --out runs/builtin --minutes 80` (resumes from `--out`).
A checkpoint in the official LLaDA layout (config.json, model.safetensors, tokenizer files) is
written to `--out/export` at every save, and loads with `seer.load`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch

from seer.models.factory import random_model
from seer.models.tokens import load_tokenizer
from seer.sampling import TokenIds
from synthetic.tasks import Example, generate_examples
from training import trainer
from training.tokenizer import build_tokenizer, encode_chat
from training.trainer import Run, Schedule, pack


@dataclass(slots=True)
class TrainConfig:
    """Model size and optimisation of the built-in model."""

    d_model: int = 128
    n_layers: int = 6
    n_heads: int = 4
    mlp_hidden_size: int = 384
    window: int = 64  # answer window (answer + eot + [EOS] padding)
    batch_size: int = 32
    lr: float = 1.5e-3
    min_lr: float = 1e-4
    warmup: int = 300
    total_steps: int = 16000  # cycle length (cosine horizon); may stop earlier on the time budget
    weight_decay: float = 0.01
    full_window_prob: float = 0.5  # share of rows (windows="batch": batches) with the full window
    cycle_start: int = 0  # step where the current warm-up + cosine cycle began (warm restarts)
    windows: str = "row"  # "row": a window per row (the recipe since step 8564 of the built-in
    # model); "batch": one window per batch, between its longest answer and `window` (its
    # steps 0-8564; tools/release_builtin.sh)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.windows not in ("row", "batch"):
            raise ValueError(f"windows must be 'row' or 'batch', got {self.windows!r}")


class Encoder:
    """Word-level encoding without a tokenizer call per example (checked against the template)."""

    def __init__(self, tok) -> None:
        self.vocab = tok.get_vocab()
        probe = "copy : cat"
        ids = encode_chat(tok, probe)
        words = [self.vocab[w] for w in probe.split()]
        cut = _find(ids, words)
        self.prefix, self.suffix = ids[:cut], ids[cut + len(words) :]
        self.eot = self.vocab["<|eot_id|>"]
        self.eos = tok.eos_token_id
        self.mask = self.vocab["<|mdm_mask|>"]
        self.pad = self.eos

    def prompt(self, text: str) -> list[int]:
        return self.prefix + [self.vocab[w] for w in text.split()] + self.suffix

    def answer(self, text: str) -> list[int]:
        return [self.vocab[w] for w in text.split()] + [self.eot]


def _find(seq: list[int], sub: list[int]) -> int:
    for i in range(len(seq) - len(sub) + 1):
        if seq[i : i + len(sub)] == sub:
            return i
    raise ValueError("chat template does not contain the prompt words")


def make_batch(
    enc: Encoder,
    examples: list[Example],
    window: int,
    rng: random.Random,
    full_prob: float,
    windows: str = "row",
):
    """Left-padded prompts + answer windows; each row gets its own window length.

    A row's window is the full `window` with probability `full_prob`, else its answer (with
    <|eot_id|>) plus 0..24 [EOS] positions: the windows Seer leaves after a cut. Positions past a
    row's window are hidden from attention and carry no loss, exactly as after a cut at inference.
    Returns x (B, P + W), attention mask (B, P + W), P and the per-row windows (B,).

    `windows="batch"` (the first recipe): one window for the batch, the full `window` with
    probability `full_prob`, else a length drawn between the batch's longest answer and `window`.
    """
    prompts = [enc.prompt(e.prompt) for e in examples]
    answers = [enc.answer(e.answer) for e in examples]
    return pack(prompts, answers, enc.pad, window, rng, full_prob, windows)


def exact_match(model, enc: Encoder, examples: list[Example], window: int, batch: int = 64):
    """Greedy full generation (one token per step, low-confidence) on `examples`: a row counts
    when it is the answer, <|eot_id|> and nothing but [EOS] after."""
    tokens = TokenIds(mask=enc.mask, eos=enc.eos, pad=enc.pad, eot=enc.eot)

    def hit(e: Example, row: list[int]) -> int:
        want = enc.answer(e.answer)
        return int(row[: len(want)] == want and all(t == enc.eos for t in row[len(want) :]))

    return trainer.loop_score(
        model, tokens, examples, window, batch, lambda e: enc.prompt(e.prompt), hit
    )


def batches(enc: Encoder, c: TrainConfig, rng: random.Random):
    """Training batches without end: `c.batch_size` fresh examples each (`make_batch`)."""
    while True:
        examples = generate_examples(c.batch_size, seed=rng.randrange(1 << 30), split="train")
        yield make_batch(enc, examples, c.window, rng, c.full_window_prob, c.windows)


def train(
    out: Path,
    minutes: float,
    c: TrainConfig,
    eval_every: int = 500,
    threads: int = 1,
    eval_n: int = 140,
):
    torch.set_num_threads(threads)
    torch.manual_seed(c.seed)
    tok_dir = out / "export"
    tok_dir.mkdir(parents=True, exist_ok=True)
    build_tokenizer(tok_dir)
    tok = load_tokenizer(tok_dir)  # local files, never remote code (config.json has auto_map)
    enc = Encoder(tok)
    raw = trainer.lm_config(c, len(enc.vocab), enc.mask, enc.eos, enc.pad)
    model = random_model(raw, seed=c.seed, std=0.02).train()
    run = Run(out, model, c, raw, build_tokenizer)
    rng = random.Random(f"train/{c.seed}/{run.step}")
    gen = torch.Generator().manual_seed(c.seed * 1000 + run.step)
    heldout = generate_examples(eval_n, seed=1, split="heldout")
    trainer.fit(
        run,
        batches(enc, c, rng),
        lambda b: trainer.loss_fn(model, *b, enc.mask, gen),
        lambda: exact_match(model, enc, heldout, c.window),
        Schedule(minutes, eval_every, rate="tok/s"),
    )
    return model, run.log


def main(argv: list[str] | None = None) -> None:
    trainer.main(argv, TrainConfig, __doc__, Path("runs/builtin"), 80.0, train)


if __name__ == "__main__":
    main()
