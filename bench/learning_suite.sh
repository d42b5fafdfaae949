#!/usr/bin/env bash
# The learning suite (issue 28; docs/learning.md): does every program learn with its defaults,
# and how fast beside Stable-Baselines3 on the same machine? No hyperparameter flags: only the
# seed, and the stop condition where the program has none of its own.
#
#   cartpole     seedrl_gym --env CartPole-v1, target 475    | SB3 CartPole-v1 (RL Zoo)
#   acrobot      seedrl_gym --env Acrobot-v1, target -100    | SB3 Acrobot-v1 (RL Zoo)
#   acrobot_cpp  seedrl_acrobot (C++, the program layer)     | SB3 Acrobot-v1, same dynamics
#   pendulum     seedrl_pendulum (C++), target -250          | SB3 Pendulum-v1 (RL Zoo)
#   halfcheetah  seedrl_gym --env HalfCheetah-v5, 1M steps   | SB3 HalfCheetah-v5 (RL Zoo), only
#                with SB3_HALFCHEETAH=1: about an hour per seed on 2 cores
#
# A target is the mean return of the last 100 episodes; HalfCheetah's "target" is that mean at
# 1M steps, 3000 or more. seedrl's wall time is its whole process (learner and actor start-up
# included); SB3's is its training loop (tools/sb3_baseline.py, torch imports excluded), so the
# ratio is conservative for seedrl. Runs go one at a time: the machine is shared with nothing
# else of ours while it runs (it records the load).
#
# Usage: bench/learning_suite.sh BUILD_DIR [OUT_DIR]
#        bench/learning_suite.sh --report OUT_DIR   (the tables and plots again, from its CSVs)
#   SEEDS="1 2 3 4 5" TASKS="cartpole acrobot acrobot_cpp pendulum halfcheetah" BUDGET=600
#   SB3=1 (0: seedrl only) SB3_HALFCHEETAH=0
# Writes OUT_DIR (default docs/learning) runs.csv (one row per run), curves.csv (one row per
# progress line), summary.txt (the tables) and, when matplotlib imports, learning_TASK.png.
# Python: $SEEDRL_PYTHON, else .venv/bin/python3, with gymnasium (and mujoco for halfcheetah);
# SB3 installs itself (tools/sb3_baseline.py). Not a test: times depend on the machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: learning_suite.sh BUILD_DIR [OUT_DIR] | --report OUT_DIR}
out=${2:-$root/docs/learning}
report_only=0
[[ $build == --report ]] && report_only=1
seeds=${SEEDS:-1 2 3 4 5}
tasks=${TASKS:-cartpole acrobot acrobot_cpp pendulum halfcheetah}
budget=${BUDGET:-600}
if [[ -z ${SEEDRL_PYTHON:-} ]]; then
  if [[ -x $root/.venv/bin/python3 ]]; then SEEDRL_PYTHON=$root/.venv/bin/python3; else SEEDRL_PYTHON=python3; fi
fi
export SEEDRL_PYTHON
runs=$out/runs.csv curves=$out/curves.csv summary=$out/summary.txt
if ((report_only == 0)); then
for bin in seedrl_gym seedrl_acrobot seedrl_pendulum; do
  [[ -x $build/examples/$bin ]] || { echo "no $build/examples/$bin: build it first" >&2; exit 2; }
