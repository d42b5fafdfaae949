#!/usr/bin/env bash
# seedrl_gym (docs/gym.md) through Python actors: CartPole-v1 trains to a mean return of 150
# and eval mode plays its checkpoint greedily to at least 100; a few frames go over TLS 1.3;
# a third-party environment registered
# by --env-import with bool observations (mapped to uint8, said at start) trains too, as do an
# image one through the Nature CNN and a 10x10x4 one through the small conv torso. Unsupported
# spaces, an image too small for the Nature CNN, an unknown torso and bad flags exit 2 with a
# message that names them. Skips (exit 77) when gymnasium cannot be imported; fails then in CI.
# Usage: gym.sh path/to/seedrl_gym path/to/python3
set -euo pipefail
bin=$1
python=$2
source "$(dirname "$0")/../missing_tool.sh"
if ! "$python" -c "import gymnasium, numpy" 2>/dev/null; then
  missing_tool "gymnasium or numpy cannot be imported by $python" \
               "(scripts/install-deps.sh --test-tools installs them into .venv)"
fi
export SEEDRL_PYTHON=$python
# toy_envs.py, a stand-in for a third-party package, lives next to the Python tests.
export PYTHONPATH="$(cd "$(dirname "$0")/../../python/tests" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
out=$(mktemp)
ckpt=$(mktemp -d)
trap 'rm -f "$out"; rm -rf "$ckpt"' EXIT
fail() {
  echo "FAIL: $*" >&2
  tail -n 40 "$out" >&2
  exit 1
}
# trains EXPECTED-PATTERN ARGS...: exit 0, configuration and progress lines, the pattern.
trains() {
  local pattern=$1 rc=0
  shift
  "$bin" local "$@" >"$out" 2>&1 || rc=$?
  ((rc == 0)) || fail "'$*' exited $rc"
  grep -q '^configuration:' "$out" || fail "'$*' printed no configuration"
  grep -q '^frames .* f/s' "$out" || fail "'$*' printed no progress line"
  grep -q '^done: ' "$out" || fail "'$*' printed no 'done:' line"
  grep -q -- "$pattern" "$out" || fail "'$*': no '$pattern' in the output"
}
# refused EXPECTED-PATTERN ARGS...: exit 2, the pattern in the message, no learner started.
refused() {
  local pattern=$1 rc=0
  shift
  "$bin" "$@" >"$out" 2>&1 || rc=$?
  ((rc == 2)) || fail "'$*' exited $rc, not 2"
  grep -q -- "$pattern" "$out" || fail "'$*': no '$pattern' in the message"
  ! grep -q "listening" "$out" || fail "'$*' started a learner"
}

# CartPole with the defaults, until the mean return of the last 100 episodes reaches 150
# (random: about 22); then eval mode plays the checkpoint through Python actors without
# training, at least that well, and refuses a checkpoint of another network (the same flags
# plus --lstm).
rc=0
"$bin" local --env CartPole-v1 --actors 2 --total-frames 1000000 --target-return 150 --seed 3 \
  --checkpoint-dir "$ckpt" >"$out" 2>&1 || rc=$?
((rc == 0)) || fail "training CartPole exited $rc"
grep -q '^configuration:' "$out" || fail "training printed no configuration"
grep -q '^frames .* f/s' "$out" || fail "training printed no progress line"
grep -q "vector -> MLP torso" "$out" || fail "CartPole's observations did not get the MLP torso"
grep '^solved: ' "$out" || fail "CartPole did not reach 150 within 1M frames"
rc=0
"$bin" eval --env CartPole-v1 --checkpoint-dir "$ckpt" --actors 2 --episodes 6 >"$out" 2>&1 ||
  rc=$?
