#!/usr/bin/env bash
# The README's second command: install what is missing, build everything and run the whole CPU
# test suite (unit, compile-time, compile-fail and packaging tests; GPU tests are excluded).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test-tools
cmake --workflow --preset ci
