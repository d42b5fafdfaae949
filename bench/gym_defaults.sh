#!/usr/bin/env bash
# Do seedrl_gym's defaults learn? (issue 14 item 7; docs/gym.md, docs/performance.md)
# Trains CartPole-v1 to 475 and Acrobot-v1 to -100 (mean return of the last 100 episodes) with
# no hyperparameter flags, for each seed, each run stopped after a time budget. Writes one CSV
# row per progress line (env, seed, seconds since start, env frames, mean return) and, when
# matplotlib is importable, a plot of the curves.
#
# Usage: bench/gym_defaults.sh BUILD_DIR [OUT_DIR] [SEEDS] [BUDGET_SECONDS]
#   e.g. bench/gym_defaults.sh build 'docs' '1 2 3' 300
# Python: $SEEDRL_PYTHON, else .venv/bin/python3 (scripts/install-deps.sh --test-tools), else
# python3. Not a test: its times depend on the machine and its load, which it records.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: gym_defaults.sh BUILD_DIR [OUT_DIR] [SEEDS] [BUDGET_SECONDS]}
out=${2:-$root/docs}
seeds=${3:-1 2 3}
budget=${4:-300}
bin=$build/examples/seedrl_gym
[[ -x $bin ]] || { echo "no $bin: build the seedrl_gym target first" >&2; exit 2; }
if [[ -z ${SEEDRL_PYTHON:-} ]]; then
  if [[ -x $root/.venv/bin/python3 ]]; then SEEDRL_PYTHON=$root/.venv/bin/python3; else SEEDRL_PYTHON=python3; fi
fi
export SEEDRL_PYTHON
mkdir -p "$out"
csv=$out/gym_defaults.csv
summary=$out/gym_defaults_summary.txt
echo "env,seed,seconds,frames,mean_return" >"$csv"
{
  echo "seedrl_gym defaults benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
  echo "budget ${budget}s per run; seeds: $seeds; load before: $(uptime | sed 's/.*load average/load average/')"
} >"$summary"
for spec in "CartPole-v1 475" "Acrobot-v1 -100"; do
  read -r env target <<<"$spec"
  for seed in $seeds; do
    log=$(mktemp)
    start=$EPOCHREALTIME
    set +e
    timeout --signal=INT "$budget" "$bin" local --env "$env" --seed "$seed" \
      --target-return "$target" --total-frames 100000000 2>&1 |
      while IFS= read -r line; do
        printf '%s %s\n' "$(bc <<<"$EPOCHREALTIME - $start")" "$line"
      done >"$log"
    rc=${PIPESTATUS[0]}
    set -e
    # "frames N ... return R ..." progress lines
    awk -v env="$env" -v seed="$seed" '$2 == "frames" {
        for (i = 2; i < NF; ++i) if ($i == "return") r = $(i + 1);
        printf "%s,%s,%.1f,%s,%s\n", env, seed, $1, $3, r }' "$log" >>"$csv"
    # The learner's own summary ("done: N frames in S s, ...") goes to stderr with the actors'.
    done_line=$(grep -o 'done: [0-9]* frames in [0-9]* s, [0-9]* training steps' "$log" ||
      echo "no done line")
    result=$([[ $rc == 0 ]] && echo "reached at $(tail -n 1 "$csv" | cut -d, -f3) s" ||
      echo "NOT reached within ${budget} s (rc $rc)")
    echo "$env seed $seed: target $target $result; $done_line; load $(cut -d' ' -f1-3 /proc/loadavg)" |
      tee -a "$summary"
    rm -f "$log"
  done
done
if "$SEEDRL_PYTHON" -c "import matplotlib" 2>/dev/null; then
  "$SEEDRL_PYTHON" - "$csv" "$out/gym_defaults.svg" <<'PY'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
envs = sorted({r["env"] for r in rows}, key=lambda e: e != "CartPole-v1")
fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.6), squeeze=False)
for ax, env in zip(axes[0], envs):
    for seed in sorted({r["seed"] for r in rows if r["env"] == env}):
        pts = [(float(r["seconds"]), float(r["mean_return"])) for r in rows
               if r["env"] == env and r["seed"] == seed]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=f"seed {seed}")
    ax.axhline(475 if env == "CartPole-v1" else -100, color="gray", ls="--", lw=0.8)
    ax.set_title(f"seedrl_gym {env}, default flags")
    ax.set_xlabel("seconds")
    ax.set_ylabel("mean return (last 100 episodes)")
    ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2])
print(f"wrote {sys.argv[2]}")
PY
fi
cat "$summary"
