"""How much of the text model v2's training loss falls on the answer: `builtin`'s recipe (70 % of
rows cut to the answer plus 0-24 [EOS]) against the control's (every row the full window).

The loss (`training.trainer.loss_fn`) draws a mask ratio t per row, masks each window position
with probability t and weights each masked position by 1 / (t x the row's window), then averages
the rows. In expectation over the mask every position of a row's window carries the same weight,
1 / window, and every row the same total, so the share of the loss on the answer (its tokens and
<|eot_id|>) is answer length / window per row, averaged over the rows. This tool draws `--batches`
batches of both recipes' data streams at phase 4 of tools/train_builtin_control.sh (its flags read
from the script; `--windows row` and `--windows full` make the same random draws, so both
recipes see the same requests) and prints per recipe the mean answer length, the mean window,
that share on the answer and on [EOS] padding, and the ratio of the answer's share between the
recipes. No model is needed.

With `--grad N`, also the loss's gradient on N of those batches under both recipes at the weights
of `--grad-model` (default: the shipped `builtin`, trained on both kinds of window; the control
never saw a cut window, so its gradient there measures its surprise, not the recipe): the norms
(the trainer clips at 1) and the cosine between the recipes' gradients of a batch. AdamW divides
each update by the running RMS of the gradient, so gradients that differ by a constant factor
take the same steps. With `--ce`, also the held-out cross-entropy of `--models` (default: the
control's committed export and `builtin`) on the masked answer positions and the masked padding
positions of `--heldout` held-out requests in the full 128 window, every position masked with
probability `--mask-ratio` (the same masks for both models).

    python tools/control_signal.py [--batches 200] [--step 16000] [--grad 16] [--ce]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import platform
import random
import re
import shlex
import sys
import time
from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the lab's `training`, beside src/
from seer.errors import SeerError  # noqa: E402
from seer.models.tokens import load_tokenizer  # noqa: E402
from synthetic import lines  # noqa: E402
from training import trainer  # noqa: E402
from training.builtin_v2 import ChatEncoder, TrainConfig, batches  # noqa: E402
from training.trainer import pack  # noqa: E402

SCRIPT = ROOT / "tools" / "train_builtin_control.sh"
CONTROL = ROOT / "checkpoints" / "builtin-v2-control" / "export"


def phase_config(script: Path = SCRIPT, phase: int = 4) -> TrainConfig:
    """The `TrainConfig` the control script passes in `phase` (1-4): its `train` helper's flags
    (with --windows full), the phase's own and --until its last step."""
    try:
        text = script.read_text().replace("\\\n", " ")
    except OSError as e:
        raise SeerError(f"{script}: cannot read the control script ({e.strerror})") from None
    helper = re.search(r'train\(\) \{ python -m training\.builtin_v2 (.*?) "\$@"; \}', text)
    phases = re.findall(r"^phase (\d+) (.*)$", text, re.M)
    if helper is None or not 1 <= phase <= len(phases):
        raise SeerError(f"{script}: no train helper or no phase {phase} in the control script")
    until, flags = phases[phase - 1]
    head = helper.group(1).replace('"$run"', "run").replace('"${MINUTES:-1000}"', "1000")
    head = head.replace('"$threads"', "1")  # THREADS' default
    argv = shlex.split(head) + shlex.split(flags) + ["--until", until]
    c = trainer.parse_args(argv, TrainConfig, "x", Path("run"), 1.0)[1]
    assert isinstance(c, TrainConfig)
    return c


@dataclasses.dataclass(slots=True)
class Rows:
    """One recipe's drawn rows."""

    answer: list[int]  # each row's answer length in tokens (with <|eot_id|>)
    window: list[int]  # each row's window (answer + [EOS] padding), positions


def draw(c: TrainConfig, enc: ChatEncoder, n: int, step: int) -> tuple[Rows, list]:
    """`n` batches of `c`'s stream as the trainer draws them on resuming at `step` (its RNG
    seeded as `training.builtin_v2.train` seeds it); the rows, and each row's answer ids."""
    rng = random.Random(f"train2/{c.seed}/{step}")
    rows, ids = Rows([], []), []
    for x, _, p, wins in itertools.islice(batches(enc, c, rng, lambda: step), n):
        for r, w in enumerate(wins.tolist()):
            row = x[r, p : p + w]
            a = int((row != enc.pad).sum())  # the answer never holds [EOS]; the padding is [EOS]
            rows.answer.append(a)
            rows.window.append(w)
            ids.append(row[:a].tolist())
    return rows, ids


def answer_share(rows: Rows) -> float:
    """The expected share of the loss on answer positions: answer / window per row, averaged
    over the rows (each row carries the same total weight, `loss_fn`'s 1 / (t x window))."""
    return sum(a / w for a, w in zip(rows.answer, rows.window, strict=True)) / len(rows.answer)