((rc == 0)) || fail "eval exited $rc"
mean=$(sed -n 's/^greedy policy: mean return \([0-9.]*\) over 6 episodes.*/\1/p' "$out")
[ -n "$mean" ] || fail "eval printed no result"
awk -v m="$mean" 'BEGIN { exit !(m >= 100) }' || fail "greedy mean return $mean is below 100"
echo "CartPole eval: greedy mean return $mean over 6 episodes"
grep -q 'eval: greedy actions, no training' "$out" || fail "eval did not say what it does"
! grep -q 'saved .*ckpt-' "$out" || fail "eval wrote a checkpoint"
refused "holds a different network" eval --env CartPole-v1 --checkpoint-dir "$ckpt" --lstm
refused "eval needs --checkpoint-dir" eval --env CartPole-v1
# TLS 1.3 between the C++ learner and Python actors (ssl), certificates checked both ways.
tls=$(cd "$(dirname "$0")/../fixtures/tls" && pwd)
trains "^done: " --env CartPole-v1 --actors 1 --total-frames 3000 --seed 3 \
  --tls-cert "$tls/learner.pem" --tls-key "$tls/learner.key" --tls-ca "$tls/ca.pem"
trains "bool observations travel as uint8" --env seedrl_toy/Bits-v0 --env-import toy_envs \
  --actors 1 --total-frames 3000 --seed 3
trains "image -> nature conv torso" --env seedrl_toy/Image-v0 \
  --env-import toy_envs:register_more --actors 1 --envs-per-actor 2 --batch-size 2 \
  --inference-batch 2 --unroll-length 5 --conv-channels 4,8,8 --dense-size 16 --lstm-size 16 \
  --total-frames 400 --seed 3
grep -q "uint16 observations travel as int32" "$out" || fail "the uint16 mapping was not said"
trains "image -> small conv torso" --env seedrl_toy/Grid-v0 --env-import toy_envs:register_more \
  --torso small --conv-channels 4,8 --actors 1 --envs-per-actor 2 --batch-size 2 \
  --inference-batch 2 --unroll-length 5 --dense-size 16 --lstm-size 16 --total-frames 400 --seed 3
grep -q "small_conv_lstm_agent height=10 width=10 channels=4" "$out" ||
  fail "the small conv network was not printed"

# --device cuda on images (the small conv torso) and vectors: trains where a GPU is usable;
# otherwise exits 2 with a line starting "--device cuda: " (no CUDA in the build, or no device).
for env_args in "--env seedrl_toy/Grid-v0 --env-import toy_envs:register_more --torso small \
--conv-channels 4,8" "--env CartPole-v1"; do
  rc=0
  # shellcheck disable=SC2086  # env_args is a list of words
  "$bin" local $env_args --device cuda --algo impala --actors 1 --envs-per-actor 2 --batch-size 2 \
    --inference-batch 2 --unroll-length 5 --total-frames 400 --seed 3 >"$out" 2>&1 || rc=$?
  if ((rc == 2)); then
    grep -q -- "^--device cuda: " "$out" || fail "--device cuda ($env_args) exited 2 unexplained"
  else
    ((rc == 0)) || fail "--device cuda ($env_args) exited $rc"
    grep -q '^done: ' "$out" || fail "--device cuda ($env_args) printed no 'done:' line"
  fi
done

refused "MultiDiscrete(" local --env seedrl_toy/MultiDiscrete-v0 \
  --env-import toy_envs:register_more
refused "Dict(" local --env seedrl_toy/DictObs-v0 --env-import toy_envs:register_more
refused "int64" local --env seedrl_toy/Huge-v0 --env-import toy_envs:register_more
refused "cannot import no_such_package" local --env CartPole-v1 --env-import no_such_package
refused "too small" local --env seedrl_toy/Grid-v0 --env-import toy_envs:register_more
refused "--torso" local --env CartPole-v1 --torso resnet50
refused "--env is required" local
refused "--no-such-flag" local --env CartPole-v1 --no-such-flag
refused "--hidden-sizes" local --env CartPole-v1 --hidden-sizes 64,x
echo "PASS: seedrl_gym trains vector, mapped-dtype and image environments; refuses bad ones"
