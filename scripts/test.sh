#!/usr/bin/env bash
# The README's second command: install what is missing, build everything and run the whole CPU
# test suite (unit, compile-time, compile-fail and packaging tests; GPU tests are excluded).
# The steps of `cmake --workflow --preset ci`, one at a time so that each one's time is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/phase.sh
phase "install dependencies" scripts/install-deps.sh --test-tools
phase "configure (ci)" cmake --preset ci
phase "build (ci)" cmake --build --preset ci
phase "tests (ci)" ctest --preset ci
