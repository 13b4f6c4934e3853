"""What every built-in model's trainer shares: LLaDA's SFT loss, the learning-rate schedule, the
batch layout, the run folder (save / resume), the training loop and the command line.

Recipe (LLaDA paper, App. B.1, and GUIDELINES.md):
- the prompt is never masked; the answer window is answer + <|eot_id|> + [EOS] padding, and
  [EOS] is a target like any other token;
- each sequence draws a mask ratio t ~ U(eps, 1), masks every window token with probability t,
  and the loss is the cross-entropy on masked tokens weighted by 1/t, normalised by the window
  length (`loss_fn`);
- the window length varies per row (the full window, or the answer plus a few [EOS]), positions
  past a row's window hidden from attention: the windows Seer leaves after a cut
  (`draw_windows`).

A trainer (`builtin`, `builtin_v2`, `builtin_vqa`, `builtin_vqa2`) holds only what differs: its
`TrainConfig`, how it draws and encodes batches, how it scores the held-out requests and what
its export holds besides the weights. `fit` runs the loop; `main` is its command line.
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import random
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from seer.errors import SeerError
from seer.models.configs import llada_config
from seer.models.factory import save_checkpoint

RESUME = "resume.json"  # the step and evaluation log beside the export: enough to resume
JITTER = 24  # a cut row's window: its answer plus 0..JITTER [EOS]


def lm_config(c, vocab: int, mask: int, eos: int, pad: int) -> dict:
    """The LLaDA config.json of `c`'s LM size (d_model, n_layers, n_heads, mlp_hidden_size)."""
    return llada_config(
        vocab,
        d_model=c.d_model,
        n_layers=c.n_layers,
        n_heads=c.n_heads,
        mlp_hidden_size=c.mlp_hidden_size,
        mask_token_id=mask,
        eos_token_id=eos,
        pad_token_id=pad,
    )


def draw_windows(
    answers: list[list[int]], window: int, rng: random.Random, full_prob: float, mode: str = "row"
) -> list[int]:
    """Each row's window. "row": the full `window` with probability `full_prob`, else the
    answer (with <|eot_id|>) plus 0..JITTER [EOS], never above `window`. "batch" (the first
    recipe): one window for the batch, the full one with probability `full_prob`, else a length
    drawn between the batch's longest answer and `window`. "full" (the control model's recipe:
    LLaDA's own SFT, no cut window): every row the full `window`, after the same draws as "row",
    so a run replays the "row" run's data stream (items, order) with only the windows changed."""
    if mode == "full":
        draw_windows(answers, window, rng, full_prob, "row")
        return [window] * len(answers)
    if mode == "batch":
        longest = max(len(a) for a in answers)
        w = window if rng.random() < full_prob else rng.randint(longest, window)
        return [w] * len(answers)
    return [
        window if rng.random() < full_prob else min(window, len(a) + rng.randint(0, JITTER))
        for a in answers
    ]


def layout(prompts: list[list[int]], answers: list[list[int]], wins: list[int], pad: int):
    """Left-padded prompts + answer windows: x (B, P + W), attention mask (B, P + W) over each
    row's prompt and window, and P. Positions past a row's window are hidden from attention and
    carry no loss, exactly as after a cut at inference."""
    p, w = max(len(q) for q in prompts), max(wins)
    x = torch.full((len(prompts), p + w), pad, dtype=torch.long)
    am = torch.zeros_like(x)
    for r, (q, a) in enumerate(zip(prompts, answers, strict=True)):
        x[r, p - len(q) : p] = torch.tensor(q)
        x[r, p : p + len(a)] = torch.tensor(a)
        am[r, p - len(q) : p + wins[r]] = 1
    return x, am, p


def pack(
    prompts: list[list[int]],
    answers: list[list[int]],
    pad: int,
    window: int,
    rng: random.Random,
    full_prob: float,
    windows: str = "row",
):
    """Encoded prompts and answers (each answer ends with <|eot_id|>) -> x (B, P + W), attention
    mask (B, P + W), P and the per-row windows (B,) (`draw_windows`, `layout`)."""
    wins = draw_windows(answers, window, rng, full_prob, windows)
    x, am, p = layout(prompts, answers, wins, pad)
    return x, am, p, torch.tensor(wins)


