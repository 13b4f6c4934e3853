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
from typing import TYPE_CHECKING

import torch

from seer.diffusion.policy import Loop, LoopState, Policy, own
from seer.policies import stop as stop_declared

if TYPE_CHECKING:
    from seer.sampling import SamplingParams, TokenIds


def build(loop: Loop, rows: list[SamplingParams], device: torch.device) -> StopWords | None:
    """The decoding policy of rows of which any has stop sequences (`seer.diffusion.policy`)."""
    if not any(p.stop for p in rows):
        return None
    return StopWords.of_rows([p.stop for p in rows], device, loop.tokens)


@dataclass(slots=True)
class StopWords(Policy):
    """The stop state of a batch: each row's sequences, and each row's stop position. As a
    decoding policy: it limits the reveal (`limit`), ends rows (`after`) and cuts the answer
    (`finish`)."""

    seqs: list[tuple[tuple[int, ...], ...]]  # per row: stop sequences as token ids, in order
    at: torch.Tensor  # (B,) long: answer position where the row's stop sequence starts; -1 none
    tokens: TokenIds | None = None  # the model's ids ([MASK], [EOS]), for the hooks

    name = "stop"
    traits = stop_declared.DECLARATION.traits  # one source: its declaration

    @classmethod
    def new(cls, seqs: tuple[tuple[int, ...], ...], rows: int, device) -> StopWords:
        """The same sequences for every row."""
        return cls.of_rows([seqs] * rows, device)

    @classmethod
    def of_rows(
        cls, seqs: list[tuple[tuple[int, ...], ...]], device, tokens: TokenIds | None = None
    ) -> StopWords:
        """Each row's own sequences (a row without any: `()`)."""
        at = torch.full((len(seqs),), -1, dtype=torch.long, device=device)
        return cls(list(seqs), at, tokens)

    def select(self, idx: torch.Tensor) -> StopWords:
        return StopWords([self.seqs[i] for i in idx.tolist()], self.at[idx].clone(), self.tokens)

    def join(self, parts: list[tuple[LoopState, int]]) -> StopWords:
        seqs, at = [], []
        for s, r in parts:
            mine = own(s, StopWords)
            seqs.append(mine.seqs[r] if isinstance(mine, StopWords) else ())
            none = torch.full((1,), -1, dtype=torch.long, device=self.at.device)
            at.append(mine.at[r : r + 1] if isinstance(mine, StopWords) else none)
        return StopWords(seqs, torch.cat(at), self.tokens)

    def after(self, s: LoopState, answer: torch.Tensor) -> torch.Tensor:
        """Rows complete now: a stop position and no mask before it (they end in the plan)."""
        assert self.tokens is not None  # built by `build`
        done = self.update(answer, self.tokens.mask) & ~s.finished
        for r in torch.nonzero(done).flatten().tolist():
            s.plan.finish(r)
        return done

    def finish(self, s: LoopState, answer: torch.Tensor, pos: torch.Tensor) -> None:
        """The stop sequence and what follows it are not the answer: [EOS]."""
        assert self.tokens is not None  # built by `build`
        at = self.at[:, None]
        answer[(at >= 0) & (pos >= at)] = self.tokens.eos

    def limit(
        self, eligible: torch.Tensor, masked: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:
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
