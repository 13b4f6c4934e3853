"""Has a multimodal model v2 checkpoint started to read its pictures? Cross-entropy per family.

Teacher-forced and cheap (a few seconds), long before whole answers come out right: for 24
held-out requests per family, masks every answer token (what one-token-per-step decoding faces
at its first step) and prints the mean cross-entropy and top-1 accuracy on the answer's tokens
(without <|eot_id|> and padding), with the real image features and with the features of
another request's picture (rows shuffled): a model that uses its pictures does worse on the
shuffled ones; the same cross-entropy means it ignores them. ``--warmup`` measures the
trainer's warm-up draws (`vqa2.warmup_examples`: one shape, glyph or word) instead.

    python tools/read_signal.py runs/builtin-vqa2/export [--warmup]
"""

from __future__ import annotations

import random
import sys

import torch
import torch.nn.functional as F

import seer
from seer.data.synthetic import scenes2, vqa2
from seer.training.builtin_vqa2 import Batcher


def warmup_heldout(n: int) -> list:
    """`n` held-out draws of each warm-up family (the trainer never sees them)."""
    rng, out = random.Random(2), []
    while len(out) < n * len(vqa2.WARMUP):
        for family, draw in vqa2.WARMUP.items():
            picture, question, answer = draw(rng)
            if vqa2.is_heldout(picture, question):
                out.append(vqa2.VQA2Example(family, picture, question, answer))
    return out


def main(path: str, warmup: bool = False) -> None:
    torch.manual_seed(0)
    lm = seer.load(path)
    batcher = Batcher(lm.processor, lm.tokenizer, vqa2.WINDOW)
    if warmup:
        examples, families = warmup_heldout(24), tuple(vqa2.WARMUP)
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
                h = lm.model.get_input_embeddings()(noisy)
                h = h.masked_scatter(image_at[..., None], f.flatten(0, 1).to(h))
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
    main(sys.argv[1], "--warmup" in sys.argv[2:])
