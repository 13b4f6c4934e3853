"""Has a multimodal model v2 checkpoint started to read its pictures? Cross-entropy per family.

Teacher-forced and cheap (a few seconds), long before whole answers come out right: for 24
held-out requests per family, masks every answer token (what one-token-per-step decoding faces
at its first step) and prints the mean cross-entropy and top-1 accuracy on the answer's tokens
(without <|eot_id|> and padding), with the real image features and with the features of
another request's picture (rows shuffled): a model that uses its pictures does worse on the
shuffled ones; the same cross-entropy means it ignores them. ``--warmup`` measures the
trainer's warm-up draws (`vqa2.warmup_examples`: one shape, glyph or word) instead,
``--reading`` the reading warm-up's (`vqa2.glyphs`: one digit printed 1-32 times; `vqa2.rows`:
a number or a word in 1 or 4 rows).

    python tools/read_signal.py runs/builtin-vqa2/export [--warmup | --reading]
"""

from __future__ import annotations

import functools
import random
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import seer
from synthetic import scenes2, vqa2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the lab's `training`, beside src/
from training.builtin_vqa2 import Batcher  # noqa: E402
from training.trainer import embed_with_images  # noqa: E402

READING = {f"digit x{k}": functools.partial(vqa2.glyphs, copies=k) for k in vqa2.GLYPH_COPIES} | {
    f"{family} x{k}": functools.partial(vqa2.rows, family=family, copies=k)
    for family in ("number", "read")
    for k in (1, 4)
}
"""The reading warm-up's draws by number of copies of the text (a digit, a number, a word)."""


def heldout_draws(draws: dict, n: int) -> list:
    """`n` held-out examples of each of `draws` (name -> draw; the trainer never sees them),
    each named by its draw."""
    rng = random.Random(2)
    out = []
    for pair in draws.items():
        out += vqa2.draw_split(n, rng, lambda pair=pair: pair, "heldout")
    return out


def main(path: str, mode: str = "") -> None:
    torch.manual_seed(0)
    lm = seer.load(path)
    batcher = Batcher(lm.processor, lm.tokenizer, vqa2.WINDOW)
    if mode in ("--warmup", "--reading"):
        draws = vqa2.WARMUP if mode == "--warmup" else READING
        examples, families = heldout_draws(draws, 24), tuple(draws)
    else:
        examples = vqa2.generate_examples(24 * len(vqa2.FAMILIES), seed=2, split="heldout")
        families = vqa2.FAMILIES
    for fam in families:
        chosen = [e for e in examples if e.family == fam][:24]
        x, am, p, wins, image_at, tiles = batcher(chosen, random.Random(0), True)
        answer = torch.zeros_like(x, dtype=torch.bool)
        for r, e in enumerate(chosen):
            answer[r, p : p + len(batcher.answer(e.answer)) - 1] = True
        noisy = x.clone()
        noisy[:, p:] = lm.tokens.mask
        sizes = [(scenes2.SIZE, scenes2.SIZE)] * len(tiles)
        pos = (am.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            feats = torch.stack(lm.processor.vision.batch_features(tiles, sizes))
            shuffled = feats[torch.roll(torch.arange(len(chosen)), 1)]
            scores = []
            for f in (feats, shuffled):
                h = embed_with_images(lm.model, noisy, image_at, f.flatten(0, 1))
                logits = lm.model(inputs_embeds=h, attention_mask=am, position_ids=pos).logits
                logits, target = logits[answer].float(), x[answer]
                acc = (logits.argmax(-1) == target).float().mean()
                scores.append((F.cross_entropy(logits, target).item(), 100 * acc.item()))
        (ce, acc), (ce_s, acc_s) = scores
        print(
            f"{fam:9s} {len(chosen):2d}: cross-entropy {ce:.2f} nats (another picture's:"
            f" {ce_s:.2f}), top-1 {acc:.0f} % ({acc_s:.0f} %)"
        )


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:3])
