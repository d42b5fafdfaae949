#!/usr/bin/env bash
# The README's first command: install what is missing, build in release, train CartPole until
# the mean return of the last 100 episodes reaches 475. Extra arguments go to the trainer
# (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target seedrl_cartpole_train -j"$(nproc)"
exec build/release/examples/seedrl_cartpole_train "$@"
