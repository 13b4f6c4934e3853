"""The canvas: the sequences being denoised, and the layout operations on them.

Layout: every row is `[left padding | prompt | answer window | suffix]`; all prompts end at
column P (`prompt_len`), so every answer window starts at P. A row whose window is shorter than
the canvas has [EOS] after it, hidden from attention, so its tokens equal those it gets alone.
Positions are `cumsum(attention_mask) - 1`: a row's real columns get the same positions in any
layout, which is what lets rows move between layouts (`place`) without changing a token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from seer.sampling import TokenIds


@dataclass(slots=True)
class Canvas:
    """The sequences being denoised."""

    x: torch.Tensor  # (B, P + W) token ids: left-padded prompt, then the answer window
    attention_mask: torch.Tensor  # (B, P + W) 1 = attend; 0 = left padding or cut-off window
    prompt_len: int  # P: the column where every row's answer window starts
    window: torch.Tensor  # (B,) long: answer positions in use per row (<= W)
    prompt_embeds: torch.Tensor | None = None  # (B, P, D) prompt input embeddings (images spliced)

    @property
    def width(self) -> int:
        return self.x.shape[1] - self.prompt_len

    @property
    def rows(self) -> int:
        return self.x.shape[0]

    def prompt_lengths(self) -> torch.Tensor:
        """(B,) real prompt columns per row (left padding excluded)."""
        return self.attention_mask[:, : self.prompt_len].sum(dim=1)

    def part(self, rows: list[int], width: int) -> Canvas:
        """Rows `rows` over the prompt and the first `width` answer columns (a view for a window
        policy that cuts some rows of a shared forward over their own cap's columns)."""
        idx, end = torch.tensor(rows, device=self.x.device), self.prompt_len + width
        pe = self.prompt_embeds
        return Canvas(
            self.x[idx, :end],
            self.attention_mask[idx, :end],
            self.prompt_len,
            self.window[idx],
            None if pe is None else pe[idx],
        )


def make_canvas(
    prompts: list[list[int]],
    gen_length: int,
    tokens: TokenIds,
    device: torch.device | str,
    embeds: list[torch.Tensor | None] | None = None,
    embedding: torch.nn.Embedding | None = None,
) -> Canvas:
    """Left-pad the prompts to a common length P and append gen_length [MASK]s to each.

    `embeds` (one (len(prompt), D) tensor or None per prompt) gives prompts whose input
    embeddings are not their tokens' (images spliced in); `embedding` embeds the others."""
    b, p = len(prompts), max(len(q) for q in prompts)
    x = torch.full((b, p + gen_length), tokens.pad, dtype=torch.long)
    am = torch.zeros((b, p + gen_length), dtype=torch.long)
    for r, q in enumerate(prompts):
        x[r, p - len(q) : p] = torch.tensor(q, dtype=torch.long)
        am[r, p - len(q) :] = 1
    x[:, p:] = tokens.mask
    window = torch.full((b,), gen_length, dtype=torch.long)
    x = x.to(device)
    pe = None
    if embeds is not None and any(e is not None for e in embeds):
        if embedding is None:
            raise ValueError("prompt embeddings need the model's input embedding for the rest")
        pe = embedding(x[:, :p]).clone()  # (B, P, D)
        for r, e in enumerate(embeds):
            if e is not None:
                pe[r, p - e.shape[0] :] = e.to(pe)
    return Canvas(x, am.to(device), p, window.to(device), pe)


def resize(c: Canvas, window: torch.Tensor, tokens: TokenIds) -> Canvas:
    """Set each row's window; positions past it are [EOS] and hidden, new ones are [MASK]."""
    pp, w = c.prompt_len, int(window.max())
    x, am = c.x, c.attention_mask
    if w > c.width:  # grow the canvas
        extra = w - c.width
        x = torch.cat([x, x.new_full((x.shape[0], extra), tokens.eos)], dim=1)
        am = torch.cat([am, am.new_zeros((am.shape[0], extra))], dim=1)
    x, am = x[:, : pp + w].clone(), am[:, : pp + w].clone()
    pos = torch.arange(w, device=x.device)[None]
    old, new = c.window[:, None], window[:, None]
    opened = (pos >= old) & (pos < new)
    x[:, pp:] = torch.where(opened, tokens.mask, x[:, pp:])
    x[:, pp:] = torch.where(pos >= new, tokens.eos, x[:, pp:])
    am[:, pp:] = torch.where(pos < new, 1, 0)
    return Canvas(x, am, pp, window.clone(), c.prompt_embeds)


def insert_masks(c: Canvas, at: torch.Tensor, n: int, cap: int, tokens: TokenIds) -> Canvas:
    """`c` with answer position `at[r]` of each row with at[r] >= 0 replaced by `n` [MASK]s
    (DAEDAL's mask insertion): what follows moves right by n - 1 and the window grows by n - 1,
    to at most `cap` positions; what moves past `cap` is dropped."""
    pp = c.prompt_len
    window = torch.where(at >= 0, (c.window + n - 1).clamp(max=cap), c.window)
    out = resize(c, window, tokens)
    for r in torch.nonzero(at >= 0).flatten().tolist():
        a, w, new = int(at[r]), int(c.window[r]), int(window[r])
        tail = c.x[r, pp + a + 1 : pp + w]
        out.x[r, pp + a : pp + new] = torch.cat([tail.new_full((n,), tokens.mask), tail])[: new - a]
    return out


def add_suffix(c: Canvas, suffix: tuple[int, ...]) -> Canvas:
    """`c` with fixed suffix columns after the answer window (attended, never revealed)."""
    b, n = c.rows, len(suffix)
    tail = torch.tensor(suffix, dtype=c.x.dtype, device=c.x.device).expand(b, n)
    x = torch.cat([c.x, tail], dim=1)
    am = torch.cat([c.attention_mask, c.attention_mask.new_ones((b, n))], dim=1)
    return Canvas(x, am, c.prompt_len, c.window, c.prompt_embeds)


def end_positions(c: Canvas, tokens: TokenIds) -> torch.Tensor:
    """(B,) position of the first end token inside each row's window, -1 if none."""
    win = c.x[:, c.prompt_len :]
    pos = torch.arange(c.width, device=win.device)[None]
    hit = torch.zeros_like(win, dtype=torch.bool)
    for t in tokens.enders:
        hit |= win == t
    hit &= pos < c.window[:, None]
    first = torch.where(hit, pos, c.width).min(dim=1).values
    return torch.where(first < c.width, first, -1)


def place(
    parts: list[tuple[Canvas, int]],
    prompt_width: int,
    width: int,
    tokens: TokenIds,
    embedding: torch.nn.Embedding | None = None,
) -> Canvas:
    """A canvas of rows taken from other canvases (`(canvas, row)` each), laid out with
    `prompt_width` prompt columns and `width` answer columns (>= each row's used columns).
    Real columns keep their tokens and positions; the rest is hidden [EOS]/pad."""
    dev = parts[0][0].x.device
    b, pw = len(parts), prompt_width
    x = torch.full((b, pw + width), tokens.eos, dtype=torch.long, device=dev)
    x[:, :pw] = tokens.pad
    am = torch.zeros((b, pw + width), dtype=torch.long, device=dev)
    window = torch.empty(b, dtype=torch.long, device=dev)
    for r, (c, i) in enumerate(parts):
        n = int(c.attention_mask[i, : c.prompt_len].sum())  # real prompt columns
        a = min(c.width, width)
        x[r, pw - n : pw + a] = c.x[i, c.prompt_len - n : c.prompt_len + a]
        am[r, pw - n : pw + a] = c.attention_mask[i, c.prompt_len - n : c.prompt_len + a]
        window[r] = c.window[i]
    pe = None
    if any(c.prompt_embeds is not None for c, _ in parts):  # others: their token embeddings
        if embedding is None:
            raise ValueError("rows with prompt embeddings are placed with the token embedding")
        pe = embedding(x[:, :pw]).clone()  # (B, P, D)
        for r, (c, i) in enumerate(parts):
            if c.prompt_embeds is not None:
                n = int(c.attention_mask[i, : c.prompt_len].sum())
                pe[r, pw - n :] = c.prompt_embeds[i, c.prompt_len - n :].to(pe)
    return Canvas(x, am, pw, window, pe)
