"""Conditional log-likelihood of an answer under a masked-diffusion model (Monte Carlo).

A masked-diffusion LM has no left-to-right factorisation, so log p(answer | prompt) is estimated
through the ELBO that LLaDA trains on (LLaDA paper, Appendix B.5; `get_log_likelihood.py` in the
official repository):

    log p(a | q) >= E_{l ~ U{1..n}} E_{mask l of the n answer positions} [ (n / l) *
                    sum over masked positions j of log p_theta(a_j | q, masked a) ]

The official estimator, reproduced draw for draw (its goldens: tests/fixtures/golden/likelihood):
- the sequence is `prompt + answer`, copied `batch_size` times per Monte-Carlo round;
  `mc_num // batch_size` rounds;
- per round one `k ~ U{1..n}` (n = answer length) is drawn, and row i masks
  `l_i = ((round(linspace(k, k + (b - 1) n / b, b))_i - 1) mod n) + 1` answer positions (a
  low-discrepancy spread of mask counts over the rows), chosen by one `randperm(n)` per row;
  the prompt is never masked;
- each masked position contributes its cross-entropy divided by its row's mask ratio l_i / n;
  the round's loss is the sum over the batch divided by `batch_size`;
- the estimate is minus the mean of the rounds' losses (each round's loss taken as a Python
  float, as the official `loss.item()` does).
Random draws come from one `torch.Generator` (on the CPU, as the official `randperm` is): seeded
like the official global generator (`torch.manual_seed(s)`), it gives the official numbers.

Classifier-free guidance (`cfg_scale > 0`) runs each round a second time with the prompt masked
and mixes `un + (cfg + 1)(cond - un)`, as the official `get_logits` does. Models whose position
j predicts token j + 1 (Dream, `logits_shift = 1`) have their logits shifted right by one before
the loss, as Dream's own evaluation code does (the first position repeats position 0's logits; it
is a prompt position and never scored).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from seer.errors import SeerError
from seer.models.base import DiffusionModel


def mask_counts(k: int, n: int, b: int) -> torch.Tensor:
    """(b,) masked answer positions per row: b counts spread evenly over [1, n] from k on."""
    # the end point as a float32 tensor, as the official code computes it, so that rounding
    # ties fall on the same side
    end = torch.tensor(k) + (b - 1) * (n / b)
    spread = torch.linspace(float(k), end, steps=b).round().long()
    return (spread - 1) % n + 1


def noise(
    seq: torch.Tensor, prompt_len: int, mask_id: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """One Monte-Carlo round: (noisy (b, L) ids, (b,) mask ratio per row)."""
    b, total = seq.shape
    n = total - prompt_len
    k = int(torch.randint(1, n + 1, (), generator=generator))
    counts = mask_counts(k, n, b)  # (b,)
    masked = torch.zeros(b, total, dtype=torch.bool)
    for i in range(b):
        order = torch.randperm(n, generator=generator)  # a random position for each rank
        masked[i, prompt_len:] = order < counts[i]
    masked = masked.to(seq.device)
    noisy = torch.where(masked, torch.full_like(seq, mask_id), seq)
    return noisy, counts.to(seq.device, torch.float32) / n


def _logits(model, x: torch.Tensor, prompt_len: int, mask_id: int, cfg_scale: float, shift: int):
    if cfg_scale > 0:
        un = x.clone()
        un[:, :prompt_len] = mask_id
        cond, uncond = model(torch.cat([x, un])).logits.chunk(2)
        logits = uncond + (cfg_scale + 1) * (cond - uncond)
    else:
        logits = model(x).logits
    if shift:  # position j's logits predict token j + shift
        logits = torch.cat([logits[:, :shift], logits[:, :-shift]], dim=1)
    return logits


@torch.no_grad()
def log_likelihood(
    model: DiffusionModel,
    prompt: Sequence[int] | torch.Tensor,
    answer: Sequence[int] | torch.Tensor,
    *,
    mask_id: int,
    mc_num: int = 128,
    batch_size: int = 16,
    cfg_scale: float = 0.0,
    generator: torch.Generator | None = None,
) -> float:
    """Monte-Carlo estimate of log p(answer | prompt) (see the module docstring).

    `model` is a `DiffusionModel` (`seer.models.base`): `model(ids).logits` gives (B, L, V)
    logits and `model.logits_shift` says how far its predictions are shifted. `generator`: a
    CPU `torch.Generator` (default: a fresh one seeded 0)."""
    if batch_size < 1 or mc_num < batch_size or mc_num % batch_size:
        raise SeerError(
            f"mc_num ({mc_num}) must be a positive multiple of the Monte-Carlo batch size "
            f"({batch_size})"
        )
    answer = torch.as_tensor(answer, dtype=torch.long).flatten()
    prompt = torch.as_tensor(prompt, dtype=torch.long).flatten()
    if answer.numel() == 0:
        raise SeerError("the answer to score is empty: give at least one token")
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    device = next(model.parameters()).device
    seq = torch.cat([prompt, answer])[None].repeat(batch_size, 1).to(device)  # (b, L)
    p = prompt.numel()
    shift = model.logits_shift  # the model protocol (seer.models.base)
    losses = []
    for _ in range(mc_num // batch_size):
        noisy, ratio = noise(seq, p, mask_id, generator)
        masked = noisy == mask_id
        logits = _logits(model, noisy, p, mask_id, cfg_scale, shift)
        ce = F.cross_entropy(logits[masked].float(), seq[masked], reduction="none")
        weight = ratio[:, None].expand_as(seq)[masked]  # each token's row mask ratio
        losses.append(float((ce / weight).sum() / batch_size))
    return -sum(losses) / len(losses)
