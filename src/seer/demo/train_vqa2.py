"""Train the built-in multimodal model v2: a small LaViDa-LLaDA on the v2 image questions.

Architecture (LaViDa's, shrunk; sized to train on one CPU thread): a SigLIP tower (128 px
pictures, patch 8 -> 16 x 16 patches, hidden 128, 4 layers of which 3 run), the `mlp2x_gelu`
projector, LaViDa's 2 x 2 average pool (8 x 8 = 64 image tokens, one per 16 px glyph cell of
:mod:`seer.demo.scenes2`) and a LLaDA (d_model 128, 6 layers, 4 heads). The LM starts from the
built-in text model (`--init-from builtin`; rows copied by token string, a v2 piece ``" red"``
from the word ``red``), which already knows the chat format and [EOS]-padded windows.

Recipe: the first models' (`seer.demo.train`): LLaDA SFT, answer + <|eot_id|> + [EOS] padding
to the 128-position window, mask ratio t ~ U(0, 1) per row, CE on masked positions / t. A batch is
either a *full* batch (every row the whole window, probability `full_window_prob`) or a *cut*
batch (each row its answer plus 0-24 [EOS], as a Seer cut leaves it); batches are drawn four at a
time and grouped by answer length, so most batches are short and cheap. Families are drawn with
`seer.demo.vqa2.WEIGHTS`. Prompts and image features are
spliced exactly as `LlavaProcessor` does at inference; the held-out evaluation runs the real
pipeline (`DiffusionLM.generate` with images, one token per step) and scores with
`seer.demo.vqa2.score`. Everything trains, the tower included.

Run: `python -m seer.demo.train_vqa2 --out runs/builtin-vqa2 --minutes 170` (resumes from
`--out`, saving every 5 minutes); `--out/export` is a LaViDa-layout checkpoint `seer.load` loads.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file

from seer.demo import scenes2, vqa2
from seer.demo.train import Run, loss_fn, lr_at, parse_args
from seer.demo.vocab_vqa2 import build_tokenizer
from seer.models.configs import lavida_config, llada_config, siglip_config
from seer.models.factory import random_model
from seer.models.loader import load_tokenizer
from seer.models.vision import IMAGE_TOKEN_INDEX

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
    lr: float = 1.5e-3
    min_lr: float = 1e-4
    warmup: int = 300
    total_steps: int = 30000  # cosine horizon; a session stops earlier on its time budget
    weight_decay: float = 0.01
    full_window_prob: float = 0.2  # share of batches whose rows all get the full window
    cycle_start: int = 0
    init_from: str = "builtin"  # the text model whose LM weights start the LM ("" for none)
    eval_n: int = 45  # held-out requests per evaluation (balanced over the families)
    seed: int = 0


def model_config(c: TrainConfig, tok) -> dict:
    vocab = tok.get_vocab()
    eos = tok.eos_token_id
    ids = dict(mask_token_id=vocab["<|mdm_mask|>"], eos_token_id=eos, pad_token_id=eos)
    lm = llada_config(len(vocab), d_model=c.d_model, n_layers=c.n_layers, n_heads=c.n_heads,
                      mlp_hidden_size=c.mlp_hidden_size, **ids)  # fmt: skip
    tower = siglip_config(c.vision_hidden, c.vision_layers, c.vision_heads, scenes2.SIZE, c.patch)
    raw = lavida_config(lm, "llada", tower, image_aspect_ratio="pad", mm_patch_merge_type="flat")
    raw["mm_vision_tower"] = "seer-builtin-siglip (inline vision_config)"
    return raw


def init_lm_from(model, tok, folder: Path) -> int:
    """Copy a text model's LM weights in; embedding / head rows by token string (a piece with a
    leading space from the bare word). Returns the number of rows copied."""
    old_vocab = load_tokenizer(folder).get_vocab()
    old = load_file(folder / "model.safetensors")
    state = model.state_dict()
    pairs = [
        (i, old_vocab.get(t, old_vocab.get(t.strip())))
        for t, i in tok.get_vocab().items()
        if t in old_vocab or (t.strip() and t.strip() in old_vocab)
    ]
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
        self.proc, self.tok, self.window = processor, tok, window
        self.eot = tok.convert_tokens_to_ids("<|eot_id|>")
        self.eos = tok.eos_token_id
        self.n_image = None  # image tokens per picture (fixed: square pictures, one tile)
        self._prompts: dict[str, list[int]] = {}

    def prompt(self, question: str) -> list[int]:
        if question not in self._prompts:
            text = self.proc.prompt_text(question, image=True, chat=True)
            self._prompts[question] = self.proc.token_ids(text)
        return self._prompts[question]

    def answer(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"][: self.window - 1] + [self.eot]

    def __call__(self, examples, rng: random.Random, full: bool):
        tiles = [self.proc.images(e.image())[0] for e in examples]
        if self.n_image is None:
            sizes = [(scenes2.SIZE, scenes2.SIZE)]
            self.n_image = self.proc.vision.batch_features(tiles[:1], sizes)[0].shape[0]
        rows, img_at = [], []
        for e in examples:
            q = self.prompt(e.question)
            at = q.index(IMAGE_TOKEN_INDEX)
            rows.append(q[:at] + [self.eos] * self.n_image + q[at + 1 :])
            img_at.append(at)
        answers = [self.answer(e.answer) for e in examples]
        w = self.window
        wins = [w if full else min(w, len(a) + rng.randint(0, 24)) for a in answers]
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
def heldout_score(lm, examples, window: int, batch: int = 48, **kw) -> dict:
    """Mean `vqa2.score` per family of greedy generations through the real pipeline (prompt
    processor, images), one token per step over `window` unless `kw` says otherwise."""
    hits: dict[str, list[float]] = {}
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        outs = lm.generate([e.question for e in chunk], image=[e.image() for e in chunk],
                           gen_length=window, **kw)  # fmt: skip
        for e, g in zip(chunk, outs, strict=True):
            hits.setdefault(e.family, []).append(vqa2.score(e, g.text))
    per = {f: sum(v) / len(v) for f, v in sorted(hits.items())}
    per["all"] = sum(sum(v) for v in hits.values()) / sum(len(v) for v in hits.values())
    return per


def write_tokenizer(export: Path) -> None:
    """The export's tokenizer files, SigLIP processor config and `seer.json`: no system prompt,
    the 128 window, and the end-token detector with the v1 model's calibrated setting (not yet
    calibrated on this model)."""
    build_tokenizer(export)
    (export / "seer.json").write_text(json.dumps(SEER_JSON, indent=2) + "\n")
    side = scenes2.SIZE
    processor = {"image_processor_type": "SiglipImageProcessor", "do_resize": True, "resample": 3,
                 "size": {"height": side, "width": side}, "do_rescale": True,
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
    build_tokenizer(tok_dir)
    tok = load_tokenizer(tok_dir)  # local files, never remote code (config.json has auto_map)
    raw = model_config(c, tok)
    model = random_model(raw, seed=c.seed, std=0.02)
    if c.init_from and not (out / "state.pt").is_file():
        from seer.models.loader import builtin_path

        src = builtin_path() if c.init_from == "builtin" else Path(c.init_from)
        print(f"LM initialised from {src}: {init_lm_from(model, tok, src)} token rows copied")
    proc = LlavaProcessor(model, tok, system=None)
    lm = DiffusionLM(model, tok, token_ids(raw, tok), name="builtin-vqa2", processor=proc)
    return tok, raw, model, proc, lm


def next_batch(queue: list, c: TrainConfig, rng: random.Random, batcher: Batcher):
    """The next (examples, full) batch: GROUP batches are drawn at once, sorted by answer
    length and chunked, so a cut batch pads little; each chunk is full with the configured
    probability."""
    if not queue:
        drawn = vqa2.training_examples(GROUP * c.batch_size, rng)
        drawn.sort(key=lambda e: len(batcher.answer(e.answer)))
        chunks = [drawn[i : i + c.batch_size] for i in range(0, len(drawn), c.batch_size)]
        rng.shuffle(chunks)
        queue.extend((chunk, rng.random() < c.full_window_prob) for chunk in chunks)
    return queue.pop()


def train(
    out: Path,
    minutes: float,
    c: TrainConfig,
    eval_every: int = 1000,
    save_seconds: float = 300,
):
    torch.manual_seed(c.seed)
    tok, raw, model, proc, lm = build(out, c)
    model.train()
    run = Run(out, model, c, raw, write_tokenizer)
    batcher = Batcher(proc, tok, c.window)
    rng = random.Random(f"train-vqa2/{c.seed}/{run.step}")
    gen = torch.Generator().manual_seed(c.seed * 1000 + run.step)
    heldout = vqa2.generate_examples(c.eval_n, seed=1, split="heldout", unique=True)
    run.start(minutes)
    t0, done0 = time.time(), run.step
    mask, batches = lm.tokens.mask, []
    while run.running():
        examples, full = next_batch(batches, c, rng, batcher)
        x, am, p, wins, image_at, tiles = batcher(examples, rng, full)
        sizes = [(scenes2.SIZE, scenes2.SIZE)] * len(tiles)
        feats = torch.cat(proc.vision.batch_features(tiles, sizes))  # (B * n_image, D)
        loss = loss_fn(model, x, am, p, wins, mask, gen, image_at=image_at, image_features=feats)
        run.update(loss)
        step = run.step
        if step % 50 == 0:
            rate = (step - done0) / max(time.time() - t0, 1e-9)
            print(f"step {step} loss {loss.item():.4f} lr {lr_at(step, c):.2e} {rate:.2f} it/s",
                  flush=True)  # fmt: skip
        if step % eval_every == 0:
            started = time.time()
            run.evaluate(loss, lambda: heldout_score(lm, heldout, c.window))
            run.log[-1]["eval_seconds"] = round(time.time() - started, 1)
            run.log[-1]["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            t0, done0 = time.time(), step
        run.save_every(save_seconds)
    run.save()
    print(f"saved step {run.step} to {out}", flush=True)
    return model, run.log


def main(argv: list[str] | None = None) -> None:
    args, cfg = parse_args(argv, TrainConfig, __doc__, Path("runs/builtin-vqa2"), 170.0)
    torch.set_num_threads(args.threads)
    train(args.out, args.minutes, cfg, args.eval_every)


if __name__ == "__main__":
    main()
