#!/usr/bin/env bash
# SIGINT/SIGTERM end runs cleanly: an actor told to stop says goodbye to the learner and exits
# 0; a learner told to stop closes every link (actors then back off and retry) and exits 130;
# an actor stopped while it waits to reconnect exits 0 at once.
# Usage: signals.sh path/to/seedrl_cartpole_seed
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
  for f in "$work"/*.log; do echo "--- $f" >&2; cat "$f" >&2; done
  exit 1
}

# wait_for FILE PATTERN [SECONDS]: until FILE has a line matching PATTERN.
wait_for() {
  local deadline=$((SECONDS + ${3:-20}))
  until grep -q -- "$2" "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "no '$2' in $1 within ${3:-20} s"
    sleep 0.1
  done
}

# exit_code PID SECONDS: waits for PID to exit and sets rc to its status (not in a subshell:
# only the parent shell can wait for it).
exit_code() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "process $1 still running $2 s after its signal"
    sleep 0.1
  done
  rc=0
  wait "$1" || rc=$?
}

"$bin" learner --port 0 --total-frames 1000000000 --target-return 1000 \
  >"$work/learner.out.log" 2>"$work/learner.log" &
learner=$!
pids+=("$learner")
wait_for "$work/learner.out.log" "learner listening on"
port=$(sed -n 's/^learner listening on .*:\([0-9]*\)$/\1/p' "$work/learner.out.log")
[[ -n $port ]] || fail "no port in the learner's output"

"$bin" actor --learner "127.0.0.1:$port" --envs-per-actor 2 2>"$work/actor1.log" &
actor1=$!
pids+=("$actor1")
wait_for "$work/learner.log" "connected with 2 envs"
sleep 1
kill -TERM "$actor1"
exit_code "$actor1" 10
[[ $rc == 0 ]] || fail "actor exited with $rc after SIGTERM, expected 0"
wait_for "$work/learner.log" "said goodbye" 5
if grep -q "link lost" "$work/actor1.log"; then fail "a stopped actor reported a lost link"; fi

"$bin" actor --learner "127.0.0.1:$port" --envs-per-actor 2 2>"$work/actor2.log" &
actor2=$!
pids+=("$actor2")
deadline=$((SECONDS + 20))
until (($(grep -c "connected with 2 envs" "$work/learner.log") >= 2)); do
  ((SECONDS < deadline)) || fail "the second actor did not connect"
  sleep 0.1
done
sleep 1
kill -INT "$learner"
exit_code "$learner" 15
[[ $rc == 130 ]] || fail "learner exited with $rc after SIGINT, expected 130"
# The learner said it is shutting down; the actor backs off and retries.
wait_for "$work/actor2.log" "retrying in" 10
grep -q "shutting_down\|is stopping" "$work/actor2.log" || fail "actor did not see the learner's close"
kill -TERM "$actor2"
exit_code "$actor2" 5
[[ $rc == 0 ]] || fail "actor exited with $rc after SIGTERM while reconnecting, expected 0"
echo "signals: actor and learner stop cleanly"
