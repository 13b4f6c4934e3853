"""KV-cache policies for the one denoising loop: none, prefix and dual (Fast-dLLM v1),
prefix_lm (LaViDa), and dpad (DPad's suffix dropout, `SuffixDropout`: see `alternatives.py`).

Semi-autoregressive decoding only changes the current block's tokens, so the keys and values of
the other columns change little within a block. Fast-dLLM (NVlabs/Fast-dLLM, `llada/generate.py`)
reuses them:

- `PrefixCache` (`generate_with_prefix_cache`): the first step of every block is a full forward
  that also fills the cache; the block's later steps run only the columns from the block's start
  to the end of the canvas (block + suffix) and read the prompt's and finished blocks' K/V.
- `DualCache` (`generate_with_dual_cache`): the same refresh, but the later steps run only the
  current block's columns and read the cached K/V of the suffix as well (stale until the next
  block's refresh).
- `NoCache`: every step is a full forward (the loop's plain path, unchanged).
- `PrefixLMCache` (LaViDa's `prefix_lm=True`, both backbones): a different model of the
  sequence, not an approximation of the full forward. The prompt is encoded once, on its own
  (it never attends to the answer); every step then runs all answer columns against that fixed
  prompt K/V. The prompt-only pass is a fill span that ends at the prompt: when the step needs
  answer columns too, the loop runs it as a prefill and asks for the step's span again. On a
  shifted model (Dream) that pass also yields the logits of answer position 0 (the prompt's last
  column predicts it), so the policy asks the plan for a `lead` of one position revealed alone at
  step 0 from those logits, as LaViDa-Dream fixes its first token to the prefill's argmax; the
  plan's first block then starts after it with its full share of steps. Under a window policy
  (Seer) step 0 runs the same way (the prefill, then the whole window's answer columns) and the
  probe reads those forwards, as calibration does (`seer.boundary.probe.step0`): a policy that
  never cuts leaves the answer unchanged. (`cut_in_step0` cannot run here: it is refused.)

A cache only changes which columns the model recomputes, never which tokens are revealed: the
loop keeps its plan (how many tokens each step reveals) and its unmasking rule; the revealed
tokens differ from an uncached run only through the approximate cached K/V, as in Fast-dLLM.

Differences from Fast-dLLM's loops, all by design:
- Fast-dLLM runs each block `while it has masks`; the loop runs the plan's steps. With
  `threshold=None` the tokens are the same; Fast-dLLM stops a block early when the schedule
  reveals nothing in its last steps (e.g. 4 positions over 8 steps), so its NFE can be smaller.
- Fast-dLLM v1 runs one unpadded row (`torch.full((1, ...))`, and its model drops the attention
  mask). Here a batch is left-padded and masked, and the refresh is per row: a row is refreshed
  at its own block's first step, and in a step where rows need different columns the forward
  runs their union while `replace` keeps each row's cached K/V outside its own columns. So every
  row sees exactly the K/V it sees alone. (Rows advance in lockstep and the plan's blocks all
  have `steps_per_block` steps but the last, so in practice refreshes coincide.)
- The cache holds every column (B, H_kv, S, D) and a forward writes its fresh K/V into it in
  place: for the prefix cache the columns after the block are rewritten every step, which is
  Fast-dLLM's `cat(prefix, fresh)` without the copy; for the dual cache it is its
  `replace_position` update.
- Dream predicts position j from column j - 1: its spans start one column earlier.

Seer composition: the cut at step 0 and the guard's growth change rows' windows. The cache
follows the canvas (`relayout`: same columns, the new width), and the rows whose window changed
are marked stale: the next step recomputes all their columns (a full forward for them) and so
refills their cache over the new canvas. The cached K/V therefore never hold a column that the
cut removed: after the cut a row runs as a cached run over prompt + L*, except that block 0's
refresh is at step 1 (over the truncated canvas) instead of step 0. Step 0 fills the cache only
when it runs without hooks (`SeerConfig.cut_in_step0` changes the sequence inside the forward);
otherwise the first cache is filled at step 1. Rows whose window the cut kept keep their cache,
exactly as in a run without a window policy. The batched engine moves the cache with the rows
into their static/eager layout (`LoopState.select`) and never packs rows (varlen) under a cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from seer.errors import SeerError
from seer.models.common import KVCache
from seer.sampling import CACHES

if TYPE_CHECKING:
    from seer.diffusion.canvas import Canvas
    from seer.diffusion.schedule import StepRows


@dataclass(slots=True)
class Span:
    """The canvas columns one step runs through the model, and what it does with the cache."""

    lo: int  # first canvas column forwarded
    hi: int  # one past the last
    fill: bool  # a full forward that (re)fills the cache
    replace: torch.Tensor | None  # (B, hi - lo) bool: columns each row recomputes; None = all
    keys: torch.Tensor | None = None  # (B, hi - lo) bool: columns each row attends to (a fill
    # only); None = all of them


class CachePolicy:
    """Decides, step by step, which canvas columns the model runs and which K/V it reuses.

    `span(canvas, now, lo, hi, shift)` is called once per step, right before the forward it
    describes. `now` is the plan's `StepRows` (per-row block, step and activity), [lo, hi) the
    answer positions whose logits the step needs and `shift` the model's logit shift. It
    returns None for a plain full forward (no cache involved), or a `Span` covering at least the
    columns [P + lo - shift, P + hi - shift): a fill (a new cache of every column), or a read of
    `kv` whose `replace` rows recompute their own columns and keep their cached K/V elsewhere.
    A fill span always starts at column 0; one that ends before the step's columns is a prefill:
    the loop runs it, stores its cache, keeps the logits it has (positions before its end) and
    calls `span` again for the remaining positions.
    `store(kv)` receives the cache a filling forward built (reads update `kv` in place).
    `lead(shift)` is the number of answer positions the plan reveals alone, one step, before its
    first block (0 but for `PrefixLMCache` on a shifted model).
    `invalidate(rows)` marks rows (B,) bool whose canvas columns changed (all rows if None);
    each is refilled by the next step. `relayout(rows, batch, offset, width)` returns the policy
    for a new canvas made of some `rows` of this one, whose column c is this canvas's column
    c + offset, `width` columns in all (other columns are zero: hidden, or in stale rows).
    """

    name = "none"
    # whether later steps read the prompt's K/V instead of recomputing the prompt (what the
    # engine's routing counts as a forward's work: `EngineConfig.waste`)
    reuses_prompt = False

    def __init__(self) -> None:
        self.kv: KVCache | None = None  # the cache, None until the first fill
        self.stale: torch.Tensor | None = None  # (B,) bool rows to refill; None = none

    def span(self, canvas: Canvas, now: StepRows, lo: int, hi: int, shift: int) -> Span | None:
        return None

    def store(self, kv: KVCache | None) -> None:
        self.kv, self.stale = kv, None

    def lead(self, shift: int) -> int:
        return 0

    def invalidate(self, rows: torch.Tensor | None = None) -> None:
        if rows is None or self.kv is None:
            self.kv, self.stale = None, None
        elif bool(rows.any()):
            self.stale = rows.clone() if self.stale is None else self.stale | rows

    def relayout(self, rows: torch.Tensor, batch: int, offset: int, width: int) -> CachePolicy:
        out = type(self)()
        if self.kv is None:
            return out
        idx = rows if self.kv.keys[0].shape[0] == batch else torch.cat([rows, rows + batch])
        out.kv = KVCache(
            [_columns(k[idx], offset, width) for k in self.kv.keys],
            [_columns(v[idx], offset, width) for v in self.kv.values],
        )  # classifier-free guidance doubled the cache's batch: idx keeps both halves
        out.stale = None if self.stale is None else self.stale[rows]
        return out


def _columns(t: torch.Tensor, offset: int, width: int) -> torch.Tensor:
    """(B, H, S, D) -> (B, H, width, D): column c is t's column c + offset, zero outside."""
    if offset == 0 and width == t.shape[2]:
        return t
    out = t.new_zeros(*t.shape[:2], width, t.shape[3])
    lo, hi = max(0, offset), min(t.shape[2], offset + width)
    if hi > lo:
        out[:, :, lo - offset : hi - offset] = t[:, :, lo:hi]
    return out


