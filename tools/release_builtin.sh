#!/usr/bin/env bash
# How the built-in model in src/seer/assets/builtin was produced (run from the repo root).
# 1. train (resumable; ~85 min on one core of a 2-core VM):
#      python -m seer.demo.train --out runs/builtin --minutes 86 --threads 1 --eval-every 2500 \
#        --total-steps 7000 --min-lr 5e-5
# 2. copy the export into the package, calibrate Seer on held-out prompts, store seer.json:
set -euo pipefail
src=${1:-runs/builtin/export}
dst=src/seer/assets/builtin
mkdir -p "$dst"
cp "$src"/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json,special_tokens_map.json} "$dst"/
seer calibrate --n 300 --out docs/calibration --write
# 3. measure and show:
python benchmarks/bench_seer.py --n 300 | tee docs/bench_seer.txt
seer demo --out docs/figures/seer-demo.png | tee docs/demo.txt
seer profile --prompt "describe : red ball , blue cube , green shoe , pink hat" \
  --out docs/figures/profile-describe.png
