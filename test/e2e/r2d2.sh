#!/usr/bin/env bash
# R2D2 end to end (issue 31), through the program layer's learner and TCP actor processes:
#   - seedrl_cartpole_seed local --algo r2d2 with the R2D2 defaults must solve CartPole (mean
#     return of the last 100 episodes >= 475) within 15M frames (2.9M-10.1M over 5 seeds here;
#     thread timing makes runs of one seed differ), then eval plays the checkpoint
#     greedily to at least 400 over 20 episodes; with --checkpoint-replay the newest checkpoint
#     has its replay file beside it (the only one kept), and --resume restores it;
#   - seedrl_catch local --algo r2d2 learns Catch from pixels to a mean return of 0.1 (random:
#     about -0.6) within 600k frames, with a narrow pixel network (catch_eval.sh's) to keep CI
#     short: 45 s here, against 110 s with the default one;
#   - bad input exits 2 naming it: a continuous environment, a replay that could never serve a
#     batch, a replay beyond the machine's memory (with the figure it needs).
# Usage: r2d2.sh path/to/seedrl_cartpole_seed path/to/seedrl_catch path/to/seedrl_pendulum
set -euo pipefail
cartpole=$1
catch=$2
pendulum=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out="$dir/out.log"
fail() {
  echo "FAIL: $*" >&2
  tail -n 40 "$out" >&2
  exit 1
}

rc=0
"$cartpole" local --algo r2d2 --seed 1 --checkpoint-dir "$dir/cartpole" --checkpoint-replay \
  --total-frames 15000000 >"$out" 2>&1 || rc=$?
((rc == 0)) || fail "CartPole training exited $rc"
grep -q '^algorithm: R2D2' "$out" || fail "no R2D2 algorithm line"
grep -q 'replay [0-9]*/20000' "$out" || fail "no replay figures on the progress line"
grep -q '^solved: mean return' "$out" || fail "CartPole: no 'solved:' line"
grep '^solved:' "$out"
rc=0
"$cartpole" eval --checkpoint-dir "$dir/cartpole" --episodes 20 --actors 2 >"$out" 2>&1 || rc=$?
((rc == 0)) || fail "eval exited $rc"
mean=$(sed -n 's/^greedy policy: mean return \([0-9.]*\) over 20 episodes.*/\1/p' "$out")
[ -n "$mean" ] || fail "no eval result line"
grep '^greedy policy:' "$out"
awk -v m="$mean" 'BEGIN { exit !(m >= 400) }' || fail "greedy mean return $mean is below 400"
replays=("$dir"/cartpole/ckpt-*.replay)
((${#replays[@]} == 1)) && [ -f "${replays[0]}" ] || fail "not one replay file: ${replays[*]}"
checkpoints=("$dir"/cartpole/ckpt-*.seedrl)
newest=${checkpoints[${#checkpoints[@]} - 1]}
[ "${replays[0]}" = "${newest%.seedrl}.replay" ] || fail "${replays[0]} is not $newest's replay"
rc=0
"$cartpole" local --algo r2d2 --seed 1 --checkpoint-dir "$dir/cartpole" --checkpoint-replay \
  --resume --total-frames 15000000 >"$out" 2>&1 || rc=$?
((rc == 0)) || fail "the resumed run exited $rc"
grep -q 'restored the replay: [1-9][0-9]* sequences' "$out" || fail "the resume did not restore the replay"
grep -m 1 'restored the replay' "$out"

rc=0
"$catch" local --algo r2d2 --seed 1 --target-return 0.1 --total-frames 600000 \
  --conv-channels 8,16,16 --dense-size 64 --lstm-size 32 >"$out" 2>&1 || rc=$?
((rc == 0)) || fail "Catch training exited $rc"
grep -q "^solved: mean return" "$out" || fail "Catch: the mean return did not reach 0.1"
grep '^solved:' "$out"

expect_refusal() {  # expect_refusal "what" "pattern" command...
  local what=$1 pattern=$2
  shift 2
  rc=0
  "$@" >"$out" 2>&1 || rc=$?
  ((rc == 2)) || fail "$what exited $rc, expected 2"
  grep -q -- "$pattern" "$out" || fail "$what: no message matching '$pattern'"
}
expect_refusal "R2D2 on continuous actions" "continuous" \
  "$pendulum" local --algo r2d2 --total-frames 1000 --actors 1
expect_refusal "a replay smaller than a batch" "can never serve a batch" \
  "$cartpole" local --algo r2d2 --replay-sequences 8 --total-frames 1000 --actors 1
expect_refusal "a replay beyond the machine's memory" "GiB" \
  "$cartpole" local --algo r2d2 --replay-sequences 100000000000 --total-frames 1000 --actors 1
echo "r2d2: CartPole solved and evaluated ($mean), Catch learned, bad settings refused"
