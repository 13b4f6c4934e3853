#!/usr/bin/env bash
# How the built-in multimodal model in src/seer/assets/builtin-vqa was produced (repo root).
# 1. train (resumable; one core of a 2-core VM, shared with other work):
#      OMP_NUM_THREADS=1 python -m seer.demo.train_vqa --out runs/builtin-vqa --minutes 95 \
#        --total-steps 6000 --eval-every 1000
# 2. copy the export into the package, calibrate Seer on held-out image questions (seed 7),
#    store the defaults in seer.json (its system_prompt: null is kept):
set -euo pipefail
src=${1:-runs/builtin-vqa/export}
dst=src/seer/assets/builtin-vqa
mkdir -p "$dst"
cp "$src"/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json} "$dst"/
cp "$src"/{special_tokens_map.json,seer.json,preprocessor_config.json} "$dst"/
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
seer calibrate --model "$dst" --n 300 --out docs/calibration-vqa --write
# 3. measure (held-out seed 11, disjoint from calibration) and show:
python benchmarks/bench_seer.py --model "$dst" --n 300 | tee docs/bench_seer_vqa.txt
seer demo --out docs/figures/seer-demo-vqa.png | tee docs/demo-vqa.txt
seer profile --image src/seer/assets/images/03_describe.png --prompt "describe every object" \
  --out docs/figures/profile-vqa-describe.png
