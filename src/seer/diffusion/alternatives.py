"""Alternatives to Seer's window policy, as policies of the one loop.

`SuffixDropout` — DPad (Chen et al. 2025, "DPad: Efficient Diffusion Language Models with
Suffix Dropout", arXiv 2508.14148; official code Crys-Chen/DPad, `llada/generate_dropout.py`):
while a semi-AR block is denoised, the masked suffix after it is mostly dropped from the forward:
only a scratchpad of suffix positions right after the block is kept, with their original
positions (DPad passes `q_indices` for RoPE; here the kept columns are a contiguous prefix of
the canvas, so the loop's positions are already the original ones). It is a `CachePolicy`: it
decides which canvas columns each step runs through the model (columns [0, P + block end +
keep)), reuses no keys or values, and never changes which tokens are revealed. Pass it to
`DenoisingLoop.run(..., cache=SuffixDropout(keep))`, or ask for it by name: `cache="dpad"` with
`dpad_window` (`SamplingParams`, `--cache dpad --dpad-window N`, the server's `cache`), which
runs through `generate`, the engine and every front end. The class lives in `cache.py` beside
the other cache policies; it is re-exported here.

What differs from the official code: DPad samples the kept suffix positions inside its window
(Gaussian distance decay, or uniform); here every position of the window is kept (the sliding
window alone, no random dropout inside it), which keeps the run deterministic and the columns
contiguous. DPad's `early_termination` is the loop's `SamplingParams.early_stop` (dInfer's
rule, the same test: a filled block holding [EOS] ends the row). With rows in lockstep every
row's block ends at the same position, except a shorter last block of a cut row (Seer): rows
then see up to one block more of scratchpad than `keep`.

DAEDAL (Li et al. 2025, arXiv 2508.00819) is in `daedal.py`: it grows windows and inserts masks
mid-run, so it is a re-planning policy of the loop (`LoopState.replan`), set by
`SamplingParams.daedal`.
"""

from __future__ import annotations

from seer.diffusion.cache import SuffixDropout

__all__ = ["SuffixDropout"]
