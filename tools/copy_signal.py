"""Has a text model v2 checkpoint started to copy names from the prompt? Cross-entropy per family.

Masks half of each answer's tokens of 24 held-out requests per family (the full 128 window) and
prints the mean cross-entropy and top-1 accuracy on the masked *name* tokens: about 6.8 nats (the
names' unigram, ~log 900) means nothing is copied yet; it falls as copying starts, long before
whole answers are right.

    python tools/copy_signal.py runs/builtin-v2/export [--bare [--people N]] [--window W] [--decode]

``--bare``: on held-out warm-up requests of the copy curriculum (``lines.bare_item``, lines of
1 to N people, default 3, no template) instead: the first place copying shows during the
warm-up.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import seer
from synthetic import lines

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the lab's `training`, beside src/
from training.builtin_v2 import ChatEncoder, evaluate  # noqa: E402
from training.trainer import pack  # noqa: E402

FAMILIES = ("copy", "reverse", "sort", "who", "long_copy")


def bare(family: str, people: int, n: int = 24) -> list[lines.Item]:
    return lines.bare_items(n, random.Random(2), people, split="heldout", family=family)


def main(
    path: str, warmup: bool = False, people: int = 3, window: int = 128, decode: bool = False
) -> None:
    torch.manual_seed(0)
    lm = seer.load(path)
    enc = ChatEncoder(lm.tokenizer)
    for fam in ("copy", "who") if warmup else FAMILIES:
        if warmup:
            items = bare(fam, people)
        else:
            items = lines.generate(24, seed=2, split="heldout", families=(fam,))
        prompts, answers = [enc.prompt(i) for i in items], [enc.answer(i) for i in items]
        x, am, p, _ = pack(prompts, answers, enc.pad, window, random.Random(0), 1.0)
        in_answer = torch.zeros_like(x, dtype=torch.bool)
        for r, a in enumerate(answers):
            in_answer[r, p : p + len(a) - 1] = True  # the answer, without <|eot_id|>
        masked = in_answer & (torch.rand(x.shape) < 0.5)
        noisy = x.masked_fill(masked, enc.mask)
        pos = (am.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = lm.model(noisy, attention_mask=am, position_ids=pos).logits[masked].float()
        target = x[masked]
        pieces = lm.tokenizer.convert_ids_to_tokens(target.tolist())
        name = torch.tensor([t.strip().isalpha() and t.strip()[0].isupper() for t in pieces])
        ce = F.cross_entropy(logits, target, reduction="none")[name].mean()
        acc = (logits.argmax(-1) == target)[name].float().mean()
        line = f"{fam:10s} names: cross-entropy {ce:.2f} nats, top-1 {100 * acc:.0f} %"
        if decode:
            right = evaluate(lm.model, enc, items, window)[fam]
            line += f"; whole answers right {100 * right:.0f} % (one token per step)"
        print(line)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export")
    ap.add_argument("--bare", action="store_true", help="warm-up requests instead of the mix")
    ap.add_argument("--people", type=int, default=3, help="--bare lines of 1 to this many")
    ap.add_argument("--window", type=int, default=128, help="the answer window")
    ap.add_argument(
        "--decode",
        action="store_true",
        help="also decode the requests (one token per step, greedy) and score them",
    )
    a = ap.parse_args()
    main(a.export, a.bare, a.people, a.window, a.decode)
