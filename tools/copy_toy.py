"""How fast does the training recipe learn to copy? A toy that answers in a minute or two.

A small LLaDA (our model definition, `training.trainer`'s loss and batch layout) learns the
simplest copy there is: the prompt is ``[1, 2, n_1 .. n_k, 3]`` with k in 1..``--max-names``
random "names" out of 900 token ids, the answer the same names, ``4`` and [EOS] padding. Every
100 steps it prints the loss and the accuracy of the first answer slot with the whole answer
masked (what one-token-per-step decoding faces at step 0). Used to choose the v2 models'
learning rate (docs/builtin-v2/MODEL_CARD.md: 1 layer, one name, batch 32 -- at lr 3e-4 the
copy starts at ~450 steps, at 3e-3 not within 800).

    python tools/copy_toy.py --layers 1 --max-names 1 --lr 3e-4 --steps 800
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch

from seer.models.configs import llada_config
from seer.models.factory import random_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the lab's `training`, beside src/
from training.trainer import loss_fn, pack  # noqa: E402

VOCAB = 1000
NAMES = range(10, 910)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--max-names", type=int, default=1)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--untied", action="store_true", help="a separate LM head")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    mask, eos = VOCAB - 1, VOCAB - 2
    raw = llada_config(
        VOCAB,
        d_model=128,
        n_layers=args.layers,
        n_heads=4,
        mlp_hidden_size=384,
        mask_token_id=mask,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    raw.update(weight_tying=not args.untied, rope_theta=10000.0, max_sequence_length=256)
    model = random_model(raw, seed=0, std=0.02).train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    rng, gen = random.Random(0), torch.Generator().manual_seed(0)
    for step in range(1, args.steps + 1):
        prompts, answers = [], []
        for _ in range(args.batch_size):
            names = rng.sample(NAMES, rng.randint(1, args.max_names))
            prompts.append([1, 2, *names, 3])
            answers.append([*names, 4])
        x, am, p, wins = pack(prompts, answers, eos, 8, rng, 1.0)
        loss = loss_fn(model, x, am, p, wins, mask, gen)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0:
            with torch.no_grad():
                masked = x.clone()
                masked[:, p:] = mask
                pos = (am.cumsum(-1) - 1).clamp(min=0)
                first = model(masked, attention_mask=am, position_ids=pos).logits[:, p].argmax(-1)
            acc = (first == x[:, p]).float().mean().item()
            print(f"step {step} loss {loss.item():.3f} first-slot accuracy {100 * acc:.0f} %")


if __name__ == "__main__":
    main()
