"""Train the built-in multimodal model: a small LaViDa-LLaDA on the synthetic image questions.

Architecture (LaViDa's, shrunk): a SigLIP tower (96 px images, patch 8 -> 12 x 12 patches,
hidden 96), the `mlp2x_gelu` projector, LaViDa's 2 x 2 pool (36 image tokens), and a LLaDA
(d_model 128, 6 layers) that starts from the built-in *text* model's weights (rows of shared
words copied, new words initialised at random): it already knows the chat format and the
[EOS]-padded windows, so the budget goes to seeing. `image_aspect_ratio` "pad" (the images are
square) and `mm_patch_merge_type` "flat"; no system prompt (`seer.json`), to keep prompts short.

Recipe: the text model's (see `seer.demo.train`): LLaDA SFT, answer + <|eot_id|> + [EOS] padding
to the window, per-row windows (half the rows full, half cut a little after the answer, as
Seer leaves them). Prompts and image features are spliced exactly as `LlavaProcessor` does at
inference, and the held-out evaluation runs the real pipeline (`DiffusionLM.generate` with
images). Everything trains, the tower included.

Run: `python -m seer.demo.train_vqa --out runs/builtin-vqa --minutes 90` (resumes from `--out`).
The checkpoint at `--out/export` is in the LaViDa layout and loads with `seer.load`.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file

from seer.demo import vqa
from seer.demo.tokenizer import build_multimodal_tokenizer
from seer.demo.train import Run, loss_fn, lr_at, parse_args
from seer.models.configs import lavida_config, llada_config, siglip_config
from seer.models.factory import random_model
from seer.models.loader import load_tokenizer
from seer.models.vision import IMAGE_TOKEN_INDEX


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
    init_from: str = "builtin"  # the text model whose LM weights start the LM ("" for none)
    seed: int = 0


def model_config(c: TrainConfig, tok) -> dict:
    vocab = tok.get_vocab()
    eos = tok.eos_token_id
    ids = dict(mask_token_id=vocab["<|mdm_mask|>"], eos_token_id=eos, pad_token_id=eos)
    lm = llada_config(len(vocab), d_model=c.d_model, n_layers=c.n_layers, n_heads=c.n_heads,
                      mlp_hidden_size=c.mlp_hidden_size, **ids)  # fmt: skip
    tower = siglip_config(c.vision_hidden, c.vision_layers, c.vision_heads, vqa.IMAGE_SIZE, c.patch)
    raw = lavida_config(lm, "llada", tower, image_aspect_ratio="pad", mm_patch_merge_type="flat")
    raw["mm_vision_tower"] = "seer-builtin-siglip (inline vision_config)"
    return raw


def init_lm_from(model, tok, folder: Path) -> int:
    """Copy a text model's LM weights in; embedding/head rows by token string. Returns the
    number of rows copied."""

    old_vocab = load_tokenizer(folder).get_vocab()
    old = load_file(folder / "model.safetensors")
    state = model.state_dict()
    pairs = [(i, old_vocab[t]) for t, i in tok.get_vocab().items() if t in old_vocab]
    new_rows = torch.tensor([i for i, _ in pairs])
    old_rows = torch.tensor([j for _, j in pairs])
    with torch.no_grad():
        for k, v in old.items():
            if k in ("model.transformer.wte.weight", "model.transformer.ff_out.weight"):
                state[k][new_rows] = v[old_rows].to(state[k])
            else:
                state[k].copy_(v)
    return len(pairs)


class Batcher:
    """Examples -> (x, attention mask, P, windows, image positions, pixel tiles)."""

    def __init__(self, processor, tok, window: int) -> None:
        self.proc, self.window = processor, window
        self.vocab = tok.get_vocab()
        self.eot, self.eos = self.vocab["<|eot_id|>"], tok.eos_token_id
        self.n_image = None  # image tokens per image (fixed: square images, one tile)
        self._prompts: dict[str, list[int]] = {}

    def prompt(self, question: str) -> list[int]:
        if question not in self._prompts:
            text = self.proc.prompt_text(question, image=True, chat=True)
            self._prompts[question] = self.proc.token_ids(text)
        return self._prompts[question]

    def answer(self, text: str) -> list[int]:
        return [self.vocab[w] for w in text.split()] + [self.eot]

    def __call__(self, examples, rng: random.Random, full_prob: float):
        tiles = [self.proc.images(e.image())[0] for e in examples]
        if self.n_image is None:
            sizes = [(vqa.IMAGE_SIZE, vqa.IMAGE_SIZE)]
            self.n_image = self.proc.vision.batch_features(tiles[:1], sizes)[0].shape[0]
        rows = []
        for e in examples:
            q = self.prompt(e.question)
            at = q.index(IMAGE_TOKEN_INDEX)
            rows.append(q[:at] + [self.eos] * self.n_image + q[at + 1 :])
        img_at = [self.prompt(e.question).index(IMAGE_TOKEN_INDEX) for e in examples]
        answers = [self.answer(e.answer) for e in examples]
        w = self.window
        wins = [
            w if rng.random() < full_prob else min(w, len(a) + rng.randint(0, 24)) for a in answers
        ]
        p, w = max(len(q) for q in rows), max(wins)
        x = torch.full((len(rows), p + w), self.eos, dtype=torch.long)
        am = torch.zeros_like(x)
        image_at = torch.zeros_like(x, dtype=torch.bool)
        for r, (q, a) in enumerate(zip(rows, answers, strict=True)):
            x[r, p - len(q) : p] = torch.tensor(q)
            x[r, p : p + len(a)] = torch.tensor(a)
            am[r, p - len(q) : p + wins[r]] = 1
            s = p - len(q) + img_at[r]
            image_at[r, s : s + self.n_image] = True
        return x, am, p, torch.tensor(wins), image_at, tiles


@torch.inference_mode()
def exact_match(lm, examples, window: int, batch: int = 50, **kw) -> dict:
    """Greedy generation through the real pipeline (prompt processor, images) on `examples`."""
    hits: dict[str, list[int]] = {}
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        outs = lm.generate([e.question for e in chunk], image=[e.image() for e in chunk],
                           gen_length=window, **kw)  # fmt: skip
        for e, g in zip(chunk, outs, strict=True):
            hits.setdefault(e.family, []).append(int(g.text == e.answer))
    per = {f: sum(v) / len(v) for f, v in sorted(hits.items())}
    per["all"] = sum(sum(v) for v in hits.values()) / sum(len(v) for v in hits.values())
    return per


def write_tokenizer(export: Path) -> None:
    """The export's tokenizer files, SigLIP processor config and `seer.json` (no system prompt)."""
    build_multimodal_tokenizer(export)
    (export / "seer.json").write_text(json.dumps({"system_prompt": None}, indent=2) + "\n")
    processor = {"image_processor_type": "SiglipImageProcessor", "do_resize": True, "resample": 3,
                 "size": {"height": vqa.IMAGE_SIZE, "width": vqa.IMAGE_SIZE}, "do_rescale": True,
                 "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5] * 3,
                 "image_std": [0.5] * 3, "do_convert_rgb": True}  # fmt: skip
    (export / "preprocessor_config.json").write_text(json.dumps(processor, indent=2) + "\n")


