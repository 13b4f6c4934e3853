"""DAEDAL as a decoding policy of the one loop (its hooks; `seer.diffusion.policy`).

Li et al. 2025, "Beyond Fixed: Training-Free Variable-Length Denoising for Diffusion Large
Language Models", arXiv 2508.00819; official code Li-Jinsong/DAEDAL @ 303c9e98,
`models/LLaDA_DAEDAL.py` (`generate`), defaults from `scripts/eval_LLaDA_DAEDAL.sh` (the
options declared in `seer.policies.daedal`, named after `generate`'s arguments). `gen_length`
is DAEDAL's `max_gen_length`: the longest window a row may grow to.

Each row is in one of two phases (`LoopState.phase`), and after every step the policy re-plans
its remaining blocks (`Plan.replan`):

1. Sizing (initial length adjustment): the window starts as `daedal_initial` [MASK]s. Each
   step is one forward that reveals nothing: the end confidence (below) is read and, while it is
   < `daedal_eos` and the window is under the cap, the window grows by `daedal_expand` masks.
   Then the window grows by `daedal_eos_tokens // 2` positions filled with [EOS] (attended) and
   the row starts denoising: blocks of `daedal_block` from position 0.
2. Denoising with mask insertion: each step reads the logits of the whole window. In the current
   block every [MASK] whose predicted token is not [MASK] and whose confidence is >
   `daedal_high` is revealed; if none is, the most confident one whose predicted token is not
   [MASK] (if every one predicts [MASK]: the best token other than [MASK], by a softmax without
   it). Unless the end confidence is >= `daedal_expand_eos` or the window is at the cap, the
   block's least confident remaining [MASK] with confidence < `daedal_low` is replaced by
   `daedal_expand` [MASK]s (the answer after it moves right; what passes the cap is dropped).
   The row's block then advances past every block without masks; the row ends when none is left.

End confidence (the official `_calculate_eos_confidence`): over the window from its last
position backwards, the probability of [EOS] at up to `daedal_eos_tokens` positions whose argmax
is [EOS], summed and divided by `daedal_eos_tokens`. Confidences are softmax(logits)[predicted]
in the logits' dtype; the predicted token is the argmax (temperature 0) or LLaDA's Gumbel-max.
[EOS] and [MASK] are `TokenIds.eos` / `.mask` (the official code takes `tokenizer.eos_token_id`
and the model's mask id). A golden (`tests/diffusion/test_daedal.py`) checks tokens and NFE
against the official `generate` on the tiny LLaDA fixture.

Where Seer differs from the official code:
- Rows move alone: the official batch finishes sizing for every row before any row denoises,
  and ends sizing for the whole batch when no row can grow past the longest; here each row
  changes phase on its own (a row's tokens equal its batch-1 run; its NFE is its own sizing
  plus denoising steps, the official batch-1 NFE; a batch's NFE can be lower than the official).
- Left padding of a batch's shorter prompts is hidden (the official attention mask covers it).
- Temperature > 0: LLaDA's float64 Gumbel-max from the request's generator (the official draws
  float32 noise from the global RNG); goldens are greedy.
- cfg_scale > 0 is Seer's CFG (the prompt masked in the unconditional half); the official
  indexes with the first window's prompt mask and fails once the window has grown.
- `daedal_initial` may not exceed `gen_length` (the official would start past its own cap).
- The answer is `gen_length` tokens, the window and then [EOS], as every method returns (the
  official returns each row's prompt and window).
- The official `torch.autocast("cuda")` (reduced precision on GPU) is not applied: the model's
  dtype is used. Its "stagnant" batch break cannot fire: every step reveals in every row.
- It does not compose with KV caches, threshold/factor, early stop, stop words or a suffix
  (its traits refuse them: `seer.policies.check`): it moves tokens inside the window and has
  its own reveal and end rules.

Seer does not compose with it, and is refused (from its traits, `seer.diffusion.policy.check`,
and by `resolve`): both decide the answer length. Seer cuts a full window at step 0 from a probe
of that window's forward and grows a cut window only when the answer reaches the cut; DAEDAL
never runs a full-window step 0 — its first forward sees `daedal_initial` masks — and only
grows. Running both would need a method neither paper defines (e.g. Seer's cut as DAEDAL's
initial length, with no sizing); a fixed window (`Request.window`) is refused for the same
reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from seer.diffusion.canvas import insert_masks
from seer.diffusion.policy import Policy
from seer.diffusion.schedule import Plan, Stage, StepRows, lay_blocks
from seer.diffusion.unmask import gumbel_argmax
from seer.errors import SeerError
from seer.policies import daedal as daedal_declared

if TYPE_CHECKING:
    from seer.diffusion.loop import DenoisingLoop
    from seer.diffusion.state import LoopState, WindowPolicy
    from seer.sampling import SamplingParams

SIZING, DENOISING = 0, 1  # LoopState.phase


def build(loop: DenoisingLoop, rows: list[SamplingParams], device: torch.device) -> Daedal | None:
    """The decoding policy of DAEDAL's rows (rows of one layout: all or none are DAEDAL's)."""
    return Daedal(loop) if rows[0].daedal else None


class Daedal(Policy):
    """The policy: `start` at `begin`, `reveal` in place of the loop's (module docstring). It
    sets the length, runs without a KV cache and reads the whole window's logits."""

    name = "daedal"
    traits = daedal_declared.DECLARATION.traits  # one source: its declaration

    def __init__(self, loop: DenoisingLoop) -> None:
        self.loop, self.tokens = loop, loop.tokens

    def start(self, s: LoopState, policy: WindowPolicy | None) -> None:
        """Every row's window becomes `daedal_initial` [MASK]s with one sizing step planned."""
        if s.params.banned_ids or (s.params.banned_ids is None and self.tokens.banned):
            raise SeerError("daedal reads the end token's confidence, which this sampler bans")
        c, n = s.canvas, s.params.daedal_initial
        window = torch.full_like(c.window, n)
        self.loop._resize(s, window, window != c.window)
        s.plan = Plan([[Stage(0, n, 1)] for _ in range(c.rows)])
        s.phase = torch.full_like(c.window, SIZING)
        s.now = None

    def end_confidence(self, pred: torch.Tensor, eos_prob: torch.Tensor, w: int, k: int) -> float:
        """One row's end confidence over its window [0, w) (pred, eos_prob: (W,))."""
        hit = torch.nonzero(pred[:w] == self.tokens.eos).flatten()[-k:]
        return sum(eos_prob[hit].flip(0).tolist()) / k  # summed from the end, as the official

    def reveal(self, s: LoopState, logits: torch.Tensor, now: StepRows) -> bool:
        """The step's reveal (denoising rows), sizing, and every active row re-planned.
        logits: (B, W, V) for the whole answer window."""
        p, c = s.params, s.canvas
        if self.loop.confidence_dtype is not None:
            logits = logits.to(self.loop.confidence_dtype)
        prob, pred = logits.softmax(dim=-1), logits.argmax(dim=-1)
        eos_prob = prob[..., self.tokens.eos]
        windows, phase = c.window.tolist(), s.phase.tolist()
        rows = torch.nonzero(now.active).flatten().tolist()
        conf = {
            r: self.end_confidence(pred[r], eos_prob[r], windows[r], p.daedal_eos_tokens)
            for r in rows
        }
        denoise = [r for r in rows if phase[r] == DENOISING]
        if denoise:
            self._denoise(s, logits, prob, conf, denoise, now)
        sizing = [r for r in rows if phase[r] == SIZING]
        if sizing:
            self._size(s, conf, sizing, windows)
        return True

    def _denoise(self, s, logits, prob, conf: dict, rows: list[int], now) -> None:
        p, c, mask = s.params, s.canvas, self.tokens.mask
        pp, cap = c.prompt_len, p.gen_length
        at = torch.full_like(c.window, -1)  # insertion point per row (-1: none)
        for r in rows:
            w, lo = int(c.window[r]), int(now.start[r])
            hi = min(lo + p.daedal_block, w)
            block = c.x[r, pp + lo : pp + hi]
            masked = block == mask
            x0 = gumbel_argmax(logits[r, lo:hi], p.temperature, s.generator_of(r))
            cf = prob[r, lo:hi].gather(-1, x0[:, None]).squeeze(-1)
            high = (cf > p.daedal_high) & masked & (x0 != mask)
            if not bool(high.any()) and bool(masked.any()):
                cand = torch.nonzero(masked).flatten()
                order = torch.sort(cf[cand], descending=True).indices
                ok = torch.nonzero(x0[cand][order] != mask).flatten()
                if len(ok):
                    pick = cand[order[ok[0]]]
                else:  # every candidate predicts [MASK]: the best other token
                    stuck = logits[r, lo + cand].clone()
                    stuck[:, mask] = -torch.inf
                    best, tok = stuck.softmax(dim=-1).max(dim=-1)
                    i = torch.argmax(best)
                    pick, x0 = cand[i], x0.clone()
                    x0[pick] = tok[i]
                high[pick] = True
            if conf[r] < p.daedal_expand_eos and w < cap:
                low = torch.nonzero((cf < p.daedal_low) & masked & ~high).flatten()
                if len(low):
                    at[r] = lo + low[torch.topk(cf[low], 1, largest=False).indices[0]]
            block.copy_(torch.where(high, x0, block))
        if bool((at >= 0).any()):
            s.canvas = insert_masks(c, at, p.daedal_expand, cap, self.tokens)
            self.loop._resize(s, s.canvas.window, at >= 0)  # the cache and forward follow
        c = s.canvas
        for r in rows:  # advance past blocks without masks; the rest of the window re-planned
            w, lo, size = int(c.window[r]), int(now.start[r]), p.daedal_block
            answer = c.x[r, pp : pp + w]
            while lo < w and not bool((answer[lo : lo + size] == mask).any()):
                lo += size
            s.plan.replan(r, lay_blocks(lo, w, size, size) if lo < w else [])

    def _size(self, s, conf: dict, rows: list[int], windows: list[int]) -> None:
        p, c = s.params, s.canvas
        cap, window, ready = p.gen_length, c.window.clone(), []
        for r in rows:
            w = windows[r]
            if conf[r] < p.daedal_eos and w < cap:  # not sure of the end yet: more masks
                window[r] = min(w + p.daedal_expand, cap)
                s.plan.replan(r, [Stage(0, int(window[r]), 1)])
            else:  # sized: [EOS] x eos_tokens // 2 after the masks, then denoising
                window[r] = min(w + p.daedal_eos_tokens // 2, cap)
                s.plan.replan(r, lay_blocks(0, int(window[r]), p.daedal_block, p.daedal_block))
                ready.append(r)
        self.loop._resize(s, window, window != c.window)
        pp = s.canvas.prompt_len
        for r in ready:
            s.canvas.x[r, pp + windows[r] : pp + int(window[r])] = self.tokens.eos
            s.phase[r] = DENOISING