class NoCache(CachePolicy):
    """Every step is a full forward: the loop's plain path."""


class _BlockCache(CachePolicy):
    """Refresh each row at its block's first step (or when stale); in between, run the block
    (and, for the prefix cache, every column after it) and read the other columns' K/V."""

    to_end = True  # later steps run up to the canvas end (prefix) or only the block (dual)
    reuses_prompt = True  # but at each block's first step (a refresh)

    def span(self, canvas: Canvas, now: StepRows, lo: int, hi: int, shift: int) -> Span:
        start, end, j, active = now.start, now.end, now.j, now.active
        total = canvas.x.shape[1]
        full = active & (j == 0)  # rows at a block's first step: a full forward
        if self.stale is not None:
            full |= self.stale & active
        if self.kv is None or bool((full | ~active).all()):
            return Span(0, total, True, None)
        pp = canvas.prompt_len
        # each row's own fresh columns [first, last); empty for idle rows
        first = torch.where(full, 0, pp + start - shift)
        last = torch.where(full | self.to_end, total, pp + end)
        first, last = first * active, last * active
        a, b = int(first[active].min()), int(last[active].max())
        cols = torch.arange(a, b, device=canvas.x.device)[None]  # (1, b - a)
        rows = (cols >= first[:, None]) & (cols < last[:, None])
        if self.stale is not None:
            self.stale &= ~full  # refreshed by this step's forward
        return Span(a, b, False, None if bool(rows.all()) else rows)


