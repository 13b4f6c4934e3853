"""ρ-EOS as a decoding policy of the one loop (its hooks; `seer.diffusion.policy`).

Yang, Jiang and Shao 2026, "ρ-EOS: Training-free Bidirectional Variable-Length Control for
Masked Diffusion LLMs", arXiv 2601.22527; official code yjyddq/rho-EOS @ 9cb20c66,
`models/LLaDA_rho_EOS.py` (`generate`), defaults from `scripts/eval_LLaDA_rho_EOS.sh` (the
options declared in `seer.policies.rho_eos`). `gen_length` is the official `max_gen_length`: the
longest window a row may grow to.

One stage: denoising and the length change run in the same steps, one forward each. A row's
window starts as `rho_initial` [MASK]s, denoised in blocks of `rho_block` from position 0. Each
step, with the logits of the whole window:

1. Reveal: in the current block every [MASK] whose predicted token is not [MASK] and whose
   confidence is > `rho_reveal` is revealed; if none is, the most confident one whose predicted
   token is not [MASK] (if every one predicts [MASK]: the best token other than [MASK], by a
   softmax without it). The block then advances past every block without masks.
2. Density ρ: the official code's signal (`_calculate_eos_confidence`, the function its
   `generate` calls): over the window from its last position backwards, the probability of
   [EOS] at up to `rho_eos_tokens` positions whose argmax is [EOS] (masked or not), summed and
   divided by `rho_eos_tokens`, then rounded to float32. (The paper and the README describe ρ
   as the share of the remaining masks predicted to be [EOS]; the official `generate` does not
   compute that — its `_calculate_eos_density` is never called — and this module follows the
   code.)
3. Length: ρ in [`rho_low`, `rho_high`]: keep. ρ < `rho_low` (too little end: the answer needs
   room): grow by K [MASK]s after the window (at most to `gen_length`); ρ > `rho_high` (too
   much end): shrink by K, dropping the window's last K positions whatever they hold (at least
   to 0). K = `rho_expand` x m, m from the distance to the band in steps of 0.1
   (seg = ceil(gap / 0.1)): `rho_scheduler` "exp" m = 2^(seg-1), "linear" m = seg, "const"
   m = 1; m at most 8 (float32 arithmetic, as the official). The row's block is clipped to the
   new window; the row ends when its block reaches the window's end.

A row stops adjusting for good (ρ taken as inside the band) once its window has reached
`gen_length` at the start of a step, or after 64 steps (the official `max_adjust_length_steps`);
it is cut off after `gen_length` steps (the official `max_decode_steps`: masks left then stay).

Confidences are softmax(logits)[predicted] in the logits' dtype; the predicted token is the
argmax (temperature 0) or LLaDA's Gumbel-max. [EOS] and [MASK] are `TokenIds.eos` / `.mask` (the
official code takes `tokenizer.eos_token_id` and the model's mask id). A golden
(`tests/diffusion/test_rho_eos.py`) checks tokens and NFE against the official `generate`.

Where Seer differs from the official code:
- Rows move alone: the official batch keeps adjusting (growing, shrinking) rows that have
  finished while another row still denoises, counts the 64 adjusting steps and the step cap
  over the batch, and stops the whole batch when no row changed; here a row ends when its own
  window is denoised (its tokens and NFE equal its batch-1 run).
- Left padding of a batch's shorter prompts is hidden (the official attention mask covers it).
- Temperature > 0: LLaDA's float64 Gumbel-max from the request's generator (the official draws
  float32 noise from the global RNG); goldens are greedy.
- cfg_scale > 0 is Seer's CFG (the prompt masked in the unconditional half); once the window has
  changed, the official masks every revealed answer token too (its prompt mask is recomputed as
  "not [MASK]").
- `rho_initial` may not exceed `gen_length`. The answer is `gen_length` tokens, the window and
  then [EOS], as every method returns (the official returns each row's prompt and window).
- The official `torch.autocast("cuda")` (reduced precision on GPU) is not applied.
- It does not compose with KV caches, threshold/factor, early stop, stop words or a suffix
  (its traits refuse them: `seer.policies.check`): the window changes every step and it has
  its own reveal and end rules. Seer and a fixed window are refused too (from its traits,
  `seer.diffusion.policy.check`, and by `resolve`): ρ-EOS sets the length itself from its first
  step, and neither paper defines running both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from seer.diffusion.policy import Policy
from seer.diffusion.schedule import Plan, StepRows, lay_blocks
from seer.diffusion.unmask import gumbel_argmax
from seer.errors import SeerError
from seer.policies import rho_eos as rho_eos_declared

if TYPE_CHECKING:
    from seer.diffusion.loop import DenoisingLoop
    from seer.diffusion.state import LoopState, WindowPolicy
    from seer.sampling import SamplingParams

ADJUSTING, FIXED = 0, 1  # LoopState.phase: the window may still change / no longer changes
ADJUST_STEPS = 64  # the official max_adjust_length_steps: no length change after this step
DENSITY_STEP = 0.1  # the official density_interval: width of one segment outside the band
MAX_MULT = 8  # the official max_mult: K is at most 8 x rho_expand


def window_change(rho: float, low: float, high: float, unit: int, scheduler: str) -> int:
    """Signed change of a window for density `rho`: +K grow, -K shrink, 0 keep (float32, as the
    official `E_factor_func` computes it)."""
    d = torch.tensor(rho, dtype=torch.float32)
    if bool(d > high):
        sign, gap = -1, (d - high).clamp_min(0.0)
    elif bool(d < low):
        sign, gap = 1, (low - d).clamp_min(0.0)
    else:
        return 0
    seg = int(torch.ceil((gap + 1e-12) / DENSITY_STEP))
    mult = {"const": 1, "linear": max(seg, 1), "exp": max(2 ** (seg - 1), 1)}[scheduler]
    return sign * min(mult, MAX_MULT) * unit


def end_density(pred: torch.Tensor, eos_prob: torch.Tensor, w: int, k: int, eos: int) -> float:
    """One row's ρ over its window [0, w) (pred, eos_prob: (W,)): [EOS] probability at the last
    `k` positions predicting [EOS], summed from the end, over `k`."""
    hit = torch.nonzero(pred[:w] == eos).flatten()[-k:]
    return sum(eos_prob[hit].flip(0).tolist()) / k


def reveal_block(
    block: torch.Tensor,
    logits: torch.Tensor,
    prob: torch.Tensor,
    threshold: float,
    temperature: float,
    generator,
    mask: int,
) -> None:
    """Reveal in place, in `block` (n,), the masks above `threshold` (at least one if any is
    left): the official rule. logits, prob: (n, V) for the block's positions."""
    masked = block == mask
    if not bool(masked.any()):
        return
    x0 = gumbel_argmax(logits, temperature, generator)
    cf = prob.gather(-1, x0[:, None]).squeeze(-1)
    high = (cf > threshold) & masked & (x0 != mask)
    if not bool(high.any()):
        cand = torch.nonzero(masked).flatten()
        order = torch.sort(cf[cand], descending=True).indices
        ok = torch.nonzero(x0[cand][order] != mask).flatten()
        if len(ok):
            pick = cand[order[ok[0]]]
        else:  # every candidate predicts [MASK]: the best other token
            stuck = logits[cand].clone()
            stuck[:, mask] = -torch.inf
            best, tok = stuck.softmax(dim=-1).max(dim=-1)
            i = torch.argmax(best)
            pick, x0 = cand[i], x0.clone()
            x0[pick] = tok[i]
        high[pick] = True
    block.copy_(torch.where(high, x0, block))


