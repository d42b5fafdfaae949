#!/usr/bin/env bash
# MuJoCo through Python actors (issue 15, docs/mujoco.md): a few thousand HalfCheetah-v5 steps
# from two Python actor processes into seedrl_gym's PPO learner with a Gaussian head. Checks
# that the Box's six per-element bounds reach the learner as a continuous spec, that the frames
# arrive, that training steps run, that no NaN stopped training and that everything stops
# cleanly. Skips (exit 77) when mujoco or gymnasium's MuJoCo environments cannot be imported;
# fails then in CI.
# Usage: mujoco_smoke.sh path/to/seedrl_gym path/to/python3
set -euo pipefail
bin=$1
python=$2
source "$(dirname "$0")/../missing_tool.sh"
if ! why=$("$python" -c "import mujoco, gymnasium, numpy; gymnasium.make('HalfCheetah-v5')" 2>&1); then
  missing_tool "mujoco or gymnasium's MuJoCo environments cannot be used by $python" \
               "(scripts/install-deps.sh --test-tools installs them into .venv): $(tail -n 1 <<<"$why")"
fi
export SEEDRL_PYTHON=$python
out=$(mktemp)
work=$(mktemp -d)
trap 'rm -f "$out"; rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  tail -n 40 "$out" >&2
  exit 1
}
# MuJoCo writes its warnings to MUJOCO_LOG.TXT in the working directory: keep them out of the
# checkout.
cd "$work"
# 2 actors x 2 envs, unrolls of 32, batches of 4 unrolls (512 frames): 6,000 frames make about
# ten PPO updates of 2 epochs x 2 minibatches.
rc=0
"$bin" local --env HalfCheetah-v5 --algo ppo --actors 2 --envs-per-actor 2 --inference-batch 4 \
  --unroll-length 32 --batch-size 4 --ppo-epochs 2 --ppo-minibatches 2 --total-frames 6000 \
  --seed 5 >"$out" 2>&1 || rc=$?
((rc == 0)) || fail "seedrl_gym exited $rc"
grep -q '^algorithm: PPO' "$out" || fail "no PPO algorithm line"
grep -q 'actions  *continuous \[6\] in \[-1, 1\] (Gaussian head)' "$out" ||
  fail "the configuration does not say HalfCheetah's continuous [6] actions"
grep -q '^actions: continuous \[6\]; network: .*continuous_actions=6' "$out" ||
  fail "the learner did not build a network for 6 continuous actions"
! grep -q 'training failed' "$out" || fail "training failed"
line=$(grep '^done: ' "$out") || fail "no 'done:' line"
frames=$(sed -n 's/^done: \([0-9]*\) frames.*/\1/p' <<<"$line")
steps=$(sed -n 's/.* \([0-9]*\) training steps.*/\1/p' <<<"$line")
((frames >= 6000)) || fail "only $frames frames"
((steps >= 1)) || fail "no training step ran"
echo "PASS: $frames HalfCheetah-v5 frames from Python actors, $steps PPO training steps"
