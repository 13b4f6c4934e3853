#!/usr/bin/env bash
# The prepared GPU check: one command, at most 8 minutes on one H200 (the Python driver stops
# starting sections after 450 s; `timeout` ends it at 470 s whatever happens). Output under
# docs/results/gpu/: gpu_check.txt (this run's log), gpu_check.json, engine.json, compare.json,
# compare.png, compare_raw.jsonl. See benchmarks/gpu_check.py for the sections.
#
#   bash benchmarks/gpu_check.sh                    # on a machine with a CUDA GPU
#   bash benchmarks/gpu_check.sh --device cpu --tiny --out /tmp/gpu_check   # proves it runs
set -uo pipefail
cd "$(dirname "$0")/.."
out=docs/results/gpu
for ((i = 1; i <= $#; i++)); do [[ ${!i} == --out ]] && { j=$((i + 1)); out=${!j}; }; done
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null | tee "$out/nvidia-smi.txt"
timeout 470 python benchmarks/gpu_check.py "$@" 2>&1 | tee "$out/gpu_check.txt"
exit "${PIPESTATUS[0]}"
