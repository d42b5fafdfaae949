#!/usr/bin/env bash
# A few thousand Pong frames through the real ALE: the C++ learner (Nature CNN + LSTM, frames
# stacked on the learner) and two Python actors (python/seedrl_actor, ale-py) on loopback, over
# an authenticated link. Checks that the frames arrive, training steps run, the game's action
# count reaches the learner and everything stops cleanly; then eval mode plays one game with the
# checkpoint's greedy policy and trains nothing. Skips (exit 77) without ale-py; fails then in CI.
# Usage: atari_smoke.sh path/to/seedrl_atari path/to/python3
set -euo pipefail
bin=$1
python=$2
source "$(dirname "$0")/../missing_tool.sh"
if ! "$python" -c "import ale_py, gymnasium, numpy" 2>/dev/null; then
  missing_tool "ale-py, gymnasium or numpy cannot be imported by $python" \
               "(scripts/install-deps.sh --test-tools installs them into .venv)"
fi
log=$(mktemp)
ckpt=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$ckpt"' EXIT
# 2 actors x 2 envs; unrolls of 20, training batches of 4: 3,000 frames make ~30 training steps.
if ! "$bin" local --game Pong --python "$python" --actors 2 --envs-per-actor 2 \
     --inference-batch 4 --batch-size 4 --total-frames 3000 --seed 7 --checkpoint-dir "$ckpt" \
     >"$log" 2>&1; then
  echo "FAIL: seedrl_atari exited with an error"; tail -n 40 "$log"; exit 1
fi
tail -n 5 "$log"
line=$(grep '^done: ' "$log") || { echo "FAIL: no 'done:' line"; tail -n 40 "$log"; exit 1; }
frames=$(sed -n 's/^done: \([0-9]*\) frames.*/\1/p' <<<"$line")
steps=$(sed -n 's/.* \([0-9]*\) training steps.*/\1/p' <<<"$line")
grep -q "actions: 6" "$log" || { echo "FAIL: Pong's minimal action set (6) was not used"; exit 1; }
((frames >= 3000)) || { echo "FAIL: only $frames frames"; exit 1; }
((steps >= 1)) || { echo "FAIL: no training step ran"; exit 1; }
if ! "$bin" eval --game Pong --python "$python" --actors 2 --envs-per-actor 2 \
     --inference-batch 4 --checkpoint-dir "$ckpt" --episodes 1 >"$log" 2>&1; then
  echo "FAIL: seedrl_atari eval exited with an error"; tail -n 40 "$log"; exit 1
fi
result=$(grep '^greedy policy: mean return' "$log") ||
  { echo "FAIL: eval printed no result"; tail -n 40 "$log"; exit 1; }
echo "PASS: $frames Pong frames, $steps training steps; eval: $result"
