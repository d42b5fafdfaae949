#!/usr/bin/env bash
# Faults while training over an authenticated link: an actor killed with SIGKILL mid-unroll
# does not disturb the others; a learner killed with SIGKILL and restarted with --resume on the
# same port gets its actors back (they back off and reconnect) and continues from the
# checkpoint's frame count.
# Usage: learner_restart.sh path/to/seedrl_cartpole_seed
set -euo pipefail
bin=$1
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.log; do echo "--- $f" >&2; tail -n 30 "$f" >&2; done
  exit 1
}
wait_for() {  # wait_for FILE PATTERN [COUNT] [SECONDS]
  local deadline=$((SECONDS + ${4:-30}))
  until (($(grep -c -- "$2" "$1" 2>/dev/null || true) >= ${3:-1})); do
    ((SECONDS < deadline)) || fail "no ${3:-1} '$2' in $1 within ${4:-30} s"
    sleep 0.1
  done
}
frames_in() {  # the frame count of the last progress line in FILE
  sed -n 's/^frames *\([0-9]*\) .*/\1/p' "$1" | tail -n 1
}

export SEEDRL_AUTH_SECRET="learner-restart-test-secret-0123456789"
common=(--checkpoint-dir "$work/ckpt" --checkpoint-every-steps 40 --target-return 1000
  --total-frames 100000000)
"$bin" learner --port 0 "${common[@]}" >"$work/learner1.log" 2>&1 &
learner=$!
pids+=("$learner")
wait_for "$work/learner1.log" "learner listening on"
port=$(sed -n 's/^learner listening on .*:\([0-9]*\)$/\1/p' "$work/learner1.log")
for i in 1 2 3; do
  "$bin" actor --learner "127.0.0.1:$port" --envs-per-actor 4 --seed "$i" 2>"$work/actor$i.log" &
  pids+=("$!")
done
actor1=${pids[1]}
wait_for "$work/learner1.log" "connected with 4 envs" 3

# An actor killed mid-unroll: the learner notices, the others go on.
sleep 1
kill -KILL "$actor1"
wait_for "$work/learner1.log" "went away"
before=$(frames_in "$work/learner1.log")
wait_for "$work/learner1.log" "actors 2" 2
after=$(frames_in "$work/learner1.log")
((after > before)) || fail "training stalled after an actor died ($before -> $after frames)"

# The learner killed and restarted on the same port with --resume.
wait_for "$work/learner1.log" "seedrl learner: saved"
kill -KILL "$learner"
wait "$learner" 2>/dev/null || true
"$bin" learner --port "$port" --resume "${common[@]}" >"$work/learner2.log" 2>&1 &
learner=$!
pids+=("$learner")
wait_for "$work/learner2.log" "resumed from"
resumed=$(sed -n 's/^resumed from .*: training step [0-9]*, \([0-9]*\) frames$/\1/p' "$work/learner2.log")
wait_for "$work/learner2.log" "connected with 4 envs" 2 30
wait_for "$work/learner2.log" "actors 2" 2
now=$(frames_in "$work/learner2.log")
((now > resumed)) || fail "frames did not continue from the checkpoint ($resumed -> $now)"
grep -q "retrying in" "$work/actor2.log" || fail "actor 2 did not back off while the learner was down"
echo "learner_restart: resumed at $resumed frames, now $now, actors reconnected"
kill -INT "$learner"
wait "$learner" 2>/dev/null || true
