#!/usr/bin/env bash
# CI's sanitizer pass: builds the tests with ASan+UBSan and with TSan (benchmarks and the
# header self-containment check off, to fit two cores) and runs the unit, concurrency and
# integration tests under each. Packaging, compile-fail and `slow` (training) tests run only in
# the plain CI build: they test no code that the other tests miss, at many times the cost.
#   scripts/sanitizers.sh [asan|tsan ...]    default: both
set -euo pipefail
cd "$(dirname "$0")/.."
presets=("$@")
[ "${#presets[@]}" -eq 0 ] && presets=(asan tsan)
for preset in "${presets[@]}"; do
  start=$SECONDS
  cmake --workflow --preset "$preset"
  echo "seedrl: $preset preset passed in $((SECONDS - start)) s"
done