def device_of(model) -> torch.device:
    return next(model.parameters()).device


def to_device(batch: tuple, device) -> tuple:
    """A batch's tensors on `device` (other items as they are)."""
    return tuple(v.to(device) if isinstance(v, torch.Tensor) else v for v in batch)


def share_count(rng: random.Random, n: int, p: float) -> int:
    """How many of `n` draws land in a share `p` of a batch (no RNG call when `p` is 0)."""
    return sum(rng.random() < p for _ in range(n)) if p else 0


def embed_with_images(model, ids, image_at, image_features) -> torch.Tensor:
    """The token embeddings of `ids` (B, N) with `image_features` (K, D) in place of the K
    positions where `image_at` (B, N) is True, as the prompt processor splices them."""
    h = model.get_input_embeddings()(ids)
    return h.masked_scatter(image_at[..., None], image_features.to(h))


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
    dev = x.device  # the draws come from `gen` on the CPU: the same masks on any device
    valid = torch.arange(n - p, device=dev)[None] < wins[:, None]  # (B, W) inside the window
    t = ((1 - eps) * torch.rand(b, 1, generator=gen) + eps).to(dev)  # mask ratio per sequence
    masked = (torch.rand(b, n - p, generator=gen).to(dev) < t) & valid
    noisy = x.clone()
    noisy[:, p:] = torch.where(masked, mask_id, x[:, p:])
    pos = (am.cumsum(-1) - 1).clamp(min=0)
    at = torch.zeros_like(x, dtype=torch.bool)
    at[:, p:] = masked  # the LM head only where the loss looks (16 % faster than the window)
    kw = {"logits_positions": at}
    if image_features is not None:
        kw["inputs_embeds"] = embed_with_images(model, noisy, image_at, image_features)
        noisy = None
    logits = model(noisy, attention_mask=am, position_ids=pos, **kw).logits  # (M, V)
    ce = F.cross_entropy(logits.float(), x[at], reduction="none")  # (M,) row-major, as `at`
    row = masked.nonzero(as_tuple=True)[0]
    return (ce / (t[:, 0] * wins)[row]).sum() / b


def lr_at(step: int, c) -> float:
    """Warm-up then cosine from `c.lr` to `c.min_lr`; each cycle (from `c.cycle_start`, warm
    restarts) has its own."""
    step -= c.cycle_start
    if step < c.warmup:
        return c.lr * (step + 1) / c.warmup
    frac = min(1.0, (step - c.warmup) / max(1, c.total_steps - c.warmup))
    return c.min_lr + 0.5 * (c.lr - c.min_lr) * (1 + math.cos(math.pi * frac))


def per_family(hits: dict[str, list[float]]) -> dict[str, float]:
    """Mean score per family, sorted, and over every request ("all")."""
    per = {f: sum(v) / len(v) for f, v in sorted(hits.items())}
    per["all"] = sum(sum(v) for v in hits.values()) / sum(len(v) for v in hits.values())
    return per


@torch.inference_mode()
def loop_score(
    model, tokens, items, window: int, batch: int, prompt: Callable, score: Callable
) -> dict[str, float]:
    """Held-out score per family through the denoising loop alone: greedy, one token per step,
    low-confidence remasking. `prompt(item)` -> ids; `score(item, answer_ids)` -> 0..1."""
    from seer.diffusion.loop import DenoisingLoop, make_canvas
    from seer.sampling import SamplingParams

    loop = DenoisingLoop(model, tokens)
    params = SamplingParams(gen_length=window, remasking="low_confidence")
    hits: dict[str, list[float]] = {}
    for i in range(0, len(items), batch):
        chunk = items[i : i + batch]
        canvas = make_canvas([prompt(it) for it in chunk], window, tokens, device_of(model))
        for it, row in zip(chunk, loop.run(canvas, params).answer.tolist(), strict=True):
            hits.setdefault(it.family, []).append(score(it, row))
    return per_family(hits)


