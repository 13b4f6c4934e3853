"""What the two multimodal trainers (`builtin_vqa`, `builtin_vqa2`) share: a LaViDa-LLaDA shrunk
to train on a CPU (a SigLIP tower, the `mlp2x_gelu` projector, LaViDa's 2 x 2 pool and a LLaDA),
its LM started from the built-in text model, batches whose prompts and image features are spliced
exactly as `LlavaProcessor` does at inference, and the image-feature loss.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file

from seer.models.configs import lavida_config, siglip_config
from seer.models.factory import random_model
from seer.models.tokens import load_tokenizer
from seer.models.vision import IMAGE_TOKEN_INDEX
from training.trainer import RESUME, layout, lm_config, loss_fn


def model_config(c, tok, image_size: int) -> dict:
    """The LaViDa-layout config.json of `c` (a multimodal `TrainConfig`) for `image_size` px."""
    vocab = tok.get_vocab()
    eos = tok.eos_token_id
    lm = lm_config(c, len(vocab), vocab["<|mdm_mask|>"], eos, eos)
    tower = siglip_config(c.vision_hidden, c.vision_layers, c.vision_heads, image_size, c.patch)
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


def build(out: Path, c, build_tokenizer: Callable[[Path], object], image_size: int, name: str):
    """Tokenizer, config, model (fresh, or its LM from the text model `c.init_from` unless the
    run resumes), processor and LM wrapper."""
    from seer.lm import DiffusionLM
    from seer.models.lavida import LlavaProcessor
    from seer.models.tokens import token_ids

    tok_dir = out / "export"
    tok_dir.mkdir(parents=True, exist_ok=True)
    build_tokenizer(tok_dir)
    tok = load_tokenizer(tok_dir)  # local files, never remote code (config.json has auto_map)
    raw = model_config(c, tok, image_size)
    model = random_model(raw, seed=c.seed, std=0.02)
    resumes = (out / "state.pt").is_file() or (out / RESUME).is_file()
    if c.init_from and not resumes:
        from seer.models.loader import BUILTIN, builtin_path

        src = builtin_path(c.init_from) if c.init_from in BUILTIN else Path(c.init_from)
        print(f"LM initialised from {src}: {init_lm_from(model, tok, src)} token rows copied")
    proc = LlavaProcessor(model, tok, system=None)
    lm = DiffusionLM(model, tok, token_ids(raw, tok), name=name, processor=proc)
    return tok, raw, model, proc, lm


def write_processor(export: Path, size: int) -> None:
    """The export's SigLIP image processor config for `size` px square pictures."""
    processor = {
        "image_processor_type": "SiglipImageProcessor",
        "do_resize": True,
        "resample": 3,
        "size": {"height": size, "width": size},
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "image_mean": [0.5] * 3,
        "image_std": [0.5] * 3,
        "do_convert_rgb": True,
    }
    (export / "preprocessor_config.json").write_text(json.dumps(processor, indent=2) + "\n")


class ImageBatcher:
    """Examples -> (x, attention mask, P, windows, image positions, pixel tiles). A trainer says
    how an answer is encoded (`answer`) and how the rows' windows are drawn (`windows`)."""

    def __init__(self, processor, tok, window: int, image_size: int) -> None:
        self.proc, self.tok, self.window, self.image_size = processor, tok, window, image_size
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
        raise NotImplementedError

    def windows(self, answers: list[list[int]], rng: random.Random, full) -> list[int]:
        raise NotImplementedError

    def __call__(self, examples, rng: random.Random, full):
        tiles = [self.proc.images(e.image())[0] for e in examples]
        if self.n_image is None:
            sizes = [(self.image_size, self.image_size)]
            self.n_image = self.proc.vision.batch_features(tiles[:1], sizes)[0].shape[0]
        rows, img_at = [], []
        for e in examples:
            q = self.prompt(e.question)
            at = q.index(IMAGE_TOKEN_INDEX)
            rows.append(q[:at] + [self.eos] * self.n_image + q[at + 1 :])
            img_at.append(at)
        answers = [self.answer(e.answer) for e in examples]
        wins = self.windows(answers, rng, full)
        x, am, p = layout(rows, answers, wins, self.eos)
        image_at = torch.zeros_like(x, dtype=torch.bool)
        for r, q in enumerate(rows):
            s = p - len(q) + img_at[r]
            image_at[r, s : s + self.n_image] = True
        return x, am, p, torch.tensor(wins), image_at, tiles


def image_loss(model, proc, mask: int, gen: torch.Generator, image_size: int):
    """The loss of an `ImageBatcher` batch: the tower encodes the tiles (with gradients: it
    trains too) and `loss_fn` splices the features where the image tokens are."""

    def loss(batch) -> torch.Tensor:
        x, am, p, wins, image_at, tiles = batch
        sizes = [(image_size, image_size)] * len(tiles)
        feats = torch.cat(proc.vision.batch_features(tiles, sizes))  # (B * n_image, D)
        return loss_fn(model, x, am, p, wins, mask, gen, image_at=image_at, image_features=feats)

    return loss
