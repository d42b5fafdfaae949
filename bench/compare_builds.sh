#!/usr/bin/env bash
# Compares the benchmarks of two builds (e.g. a base commit and a branch) in one session, the
# two alternating so that load hits both alike (docs/performance.md: issue 14's comparison).
#   bench/compare_builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [OUT_DIR] [ROUNDS]
# Each build dir holds bench/seedrl_bench_{lstm,train,pixel_inference,e2e} (a Release build
# with benchmarks on). Prints, per benchmark, the median over rounds of each run's median, and
# new / old; end to end, the trained frames/s of each run.
set -euo pipefail
old=$1 new=$2 out=${3:-$(mktemp -d)} rounds=${4:-3}
mkdir -p "$out"
for round in $(seq "$rounds"); do
  for v in old new; do
    dir=$old; [ "$v" = new ] && dir=$new
    for b in lstm train pixel_inference; do
      "$dir/bench/seedrl_bench_$b" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_format=json --benchmark_min_time=0.3 > "$out/$b-$v-$round.json"
    done
    for core in mlp lstm; do
      flag=(); [ "$core" = lstm ] && flag=(--lstm)
      "$dir/bench/seedrl_bench_e2e" "${flag[@]}" --seconds 6 --stage-seconds 1.5 --repeats 3 \
        > "$out/e2e-$core-$v-$round.txt" 2>&1
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, re, statistics, sys, os
out = sys.argv[1]
runs = {}
for f in glob.glob(os.path.join(out, "*.json")):
    bench, version, _ = os.path.basename(f)[:-5].rsplit("-", 2)
    for x in json.load(open(f))["benchmarks"]:
        if x.get("aggregate_name") == "median":
            runs.setdefault((bench, x["run_name"]), {}).setdefault(version, []).append(x["real_time"])
for (bench, name), r in sorted(runs.items()):
    o, n = statistics.median(r["old"]), statistics.median(r["new"])
    print(f"{name:65s} old {o:12.1f} new {n:12.1f} new/old {n / o:.3f}")
for core in ("mlp", "lstm"):
    for v in ("old", "new"):
        fps = []
        for f in sorted(glob.glob(os.path.join(out, f"e2e-{core}-{v}-*.txt"))):
            m = re.search(r"^\| 4 end-to-end[^|]*\| ([0-9.]+) k", open(f).read(), re.M)
            fps.append(m.group(1) + " k" if m else "?")
        print(f"end to end ({core}), {v}: trained frames/s {', '.join(fps)}")
PY
