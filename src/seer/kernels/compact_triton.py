"""Step-0 compaction as one fused Triton kernel (same contract as `compact_ref.py`).

One program per row of the group: it trims the row to its window and writes it in the row layout
(prompt left-padded to `p_out`, window [EOS]-padded to `width`, attention mask), then, for the
varlen path, its packed segment (token source, position ids restarting at 0, segment ids), the
slots that give its window's logits and its `cu_seqlens` entry; program 0 also writes the routing
record. Everything stays on the device: the host only chose the shapes (p_out, width, capacity)
and the segment offsets, from lengths it already knew. Free packed slots are prefilled by the
wrapper (`torch.full`, an asynchronous device fill).

The kernel is jitted on first use, so `TRITON_INTERPRET=1` set before that first use runs it on
CPU tensors (the tests do this); the interpreted and compiled versions are cached apart.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from seer.kernels.compact_ref import Compacted, compact_reference

BLOCK = 64  # columns handled per inner iteration


def _compact_rows(
    # inputs
    x_ptr,
    plen_ptr,
    win_ptr,
    rows_ptr,
    off_ptr,
    # outputs
    out_x_ptr,
    am_ptr,
    src_ptr,
    pos_ptr,
    seg_ptr,
    cols_ptr,
    cu_ptr,
    rec_ptr,
    # sizes and ids
    n,
    in_width,
    p_in,
    p_out,
    width,
    shift,
    pad_id,
    eos_id,
    PACKED: tl.constexpr,
    BLOCK: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    i = tl.program_id(0)
    r = tl.load(rows_ptr + i)
    pl = tl.load(plen_ptr + r)
    w = tl.load(win_ptr + r)
    out_w = p_out + width
    # row layout: column c reads input column c - p_out + p_in when it holds a real token
    for c0 in range(0, out_w, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        inb = c < out_w
        rel = c - p_out
        valid = (rel >= -pl) & (rel < w)
        tok = tl.load(x_ptr + r * in_width + rel + p_in, mask=inb & valid, other=0)
        tok = tl.where(valid, tok, tl.where(rel < 0, pad_id, eos_id))
        tl.store(out_x_ptr + i * out_w + c, tok.to(tl.int64), mask=inb)
        tl.store(am_ptr + i * out_w + c, valid.to(tl.int64), mask=inb)
    if PACKED:
        off = tl.load(off_ptr + i)
        seglen = pl + w
        for k0 in range(0, seglen, BLOCK):  # the segment [prompt | window] at slot `off`
            k = k0 + tl.arange(0, BLOCK)
            m = k < seglen
            tl.store(src_ptr + off + k, (i * out_w + p_out - pl + k).to(tl.int64), mask=m)
            tl.store(pos_ptr + off + k, k.to(tl.int64), mask=m)
            tl.store(seg_ptr + off + k, (k * 0 + i).to(tl.int64), mask=m)
        for j0 in range(0, width, BLOCK):  # slots whose hidden states predict the window
            j = j0 + tl.arange(0, BLOCK)
            slot = tl.where(j < w, off + pl + j - shift, -1)
            tl.store(cols_ptr + i * width + j, slot.to(tl.int64), mask=j < width)
        tl.store(cu_ptr + i, off.to(tl.int32))
        if i == n - 1:
            tl.store(cu_ptr + n, (off + seglen).to(tl.int32))
    if i == 0:  # the routing record, from the group's lengths
        idx = tl.arange(0, BLOCK_N)
        m = idx < n
        rr = tl.load(rows_ptr + idx, mask=m, other=0)
        ww = tl.load(win_ptr + rr, mask=m, other=0)
        pp = tl.load(plen_ptr + rr, mask=m, other=0)
        tl.store(rec_ptr + 0, (n + 0 * pl).to(tl.int64))
        tl.store(rec_ptr + 1, tl.sum(ww, axis=0).to(tl.int64))
        tl.store(rec_ptr + 2, tl.max(ww, axis=0).to(tl.int64))
        used = tl.sum(ww + pp, axis=0) if PACKED else 0 * pl
        tl.store(rec_ptr + 3, used.to(tl.int64))


_JITTED: dict[bool, object] = {}  # interpreted or compiled kernel, built on first use


def _kernel():
    interpret = bool(triton.knobs.runtime.interpret)
    if interpret not in _JITTED:
        _JITTED[interpret] = triton.jit(_compact_rows)
    return _JITTED[interpret]


def compact_triton(
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
    """Same arguments and result as `compact_reference`."""
    n, dev = rows.numel(), x.device
    kw = dict(p_in=p_in, p_out=p_out, width=width, capacity=capacity, n_packs=n_packs)
    if n == 0:  # nothing to launch
        return compact_reference(
            x, plen, window, rows, offsets, **kw, shift=shift, pad_id=pad_id, eos_id=eos_id
        )
    slots = n_packs * capacity if capacity else 0
    out = Compacted(
        x=torch.empty((n, p_out + width), dtype=torch.long, device=dev),
        attention_mask=torch.empty((n, p_out + width), dtype=torch.long, device=dev),
        src=torch.full((slots,), -1, dtype=torch.long, device=dev),
        pos=torch.zeros((slots,), dtype=torch.long, device=dev),
        seg=torch.full((slots,), -1, dtype=torch.long, device=dev),
        cols=torch.full((n, width), -1, dtype=torch.long, device=dev),
        cu_seqlens=torch.zeros((n + 1,), dtype=torch.int32, device=dev),
        record=torch.zeros((4,), dtype=torch.long, device=dev),
    )
    packed = bool(slots)
    if packed and offsets is None:
        raise ValueError("packed compaction (capacity > 0) needs the segment offsets")
    off = rows if offsets is None or not packed else offsets.contiguous()  # rows: any long tensor
    _kernel()[(n,)](
        # inputs
        x.contiguous(),
        plen.contiguous(),
        window.contiguous(),
        rows.contiguous(),
        off,
        # outputs
        out.x,
        out.attention_mask,
        out.src,
        out.pos,
        out.seg,
        out.cols,
        out.cu_seqlens,
        out.record,
        # sizes and ids
        n,
        x.shape[1],
        p_in,
        p_out,
        width,
        shift,
        pad_id,
        eos_id,
        PACKED=packed,
        BLOCK=BLOCK,
        BLOCK_N=triton.next_power_of_2(n),
    )
    return out
