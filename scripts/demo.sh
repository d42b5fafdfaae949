#!/usr/bin/env bash
# The README's first command: install what is missing, build in release, and train CartPole the
# SEED way: a learner plus 4 actor processes over TCP on loopback, until the mean return of the
# last 100 episodes reaches 475. Extra arguments go to the program (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target seedrl_cartpole_seed -j"$(nproc)"
exec build/release/examples/seedrl_cartpole_seed local --actors 4 "$@"
