"""How many tokens to reveal per step, and how steps are laid over the answer window.

A `Plan` lays semi-autoregressive blocks over each row's answer window and gives every block its
share of steps. It keeps the user's tokens-per-step ratio, so when Seer truncates a window to L*
the step count follows L* (`steps * L / gen_length`, rounded up per block), and when the guard
grows a window the new positions get blocks and steps of their own.

Three counting rules (`SamplingParams.schedule`; by default the rule family's own), all per row:
- `linear` (LLaDA): a block of m masks over n steps reveals m // n per step, the remainder going
  to the earliest steps.
- `timestep` (Dream): with t = linspace(1, eps, n + 1), step j reveals
  floor(remaining * (1 - t[j+1] / t[j])) and everything left at the last step. Dream's official
  sampler uses the batch-mean mask count; we count per row so a row's answer does not depend on
  its batch-mates (identical when rows have equal windows, as in the official setting).
- `shift` (LaViDa's `schedule='shift'`, `get_num_transfer_tokens_sch`, for both backbones): the
  cumulative share sigma(t) = 3t / (1 + 2t) of the block's m masks on t = linspace(0, 1, n + 1),
  differences clamped to >= 1, the excess taken back from the front (skipping 1s), then reversed:
  few tokens first, many at the end. At most min(n, m) steps reveal; later ones reveal none.

Parallel decoding (`threshold` / `factor`, declared in `seer.policies.parallel`; Fast-dLLM): the
unmasking rule sets how many positions each step reveals (at least one), and a block runs until it
has no masks, as Fast-dLLM's `while True` loop does. The plan gives every block as many steps as it
has positions (the most it can need) and `Plan.close_blocks` skips a row's remaining steps of a
block once the block is filled, so NFE is the number of steps actually needed.

Early stop (`early_stop`, declared in `seer.policies.early_stop`; dInfer: inclusionAI/dInfer,
`BlockWiseDiffusionLLM`, "Early stop at EOS"): once a row's block is filled and holds [EOS], every
later position of the row becomes [EOS] and the row has no more steps. It saves the remaining
blocks' steps; with one block over the whole window (`block_length` = `gen_length`) it never fires
before the end.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from seer.diffusion.policy import Loop, LoopState, Policy
from seer.policies import parallel

if TYPE_CHECKING:
    from seer.sampling import SamplingParams


@dataclass(slots=True)
class Stage:
    """One semi-AR block of one row."""

    start: int  # first answer position of the block
    end: int  # one past its last position
    steps: int  # denoising steps spent on it


def lay_blocks(start: int, end: int, block: int, steps_per_block: int) -> list[Stage]:
    """Blocks of `block` positions over [start, end); a partial last block gets a share of steps."""
    stages = []
    for s in range(start, end, block):
        e = min(s + block, end)
        stages.append(Stage(s, e, max(1, math.ceil(steps_per_block * (e - s) / block))))
    return stages


def steps_per_block(p) -> int:
    """Steps given to each full block: the user's share, or under parallel decoding the block's
    size (at least one reveal per step; `Plan.close_blocks` ends the block when it is filled)."""
    if p.parallel:
        return p.block
    return p.total_steps // (p.gen_length // p.block)


@dataclass(slots=True)
class StepRows:
    """Where each row stands at the current step (the plan's view of one step)."""

    start: torch.Tensor  # (B,) long: first answer position of the row's current block
    end: torch.Tensor  # (B,) long: one past its last position
    j: torch.Tensor  # (B,) long: the step's index inside the block
    steps: torch.Tensor  # (B,) long: the block's steps
    active: torch.Tensor  # (B,) bool: the row takes this step (False: finished or idle)
    bounds: tuple[int, int, int] | None = None  # `span()` and the active rows, read on the host

    def span(self) -> tuple[int, int]:
        """The answer positions touched by the step of any active row."""
        if self.bounds is not None:
            return self.bounds[:2]
        if not bool(self.active.any()):
            return 0, 1
        return int(self.start[self.active].min()), int(self.end[self.active].max())


class Plan:
    """Per-row stages, advanced in lockstep: at global step g each row is in one of its stages."""

    def __init__(self, stages: list[list[Stage]]) -> None:
        self.stages = stages
        self._flat: list[list[tuple[Stage | None, int]]] = [
            [(st, j) for st in row for j in range(st.steps)] for row in stages
        ]
        self.step = 0

    @property
    def total(self) -> int:
        return max(len(f) for f in self._flat)

    def done(self) -> bool:
        return self.step >= self.total

    def finish(self, row: int) -> None:
        """End a row now (its answer is complete): it has no steps after the current one."""
        del self._flat[row][self.step :]

    def close_blocks(
        self, answer: torch.Tensor, mask_id: int, parallel: list[bool], end_id: list[int | None]
    ) -> None:
        """Called after a step (once `step` has advanced), for rows whose last block has no
        masks left in `answer` (B, W, the answer window). Per row: `parallel`, the block's
        remaining steps are skipped (Fast-dLLM's `while True`); `end_id` (dInfer's early stop,
        None: off), when the filled block holds it, the row ends — no more steps, and every
        position after the block becomes `end_id` (written into `answer`, a view of the
        canvas)."""
        done = self.step - 1
        for r, flat in enumerate(self._flat):
            st = flat[done][0] if done < len(flat) else None
            if st is None or (not parallel[r] and end_id[r] is None):
                continue
            block = answer[r, st.start : st.end]
            if bool((block == mask_id).any()):
                continue
            end = end_id[r]
            if end is not None and bool((block == end).any()):
                answer[r, st.end :] = end
                self.finish(r)
                continue
            if parallel[r]:
                end = self.step
                while end < len(flat) and flat[end][0] is st:
                    end += 1
                del flat[self.step : end]

    def extend(self, row: int, more: list[Stage]) -> None:
        """Append stages to a row (guard growth); they start after the current global step."""
        idle = max(0, self.step - len(self._flat[row]))
        self._flat[row].extend([(None, 0)] * idle)  # keep the lockstep index aligned
        self._flat[row].extend((st, j) for st in more for j in range(st.steps))
        self.stages[row].extend(more)

    def replan(self, row: int, more: list[Stage]) -> None:
        """Replace a row's steps after the current one by `more` (a re-planning policy, e.g.
        DAEDAL, called during a step); no stages: the row ends with this step."""
        flat = self._flat[row]
        now = flat[self.step][0] if self.step < len(flat) else None
        del flat[self.step + 1 :]
        flat.extend([(None, 0)] * (self.step + 1 - len(flat)))  # keep the lockstep index
        flat.extend((st, j) for st in more for j in range(st.steps))
        self.stages[row] = ([now] if now is not None else []) + list(more)

    def relay(self, row: int, stages: list[Stage]) -> None:
        """Lay a row's steps anew from the current global step (its step 0's cut: the row's
        plan over its new window, the other rows' steps unchanged)."""
        flat: list[tuple[Stage | None, int]] = [(None, 0)] * self.step  # the lockstep index
        self._flat[row] = flat + [(st, j) for st in stages for j in range(st.steps)]
        self.stages[row] = list(stages)

    def select(self, rows: list[int]) -> Plan:
        """A plan for some of the rows, at the same global step (for splitting a batch)."""
        out = Plan([list(self.stages[r]) for r in rows])
        out._flat = [list(self._flat[r]) for r in rows]
        out.step = self.step
        return out

    @classmethod
    def join(cls, parts: list[tuple[Plan, int]]) -> Plan:
        """A plan of rows taken from other plans (`(plan, row)` each), every row continuing from
        its own current step: rows at different steps advance together (continuous batching)."""
        out = cls([list(p.stages[r]) for p, r in parts])
        out._flat = [p._flat[r][p.step :] for p, r in parts]
        return out

    def current(
        self, device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(start, end, j, n, active) per row for the current global step, as (B,) tensors."""
        rows = []
        for flat in self._flat:
            st, j = flat[self.step] if self.step < len(flat) else (None, 0)
            if st is not None:
                rows.append((st.start, st.end, j, st.steps, 1))
            else:
                rows.append((0, 0, 0, 1, 0))
        t = torch.tensor(rows, dtype=torch.long, device=device)
        return t[:, 0], t[:, 1], t[:, 2], t[:, 3], t[:, 4].bool()

    def bounds(self) -> tuple[int, int, int]:
        """(first start, last end, rows) over the rows active at the current global step, read
        on the host (no device work): what `StepRows.span` needs every step."""
        lo, hi, n = 0, 1, 0
        for flat in self._flat:
            st = flat[self.step][0] if self.step < len(flat) else None
            if st is not None:
                lo, hi = (st.start, st.end) if n == 0 else (min(lo, st.start), max(hi, st.end))
                n += 1
        return lo, hi, n


def build(loop: Loop, rows: list[SamplingParams], device: torch.device) -> BlockEnds | None:
    """The decoding policy of rows of which any decodes in parallel or stops early."""
    return BlockEnds(loop.tokens) if any(p.parallel or p.early_stop for p in rows) else None


class BlockEnds(Policy):
    """A decoding policy: after each step a filled block ends (parallel decoding: its
    remaining steps are skipped) or ends its row (early stop: the block holds [EOS]); per row,
    as its own options say (`Plan.close_blocks`)."""

    name = "threshold/factor/early_stop"
    traits = parallel.DECLARATION.traits  # (equal to early stop's: neither limits nor sizes)

    def __init__(self, tokens) -> None:
        self.tokens = tokens

    def after(self, s: LoopState, answer: torch.Tensor) -> None:
        rows, eos = s.rows, self.tokens.eos
        ends = [eos if p.early_stop else None for p in rows]
        s.plan.close_blocks(answer, self.tokens.mask, [p.parallel for p in rows], ends)


def linear_count(
    j: torch.Tensor, n: torch.Tensor, remaining: torch.Tensor, size: torch.Tensor, eps: float
) -> torch.Tensor:
    """LLaDA: even split of the block's `size` masks over `n` steps, remainder first."""
    return size // n + (j < size % n).long()


@functools.lru_cache(maxsize=1024)
def reveal_fraction(step: int, steps: int, eps: float) -> torch.Tensor:
    """Dream's 1 - s/t at `step` of `steps` (t = linspace(1, eps, steps + 1), float32 as the
    official sampler computes it); 1 at the last step. Cached: the same few values every step."""
    if step >= steps - 1:
        return torch.tensor(1.0)
    t = torch.linspace(1, eps, steps + 1)
    return 1 - t[step + 1] / t[step]


def timestep_count(
    j: torch.Tensor, n: torch.Tensor, remaining: torch.Tensor, size: torch.Tensor, eps: float
) -> torch.Tensor:
    """Dream: reveal floor(remaining * (1 - s/t)), all at the last step (float32, as official)."""
    out = torch.empty_like(remaining)
    for r in range(remaining.shape[0]):
        step, steps = int(j[r]), int(n[r])
        if step >= steps - 1:
            out[r] = remaining[r]
        else:
            out[r] = int(remaining[r].float().cpu() * reveal_fraction(step, steps, eps))
    return out


def reveal_prob(j: torch.Tensor, steps: torch.Tensor, eps: float) -> torch.Tensor:
    """Dream `origin`: per row, the probability 1 - s/t of revealing a masked position."""
    out = torch.stack([reveal_fraction(int(i), int(n), eps) for i, n in zip(j, steps, strict=True)])
    return out.to(j.device)


SHIFT = 3  # LaViDa's default `schedule_kwargs['shift']`


@functools.lru_cache(maxsize=1024)
def shift_counts(size: int, steps: int, shift: int = SHIFT) -> tuple[int, ...]:
    """LaViDa's shifted schedule: tokens revealed at each of min(steps, size) steps (float32
    sigmas, as the official code computes them)."""
    steps = min(steps, size)
    if steps <= 0:
        return ()
    t = torch.linspace(0, 1, steps + 1)
    sigmas = shift * t / (1 + (shift - 1) * t)
    cum = (sigmas * size).to(torch.int64)
    counts = (cum[1:] - cum[:-1]).clamp(min=1).tolist()
    excess, j = sum(counts) - size, 0
    while excess > 0:  # take the rounding excess back from the front, never below 1
        j %= len(counts)
        if counts[j] > 1:
            counts[j] -= 1
            excess -= 1
        j += 1
    return tuple(reversed(counts))


def shift_count(
    j: torch.Tensor, n: torch.Tensor, remaining: torch.Tensor, size: torch.Tensor, eps: float
) -> torch.Tensor:
    """LaViDa `shift`: step j's share of the block's `size` masks (0 past min(n, size) steps)."""
    out = torch.zeros_like(remaining)
    for r in range(remaining.shape[0]):
        counts = shift_counts(int(size[r]), int(n[r]))
        if int(j[r]) < len(counts):
            out[r] = counts[int(j[r])]
    return out


COUNTS = {"linear": linear_count, "timestep": timestep_count, "shift": shift_count}
