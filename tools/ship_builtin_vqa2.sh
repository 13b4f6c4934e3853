#!/usr/bin/env bash
# Ship a checkpoint of the VQA model v2 as the built-in multimodal model `builtin-vqa` (the last
# step of tools/release_builtin_vqa2.sh; runs alone on new weights, from the repo root):
#
#   RUN=checkpoints/builtin-vqa2 tools/ship_builtin_vqa2.sh               # the whole release
#   RUN=checkpoints/builtin-vqa2 CALIB_N=60 MEASURE=0 tools/ship_builtin_vqa2.sh   # a quick one
#
# Release 1 (2026-12-02) was step 14841 of checkpoints/builtin-vqa2 with CALIB_N=300 MEASURE=0,
# then bench_vqa2 alone.
# Nothing in the package or the tests depends on a release's answers, so a new one needs only
# this script (then the card's figures: docs/builtin-vqa2/MODEL_CARD.md).
set -euo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
run=${RUN:-runs/builtin-vqa2}
dst=src/seer/assets/builtin-vqa

# 1. the export into the package: weights, tokenizer, SigLIP processor config. The folder keeps
#    its own generation_config.json (the 128 window, one token per step, greedy), MODEL_CARD.md
#    and seer.json's chat_only / system_prompt (a training run writes an uncalibrated seer.json
#    into its export; the committed export holds a copy of the shipped, calibrated one).
cp "$run"/export/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json} "$dst"/
cp "$run"/export/{special_tokens_map.json,preprocessor_config.json} "$dst"/

# 2. Seer calibrated on the calibration side of its own task (`--data builtin-vqa`, the default
#    for a built-in model: synthetic.vqa2's held-out requests), stored in seer.json
seer calibrate --model builtin-vqa --data builtin-vqa --n "${CALIB_N:-600}" \
  --out docs/results/calibration-vqa2 --write

# 3. the package's sample images (the evaluation side of the same task: they change only with
#    the task) and the demo on them
python tools/draw_samples.py
seer demo --out docs/builtin-vqa2/demo.png | tee docs/builtin-vqa2/demo.txt

# 4. the measurements (hours on one core; MEASURE=0 skips them): the realism criteria per
#    family, then Seer against the alternatives at equal budgets
if [ "${MEASURE:-1}" != 0 ]; then
  python benchmarks/bench_vqa2.py --model builtin-vqa --n 20 | tee docs/builtin-vqa2/bench_vqa2.txt
  python benchmarks/bench_compare.py --model builtin-vqa --out docs/results/compare
  seer profile --image src/seer/assets/images/07_describe.png --prompt "describe every object" \
    --out docs/builtin-vqa2/profile-describe.png
fi
