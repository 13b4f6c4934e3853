"""Unmasking rules: propose a token and a confidence for every window position, then pick which
positions to reveal this step.

Every rule follows its official definition:
- `low_confidence` / `random` (LLaDA): Gumbel-max sampling in float64 at temperature > 0 (argmax at
  0); confidence = softmax(logits)[x0] in the logits' dtype, or U(0, 1) for `random`.
- `maskgit_plus` / `topk_margin` / `entropy` (Dream): temperature, top-p and top-k shape the
  distribution; x0 is sampled (or argmax at temperature 0); confidence is p(x0), p1 - p2, or the
  negative entropy.
- `origin` (Dream): each masked position is revealed independently with probability 1 - s/t.
Selection is top-k per row, or, with Dream's `alg_temp`, k positions sampled from
softmax(confidence / alg_temp) without replacement. All randomness goes through `generator`.

Parallel decoding (Fast-dLLM, Wu et al. 2025, arXiv 2505.22618; NVlabs/Fast-dLLM
`llada/generate.py`, `get_transfer_index` and `get_transfer_index_dynamic`) replaces the
schedule's count k by a confidence rule over the eligible (masked, in-block) positions:
- `threshold`: the most confident position, and every other one whose confidence is
  >= threshold (Fast-dLLM drops the k-th best, k >= 1, when it is < threshold);
- `factor`: with the m eligible confidences sorted best first, c_0 >= c_1 >= ..., n is the first
  index >= 1 with c_n < 1 - factor / (n + 2); the n best are revealed. Fast-dLLM's quirks are
  kept: when no index fails, or the first failure is the last index (n = m - 1), all m are
  revealed; one eligible position is always revealed.
The block then runs until it has no masks (`Plan.close_blocks`), as Fast-dLLM's `while True`.
Under `low_confidence` the confidences are float64 softmax values, as Fast-dLLM computes them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seer.sampling import LLADA_RULES, SamplingParams, TokenIds


def gumbel_argmax(logits: torch.Tensor, temperature: float, generator) -> torch.Tensor:
    """LLaDA's sampler: argmax of exp(logits) / (-log U)^T in float64; plain argmax at T = 0."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits.double()
    u = torch.rand(logits.shape, dtype=torch.float64, generator=generator, device=logits.device)
    return (logits.exp() / (-torch.log(u)) ** temperature).argmax(dim=-1)


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of tokens whose probability mass reaches top_p (at least one)."""
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    drop = cum > top_p
    drop[..., 1:] = drop[..., :-1].clone()
    drop[..., 0] = False
    mask = torch.zeros_like(drop).scatter_(-1, order, drop)
    return logits.masked_fill(mask, torch.finfo(logits.dtype).min)


def top_k_filter(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, torch.finfo(logits.dtype).min)


def llada_propose(logits, p: SamplingParams, tokens: TokenIds, generator):
    if p.logits_eos_inf:
        logits = logits.clone()
        logits[..., tokens.eos] = -torch.inf
    x0 = gumbel_argmax(logits, p.temperature, generator)
    if p.remasking == "random":
        conf = torch.rand(x0.shape, generator=generator, device=x0.device, dtype=torch.float64)
        return x0, conf
    if p.confidence_eos_eot_inf:
        # Official behaviour, after x0 is chosen: the end-of-turn logit goes to -inf, and so does
        # [EOS] at temperature 0 only (there the noisy logits are the same tensor as the logits).
        # They can still be proposed, but get zero confidence and are revealed last.
        logits = logits.clone()
        if tokens.eot is not None:
            logits[..., tokens.eot] = -torch.inf
        if p.temperature == 0:
            logits[..., tokens.eos] = -torch.inf
    prob = (logits.double() if p.parallel else logits).softmax(dim=-1)  # Fast-dLLM: float64
    return x0, prob.gather(-1, x0[..., None]).squeeze(-1)


def dream_propose(logits, p: SamplingParams, tokens: TokenIds, generator, at=None):
    """Dream's `sample_tokens`. With temperature > 0 a token is drawn (as
    `Categorical(probs).sample()`) only where `at` (B, W) is True, in row-major order, as the
    official sampler draws only at its masked (`origin`: chosen) positions; elsewhere x0 is the
    argmax and is never revealed."""
    if p.temperature > 0:
        logits = logits / p.temperature
    if p.top_p is not None and p.top_p < 1:
        logits = top_p_filter(logits, p.top_p)
    if p.top_k is not None:
        logits = top_k_filter(logits, p.top_k)
    prob = logits.softmax(dim=-1)
    conf, x0 = prob.max(dim=-1)
    if p.temperature > 0:
        at = torch.ones_like(x0, dtype=torch.bool) if at is None else at
        rows = prob[at]  # (N, V), the positions the official code samples at
        rows = rows / rows.sum(-1, keepdim=True)  # Categorical's normalisation
        # Categorical's argument check (a simplex to 1e-6, in the probabilities' dtype): when it
        # fails (in bfloat16, most steps) the official `except:` takes the argmax, drawing nothing
        if rows.shape[0] and bool(((rows.sum(-1) - 1).abs() < 1e-6).all()):
            x0 = x0.masked_scatter(at, torch.multinomial(rows, 1, True, generator=generator)[:, 0])
        conf = prob.gather(-1, x0[..., None]).squeeze(-1)
    if p.remasking == "topk_margin":
        top2 = prob.topk(2, dim=-1).values
        conf = top2[..., 0] - top2[..., 1]
    elif p.remasking == "entropy":
        conf = (prob * torch.log(prob + 1e-10)).sum(dim=-1)
    return x0, conf


def propose(logits, p: SamplingParams, tokens: TokenIds, generator, at=None):
    """logits: (B, W, V) -> x0 (B, W) token ids, confidence (B, W); `at` (B, W): where a
    sampled (temperature > 0) Dream proposal is drawn (see `dream_propose`).

    Banned ids (`p.banned_ids`, else the model's `tokens.banned`) get logit -inf first: LLaDA-V's
    sampler does so at masked positions, the only ones a proposal is ever taken from."""
    banned = tokens.banned if p.banned_ids is None else p.banned_ids
    if banned:
        logits = logits.clone()
        logits[..., list(banned)] = -torch.inf
    if p.remasking in LLADA_RULES:
        return llada_propose(logits, p, tokens, generator)
    return dream_propose(logits, p, tokens, generator, at)


def select(
    conf: torch.Tensor | None,
    eligible: torch.Tensor,
    k: torch.Tensor,
    p: SamplingParams,
    reveal_prob: torch.Tensor | None,
    generator: torch.Generator | None,
    compact: bool = False,
) -> torch.Tensor:
    """Choose positions to reveal. conf, eligible: (B, W); k: (B,) -> (B, W) bool.

    `reveal_prob` (B,) is only used by `origin`, which reveals each eligible position
    independently with that probability instead of a top-k.

    Ties go to the earlier position (`ranked`), whatever the window's width or the rows beside
    it. `compact` instead takes each row's `torch.topk` over its eligible confidences alone, in
    position order: `torch.topk` breaks ties by the layout of the vector it is given, and that
    layout is the official sampler's (`DiffusionModel.compact_topk`, LaViDa-Dream in bfloat16);
    it too depends on the row alone.
    """
    if p.remasking == "origin":  # one U(0, 1) per eligible position, in row-major order
        assert reveal_prob is not None  # "origin" reveals with the schedule's probability
        u = torch.ones(eligible.shape, device=eligible.device)
        n = int(eligible.sum())
        u[eligible] = torch.rand(n, generator=generator, device=eligible.device)
        return eligible & (u < reveal_prob[:, None])
    assert conf is not None  # every rule but "origin" ranks the proposals' confidences
    conf = conf.masked_fill(~eligible, -torch.inf)
    if p.parallel:
        k = parallel_count(conf, eligible, p)
    kmax = int(k.max()) if k.numel() else 0
    chosen = torch.zeros_like(eligible)
    if kmax == 0:
        return chosen
    if p.alg_temp:
        weights = F.softmax(conf.double() / p.alg_temp, dim=-1)
        weights = torch.where(eligible, weights, torch.zeros_like(weights))
        for r in range(conf.shape[0]):
            n = min(int(k[r]), int(eligible[r].sum()))
            if n:
                idx = torch.multinomial(weights[r], n, generator=generator)
                chosen[r, idx] = True
        return chosen
    if compact:
        for r in range(conf.shape[0]):
            pos = torch.nonzero(eligible[r]).flatten()
            n = min(int(k[r]), pos.numel())
            if n:
                chosen[r, pos[conf[r, pos].topk(n).indices]] = True
        return chosen
    idx = ranked(conf)[:, :kmax]  # (B, kmax), best first, ties to the earlier position
    keep = torch.arange(kmax, device=k.device)[None, :] < k[:, None]
    chosen.scatter_(1, idx, keep)
    return chosen & eligible


def ranked(conf: torch.Tensor) -> torch.Tensor:
    """(B, W) positions of each row, best confidence first; equal confidences in position order.

    `torch.topk` breaks ties by the length of the vector it is given (a row alone at its
    window of 32 and the same row padded to 128 pick different ones of two tied 1.0s), and a
    small model saturates float32 softmax to 1.0 often. A stable sort makes the choice a
    function of the row's own confidences: the same in every layout (width, offset, batch)."""
    return conf.sort(dim=-1, descending=True, stable=True).indices


def parallel_count(conf: torch.Tensor, eligible: torch.Tensor, p: SamplingParams) -> torch.Tensor:
    """Fast-dLLM's reveal count per row (B,) for `threshold` or `factor` (module docstring).
    conf: (B, W) with -inf at non-eligible positions."""
    m = eligible.sum(dim=1)
    ranked = conf.sort(dim=1, descending=True).values  # eligible first, best first
    n_idx = torch.arange(conf.shape[1], device=conf.device)[None]
    bar = p.threshold if p.threshold is not None else 1 - p.factor / (n_idx + 2)
    ok = ranked >= bar
    ok |= n_idx == 0  # the best position is always revealed
    ok &= n_idx < m[:, None]
    fail = ~ok & (n_idx < m[:, None])
    if p.threshold is not None:
        return ok.sum(dim=1)  # every position over the threshold (ranked: a prefix)
    first = torch.where(fail, n_idx, conf.shape[1]).min(dim=1).values  # first failing index
    n = torch.where(first >= m - 1, m, first)  # none failed, or only the last: all m (quirk)
    return torch.where(m > 0, n.clamp(min=1), m)