class PrefixCache(_BlockCache):
    """Fast-dLLM's prefix cache: later steps run the current block and everything after it."""

    name = "prefix"


class DualCache(_BlockCache):
    """Fast-dLLM's dual cache: later steps run only the current block."""

    name = "dual"
    to_end = False


class PrefixLMCache(CachePolicy):
    """LaViDa's prefix LM: the prompt's K/V from one prompt-only forward, then every step runs
    the answer columns [P, S) against them. The prompt never sees the answer, so its K/V stay
    valid when windows are cut or grown: stale rows need no refill (their answer columns are
    recomputed at every step anyway)."""

    name = "prefix_lm"
    reuses_prompt = True

    def span(self, canvas: Canvas, now: StepRows, lo: int, hi: int, shift: int) -> Span:
        pp, total = canvas.prompt_len, canvas.x.shape[1]
        if self.kv is None or lo < shift:  # the prompt alone (a prefill if the step needs
            return Span(0, pp, True, None)  # more); on Dream it also predicts position 0
        if self.kv.length < total:  # the prompt's cache, widened to the canvas (answer: zeros)
            self.kv = KVCache(
                [_columns(k, 0, total) for k in self.kv.keys],
                [_columns(v, 0, total) for v in self.kv.values],
            )
        return Span(pp, total, False, None)

    def invalidate(self, rows: torch.Tensor | None = None) -> None:
        if rows is None:
            self.kv, self.stale = None, None

    def lead(self, shift: int) -> int:
        return shift


def gather_cache(parts: list[tuple[CachePolicy, int, int, int]], width: int) -> CachePolicy:
    """The policy of a canvas made of rows of other canvases: `(policy, row, batch, offset)`
    each, where the new canvas's column c is the source canvas's column c + offset, `width`
    columns in all. Every source holds a cache, or none does (the engine groups rows so)."""
    out = type(parts[0][0])()
    if any(pol.kv is None for pol, *_ in parts):
        return out

    def rows(t: list[torch.Tensor], half: int) -> torch.Tensor:  # (n or 2n, H, width, D)
        idx = [(i, r, b, off) for i, (_, r, b, off) in enumerate(parts)]
        picked = [_columns(t[i][[r + half * b]], off, width) for i, r, b, off in idx]
        return torch.cat(picked)

    def layer(name: str, n: int) -> torch.Tensor:
        t = [getattr(pol.kv, name)[n] for pol, *_ in parts]
        doubled = t[0].shape[0] == 2 * parts[0][2]  # classifier-free guidance: two halves
        return torch.cat([rows(t, 0), rows(t, 1)]) if doubled else rows(t, 0)

    kv = parts[0][0].kv
    assert kv is not None  # every part has a cache (above)
    n_layers = len(kv.keys)
    out.kv = KVCache(
        [layer("keys", n) for n in range(n_layers)], [layer("values", n) for n in range(n_layers)]
    )
    if any(pol.stale is not None for pol, *_ in parts):
        no = torch.zeros((), dtype=torch.bool, device=out.kv.keys[0].device)
        out.stale = torch.stack([no if pol.stale is None else pol.stale[r] for pol, r, *_ in parts])
    return out


