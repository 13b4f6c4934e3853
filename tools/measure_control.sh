#!/usr/bin/env bash
# Seer measured on a checkpoint of the control model (tools/train_builtin_control.sh: the text
# model v2's recipe with every answer window full), the way the shipped `builtin` was measured:
#
#   1. a scratch copy of the run folder's export/ with the shipped model's sampling defaults
#      (src/seer/assets/builtin/generation_config.json: the 128 window, one token per step, greedy,
#      low-confidence remasking; the trainer's export has none, and LLaDA's own defaults would
#      decode in blocks of 32);
#   2. Seer calibrated on it: `seer calibrate --data builtin --write --force` (the shipped model's
#      step 5 of tools/release_builtin_v2.sh; --force stores a choice that fails its held-out
#      check, which the report then says). When the calibration recommends nothing, the shipped
#      model's Seer settings (src/seer/assets/builtin/seer.json) are used instead, and the log says so;
#   3. `bench_compare.py --quick --budgets 1 --no-static`: baseline (128 steps), stop at the first
#      end token, Fast-dLLM threshold 0.9, Seer, Seer + threshold 0.9 and the oracle window, in
#      one process on one clock, over the first N of the held-out requests the shipped model's
#      README table used (`seerbench.draws.held_out`, seed 0), batch 1 and batch 32. The margin
#      (MARGIN points) and the primary comparison (Seer + threshold 0.9 against threshold 0.9)
#      go into the raw file before the first request;
#   4. the README's first table of the record (`seerbench.compare_report --readme`).
#
# Usage (repo root): tools/measure_control.sh RUN_FOLDER OUT_DIR
#   env: N (held-out requests, default 100), NCAL (calibration draw, default 300: half chooses,
#   half checks), ENGINE_N (batch-32 sample, default 32; 0 = no batch 32), ENGINE_REPEATS
#   (default 3), MARGIN (points, default 3, the shipped table's).
# Writes OUT_DIR/calibration/ (report, plots), OUT_DIR/seer.json (the settings measured),
# OUT_DIR/raw-*.jsonl, compare-*.json/.md/.png, readme-table.md and step.txt.
set -euo pipefail
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
if [ $# -ne 2 ]; then echo "usage: tools/measure_control.sh RUN_FOLDER OUT_DIR" >&2; exit 2; fi
run=$1 out=$2
if [ ! -f "$run/export/model.safetensors" ]; then
  echo "measure_control: no $run/export/model.safetensors (give a run folder with export/)" >&2
  exit 2
fi
N=${N:-100} NCAL=${NCAL:-300} ENGINE_N=${ENGINE_N:-32} ENGINE_REPEATS=${ENGINE_REPEATS:-3}
MARGIN=${MARGIN:-3}
assets=src/seer/assets/builtin
mkdir -p "$out"
step=$(python -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$run/resume.json")
echo "$step" > "$out/step.txt"
model=$(mktemp -d)/control-step$step
mkdir -p "$model"
cp "$run"/export/{config.json,model.safetensors,tokenizer.json,tokenizer_config.json} "$model"/
cp "$run"/export/special_tokens_map.json "$assets"/generation_config.json "$model"/
echo "[measure_control] step $step of $run, copied to $model ($(date -u +%H:%M:%S) UTC)"

mkdir -p "$out/calibration"
seer calibrate --model "$model" --data builtin --n "$NCAL" --out "$out/calibration" --write \
  --force -q | tee "$out/calibration/summary.txt" || true
if [ ! -f "$model/seer.json" ]; then
  echo "[measure_control] the calibration chose nothing: Seer runs with the shipped model's" \
    "settings ($assets/seer.json)"
  cp "$assets"/seer.json "$model"/
fi
cp "$model"/seer.json "$out"/seer.json
echo "[measure_control] calibrated ($(date -u +%H:%M:%S) UTC): $(python -c \
  'import json,sys; print(json.load(open(sys.argv[1]))["config"])' "$model/seer.json")"

engine=(--engine-n "$ENGINE_N" --engine-repeats "$ENGINE_REPEATS")
if [ "$ENGINE_N" = 0 ]; then engine=(--no-engine); fi
python benchmarks/bench_compare.py --model "$model" --data builtin --quick --budgets 1 \
  --no-static --repeats 1 "${engine[@]}" --n "$N" --margin "$MARGIN" \
  --primary seer+threshold@t=0.9,threshold@t=0.9 --out "$out" --progress "$out/progress.txt"
python -m seerbench.compare_report --readme "$out"/compare-*.json > "$out/readme-table.md"
cat "$out/readme-table.md"
echo "[measure_control] done ($(date -u +%H:%M:%S) UTC)"
