#!/usr/bin/env bash
# How the first built-in text model, builtin-v1, was produced (run from the repo root). It shipped in
# the package (src/seer/assets/builtin-v1); it now lives in checkpoints/builtin-v1, where
# `--model builtin-v1` finds it in a checkout.
#
# The shipped weights (step 13064) come from three training phases on one run folder; each phase
# resumes the previous one's state (`--out` holds state.pt), and `--cycle-start` begins a warm
# restart (its own 300-step warm-up and cosine). Steps are fixed by `--total-steps` (the
# `--minutes` budget is set high so that a phase ends at its step count, not on the clock).
# This reproduces the recipe, not the bytes: the phases originally stopped on time budgets on a
# shared 2-core VM; phase 2's cosine horizon was not recorded (it stopped at step 8564 on its
# time budget; here its horizon is 1564 steps, so it ends at the same step with a shorter
# cosine). Wall time of each phase: MODEL_CARD.md.
set -euo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
run=${RUN:-runs/builtin}
train() { python -m training.builtin --out "$run" --minutes 1000 --threads 1 --eval-every 2500 "$@"; }

# 1. phase 1, steps 0-7000: one window length per batch (between the batch's longest answer and
#    64, or the full 64 for half the batches), cosine 1.5e-3 -> 5e-5 over 7000 steps
train --windows batch --lr 1.5e-3 --min-lr 5e-5 --cycle-start 0 --total-steps 7000
# 2. phase 2, steps 7000-8564: a warm restart with the same recipe
train --windows batch --lr 1.5e-3 --min-lr 5e-5 --cycle-start 7000 --total-steps 1564
# 3. phase 3, steps 8564-13064: a window per row (the full 64 for half the rows, else the answer
#    plus 0-24 [EOS], the rest hidden: what a Seer cut leaves), cosine 8e-4 -> 5e-5
train --windows row --lr 8e-4 --min-lr 5e-5 --cycle-start 8564 --total-steps 4500

# 4. copy the export to its folder, calibrate Seer on held-out prompts, store seer.json:
dst=checkpoints/builtin-v1
mkdir -p "$dst"
cp "$run"/export/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json} "$dst"/
cp "$run"/export/special_tokens_map.json "$dst"/
seer calibrate --model builtin-v1 --n 300 --out docs/results/calibration --write
# 5. measure and show:
python benchmarks/bench_seer.py --model builtin-v1 --n 300 | tee docs/results/bench_seer.txt
python benchmarks/bench_compare.py --model builtin-v1 --n 200 --repeats 1 --dpad --daedal \
  --skip blocks8,prefix,seer+prefix --engine-n 32 --engine-repeats 3 --anchors baseline@k=1 \
  --raw docs/results/compare/raw_builtin.jsonl --plot docs/results/figures/compare_builtin.png \
  --markdown docs/results/compare/bench_compare_builtin.md | tee docs/results/compare/bench_compare_builtin.txt
seer demo --model builtin-v1 --out docs/results/figures/seer-demo.png | tee docs/results/demo.txt
seer profile --model builtin-v1 --prompt "describe : red ball , blue cube , green shoe , pink hat" \
  --out docs/results/figures/profile-describe.png
