#!/usr/bin/env bash
# The README's first command: install what is missing, build in release, run the CartPole demo.
# Extra arguments go to the demo (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target seedrl_cartpole -j"$(nproc)"
exec build/release/examples/seedrl_cartpole "$@"