def longer_half_share(rows: Rows) -> float:
    """The share of the answer's loss weight that the longer half of the answers carry (rows
    ranked by answer length, ties in draw order): how the recipe weighs long answers against
    short ones."""
    w = [a / n for a, n in zip(rows.answer, rows.window, strict=True)]
    order = sorted(range(len(w)), key=lambda i: rows.answer[i])
    return sum(w[i] for i in order[len(w) // 2 :]) / sum(w)


def weight_table(row: Rows, full: Rows, window: int) -> list[str]:
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    out = [
        "recipe | rows | full-window rows | mean answer (tokens, with <|eot_id|>) | mean window | "
        "loss share on the answer | on [EOS] padding | answer weight on the longer half",
    ]
    for name, r in (("builtin (--windows row)", row), ("control (--windows full)", full)):
        s = answer_share(r)
        at_full = sum(w == window for w in r.window) / len(r.window)
        out.append(
            f"{name} | {len(r.answer)} | {100 * at_full:.1f} % | {mean(r.answer):.1f} | "
            f"{mean(r.window):.1f} | {100 * s:.1f} % | {100 * (1 - s):.1f} % | "
            f"{100 * longer_half_share(r):.1f} %"
        )
    ratio = answer_share(row) / answer_share(full)
    out.append(
        f"answer-token gradient weight, builtin / control: {ratio:.2f}x (each row's total "
        "weight is the same in both recipes)"
    )
    return out


@torch.inference_mode()
def heldout_ce(path: str, n: int, ratio: float, window: int, seed: int = 0) -> dict[str, float]:
    """Mean cross-entropy (nats) and top-1 on masked answer and masked padding positions of `n`
    held-out requests in the full `window`, each window position masked with probability
    `ratio` (a generator seeded with `seed`: the same masks for every model)."""
    import seer

    lm = seer.load(path)
    enc = ChatEncoder(lm.tokenizer)
    items = lines.generate(n, seed=2, split="heldout", families=tuple(lines.FAMILIES))
    gen = torch.Generator().manual_seed(seed)
    sums = {k: [0.0, 0.0, 0] for k in ("answer", "padding")}  # ce, right, count
    for i in range(0, n, 16):
        chunk = items[i : i + 16]
        answers = [enc.answer(it)[:window] for it in chunk]
        prompts = [enc.prompt(it) for it in chunk]
        x, am, p, _ = pack(prompts, answers, enc.pad, window, random.Random(0), 1.0, "full")
        in_answer = torch.zeros(x.shape[0], window, dtype=torch.bool)
        for r, a in enumerate(answers):
            in_answer[r, : len(a)] = True
        masked = torch.rand(x.shape[0], window, generator=gen) < ratio
        at = torch.zeros_like(x, dtype=torch.bool)
        at[:, p:] = masked
        noisy = x.masked_fill(at, enc.mask)
        pos = (am.cumsum(-1) - 1).clamp(min=0)
        logits = lm.model(noisy, attention_mask=am, position_ids=pos).logits[at].float()
        target = x[at]
        ce = F.cross_entropy(logits, target, reduction="none")
        right = (logits.argmax(-1) == target).float()
        where = in_answer[masked]
        for k, sel in (("answer", where), ("padding", ~where)):
            sums[k][0] += float(ce[sel].sum())
            sums[k][1] += float(right[sel].sum())
            sums[k][2] += int(sel.sum())
    out = {}
    for k, (ce_sum, right_sum, count) in sums.items():
        out[f"{k}_ce"] = ce_sum / max(count, 1)
        out[f"{k}_top1"] = right_sum / max(count, 1)
        out[f"{k}_positions"] = count
    return out


def gradients(path: str, c: TrainConfig, n: int, step: int) -> list[str]:
    """`loss_fn`'s gradient on the same `n` batches under both recipes at the weights of `path`:
    the mean gradient norm per recipe and the mean cosine between the two gradients of a batch
    (each batch's mask ratios drawn from one seed for both)."""
    import seer

    lm = seer.load(path)
    model = cast(torch.nn.Module, lm.model)  # an nn.Module behind the model protocol
    model.train()
    enc = ChatEncoder(lm.tokenizer)
    streams = []
    for windows in ("row", "full"):
        rng = random.Random(f"train2/{c.seed}/{step}")
        cfg = dataclasses.replace(c, windows=windows)
        streams.append(itertools.islice(batches(enc, cfg, rng, lambda: step), n))
    norms: dict[str, list[float]] = {"row": [], "full": []}
    cosines = []
    for k, pair in enumerate(zip(*streams, strict=True)):
        grads = []
        for name, batch in zip(("row", "full"), pair, strict=True):
            gen = torch.Generator().manual_seed(k)
            model.zero_grad(set_to_none=True)
            x, am, p, wins = batch
            trainer.loss_fn(model, x, am, p, wins, enc.mask, gen).backward()
            g = torch.cat([q.grad.flatten() for q in model.parameters() if q.grad is not None])
            grads.append(g)
            norms[name].append(float(g.norm()))
        cosines.append(float(F.cosine_similarity(grads[0], grads[1], dim=0)))
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    return [
        f"gradients at {shown(path)}, {n} batches (the same requests in both recipes):",
        "recipe | mean gradient norm | batches over the clip (1.0)",
        *(
            f"{name} | {mean(v):.3f} | {sum(x > 1 for x in v)} of {n}"
            for name, v in (("builtin (--windows row)", norms["row"]), ("control", norms["full"]))
        ),
        f"cosine between the two recipes' gradients of a batch: mean {mean(cosines):.3f}, "
        f"range {min(cosines):.3f} to {max(cosines):.3f}",
    ]


def shown(path: str) -> str:
    """`path` as the repository names it (a folder under the checkout: relative to its root)."""
    full = Path(path).resolve()
    return str(full.relative_to(ROOT)) if full.is_relative_to(ROOT) else path


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=count, default=200, help="batches per recipe")
    ap.add_argument(
        "--step", type=count, default=16000, help="the phase-4 step the draws resume at"
    )
    ap.add_argument("--ce", action="store_true", help="also the two exports' held-out CE")
    ap.add_argument("--models", nargs=2, default=[str(CONTROL), "builtin"], metavar="MODEL")
    ap.add_argument(
        "--grad",
        type=lambda t: count(t, 0),
        default=0,
        metavar="N",
        help="also the gradients on N batches",
    )
    ap.add_argument("--grad-model", default="builtin", help="--grad's weights")
    ap.add_argument("--heldout", type=count, default=96, help="held-out requests")
    ap.add_argument("--mask-ratio", type=float, default=0.5, help="--ce's mask ratio, in (0, 1]")
    args = ap.parse_args(argv)
    if not 0 < args.mask_ratio <= 1:
        ap.error(f"--mask-ratio {args.mask_ratio}: give a ratio in (0, 1]")
    return args


def count(text: str, least: int = 1) -> int:
    """An integer flag of at least `least`, or argparse's one line."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected an integer >= {least}, got {value}")
    return value


def run(args: argparse.Namespace) -> None:
    full, start = phase_config(), phase_config(phase=3).until
    if not start <= args.step < full.until:
        raise SeerError(f"--step {args.step}: phase 4 runs from step {start} to {full.until}")
    row = dataclasses.replace(full, windows="row")
    enc = ChatEncoder(load_tokenizer(CONTROL))
    t0 = time.perf_counter()
    a, ids_a = draw(row, enc, args.batches, args.step)
    b, ids_b = draw(full, enc, args.batches, args.step)
    same = ids_a == ids_b
    print(
        f"phase 4 (tools/train_builtin_control.sh): batch {full.batch_size}, window "
        f"{full.window}, full-window share {full.full_window_prob}, bare share "
        f"{full.bare_share}; draws resumed at step {args.step}; the same requests in both "
        f"recipes: {'yes' if same else 'NO'}"
    )
    if not same:
        raise SeerError("the two recipes drew other requests: the comparison is void")
    print("\n".join(weight_table(a, b, full.window)))
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.grad:
        print()
        print("\n".join(gradients(args.grad_model, full, args.grad, args.step)))
    if args.ce:
        print(
            f"\nheld-out CE at mask ratio {args.mask_ratio} ({args.heldout} requests, full "
            f"{full.window} window, the same masks for both models):"
        )
        print(
            "model | answer CE (nats) | answer top-1 | padding CE (nats) | padding top-1 | "
            "masked positions answer / padding"
        )
        for path in args.models:
            ce = heldout_ce(path, args.heldout, args.mask_ratio, full.window)
            print(
                f"{shown(path)} | {ce['answer_ce']:.3f} | {100 * ce['answer_top1']:.1f} % | "
                f"{ce['padding_ce']:.4f} | {100 * ce['padding_top1']:.1f} % | "
                f"{ce['answer_positions']} / {ce['padding_positions']}"
            )


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    torch.set_num_threads(1)
    print(f"# python tools/control_signal.py {' '.join(sys.argv[1:] if argv is None else argv)}")
    print(
        f"# {platform.machine()}, {platform.system()}, {os.cpu_count()} CPUs, torch "
        f"{torch.__version__}, 1 thread, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    t0 = time.perf_counter()
    try:
        run(args)
        print(f"\n(wall {time.perf_counter() - t0:.0f} s)")
    except SeerError as e:  # a bad flag, a missing model or script: one line
        raise SystemExit(f"error: {e}") from None


if __name__ == "__main__":
    main()
