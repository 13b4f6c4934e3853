#!/usr/bin/env bash
# How the built-in multimodal model v2 (builtin-vqa2; MODEL_CARD: docs/builtin-vqa2/MODEL_CARD.md)
# is produced (repo root). Not shipped yet: the run below is in progress (see the card).
#
# One training phase, resumable across sessions: LaViDa-LLaDA (SigLIP tower, projector and LM all
# trained), the LM started from the built-in text model (`--init-from builtin`), 128 window,
# length-grouped batches (a fifth of them full windows), warm-up 300 then cosine 1.5e-3 -> 1e-4
# over 30000 steps. Each session runs the same command with its own time budget (`--minutes`, 1000 here: to the last step) and
# continues from $run/state.pt where the last stopped; the schedule depends on the step only, so
# the sessions add up to one run. One core of a shared CPU VM gives 0.1-0.7 steps/s.
set -euo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
run=${RUN:-runs/builtin-vqa2}
# 1. train (resumable; repeat until step 30000):
python -m seer.training.builtin_vqa2 --out "$run" --minutes 1000 --threads 1 \
  --eval-every 300 --init-from builtin --lr 1.5e-3 --min-lr 1e-4 --total-steps 30000
# 2. measure the realism criteria on the checkpoint (per family at 1, 2, 4, 8 tokens per
#    step; Seer against the full window with paired intervals; median answer length):
python benchmarks/bench_vqa2.py --model "$run/export" --n 20 | tee docs/builtin-vqa2/bench_vqa2.txt
# 3. (when it meets the criteria) calibrate Seer on held-out requests and ship it as builtin-vqa:
#    copy $run/export/* into src/seer/assets/builtin-vqa, seer calibrate --write, redraw the
#    sample images, and rerun tools/release_builtin_vqa.sh's measurements.