done
mkdir -p "$out"
echo "task,who,seed,reached,wall_s,frames,final_return" >"$runs"
echo "task,who,seed,seconds,frames,mean_return" >"$curves"
{
  echo "learning suite, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(git -C "$root" rev-parse --short HEAD)"
  echo "seeds: $seeds; budget ${budget}s per run; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$summary"

# seedrl: TASK SEED TARGET(or -) COMMAND...; the return at the end is the last progress line's.
run_seedrl() {
  local task=$1 seed=$2 target=$3
  shift 3
  local log start wall rc frames final reached
  log=$(mktemp)
  start=$EPOCHREALTIME
  set +e
  timeout --signal=INT "$budget" "$@" 2>&1 | while IFS= read -r line; do
    printf '%s %s\n' "$(bc <<<"$EPOCHREALTIME - $start")" "$line"
  done >"$log"
  rc=${PIPESTATUS[0]}
  set -e
  wall=$(bc <<<"scale=1; ($EPOCHREALTIME - $start) / 1")
  awk -v t="$task" -v s="$seed" '$2 == "frames" {
      for (i = 2; i < NF; ++i) if ($i == "return") r = $(i + 1);
      printf "%s,seedrl,%s,%.1f,%s,%s\n", t, s, $1, $3, r }' "$log" >>"$curves"
  frames=$(grep -oE '(after|done:) [0-9]+ frames' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
  final=$(awk '$2 == "frames" { for (i = 2; i < NF; ++i) if ($i == "return") r = $(i + 1) } END { print r }' "$log")
  if [[ $target == - ]]; then  # no target: the return at the end, against 3000
    final=$(grep -oE 'mean return -?[0-9.]+' "$log" | tail -n 1 | grep -oE -- '-?[0-9.]+$' || echo "$final")
    reached=$(awk -v r="$final" 'BEGIN { print (r >= 3000) ? 1 : 0 }')
  else
    reached=$([[ $rc == 0 ]] && echo 1 || echo 0)
  fi
  echo "$task,seedrl,$seed,$reached,$wall,$frames,$final" >>"$runs"
  echo "$task seedrl seed $seed: reached=$reached wall ${wall}s frames $frames return $final (rc $rc, load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$summary"
  rm -f "$log"
}

# SB3: TASK SEED ENV STEPS TARGET(or -)
run_sb3() {
  local task=$1 seed=$2 env=$3 steps=$4 target=$5 log csv wall frames final reached
  log=$(mktemp) csv=$(mktemp)
  local args=(--env "$env" --steps "$steps" --seed "$seed" --csv "$csv" --log-every 5000 --eval-episodes 1)
  [[ $target == - ]] || args+=(--target-return "$target")
  set +e
  timeout --signal=INT "$budget" "$SEEDRL_PYTHON" "$root/tools/sb3_baseline.py" "${args[@]}" >"$log" 2>&1
  set -e
  # Python's csv module ends rows with \r\n.
  tail -n +2 "$csv" | tr -d '\r' |
    awk -F, -v t="$task" -v s="$seed" '{ printf "%s,sb3,%s,%s,%s,%s\n", t, s, $5, $1, $4 }' >>"$curves"
  if line=$(grep '^reached:' "$log"); then
    frames=$(awk '{print $4}' <<<"$line") wall=$(awk '{print $7}' <<<"$line") reached=1
  else
    frames=$(grep -oE 'done: [0-9]+ steps' "$log" | grep -oE '[0-9]+' || echo 0)
    wall=$(grep -oE 'steps in [0-9]+ s' "$log" | grep -oE '[0-9]+' || echo "$budget")
    reached=0
  fi
  final=$(grep -oE 'last 100 -?[0-9.]+' "$log" | grep -oE -- '-?[0-9.]+$' || echo nan)
  [[ $target != - ]] || reached=$(awk -v r="$final" 'BEGIN { print (r >= 3000) ? 1 : 0 }')
  echo "$task,sb3,$seed,$reached,$wall,$frames,$final" >>"$runs"
  echo "$task sb3 seed $seed: reached=$reached wall ${wall}s frames $frames return $final" | tee -a "$summary"
  rm -f "$log" "$csv"
}

for task in $tasks; do
  for seed in $seeds; do
    case $task in
      cartpole) run_seedrl "$task" "$seed" 475 "$build/examples/seedrl_gym" local --env CartPole-v1 \
        --seed "$seed" --target-return 475 --total-frames 20000000 ;;
      acrobot) run_seedrl "$task" "$seed" -100 "$build/examples/seedrl_gym" local --env Acrobot-v1 \
        --seed "$seed" --target-return -100 --total-frames 20000000 ;;
      acrobot_cpp) run_seedrl "$task" "$seed" -100 "$build/examples/seedrl_acrobot" local --seed "$seed" \
        --total-frames 20000000 ;;
      pendulum) run_seedrl "$task" "$seed" -250 "$build/examples/seedrl_pendulum" local --seed "$seed" \
        --total-frames 20000000 ;;
      halfcheetah) run_seedrl "$task" "$seed" - "$build/examples/seedrl_gym" local --env HalfCheetah-v5 \
        --seed "$seed" --total-frames 1000000 ;;
      *) echo "unknown task $task" >&2; exit 2 ;;
    esac
    [[ ${SB3:-1} == 1 ]] || continue
    # RL Zoo's step budgets (their schedules decay over them). acrobot_cpp's baseline is the
    # acrobot task's SB3 runs: the same dynamics through gymnasium.
    case $task in
      cartpole) run_sb3 "$task" "$seed" CartPole-v1 100000 475 ;;
      acrobot) run_sb3 "$task" "$seed" Acrobot-v1 1000000 -100 ;;
      pendulum) run_sb3 "$task" "$seed" Pendulum-v1 100000 -250 ;;
      halfcheetah) [[ ${SB3_HALFCHEETAH:-0} == 1 ]] && run_sb3 "$task" "$seed" HalfCheetah-v5 1000000 - ;;
    esac
  done
