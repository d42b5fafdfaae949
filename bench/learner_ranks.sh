#!/usr/bin/env bash
# One learner against two data-parallel learner ranks (docs/scaling.md), end to end on this
# machine, the same number of actor processes in both: `local --actors 4` against
# `mpirun -np 2 ... local --actors 2`. For each seed, both solve CartPole (PPO, the program's
# defaults) and the script reports wall time, frames, frames/s (over the whole run) and the
# trainer's busy share in the last progress window; the runs of a seed go back to back,
# alternating which goes first, so that load drifts hit both alike. Medians at the end.
# Then throughput: both run 2M frames with an unreachable target, three rounds alternating;
# frames/s over the whole run (wall clock, process start included) and the trainer's busy
# share (the slowest rank's, for two) in the last progress window.
# Usage: bench/learner_ranks.sh path/to/seedrl_cartpole_seed [seeds...]   (default seeds 1-5)
set -euo pipefail
bin=$1
shift
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3 4 5)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Prints "seconds frames training_busy" of one solved run, or fails.
run() {
  local start rc=0 accept=${ACCEPT_RC:-0}
  start=$(date +%s.%N)
  "$@" >"$out" 2>/dev/null || rc=$?
  local took
  took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  ((rc == 0 || rc == accept)) || { echo "run failed ($rc): $*" >&2; tail -3 "$out" >&2; return 1; }
  local frames busy
  frames=$(sed -n 's/.* after \([0-9]*\) frames.*/\1/p' "$out" | tail -1)
  busy=$(grep '^frames' "$out" | tail -1 | sed -n 's/.* training *\([0-9]*\)%.*/\1/p')
  echo "$took $frames ${busy:-?}"
}
one=("$bin" local --actors 4 --envs-per-actor 8)
two=(mpirun --oversubscribe --bind-to none -np 2 "$bin" local --actors 2 --envs-per-actor 8)
printf '%-5s %-30s %-30s\n' seed "1 rank: s frames busy%" "2 ranks: s frames busy%"
results=$(mktemp)
for i in "${!seeds[@]}"; do
  s=${seeds[$i]}
  if ((i % 2 == 0)); then
    a=$(run "${one[@]}" --seed "$s")
    b=$(run "${two[@]}" --seed "$s")
  else
    b=$(run "${two[@]}" --seed "$s")
    a=$(run "${one[@]}" --seed "$s")
  fi
  printf '%-5s %-30s %-30s\n' "$s" "$a" "$b"
  echo "$a $b" >>"$results"
done
python3 - "$results" <<'EOF'
import statistics, sys
rows = [list(map(float, l.split()[:2])) + [float(l.split()[3]), float(l.split()[4])]
        for l in open(sys.argv[1]) if l.strip()]
med = lambda i: statistics.median(r[i] for r in rows)
rate = lambda s, f: statistics.median(r[f] / max(r[s], 1) for r in rows)
print(f"median: 1 rank {med(0):.1f} s, {med(1):.0f} frames, {rate(0, 1):.0f} f/s; "
      f"2 ranks {med(2):.1f} s, {med(3):.0f} frames, {rate(2, 3):.0f} f/s")
EOF
rm -f "$results"

echo
echo "throughput, 2M frames: wall s, frames, trainer busy %"
printf '%-5s %-30s %-30s\n' round "1 rank: s frames busy%" "2 ranks: s frames busy%"
results=$(mktemp)
budget=(--target-return 1000000000 --total-frames 2000000 --seed 1)
for r in 1 2 3; do
  if ((r % 2 == 1)); then
    a=$(ACCEPT_RC=1 run "${one[@]}" "${budget[@]}")
    b=$(ACCEPT_RC=1 run "${two[@]}" "${budget[@]}")
  else
    b=$(ACCEPT_RC=1 run "${two[@]}" "${budget[@]}")
    a=$(ACCEPT_RC=1 run "${one[@]}" "${budget[@]}")
  fi
  printf '%-5s %-30s %-30s\n' "$r" "$a" "$b"
  echo "$a $b" >>"$results"
done
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
fps = lambda s, f: statistics.median(float(r[f]) / max(float(r[s]), 1e-9) for r in rows)
busy = lambda i: statistics.median(float(r[i]) for r in rows if r[i] != "?")
print(f"median: 1 rank {fps(0, 1):.0f} f/s, trainer busy {busy(2):.0f}%; "
      f"2 ranks {fps(3, 4):.0f} f/s, slowest trainer busy {busy(5):.0f}%; "
      f"ratio {fps(3, 4) / fps(0, 1):.2f}")
EOF
rm -f "$results"
