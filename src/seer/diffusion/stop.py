"""Stop sequences (LLaDA-V's `stopping_criteria`): end a row once its answer holds one.

After every step the answer part of each row (the suffix excluded) is searched for the stop
sequences, exactly as LLaDA-V's `generate_with_embeds` does: the sequences are tried in the
order given, each at its first occurrence; the first that occurs sets the row's stop position
(or moves it earlier), and once a row has one, later steps try the first sequence only. From
then on the loop reveals only masks *before* the stop position (those of the row's current
block, the columns a step's logits cover; the step's reveal count stays the schedule's), and the
row ends as soon as none is left there. Tokens at and after the stop position are not part of
the answer (`answer_length`).

Official behaviour not reproduced: when a step's reveal count exceeds the masks left before the
stop position, the official `topk` also picks among -inf confidences (ties, in an order torch
does not define) and may write tokens after the stop position; Seer reveals only the masks
before it. That cannot change the returned answer, only later steps' attention.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(slots=True)
class StopWords:
    """The stop state of a batch: each row's sequences, and each row's stop position."""

    seqs: list[tuple[tuple[int, ...], ...]]  # per row: stop sequences as token ids, in order
    at: torch.Tensor  # (B,) long: answer position where the row's stop sequence starts; -1 none

    @classmethod
    def new(cls, seqs: tuple[tuple[int, ...], ...], rows: int, device) -> StopWords:
        """The same sequences for every row."""
        return cls.of_rows([seqs] * rows, device)

    @classmethod
    def of_rows(cls, seqs: list[tuple[tuple[int, ...], ...]], device) -> StopWords:
        """Each row's own sequences (a row without any: `()`)."""
        return cls(list(seqs), torch.full((len(seqs),), -1, dtype=torch.long, device=device))

    def select(self, idx: torch.Tensor) -> StopWords:
        return StopWords([self.seqs[i] for i in idx.tolist()], self.at[idx].clone())

    def eligible(self, eligible: torch.Tensor, masked: torch.Tensor, pos: torch.Tensor):
        """Rows with a stop position: every mask before it, instead of the block's masks.
        eligible, masked: (B, n); pos: (1, n) answer positions -> (B, n)."""
        found = self.at >= 0
        before = masked & (pos < self.at[:, None])
        return torch.where(found[:, None], before, eligible)

    def update(self, answer: torch.Tensor, mask_id: int) -> torch.Tensor:
        """Search the answers (B, W) after a step; returns (B,) rows that are now complete:
        a stop position, and no mask before it."""
        for r in range(answer.shape[0]):
            if not self.seqs[r]:
                continue
            row = answer[r].tolist()
            for seq in self.seqs[r][: 1 if int(self.at[r]) >= 0 else None]:
                hit = _find(row, seq)
                if hit >= 0 and (int(self.at[r]) < 0 or hit < int(self.at[r])):
                    self.at[r] = hit
                if int(self.at[r]) >= 0:
                    break
        pos = torch.arange(answer.shape[1], device=answer.device)[None]
        open_ = ((answer == mask_id) & (pos < self.at[:, None])).any(dim=1)
        return (self.at >= 0) & ~open_


def _find(row: list[int], seq: tuple[int, ...]) -> int:
    """First index where `seq` occurs in `row`, or -1."""
    n = len(seq)
    first = seq[0]
    for i in range(len(row) - n + 1):
        if row[i] == first and tuple(row[i : i + n]) == seq:
            return i
    return -1
