#!/usr/bin/env bash
# One run per checkpoint directory (docs/checkpoints.md). A new run, fresh or from
# --init-checkpoint, refuses a --checkpoint-dir that holds another run's checkpoints: exit
# status 2 before it listens, a message that names the directory and says what to do instead,
# and the old checkpoints untouched. --init-checkpoint into a new directory and --resume of the
# old one still work.
# Usage: checkpoint_dir_refused.sh path/to/seedrl_cartpole_seed
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.log; do echo "--- $f" >&2; tail -n 20 "$f" >&2; done
  exit 1
}
old=$work/old
run=(local --actors 1 --envs-per-actor 4 --total-frames 3000 --checkpoint-every-steps 0
  --checkpoint-every-seconds 0)

# The other run: a short one that saves at exit (it stops below the target return: status 1).
"$bin" "${run[@]}" --checkpoint-dir "$old" >"$work/old.log" 2>&1 || true
before=$(ls "$old")
[[ $(ls "$old"/ckpt-*.seedrl | wc -l) -eq 1 ]] || fail "the first run left not one checkpoint: $before"

refused() {  # refused NAME ARGS...: the run must be refused without listening
  local name=$1 rc=0
  shift
  "$bin" "${run[@]}" "$@" >"$work/$name.log" 2>&1 || rc=$?
  ((rc == 2)) || fail "$name: exit status $rc, not 2"
  grep -q "checkpoint '$old': already holds 1 checkpoint of another run" "$work/$name.log" ||
    fail "$name: no message naming $old"
  grep -q -- "--resume" "$work/$name.log" || fail "$name: the message does not mention --resume"
  ! grep -q "listening" "$work/$name.log" || fail "$name: it listened before refusing"
  [[ $(ls "$old") == "$before" ]] || fail "$name: the old checkpoints changed: $(ls "$old")"
}
refused fresh --checkpoint-dir "$old"
refused init --checkpoint-dir "$old" --init-checkpoint "$old"

# Weights only into a new directory, and a resume of the old one, still run.
"$bin" "${run[@]}" --checkpoint-dir "$work/new" --init-checkpoint "$old" >"$work/new.log" 2>&1 ||
  true
grep -q "^initial weights from $old/ckpt-" "$work/new.log" || fail "no 'initial weights' line"
[[ $(ls "$work/new"/ckpt-*.seedrl | wc -l) -eq 1 ]] || fail "the weights-only run saved nothing"
"$bin" "${run[@]}" --checkpoint-dir "$old" --resume >"$work/resume.log" 2>&1 || true
grep -q "^resumed from $old/ckpt-" "$work/resume.log" || fail "no 'resumed from' line"
echo "checkpoint_dir_refused: refused $old twice; weights-only and resume ran"