def build(loop: DenoisingLoop, rows: list[SamplingParams], device: torch.device) -> RhoEos | None:
    """The decoding policy of ρ-EOS's rows (rows of one layout: all or none are ρ-EOS's)."""
    return RhoEos(loop) if rows[0].rho_eos else None


class RhoEos(Policy):
    """The policy: `start` at `begin`, `reveal` in place of the loop's (module docstring). It
    sets the length, runs without a KV cache and reads the whole window's logits."""

    name = "rho_eos"
    traits = rho_eos_declared.DECLARATION.traits  # one source: its declaration

    def __init__(self, loop: DenoisingLoop) -> None:
        self.loop, self.tokens = loop, loop.tokens

    def start(self, s: LoopState, policy: WindowPolicy | None) -> None:
        """Every row's window becomes `rho_initial` [MASK]s, laid in blocks of `rho_block`."""
        if s.params.banned_ids or (s.params.banned_ids is None and self.tokens.banned):
            raise SeerError("rho_eos reads the end token's confidence, which this sampler bans")
        c, p = s.canvas, s.params
        window = torch.full_like(c.window, p.rho_initial)
        self.loop._resize(s, window, window != c.window)
        blocks = lay_blocks(0, p.rho_initial, p.rho_block, p.rho_block)
        s.plan = Plan([list(blocks) for _ in range(c.rows)])
        s.phase = torch.full_like(c.window, ADJUSTING)
        s.now = None

    def reveal(self, s: LoopState, logits: torch.Tensor, now: StepRows) -> bool:
        """Each active row: the step's reveal, its density, its new window, its blocks re-laid.
        logits: (B, W, V) for the whole answer window."""
        p, c, mask = s.params, s.canvas, self.tokens.mask
        if self.loop.confidence_dtype is not None:
            logits = logits.to(self.loop.confidence_dtype)
        prob, pred = logits.softmax(dim=-1), logits.argmax(dim=-1)
        eos_prob = prob[..., self.tokens.eos]
        pp, cap, size = c.prompt_len, p.gen_length, p.rho_block
        window, steps = c.window.clone(), s.row_nfe.tolist()
        starts = {}
        for r in torch.nonzero(now.active).flatten().tolist():
            w, lo = int(c.window[r]), int(now.start[r])
            if w >= cap or steps[r] > ADJUST_STEPS:  # the official denoise-only mode
                s.phase[r] = FIXED
            hi = min(lo + size, w)
            reveal_block(
                c.x[r, pp + lo : pp + hi],
                logits[r, lo:hi],
                prob[r, lo:hi],
                p.rho_reveal,
                p.temperature,
                s.generator_of(r),
                mask,
            )
            answer = c.x[r, pp : pp + w]
            while lo < w and not bool((answer[lo : lo + size] == mask).any()):
                lo += size
            starts[r] = min(lo, w)
            if int(s.phase[r]) == ADJUSTING:
                rho = end_density(pred[r], eos_prob[r], w, p.rho_eos_tokens, self.tokens.eos)
                k = window_change(rho, p.rho_low, p.rho_high, p.rho_expand, p.rho_scheduler)
                window[r] = min(max(w + k, 0), cap)
        if bool((window != c.window).any()):
            self.loop._resize(s, window, window != c.window)  # the forward follows
        for r, lo in starts.items():
            w = int(window[r])
            lo = min(lo, w)
            more = lay_blocks(lo, w, size, size) if lo < w and steps[r] < cap else []
            s.plan.replan(r, more)  # none: the row ends (denoised, or the official step cap)
        return True
