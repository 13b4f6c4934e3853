"""Train the built-in model: a small LLaDA on the synthetic tasks, with LLaDA's SFT recipe.

Recipe (LLaDA paper, App. B.1, and GUIDELINES.md):
- the prompt is never masked; the answer window is answer + <|eot_id|> + [EOS] padding, and
  [EOS] is a target like any other token;
- each sequence draws a mask ratio t ~ U(eps, 1), masks every window token with probability t,
  and the loss is the cross-entropy on masked tokens weighted by 1/t, normalised by the window
  length;
- the window length varies per row (the full window, or the answer plus a few [EOS]), positions
  past a row's window hidden from attention: the windows Seer leaves after a cut. A trial here
  showed that a model trained only on full windows collapses when the window is cut, and ours,
  first trained with one window per batch (almost always long, since a batch's longest answer
  sets it), lost spelling accuracy under an exact (oracle) cut; per-row windows fix both.

Run: `python -m seer.demo.train --out runs/builtin --minutes 80` (resumes from `--out`).
A checkpoint in the official LLaDA layout (config.json, model.safetensors, tokenizer files) is
written to `--out/export` at every save, and loads with `seer.load`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from seer.demo.tasks import Example, generate_examples
from seer.demo.tokenizer import build_tokenizer, encode_chat
from seer.models.configs import llada_config
from seer.models.factory import random_model, save_checkpoint
from seer.models.loader import load_tokenizer


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


def pack(
    prompts: list[list[int]],
    answers: list[list[int]],
    pad: int,
    window: int,
    rng: random.Random,
    full_prob: float,
    windows: str = "row",
):
    """`make_batch` on encoded prompts and answers (each answer ends with <|eot_id|>)."""
    if windows == "batch":
        longest = max(len(a) for a in answers)
        w = window if rng.random() < full_prob else rng.randint(longest, window)
        wins = [w] * len(answers)
    else:
        wins = [
            window if rng.random() < full_prob else min(window, len(a) + rng.randint(0, 24))
            for a in answers
        ]
    p, w = max(len(q) for q in prompts), max(wins)
    x = torch.full((len(prompts), p + w), pad, dtype=torch.long)
    am = torch.zeros_like(x)
    for r, (q, a) in enumerate(zip(prompts, answers, strict=True)):
        x[r, p - len(q) : p] = torch.tensor(q)
        x[r, p : p + len(a)] = torch.tensor(a)
        am[r, p - len(q) : p + wins[r]] = 1
    return x, am, p, torch.tensor(wins)


def loss_fn(
    model,
    x,
    am,
    p: int,
    wins,
    mask_id: int,
    gen: torch.Generator,
    eps: float = 1e-3,
    image_at: torch.Tensor | None = None,
    image_features: torch.Tensor | None = None,
) -> torch.Tensor:
    """LLaDA SFT loss over each row's window: CE on masked tokens / t, per window length.

    Multimodal rows: `image_features` (K, D) replace the token embeddings where `image_at`
    (B, P + W) is True (K such positions in all), as the prompt processor splices them."""
    b, n = x.shape
    valid = torch.arange(n - p)[None] < wins[:, None]  # (B, W) inside the row's window
    t = (1 - eps) * torch.rand(b, 1, generator=gen) + eps  # mask ratio per sequence
    masked = (torch.rand(b, n - p, generator=gen) < t) & valid
    noisy = x.clone()
    noisy[:, p:] = torch.where(masked, mask_id, x[:, p:])
    pos = (am.cumsum(-1) - 1).clamp(min=0)
    kw = {"logits_positions": slice(p, n)}
    if image_features is not None:
        h = model.get_input_embeddings()(noisy)
        kw["inputs_embeds"] = h.masked_scatter(image_at[..., None], image_features.to(h))
        noisy = None
    logits = model(noisy, attention_mask=am, position_ids=pos, **kw).logits
    ce = F.cross_entropy(logits.float().transpose(1, 2), x[:, p:], reduction="none")  # (B, W)
    return ((ce * masked / t).sum(1) / wins).mean()


def lr_at(step: int, c: TrainConfig) -> float:
    step -= c.cycle_start  # warm restarts: each cycle has its own warm-up and cosine
    if step < c.warmup:
        return c.lr * (step + 1) / c.warmup
    frac = min(1.0, (step - c.warmup) / max(1, c.total_steps - c.warmup))
    return c.min_lr + 0.5 * (c.lr - c.min_lr) * (1 + math.cos(math.pi * frac))


@torch.inference_mode()
def exact_match(model, enc: Encoder, examples: list[Example], window: int, batch: int = 64):
    """Greedy full generation (one token per step, low-confidence) on `examples`."""
    from seer.config import SamplingParams, TokenIds
    from seer.diffusion.loop import DenoisingLoop, make_canvas

    tokens = TokenIds(mask=enc.mask, eos=enc.eos, pad=enc.pad, eot=enc.eot)
    loop = DenoisingLoop(model, tokens)
    params = SamplingParams(gen_length=window, remasking="low_confidence")
    hits: dict[str, list[int]] = {}
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        canvas = make_canvas([enc.prompt(e.prompt) for e in chunk], window, tokens, "cpu")
        out = loop.run(canvas, params).answer.tolist()
        for e, row in zip(chunk, out, strict=True):
            want = enc.answer(e.answer)
            ok = row[: len(want)] == want and all(t == enc.eos for t in row[len(want) :])
            hits.setdefault(e.family, []).append(int(ok))
    per = {f: sum(v) / len(v) for f, v in sorted(hits.items())}
    per["all"] = sum(sum(v) for v in hits.values()) / sum(len(v) for v in hits.values())
    return per


class Run:
    """A training run's optimiser, step count and evaluation log, saved to and resumed from `out`.

    The folder format is stable (a stopped run resumes with the same command line):
    `out/state.pt` = {"model", "opt", "step", "log"} (replaced atomically), `out/export/` (the
    checkpoint in the official layout plus the files `write_tokenizer(export)` writes) and
    `out/train_config.json` (the `TrainConfig`). The optimiser is AdamW at `lr_at(step, c)`.
    """

    def __init__(self, out: Path, model, c, raw: dict, write_tokenizer: Callable[[Path], object]):
        self.out, self.model, self.c, self.raw = out, model, c, raw
        self.write_tokenizer = write_tokenizer
        self.opt = torch.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
        self.step, self.log = 0, []  # optimiser steps done; one entry per evaluation
        if (out / "state.pt").is_file():
            state = torch.load(out / "state.pt", weights_only=False)
            model.load_state_dict(state["model"])
            self.opt.load_state_dict(state["opt"])
            self.step, self.log = state["step"], state["log"]
            print(f"resumed at step {self.step}")
        self.t_end = self.last_save = time.time()

    def start(self, minutes: float) -> None:
        """Start the time budget (periodic saves count from now too)."""
        self.last_save = time.time()
        self.t_end = self.last_save + minutes * 60

    def running(self) -> bool:
        """Within the time budget and the current cycle's steps."""
        return time.time() < self.t_end and self.step < self.c.cycle_start + self.c.total_steps

    def update(self, loss: torch.Tensor) -> None:
        """One AdamW step on `loss` (gradient norm clipped to 1) at the scheduled learning rate."""
        for group in self.opt.param_groups:
            group["lr"] = lr_at(self.step, self.c)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.step += 1

    def evaluate(self, loss: torch.Tensor, exact_match: Callable[[], dict]) -> None:
        """Log `exact_match()` (run in eval mode) with the step and the last loss."""
        self.model.eval()
        acc = exact_match()
        self.model.train()
        self.log.append({"step": self.step, "loss": loss.item(), "heldout_exact_match": acc})
        print(f"eval step {self.step}: {json.dumps(acc)}", flush=True)

    def save_every(self, seconds: float = 300) -> None:
        if time.time() - self.last_save > seconds:
            self.save()
            self.last_save = time.time()

    def save(self) -> None:
        out = self.out
        out.mkdir(parents=True, exist_ok=True)
        state = {
            "model": self.model.state_dict(),
            "opt": self.opt.state_dict(),
            "step": self.step,
            "log": self.log,
        }
        torch.save(state, out / "state.pt.tmp")
        (out / "state.pt.tmp").replace(out / "state.pt")
        export = out / "export"
        save_checkpoint(self.model, self.raw, export)
        self.write_tokenizer(export)
        (out / "train_config.json").write_text(json.dumps(asdict(self.c), indent=2))


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
    raw = llada_config(
        len(enc.vocab),
        d_model=c.d_model,
        n_layers=c.n_layers,
        n_heads=c.n_heads,
        mlp_hidden_size=c.mlp_hidden_size,
        mask_token_id=enc.mask,
        eos_token_id=enc.eos,
        pad_token_id=enc.pad,
    )
    model = random_model(raw, seed=c.seed, std=0.02).train()
    run = Run(out, model, c, raw, build_tokenizer)
    rng = random.Random(f"train/{c.seed}/{run.step}")
    gen = torch.Generator().manual_seed(c.seed * 1000 + run.step)
    heldout = generate_examples(eval_n, seed=1, split="heldout")
    run.start(minutes)
    t0, tokens = time.time(), 0
    while run.running():
        examples = generate_examples(c.batch_size, seed=rng.randrange(1 << 30), split="train")
        x, am, p, wins = make_batch(enc, examples, c.window, rng, c.full_window_prob, c.windows)
        loss = loss_fn(model, x, am, p, wins, enc.mask, gen)
        run.update(loss)
        tokens += x.numel()
        if run.step % 50 == 0:
            rate = tokens / (time.time() - t0)
            lr = lr_at(run.step, c)
            print(f"step {run.step} loss {loss.item():.4f} lr {lr:.2e} {rate:.0f} tok/s")
        if run.step % eval_every == 0:
            run.evaluate(loss, lambda: exact_match(model, enc, heldout, c.window))
        run.save_every(300)
    run.save()
    print(f"saved step {run.step} to {out}")
    return model, run.log


def parse_args(
    argv: list[str] | None, config: type, doc: str, out: Path, minutes: float
) -> tuple[argparse.Namespace, object]:
    """The trainers' command line: --out, --minutes, --threads, --eval-every and one flag per
    field of the `config` dataclass (`total_steps` -> `--total-steps`). Returns (args, config)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--minutes", type=float, default=minutes)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=500)
    for f, v in asdict(config()).items():
        ap.add_argument(f"--{f.replace('_', '-')}", type=type(v), default=v)
    args = ap.parse_args(argv)
    return args, config(**{f: getattr(args, f) for f in asdict(config())})


def main(argv: list[str] | None = None) -> None:
    args, cfg = parse_args(argv, TrainConfig, __doc__, Path("runs/builtin"), 80.0)
    train(args.out, args.minutes, cfg, args.eval_every, args.threads)


if __name__ == "__main__":
    main()
