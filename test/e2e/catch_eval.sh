#!/usr/bin/env bash
# seedrl_catch's own modes: a short local run with a narrow network saves a checkpoint at exit;
# eval plays it, with the same network flags or with none (it reads the network from the
# checkpoint), and prints its mean return; eval with flags naming another network refuses
# that checkpoint with exit 2.
# Usage: catch_eval.sh path/to/seedrl_catch
set -euo pipefail
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
net=(--conv-channels 8,16,16 --dense-size 64 --lstm-size 32)
"$bin" local --actors 2 --envs-per-actor 4 --inference-batch 8 --batch-size 4 "${net[@]}" \
  --total-frames 4000 --seed 3 --checkpoint-dir "$dir" >"$dir/train.log" 2>&1 ||
  { echo "FAIL: training exited with an error"; tail -n 20 "$dir/train.log"; exit 1; }
grep '^done: ' "$dir/train.log" || { echo "FAIL: no 'done:' line"; exit 1; }
out=$("$bin" eval --checkpoint-dir "$dir" --episodes 10 "${net[@]}")
echo "$out"
grep -q '^greedy policy: mean return .* over 10 episodes' <<<"$out" ||
  { echo "FAIL: eval printed no result"; exit 1; }
out=$("$bin" eval --checkpoint-dir "$dir" --episodes 10)
echo "$out"
grep -q 'convs=8,16,16 dense=64 lstm=32' <<<"$out" ||
  { echo "FAIL: eval without network flags did not take the checkpoint's network"; exit 1; }
grep -q '^greedy policy: mean return .* over 10 episodes' <<<"$out" ||
  { echo "FAIL: eval without network flags printed no result"; exit 1; }
rc=0
"$bin" eval --checkpoint-dir "$dir" --episodes 10 --conv-channels 8,16,16 --dense-size 128 \
  --lstm-size 32 >/dev/null 2>"$dir/refused.log" || rc=$?
((rc == 2)) || { echo "FAIL: eval of another network's checkpoint exited $rc, not 2"; exit 1; }
grep -q 'holds a different network' "$dir/refused.log" ||
  { echo "FAIL: the refusal does not say why"; cat "$dir/refused.log"; exit 1; }
echo "PASS"
