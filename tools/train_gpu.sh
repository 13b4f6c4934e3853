#!/usr/bin/env bash
# On a lent GPU (the device tool's `run`, which starts in the repository root with $OUT empty):
# train the text model v2 there for $MINUTES (default 5) from checkpoints/builtin-v2d, batch
# $BATCH (default 256), and bring its export and resume.json back under $OUT. Here afterwards:
# copy them into checkpoints/builtin-v2d/ (export files into export/) and commit. Run
# `benchmarks/gpu_check.sh` first: its `train` section says whether the trainer matches the CPU
# there and how many steps per second each batch size gives.
#
#   run: MINUTES=5 bash tools/train_gpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src PYTHONUNBUFFERED=1
run=${RUN:-checkpoints/builtin-v2d}
out=${OUT:-/tmp/train_gpu}
mkdir -p "$out"
# the phase-4 flags of tools/release_builtin_v2.sh, on the device with a larger batch
python3 -m training.builtin_v2 --out "$run" --device cuda --threads 4 \
  --minutes "${MINUTES:-5}" --batch-size "${BATCH:-256}" --eval-every 100000 \
  --lr 2e-4 --cycle-start 3200 --warmup 50 --total-steps 40000 \
  --bare-steps 0 --bare-people 400 --bare-share 0.3 2>&1 | tee "$out/train_gpu.log"
cp "$run"/export/model.safetensors "$run"/export/config.json "$run"/resume.json \
  "$run"/train_config.json "$out"/
