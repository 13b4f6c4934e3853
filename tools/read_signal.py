"""Has a multimodal model v2 checkpoint started to read its pictures? Cross-entropy per family.

Teacher-forced and cheap (a few seconds), long before whole answers come out right: for 24
held-out requests per family, masks every answer token (what one-token-per-step decoding faces
at its first step) and prints the mean cross-entropy and top-1 accuracy on the answer's tokens
(without <|eot_id|> and padding). A family at its answers' unigram has read nothing yet.

    python tools/read_signal.py runs/builtin-vqa2/export
"""

from __future__ import annotations

import random
import sys

import torch
import torch.nn.functional as F

import seer
from seer.data.synthetic import scenes2, vqa2
from seer.training.builtin_vqa2 import Batcher


def main(path: str) -> None:
    torch.manual_seed(0)
    lm = seer.load(path)
    batcher = Batcher(lm.processor, lm.tokenizer, vqa2.WINDOW)
    examples = vqa2.generate_examples(24 * len(vqa2.FAMILIES), seed=2, split="heldout")
    for fam in vqa2.FAMILIES:
        chosen = [e for e in examples if e.family == fam][:24]
        x, am, p, wins, image_at, tiles = batcher(chosen, random.Random(0), True)
        answer = torch.zeros_like(x, dtype=torch.bool)
        for r, e in enumerate(chosen):
            answer[r, p : p + len(batcher.answer(e.answer)) - 1] = True
        noisy = x.clone()
        noisy[:, p:] = lm.tokens.mask
        sizes = [(scenes2.SIZE, scenes2.SIZE)] * len(tiles)
        with torch.no_grad():
            feats = torch.cat(lm.processor.vision.batch_features(tiles, sizes))
            h = lm.model.get_input_embeddings()(noisy)
            h = h.masked_scatter(image_at[..., None], feats.to(h))
            pos = (am.cumsum(-1) - 1).clamp(min=0)
            logits = lm.model(inputs_embeds=h, attention_mask=am, position_ids=pos).logits
        logits, target = logits[answer].float(), x[answer]
        ce = F.cross_entropy(logits, target)
        acc = (logits.argmax(-1) == target).float().mean()
        print(f"{fam:9s} {len(chosen):2d}: cross-entropy {ce:.2f} nats, top-1 {100 * acc:.0f} %")


if __name__ == "__main__":
    main(sys.argv[1])
