#!/usr/bin/env bash
# CI's sanitizer pass: builds the unit, concurrency and integration tests with ASan+UBSan and
# with TSan and runs them under each. Each tree builds only the programs those tests run (one
# target, seedrl_sanitizer_programs), without benchmarks or the header self-containment check.
# Packaging, compile-fail and `slow` (training) tests run only in the plain CI build: they test
# no code that the other tests miss, at many times the cost. So do the program layer's tests
# (label `app`: flags, modes and child processes of seedrl/app programs, which these trees do
# not build; the learner and actor code under them runs in the other tests).
#   scripts/sanitizers.sh [asan|tsan ...]    default: both
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/phase.sh
presets=("$@")
[ "${#presets[@]}" -eq 0 ] && presets=(asan tsan)
for preset in "${presets[@]}"; do
  phase "configure ($preset)" cmake --preset "$preset"
  phase "build ($preset)" cmake --build --preset "$preset"
  phase "tests ($preset)" ctest --preset "$preset"
done