@torch.inference_mode()
def pipeline_score(lm, examples, window: int, batch: int, score: Callable, **kw) -> dict:
    """Held-out score per family of greedy generations through the real pipeline (prompt
    processor, images); `score(example, text)` -> 0..1."""
    hits: dict[str, list[float]] = {}
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        outs = lm.generate(
            [e.question for e in chunk], image=[e.image() for e in chunk], gen_length=window, **kw
        )
        for e, g in zip(chunk, outs, strict=True):
            hits.setdefault(e.family, []).append(score(e, g.text))
    return per_family(hits)


class Run:
    """A training run's optimiser, step count and evaluation log, saved to and resumed from `out`.

    The folder format is stable (a stopped run resumes with the same command line):
    `out/state.pt` = {"model", "opt", "step", "log"} (replaced atomically), `out/export/` (the
    checkpoint in the official layout plus the files `write_tokenizer(export)` writes),
    `out/resume.json` = {"step", "log"} and `out/train_config.json` (the `TrainConfig`). The
    optimiser is AdamW at `lr_at(step, c)`.

    Without state.pt (it is large and stays out of git), `export/` and resume.json are enough:
    the run resumes from the exported weights at the recorded step with fresh optimiser moments.
    A run committed as export + resume.json survives a machine that loses everything else.
    """

    def __init__(self, out: Path, model, c, raw: dict, write_tokenizer: Callable[[Path], object]):
        self.out, self.model, self.c, self.raw = out, model, c, raw
        self.write_tokenizer = write_tokenizer
        self.opt = torch.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay)
        self.step, self.log = 0, []  # optimiser steps done; one entry per evaluation
        if (out / "state.pt").is_file():
            state = load_state(out / "state.pt", device_of(model))
            model.load_state_dict(state["model"])
            self.opt.load_state_dict(state["opt"])
            self.step, self.log = state["step"], state["log"]
            print(f"resumed at step {self.step}")
        elif (out / RESUME).is_file() and (out / "export" / "model.safetensors").is_file():
            model.load_state_dict(load_file(out / "export" / "model.safetensors"))
            saved = json.loads((out / RESUME).read_text())
            self.step, self.log = saved["step"], saved["log"]
            print(f"resumed at step {self.step} from {out / 'export'} (fresh optimiser moments)")
        self.t_end = self.last_save = time.time()
        self.stopped = False  # set by SIGTERM in `fit`: save and stop after the current step

    def start(self, minutes: float) -> None:
        """Start the time budget (periodic saves count from now too)."""
        self.last_save = time.time()
        self.t_end = self.last_save + minutes * 60

    def running(self) -> bool:
        """Within the time budget, the current cycle's steps and the phase's last step (a
        config's `until`, where it has one: a release script's phases end at fixed steps)."""
        until = getattr(self.c, "until", 0) or math.inf
        end = min(until, self.c.cycle_start + self.c.total_steps)
        return not self.stopped and time.time() < self.t_end and self.step < end

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
        state = {  # tensors and plain Python values only: `load_state` reads it weights-only
            "model": self.model.state_dict(),
            "opt": self.opt.state_dict(),
            "step": int(self.step),
            "log": json.loads(json.dumps(self.log)),
        }
        torch.save(state, out / "state.pt.tmp")
        (out / "state.pt.tmp").replace(out / "state.pt")
        export = out / "export"
        save_checkpoint(self.model, self.raw, export)
        self.write_tokenizer(export)
        (out / RESUME).write_text(json.dumps({"step": self.step, "log": self.log}, indent=1))
        (out / "train_config.json").write_text(json.dumps(asdict(self.c), indent=2))


def load_state(path: Path, device) -> dict:
    """A run's state.pt, read with `torch.load(weights_only=True)`: tensors and plain values
    only, so a state file from elsewhere cannot run code while it loads (a pickle can)."""
    try:
        state = torch.load(path, weights_only=True, map_location=device)
    except pickle.UnpicklingError:
        why = "it holds objects other than tensors and plain values"
        raise SeerError(
            f"{path} cannot be resumed ({why}); delete it to resume from export/ and resume.json"
        ) from None
    except Exception as e:  # a truncated or foreign file
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise SeerError(
            f"{path} cannot be resumed ({why}); delete it to resume from export/ and resume.json"
        ) from None
    if not isinstance(state, dict) or not {"model", "opt", "step", "log"} <= set(state):
        raise SeerError(f"{path} is not a training state (model, opt, step, log)")
    return state


