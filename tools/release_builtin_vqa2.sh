#!/usr/bin/env bash
# How the built-in multimodal model v2 (MODEL_CARD: docs/builtin-vqa2/MODEL_CARD.md) is produced
# (repo root). Shipped as `builtin-vqa` from a step of the run (release 1: step 14841, in phase 5) while the
# run goes on; step 8 makes a release (tools/ship_builtin_vqa2.sh, which also runs alone).
#
# LaViDa-LLaDA (SigLIP tower, projector and LM all trained), the LM started from the built-in
# text model (`--init-from builtin-v1`), 128 window, length-grouped batches (a fifth of them full
# windows), AdamW lr 3e-4 after a 100-step warm-up, cosine to 1e-4 over 30000 steps (the first
# runs at 1.5e-3 never used their pictures: MODEL_CARD.md). Phases resume from $run/state.pt and
# end at their --until step, so a rerun replays the run (`--minutes` only caps a session); the
# schedule depends on the step only. One core of a shared CPU VM gives 0.1-1 steps/s.
# 2026-12-02: the machine holding runs/builtin-vqa2c (step 21208) was replaced and the folder lost;
# the run restarted from step 0 with this script in checkpoints/builtin-vqa2, which git keeps
# (checkpoints/README.md): RUN=checkpoints/builtin-vqa2 tools/release_builtin_vqa2.sh
set -euo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
run=${RUN:-runs/builtin-vqa2}
train() { python -m training.builtin_vqa2 --out "$run" --minutes 1000 --threads 1 \
  --eval-every 1000 --init-from builtin-v1 --lr 3e-4 --warmup 100 --min-lr 1e-4 --total-steps 30000 "$@"; }
# 1. the family mix (steps 0-1854)
train --until 1854
# 2. the warm-up draws (one shape, digit or word, or 1-3 shapes to count) to step 3300, then the
#    mix with a fifth of them: the LM starts to use the picture (tools/read_signal.py --warmup)
train --warm-until 3300 --until 3639
# 3. a second warm-up to step 5500 (reading had not started), then the mix with a fifth of them
train --warm-until 5500 --until 6817
# 4. the reading warm-up: half of every batch one digit printed 1-32 times (vqa2.glyphs), the
#    rest as in 3. The LM had read no glyph in 6,800 steps; here it starts within ~1,300
#    (tools/read_signal.py --reading: own picture 1.85-2.0 nats, another's 2.6-2.9).
train --warm-until 5500 --read-share 0.5 --until 9459
# 5. the reading warm-up's second stage: a third digits as in 4, a third numbers of 2-4 digits,
#    a third words, each in 1, 2, 4 or 8 rows (vqa2.rows).
train --warm-until 5500 --read-share 0.5 --reading runs --until 15589
# 6. the third stage: numbers and words only, half each (single digits were read at 100 %,
#    numbers 23 %, words 0-4 % at step 15000: tools/read_signal.py --reading).
train --warm-until 5500 --read-share 0.5 --reading rows
# 7. measure the realism criteria on the checkpoint (per family at 1, 2, 4, 8 tokens per
#    step; Seer against the full window with paired intervals; median answer length):
python benchmarks/bench_vqa2.py --model "$run/export" --n 20 | tee docs/builtin-vqa2/bench_vqa2.txt
# 8. a release: the export into the package as `builtin-vqa`, Seer calibrated on the calibration
#    side of its own task (seer calibrate --write), the sample images redrawn, the demo and the
#    measurements (CALIB_N and MEASURE=0 make a quick one; see the script)
RUN="$run" tools/ship_builtin_vqa2.sh
