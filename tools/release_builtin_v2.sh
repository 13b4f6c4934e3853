#!/usr/bin/env bash
# How the built-in text model v2 (runs/builtin-v2 -> its export) is produced (repo root).
#
# One run folder, resumed phase after phase (`--out` holds state.pt; a phase that stops on its
# time budget resumes with the same command). Phase 1 is the recipe of seer.training.builtin_v2's
# defaults: LLaDA d_model 128, 6 layers, 4 heads, SwiGLU 384, RoPE theta 10000, the LM head tied
# to the embedding (weight_tying), window 128,
# batch 16 (drawn 4 batches at a time and grouped by length), AdamW lr 1.5e-3 after a 300-step
# warm-up on a 20000-step cosine horizon, per-row windows (the full 128 for 30 % of the rows,
# else the answer plus 0-24 [EOS], the rest hidden). Wall times: MODEL_CARD.md.
set -euo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
run=${RUN:-runs/builtin-v2}
train() { python -m seer.training.builtin_v2 --out "$run" --threads 1 --eval-every 1000 "$@"; }

# 1. phase 1 (session of 2026-12-01, one core of the shared 2-core VM): 170 minutes
train --minutes 170 --total-steps 20000