@dataclass(slots=True)
class Schedule:
    """When the loop logs, evaluates and saves."""

    minutes: float  # the time budget of this session
    eval_every: int  # steps between held-out evaluations
    log_every: int = 50  # steps between loss lines
    save_seconds: float = 300  # seconds between saves (and one at the end)
    rate: str = "it/s"  # the loss line's speed: "it/s" (steps) or "tok/s" (batch tokens)
    timed_evals: bool = False  # log each evaluation's seconds and UTC time too


def fit(
    run: Run,
    batches: Iterable,
    loss: Callable[[tuple], torch.Tensor],
    evaluate: Callable[[], dict],
    s: Schedule,
) -> None:
    """The training loop: one AdamW step per batch of `batches` (tuples whose first item is x,
    drawn only while the run has time and steps left) on `loss(batch)`, a loss line every
    `log_every` steps, a held-out evaluation every `eval_every`, saves on the way and at the end.
    The speed counts from the start or the last evaluation. SIGTERM (`kill`) ends the run
    after the current step, saved, as the time budget does."""
    batches: Iterator = iter(batches)
    run.start(s.minutes)
    main = threading.current_thread() is threading.main_thread()
    stop = lambda *_: setattr(run, "stopped", True)  # noqa: E731
    before = signal.signal(signal.SIGTERM, stop) if main else None
    try:
        _loop(run, batches, loss, evaluate, s)
    finally:
        if main:
            signal.signal(signal.SIGTERM, before)
    run.save()
    why = " (SIGTERM)" if run.stopped else ""
    print(f"saved step {run.step} to {run.out}{why}", flush=True)


def _loop(
    run: Run,
    batches: Iterator,
    loss: Callable[[tuple], torch.Tensor],
    evaluate: Callable[[], dict],
    s: Schedule,
) -> None:
    t0, done0, ntok = time.time(), run.step, 0
    while run.running():
        batch = next(batches)
        value = loss(batch)
        run.update(value)
        ntok += batch[0].numel()
        step = run.step
        if step % s.log_every == 0:
            dt = max(time.time() - t0, 1e-9)
            rate = (
                f"{ntok / dt:.0f} tok/s" if s.rate == "tok/s" else f"{(step - done0) / dt:.2f} it/s"
            )
            print(
                f"step {step} loss {value.item():.4f} lr {lr_at(step, run.c):.2e} {rate}",
                flush=True,
            )
        if step % s.eval_every == 0:
            started = time.time()
            run.evaluate(value, evaluate)
            if s.timed_evals:
                run.log[-1]["eval_seconds"] = round(time.time() - started, 1)
                run.log[-1]["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            t0, done0, ntok = time.time(), step, 0
        run.save_every(s.save_seconds)


def parse_args(
    argv: list[str] | None, config: type, doc: str, out: Path, minutes: float
) -> tuple[argparse.Namespace, object]:
    """The trainers' command line: --out, --minutes, --threads, --eval-every and one flag per
    field of the `config` dataclass (`total_steps` -> `--total-steps`; the values a field may
    take in the config's `CHOICES`, where it has them). Returns (args, config)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--minutes", type=float, default=minutes)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=500)
    choices = getattr(config, "CHOICES", {})
    for f, v in asdict(config()).items():
        ap.add_argument(f"--{f.replace('_', '-')}", type=type(v), default=v, choices=choices.get(f))
    args = ap.parse_args(argv)
    return args, config(**{f: getattr(args, f) for f in asdict(config())})


def main(
    argv: list[str] | None, config: type, doc: str, out: Path, minutes: float, train: Callable, **kw
) -> None:
    """`python -m training.<model>`: parse the flags, set the threads, train."""
    args, cfg = parse_args(argv, config, doc, out, minutes)
    torch.set_num_threads(args.threads)
    try:
        train(args.out, args.minutes, cfg, eval_every=args.eval_every, threads=args.threads, **kw)
    except SeerError as e:  # a bad flag or an unreadable run folder: one line, no traceback
        raise SystemExit(f"error: {e}") from None
