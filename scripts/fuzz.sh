#!/usr/bin/env bash
# Builds the wire-protocol fuzzers (fuzz/) with clang, libFuzzer, ASan and UBSan in build/fuzz
# and runs each for a bounded time on a copy of the checked-in seed corpus (docs/fuzzing.md).
#   scripts/fuzz.sh [SECONDS]   total fuzzing time, split evenly between the targets (default 60)
# Exits non-zero on any crash, leak, undefined behaviour, timeout or out-of-memory, and prints
# where the reproducer is. Without clang or libFuzzer's runtime it skips with exit 0, unless
# SEEDRL_REQUIRE_FUZZ is set (CI sets it, so that a missing tool cannot pass as a clean run).
# Environment: SEEDRL_FUZZ_CXX (the clang++ to use), SEEDRL_FUZZ_JOBS (build jobs, default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
total=${1:-60}
if ! [[ "$total" =~ ^[0-9]+$ ]] || [ "$total" -lt 2 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS]   (total fuzzing time, at least 2; default 60)" >&2
  exit 2
fi
targets=(frame handshake)
# Room for a hello plus an 84x84 uint8 step (frame), and for any hello description (handshake).
declare -A max_len=([frame]=8192 [handshake]=1024)
build="$root/build/fuzz"

skip() {
  if [ -n "${SEEDRL_REQUIRE_FUZZ:-}" ]; then
    echo "seedrl fuzz: $1, and SEEDRL_REQUIRE_FUZZ is set" >&2
    exit 1
  fi
  echo "seedrl fuzz: SKIPPED: $1 (scripts/install-deps.sh --test-tools installs it)"
  exit 0
}

cxx=${SEEDRL_FUZZ_CXX:-}
if [ -z "$cxx" ]; then
  # Plain clang++ first, then the newest versioned one.
  for c in clang++ $(compgen -c clang++- | grep -E '^clang\+\+-[0-9]+$' | sort -t- -k2 -rn -u); do
    if command -v "$c" >/dev/null; then
      cxx=$c
      break
    fi
  done
fi
if [ -z "$cxx" ] || ! command -v "$cxx" >/dev/null; then
  skip "clang++ not found"
fi

# A link with -fsanitize=fuzzer is the only sure test that libFuzzer's runtime is there.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) {' \
  '  return 0;' '}' >"$probe/probe.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" \
  2>"$probe/err"; then
  skip "$cxx cannot link -fsanitize=fuzzer, so it is not clang or libFuzzer's runtime is missing ($(head -n 1 "$probe/err"))"
fi

# Symbolized stacks need llvm-symbolizer; clang's own directory has one when PATH does not.
if ! command -v llvm-symbolizer >/dev/null; then
  sym="$(dirname "$(readlink -f "$(command -v "$cxx")")")/llvm-symbolizer"
  [ -x "$sym" ] && export ASAN_SYMBOLIZER_PATH="$sym" UBSAN_SYMBOLIZER_PATH="$sym"
fi

echo "seedrl fuzz: building with $cxx in build/fuzz"
if ! cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSEEDRL_BUILD_FUZZERS=ON -DSEEDRL_BUILD_TESTS=OFF -DSEEDRL_BUILD_EXAMPLES=OFF \
  -DSEEDRL_BUILD_BENCHMARKS=OFF -DSEEDRL_ENABLE_CUDA=OFF -DSEEDRL_INSTALL=OFF \
  >"$probe/configure.log" 2>&1; then
  cat "$probe/configure.log" >&2
  exit 1
fi
cmake --build "$build" --parallel "${SEEDRL_FUZZ_JOBS:-2}" \
  --target "${targets[@]/#/seedrl_fuzz_}"

per=$((total / ${#targets[@]}))
failed=0
for t in "${targets[@]}"; do
  bin="$build/fuzz/seedrl_fuzz_$t"
  work="$build/run/$t"
  # A fresh copy each run: the fuzzer adds what it finds to its corpus directory, and the
  # checked-in seeds stay small and reviewed.
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -R "$root/fuzz/corpus/$t/." "$work/corpus/"
  echo "seedrl fuzz: $t for ${per} s (log: ${work#"$root"/}/fuzz.log)"
  rc=0
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    "$bin" -max_total_time="$per" -max_len="${max_len[$t]}" -detect_leaks=1 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" >"$work/fuzz.log" 2>&1 || rc=$?

  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$work/fuzz.log" | tail -n 1 || true)
  echo "seedrl fuzz: $t: ${runs:-?} inputs, ${speed:-?} exec/s, ${cov:-no coverage line}"

  mapfile -t artifacts < <(find "$work/artifacts" -type f | sort)
  if [ "$rc" -ne 0 ] || [ "${#artifacts[@]}" -gt 0 ]; then
    failed=1
    echo "seedrl fuzz: $t FAILED (exit $rc). Report:" >&2
    # From the first line of the report on: the sanitizer's or the target's own message.
    awk '/ERROR: |runtime error|invariant violated|unexpected exception|deadly signal/ {on = 1}
         on && n < 60 {print "  " $0; n++}' "$work/fuzz.log" >&2
    for a in "${artifacts[@]}"; do
      echo "seedrl fuzz: reproducer: $a ($(wc -c <"$a") bytes)" >&2
      if [ "$(wc -c <"$a")" -le 512 ]; then
        echo "  hex: $(od -An -v -tx1 "$a" | tr -s ' \n' ' ')" >&2
      fi
      echo "  rerun: $bin $a" >&2
      echo "  keep it as a regression input: cp $a $root/fuzz/corpus/$t/regression_<what>" >&2
    done
    if [ "${#artifacts[@]}" -eq 0 ]; then
      echo "seedrl fuzz: no reproducer written; see $work/fuzz.log" >&2
    fi
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "seedrl fuzz: FAILED" >&2
  exit 1
fi
echo "seedrl fuzz: OK, no crash, leak or undefined behaviour in ${total} s"
