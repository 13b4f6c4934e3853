#!/usr/bin/env bash
# The control model: the built-in text model v2's recipe (tools/release_builtin_v2.sh steps 1-4:
# the same size, data stream, phases and learning rates; docs/builtin-v2/MODEL_CARD.md) trained
# from scratch with every row's answer window full (`--windows full`: LLaDA's own SFT recipe, the
# answer, <|eot_id|> and [EOS] padding to the window) in place of the shipped model's 70 % of rows
# cut to the answer plus 0-24 [EOS] (what a Seer cut leaves). `--windows full` makes the same
# random draws as the shipped recipe, so from the same resume steps the control sees the same
# requests in the same order; only the windows differ. It answers whether Seer's accuracy on `builtin` owes to a model taught to
# answer in cut windows.
#
# Resumable: rerun the script (each phase skips when the run folder has passed its last step and
# stops the script when its time runs out or a SIGTERM saves it early, so a later phase never
# starts from an unfinished one). The run folder keeps export/ and resume.json in git
# (checkpoints/README.md); state.pt (the optimiser's moments) stays out. MINUTES caps each phase;
# THREADS sets torch's threads (default 1).
set -euo pipefail
threads=${THREADS:-1}  # torch threads (the recipe is the same; sums may round differently)
export OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
run=${RUN:-checkpoints/builtin-v2-control}
step() { python -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$1" 2>/dev/null || echo 0; }
train() { python -m training.builtin_v2 --out "$run" --threads "$threads" --minutes "${MINUTES:-1000}" --windows full "$@"; }
phase() {  # phase UNTIL ARGS...: train to step UNTIL unless done; stop the script if it is not
  local until=$1; shift
  if [ "$(step "$run/resume.json")" -ge "$until" ]; then return; fi
  train "$@" --until "$until"
  local reached; reached=$(step "$run/resume.json")
  if [ "$reached" -lt "$until" ]; then echo "stopped at step $reached (phase ends at $until)"; exit 0; fi
}
# 1. the copy warm-up (release_builtin_v2.sh step 1)
phase 1200 --eval-every 100000 --window 48 --batch-size 32 --total-steps 1200 --warmup 100 \
  --bare-steps 1200 --bare-people 1000000
# 2. longer bare lines (step 2)
phase 3200 --eval-every 100000 --window 48 --batch-size 32 --lr 2e-4 --cycle-start 1200 \
  --warmup 50 --total-steps 2000 --bare-steps 100000 --bare-people 1000
# 3. the task mix in the 128 window (step 3)
phase 10690 --eval-every 1000 --lr 2e-4 --cycle-start 3200 --warmup 50 --total-steps 20000 \
  --bare-steps 0 --bare-people 400 --bare-share 0.3
# 4. as 3 with the cosine horizon at 40000, to the shipped release 2's step (step 4)
phase 40108 --eval-every 2000 --lr 2e-4 --cycle-start 3200 --warmup 50 --total-steps 40000 \
  --bare-steps 0 --bare-people 400 --bare-share 0.3
