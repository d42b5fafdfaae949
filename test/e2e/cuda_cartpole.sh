#!/usr/bin/env bash
# The GPU training path end to end: seedrl_cartpole_seed --device cuda (learner training steps
# on the GPU through cuda::mlp_lstm_trainer, 2 actor processes over TCP) must lift CartPole's
# mean return from ~22 (random) to 150 within 2M frames, as the CPU e2e test does. Skips
# (exit 77) where no usable GPU is present.
# Usage: cuda_cartpole.sh path/to/seedrl_cartpole_seed
set -euo pipefail
bin=$1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
"$bin" local --device cuda --actors 2 --envs-per-actor 8 --target-return 150 \
  --total-frames 2000000 --seed 5 >"$log" 2>&1 || rc=$?
# The trainer could not start: no usable GPU here (bench/gpu/check.sh fails on skips).
if ((rc == 2)) && grep -q -e '^--device cuda: ' "$log"; then
  echo "SKIP: $(grep -e '^--device cuda: ' "$log" | head -n 1)"
  exit 77
fi
tail -n 5 "$log"
if ((rc != 0)); then
  echo "FAIL: seedrl_cartpole_seed --device cuda exited with $rc"
  tail -n 40 "$log"
  exit 1
fi
grep -q '^solved: ' "$log" || { echo "FAIL: no 'solved:' line"; exit 1; }
echo "PASS: $(grep '^solved: ' "$log")"