class SuffixDropout(CachePolicy):
    """DPad's suffix dropout (sliding window): each step runs the columns up to `keep` answer
    positions past the current block's end; the suffix beyond is not in the forward at all.

    DPad (Chen et al. 2025, "DPad: Efficient Diffusion Language Models with Suffix Dropout",
    arXiv 2508.14148; official code Crys-Chen/DPad, `llada/generate_dropout.py`): while a
    semi-AR block is denoised, the masked suffix after it is mostly dropped from the forward: only
    a scratchpad of suffix positions right after the block is kept, with their original positions
    (DPad passes `q_indices` for RoPE; here the kept columns are a contiguous prefix of the canvas,
    so the loop's positions are already the original ones). It reuses no keys or values and never
    changes which tokens are revealed. Pass it to the loop
    (`DenoisingLoop.run(..., cache=SuffixDropout(keep))`), or ask for it by name: `cache="dpad"`
    with `dpad_window` (`SamplingParams`, `--cache dpad --dpad-window N`, the server's `cache`),
    which runs through `generate`, the engine and every front end.

    What differs from the official code: DPad samples the kept suffix positions inside its window
    (Gaussian distance decay, or uniform); here every position of the window is kept (the sliding
    window alone, no random dropout inside it), which keeps the run deterministic and the columns
    contiguous. DPad's `early_termination` is the loop's `SamplingParams.early_stop` (dInfer's
    rule, the same test: a filled block holding [EOS] ends the row). Each row sees its own
    scratchpad whatever its neighbours do: rows at different blocks (a row that joined the
    engine's batch later, a cut row's shorter last block) share one forward over the columns the
    furthest row needs, and each row's keys stop at its own block end + `keep`, so a row's
    answer is the one it gets alone.
    """

    name = "dpad"

    def __init__(self, keep: int = 16) -> None:
        super().__init__()
        if keep < 0:
            raise ValueError(f"keep must be >= 0, got {keep}")
        self.keep = keep

    def span(self, canvas: Canvas, now: StepRows, lo: int, hi: int, shift: int) -> Span | None:
        end, active = now.end, now.active
        total = canvas.x.shape[1]
        if not bool(active.any()):
            return None
        last = canvas.prompt_len + end + self.keep  # (B,) each row's last column + 1
        need = canvas.prompt_len + hi - shift  # the step's positions (hi: the furthest block's end)
        if hi > int(end[active].max()):  # the step asks past every block (a window policy's
            last = last.clamp(min=need)  # step 0, DAEDAL): each row sees those, as it does alone
        if int(last[active].min()) >= total:
            return None  # no active row's window extends past its scratchpad: a plain forward
        b = min(total, max(int(last[active].max()), need))
        keys = torch.arange(b, device=last.device)[None] < last[:, None]
        return Span(0, b, True, None, None if bool(keys[active].all()) else keys)

    def store(self, kv: KVCache | None) -> None:
        # nothing is reused: the forward's cache is dropped
        self.kv, self.stale = None, None

    def relayout(self, rows: torch.Tensor, batch: int, offset: int, width: int) -> CachePolicy:
        return SuffixDropout(self.keep)


def make_cache(name: str, dpad_window: int = 16) -> CachePolicy:
    """The cache policy called `name` ("none" | "prefix" | "dual" | "prefix_lm" | "dpad";
    `dpad_window`: DPad's scratchpad, declared in `seer.policies.dpad`)."""
    kinds = {"none": NoCache, "prefix": PrefixCache, "dual": DualCache, "prefix_lm": PrefixLMCache}
    if name == "dpad":
        return SuffixDropout(dpad_window)
    if name not in kinds:
        raise SeerError(f"unknown cache {name!r}; choose one of {', '.join(CACHES)}")
    return kinds[name]()
