#!/usr/bin/env bash
# A training program run with --device cuda (its learner's training steps on the GPU) must reach
# its target return, i.e. exit 0, as its CPU e2e test does. Skips (exit 77) where the GPU trainer
# cannot start: the program then says why on a line starting "--device cuda: " and exits 2.
# Usage: gpu_learner.sh PROGRAM ARGS... (the arguments include --device cuda and a target)
set -euo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
"$@" >"$log" 2>&1 || rc=$?
if ((rc == 2)) && grep -q -e '^--device cuda: ' "$log"; then
  echo "SKIP: $(grep -e '^--device cuda: ' "$log" | head -n 1)"
  exit 77
fi
tail -n 5 "$log"
if ((rc != 0)); then
  echo "FAIL: $(basename "$1") exited with $rc"
  tail -n 40 "$log"
  exit 1
fi
echo "PASS"
