"""Step-0 compaction, pure PyTorch: the reference the Triton kernel is tested against.

After step 0 every row of a group has its window (L* rounded); compaction moves the group's rows
out of the step-0 canvas into the layout of its execution path, in one pass and without reading
anything back to the host:

- the row layout (`x`, `attention_mask`): each row's prompt left-padded to `p_out` columns, its
  window trimmed to `window[r]` and padded with [EOS] to `width` columns (the bucket). The static
  and eager paths run this layout; the varlen path keeps it as its *logical* canvas, where the
  loop decodes;
- the packed layout (`src`, `pos`, `seg`, `cols`, `cu_seqlens`) when `capacity > 0`: row i's
  segment `[prompt | window]` (length plen + window) starts at flat slot `offsets[i]` of
  `n_packs * capacity` slots; `src` says where each slot reads its token in the row layout,
  `pos` restarts at 0 per segment, `seg` names the segment (-1: free slot) so the block-diagonal
  mask is `seg_q == seg_k`, and `cols[i, j]` is the slot whose hidden state gives the logits of
  window position j (minus the model's logit shift);
- the routing record: [rows, sum of windows, longest window, packed slots used].

Column arithmetic: output column c of a row reads input column c - p_out + p_in; it holds a real
token when -plen <= c - p_out < window (prompt, then kept window), else padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(slots=True)
class Compacted:
    """One group's rows in its path's layout (see the module docstring)."""

    x: torch.Tensor  # (n, p_out + width) long: left-padded prompt, window, [EOS] to width
    attention_mask: torch.Tensor  # (n, p_out + width) long: 1 on prompt and kept window
    src: torch.Tensor  # (n_packs * capacity,) long: flat index into x per packed slot; -1 free
    pos: torch.Tensor  # (n_packs * capacity,) long: position id, restarting per segment
    seg: torch.Tensor  # (n_packs * capacity,) long: segment (group row) per slot; -1 free
    cols: torch.Tensor  # (n, width) long: slot predicting window position j; -1 past the window
    cu_seqlens: torch.Tensor  # (n + 1,) int32: segment starts, then the end of the last one
    record: torch.Tensor  # (4,) long: rows, sum of windows, longest window, packed slots used


def compact_reference(
    x: torch.Tensor,
    plen: torch.Tensor,
    window: torch.Tensor,
    rows: torch.Tensor,
    offsets: torch.Tensor | None,
    *,
    p_in: int,
    p_out: int,
    width: int,
    capacity: int = 0,
    n_packs: int = 0,
    shift: int = 0,
    pad_id: int,
    eos_id: int,
) -> Compacted:
    """x: (B, p_in + W) step-0 canvas; plen, window: (B,); rows, offsets: (n,) -> `Compacted`.

    `offsets` must be ascending (the scheduler fills packs in row order); ignored when
    `capacity` is 0 (row layout only).
    """
    dev, n = x.device, rows.numel()
    pl, w = plen[rows], window[rows]  # (n,)
    c = torch.arange(p_out + width, device=dev)[None] - p_out  # (1, p_out + width)
    valid = (c >= -pl[:, None]) & (c < w[:, None])
    col = (c + p_in).clamp(0, x.shape[1] - 1).expand(n, -1)
    filler = torch.where(c < 0, pad_id, eos_id).expand(n, -1)
    out_x = torch.where(valid, x[rows].gather(1, col), filler)
    am = valid.long()

    slots = n_packs * capacity if capacity else 0
    src = torch.full((slots,), -1, dtype=torch.long, device=dev)
    pos = torch.zeros((slots,), dtype=torch.long, device=dev)
    seg = torch.full((slots,), -1, dtype=torch.long, device=dev)
    cols = torch.full((n, width), -1, dtype=torch.long, device=dev)
    cu = torch.zeros((n + 1,), dtype=torch.int32, device=dev)
    length = pl + w  # (n,) segment lengths
    used = torch.zeros((), dtype=torch.long, device=dev)
    if slots and n:
        if offsets is None:
            raise ValueError("packed compaction (capacity > 0) needs the segment offsets")
        s = torch.arange(slots, device=dev)
        i = torch.searchsorted(offsets, s, right=True) - 1  # segment that may hold slot s
        ic = i.clamp(min=0)
        k = s - offsets[ic]  # offset inside that segment
        inside = (i >= 0) & (k < length[ic])
        src = torch.where(inside, ic * (p_out + width) + p_out - pl[ic] + k, src)
        pos = torch.where(inside, k, pos)
        seg = torch.where(inside, ic, seg)
        j = torch.arange(width, device=dev)[None]
        slot = offsets[:, None] + pl[:, None] + j - shift
        cols = torch.where(j < w[:, None], slot, cols)
        cu[:n] = offsets.int()
        cu[n] = (offsets[-1] + length[-1]).int()
        used = length.sum()
    zero = torch.zeros((), dtype=torch.long, device=dev)
    top = w.max() if n else zero
    record = torch.stack([torch.tensor(n, device=dev), w.sum(), top, used]).long()
    return Compacted(out_x, am, src, pos, seg, cols, cu, record)
