#!/usr/bin/env bash
# A training program run with --device cuda (its learner's training steps and inference on the
# GPU), or with --train-device / --inference-device splitting them, must reach its target
# return, i.e. exit 0, as its CPU e2e test does. Skips (exit 77) where the GPU trainer or engine
# cannot start: the program then says why on a line starting "--device cuda: " (or
# "--train-device cuda: ", "--inference-device cuda: ") and exits 2.
# Usage: gpu_learner.sh PROGRAM ARGS... (the arguments include a cuda device flag and a target)
set -euo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
"$@" >"$log" 2>&1 || rc=$?
no_gpu='^--(device|train-device|inference-device) cuda: '
if ((rc == 2)) && grep -q -E -e "$no_gpu" "$log"; then
  echo "SKIP: $(grep -E -e "$no_gpu" "$log" | head -n 1)"
  exit 77
fi
tail -n 5 "$log"
if ((rc != 0)); then
  echo "FAIL: $(basename "$1") exited with $rc"
  tail -n 40 "$log"
  exit 1
fi
echo "PASS"