def build(out: Path, c: TrainConfig):
    """Tokenizer, config, model (fresh or from the text model), processor and LM wrapper."""
    from seer.models.lavida import LlavaProcessor
    from seer.models.loader import token_ids
    from seer.pipeline import DiffusionLM

    tok_dir = out / "export"
    tok_dir.mkdir(parents=True, exist_ok=True)
    build_multimodal_tokenizer(tok_dir)
    tok = load_tokenizer(tok_dir)  # local files, never remote code (config.json has auto_map)
    raw = model_config(c, tok)
    model = random_model(raw, seed=c.seed, std=0.02)
    if c.init_from:
        from seer.models.loader import builtin_path

        src = builtin_path() if c.init_from == "builtin" else Path(c.init_from)
        print(f"LM initialised from {src}: {init_lm_from(model, tok, src)} shared token rows")
    proc = LlavaProcessor(model, tok, system=None)
    lm = DiffusionLM(model, tok, token_ids(raw, tok), name="builtin-vqa", processor=proc)
    return tok, raw, model, proc, lm


def train(out: Path, minutes: float, c: TrainConfig, eval_every: int = 500, eval_n: int = 100):
    torch.manual_seed(c.seed)
    tok, raw, model, proc, lm = build(out, c)
    model.train()
    run = Run(out, model, c, raw, write_tokenizer)
    batcher = Batcher(proc, tok, c.window)
    rng = random.Random(f"train-vqa/{c.seed}/{run.step}")
    gen = torch.Generator().manual_seed(c.seed * 1000 + run.step)
    heldout = vqa.generate_examples(eval_n, seed=1, split="heldout", unique=True)
    run.start(minutes)
    t0 = time.time()
    mask = lm.tokens.mask
    while run.running():
        examples = vqa.generate_examples(c.batch_size, rng.randrange(1 << 30), "train")
        x, am, p, wins, image_at, tiles = batcher(examples, rng, c.full_window_prob)
        sizes = [(vqa.IMAGE_SIZE, vqa.IMAGE_SIZE)] * len(tiles)
        feats = torch.cat(proc.vision.batch_features(tiles, sizes))  # (B * n_image, D)
        loss = loss_fn(model, x, am, p, wins, mask, gen, image_at=image_at, image_features=feats)
        run.update(loss)
        step, log = run.step, run.log
        if step % 50 == 0:
            rate = (step - log[-1]["step"] if log else step) / max(time.time() - t0, 1e-9)
            print(f"step {step} loss {loss.item():.4f} lr {lr_at(step, c):.2e} {rate:.2f} it/s",
                  flush=True)  # fmt: skip
        if step % eval_every == 0:
            run.evaluate(loss, lambda: exact_match(lm, heldout, c.window))
            t0 = time.time()
        run.save_every(300)
    run.save()
    print(f"saved step {run.step} to {out}")
    return model, run.log


def main(argv: list[str] | None = None) -> None:
    args, cfg = parse_args(argv, TrainConfig, __doc__, Path("runs/builtin-vqa"), 90.0)
    torch.set_num_threads(args.threads)
    train(args.out, args.minutes, cfg, args.eval_every)


if __name__ == "__main__":
    main()
