#!/usr/bin/env bash
# A seedrl/app program's flags (app/cli.hpp): --help lists every flag and exits 0; no mode, an
# unknown flag, a malformed or out-of-range value, a bad HOST:PORT and a flag without its
# prerequisite each exit 2 with one message that names the flag, and start nothing.
# Usage: flags.sh path/to/program (any program built on seedrl::app::program)
set -euo pipefail
bin=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() {
  echo "FAIL: $*" >&2
  cat "$out" >&2
  exit 1
}

rc=0
"$bin" --help >"$out" 2>&1 || rc=$?
((rc == 0)) || fail "--help exited $rc"
for flag in --learner --host --port --actors --envs-per-actor --max-envs --unroll-length \
  --batch-size --inference-batch --inference-workers --io-threads --queue-batches --learning-rate --entropy-cost --total-frames \
  --target-return --logdir --seed --device --train-device --inference-device --checkpoint-dir --checkpoint-every-steps \
  --checkpoint-every-seconds --resume --init-checkpoint --auth-secret-file --no-auth \
  --episodes --sample --lstm --algo --ppo-epochs --ppo-minibatches --ppo-clip --ppo-value-clip \
  --ppo-advantage --ppo-lambda --ppo-normalize-advantages --lr-decay --max-grad-norm --log-std-init \
  --state-dependent-log-std; do
  grep -q -- "$flag" "$out" || fail "--help does not list $flag"
done
for mode in local learner actor eval; do
  grep -q -- "$mode" "$out" || fail "--help does not list mode $mode"
done

# usage_error EXPECTED-PATTERN ARGS...: exit status 2, the pattern on stderr, nothing started.
usage_error() {
  local pattern=$1 rc=0
  shift
  "$bin" "$@" >"$out" 2>&1 || rc=$?
  ((rc == 2)) || fail "'$*' exited $rc, not 2"
  grep -q -- "$pattern" "$out" || fail "'$*': no '$pattern' in the message"
  grep -q -- "--help" "$out" || fail "'$*': the message does not point to --help"
  ! grep -q "listening" "$out" || fail "'$*' started a learner"
}
usage_error "mode is required"
usage_error "--no-such-flag" local --no-such-flag
usage_error "--no-such-flag" local --no-such-flag 3
usage_error "mode" walk
usage_error "--actors" local --actors abc
usage_error "--actors: must be a positive number, got '0'" local --actors 0
usage_error "--learning-rate" local --learning-rate 1e-3x
usage_error "--port" local --port 70000
usage_error "--learner: needs HOST:PORT" actor --learner localhost
usage_error "--device" local --device tpu
usage_error "--inference-device" local --inference-device tpu
usage_error "--train-device" local --train-device gpu
usage_error "--resume requires --checkpoint-dir" local --resume
usage_error "--seed" local --seed
usage_error "--algo" local --algo dqn
usage_error "--ppo-minibatches" local --algo ppo --ppo-minibatches 0
usage_error "--log-std-init" local --log-std-init 5
usage_error "--max-grad-norm" local --max-grad-norm 0
# no_cuda ARGS...: this program has no GPU trainer or engine (no .cu of its own): asking for
# cuda, to train or to infer, exits 2 with one line that starts with the flag that asked and
# says how to build with CUDA, and starts nothing.
no_cuda() {
  local flag=$1 rc=0
  shift
  "$bin" "$@" >"$out" 2>&1 || rc=$?
  ((rc == 2)) || fail "'$*' exited $rc, not 2"
  grep -q -e "^$flag: .*built without CUDA" "$out" || fail "'$*': no '$flag: ...' message"
  ! grep -q "listening" "$out" || fail "'$*' started a learner"
}
no_cuda "--device cuda" local --device cuda
no_cuda "--inference-device cuda" local --inference-device cuda
no_cuda "--inference-device cuda" local --device cuda --train-device cpu --inference-device cuda
no_cuda "--train-device cuda" local --train-device cuda --inference-device cpu
echo "flags: --help lists every flag; bad flags and values exit 2 with a message"