done

fi  # report_only

"$SEEDRL_PYTHON" - "$runs" "$curves" "$out" <<'PY' | tee -a "$summary"
import csv, statistics, sys
runs = list(csv.DictReader(open(sys.argv[1])))
order = ["cartpole", "acrobot", "acrobot_cpp", "pendulum", "halfcheetah"]
baseline = {"acrobot_cpp": "acrobot"}  # SB3 ran the same dynamics through gymnasium
def stats(task, who):
    rows = [r for r in runs if r["task"] == task and r["who"] == who]
    if not rows:
        return None
    ok = [r for r in rows if r["reached"] == "1"]
    med = lambda k, rs: statistics.median(float(r[k]) for r in rs) if rs else float("nan")
    finals = [float(r["final_return"]) for r in rows if r["final_return"] not in ("", "nan")]
    return dict(n=len(rows), ok=len(ok), wall=med("wall_s", ok), frames=med("frames", ok),
                ret=statistics.mean(finals) if finals else float("nan"),
                low=min(finals) if finals else float("nan"))
print()
print("| task | seedrl seeds reached | seedrl median wall s | seedrl median frames | SB3 seeds reached | SB3 median wall s | SB3 median frames | SB3 / seedrl wall |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for task in [t for t in order if any(r["task"] == t for r in runs)]:
    s = stats(task, "seedrl")
    b = stats(baseline.get(task, task), "sb3")
    ratio = "-" if not b or s["ok"] == 0 or b["ok"] == 0 else f"{b['wall'] / s['wall']:.1f}x"
    extra = ""
    if task == "halfcheetah":
        extra = f" (mean return at 1M {s['ret']:.0f}, lowest {s['low']:.0f})"
    sb3 = ("- | - | -" if not b else
           f"{b['ok']}/{b['n']} | {b['wall']:.1f} | {b['frames']:.0f}")
    print(f"| {task}{extra} | {s['ok']}/{s['n']} | {s['wall']:.1f} | {s['frames']:.0f} | "
          f"{sb3} | {ratio} |")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
curves = list(csv.DictReader(open(sys.argv[2])))
curves = [r for r in curves if r["task"] and None not in r.values()]
for task in sorted({r["task"] for r in curves}):
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for who, colour in (("seedrl", "tab:blue"), ("sb3", "tab:orange")):
        src = baseline.get(task, task) if who == "sb3" else task
        for i, seed in enumerate(sorted({r["seed"] for r in curves if r["task"] == src and r["who"] == who})):
            pts = [(float(r["seconds"]), float(r["mean_return"])) for r in curves
                   if r["task"] == src and r["who"] == who and r["seed"] == seed and r["mean_return"] not in ("", "nan")]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colour, lw=1,
                    label=(who if i == 0 else None))
    ax.set_title(f"{task}: mean return of the last 100 episodes")
    ax.set_xlabel("wall seconds")
    ax.set_xscale("symlog", linthresh=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{sys.argv[3]}/learning_{task}.png", dpi=80)
    print(f"wrote {sys.argv[3]}/learning_{task}.png")
PY
