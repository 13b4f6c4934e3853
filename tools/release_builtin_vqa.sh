#!/usr/bin/env bash
# How the first built-in multimodal model, builtin-vqa-v1, was produced (repo root; shipped as
# `builtin-vqa` until the VQA model v2 took the name: the records below say so). It shipped in the
# package (src/seer/assets/builtin-vqa-v1); it now lives in checkpoints/builtin-vqa-v1,
# where `--model builtin-vqa-v1` finds it in a checkout.
#
# One training phase: 6000 steps (LaViDa-LLaDA, SigLIP tower and projector trained too), the
# language model started from the built-in text model (`--init-from builtin-v1`, the shipped
# step-13064 weights), per-row windows, cosine 1.5e-3 -> 1e-4 over 6000 steps after a 200-step
# warm-up. It originally ran 95 minutes on one core of a shared 2-core VM (MODEL_CARD.md); the
# budget here is set high so that it ends at its step count, not on the clock.
set -euo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
run=${RUN:-runs/builtin-vqa}
# 1. train (resumable):
python -m training.builtin_vqa --out "$run" --minutes 1000 --threads 1 --eval-every 1000 \
  --init-from builtin-v1 --lr 1.5e-3 --min-lr 1e-4 --total-steps 6000
# 2. copy the export to its folder, calibrate Seer on held-out image questions, store the
#    defaults in seer.json (its system_prompt: null is kept):
dst=checkpoints/builtin-vqa-v1
mkdir -p "$dst"
cp "$run"/export/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json} "$dst"/
cp "$run"/export/{special_tokens_map.json,seer.json,preprocessor_config.json} "$dst"/
seer calibrate --model builtin-vqa-v1 --n 300 --out docs/results/calibration-vqa --write
# 3. measure and show:
python benchmarks/bench_seer.py --model builtin-vqa-v1 --n 300 | tee docs/results/bench_seer_vqa.txt
python benchmarks/bench_compare.py --model builtin-vqa-v1 --n 200 --repeats 1 --dpad --daedal \
  --skip blocks8,prefix,seer+prefix --engine-n 32 --engine-repeats 3 --anchors baseline@k=1 \
  --raw docs/results/compare/raw_builtin-vqa.jsonl --plot docs/results/figures/compare_builtin-vqa.png \
  --markdown docs/results/compare/bench_compare_builtin-vqa.md | tee docs/results/compare/bench_compare_builtin-vqa.txt
seer demo --model builtin-vqa-v1 --out docs/results/figures/seer-demo-vqa.png | tee docs/results/demo-vqa.txt
seer profile --model builtin-vqa-v1 --image checkpoints/builtin-vqa-v1/images/03_describe.png \
  --prompt "describe every object" \
  --out docs/results/figures/profile-vqa-describe.png
