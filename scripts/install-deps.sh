#!/usr/bin/env bash
# Installs what seedrl's build needs on Debian 12, skipping what is already there.
#   scripts/install-deps.sh              compiler, CMake, Eigen, Boost, CLI11, Catch2,
#                                        nlohmann_json, Google Benchmark, oneDNN (the CPU
#                                        convolutions) with the OpenCL headers its CMake config
#                                        needs (libdnnl-dev only recommends them)
#   scripts/install-deps.sh --test-tools also clang-format, Open MPI (seedrl::mpi), Conan,
#                                        TensorBoard, matplotlib, numpy, gymnasium, ale-py and
#                                        MuJoCo (all but the first two from PyPI, into .venv)
# Runs apt-get through sudo when not root, with --no-install-recommends: whatever a CMake config
# or a test needs must be named here, even where a package only recommends it
# (scripts/fresh-machine-check.sh proves the list on a minimal Debian 12). In CI (CI=true) a
# test tool that cannot be installed fails the run, naming it; elsewhere its tests skip. The
# CUDA toolkit is optional and not installed here: with nvcc on PATH the CUDA backend is built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
test_tools=0
[ "${1:-}" = "--test-tools" ] && test_tools=1

packages=(build-essential cmake git pkg-config libeigen3-dev libssl-dev libboost-dev libcli11-dev catch2
          nlohmann-json3-dev libbenchmark-dev libdnnl-dev ocl-icd-opencl-dev python3)
if [ "$test_tools" = 1 ]; then
  # clang, libFuzzer's runtime (libclang_rt.fuzzer) and llvm-symbolizer: scripts/fuzz.sh.
  packages+=(clang-format python3-venv python3-pip clang libclang-rt-dev llvm)
  # Open MPI: seedrl::mpi (data-parallel learners) and its two-rank tests under mpirun.
  packages+=(libopenmpi-dev openmpi-bin)
fi

# A python3 from elsewhere (e.g. pyenv) is as good as Debian's, with working venv and pip.
# Debian's python3 runs `-m venv --help` without python3-venv, but cannot create a venv
# (ensurepip lives in python3.X-venv): ask for ensurepip itself.
have() {
  case "$1" in
    python3) command -v python3 >/dev/null ;;
    python3-venv) python3 -c "import ensurepip, venv" >/dev/null 2>&1 ;;
    python3-pip) python3 -m pip --version >/dev/null 2>&1 ;;
    *) false ;;
  esac || dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
missing=()
for p in "${packages[@]}"; do
  have "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "seedrl: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The test tools from PyPI, into .venv. `pip_tool WHAT CHECK PACKAGES... -- USE`: installs
# PACKAGES unless the Python statement CHECK already runs in .venv, then runs CHECK again. When it
# still fails, outside CI the tests that need WHAT skip (USE says which); in CI (CI=true) the
# run stops here, naming WHAT, so that a missing tool can never pass as a green run of skips.
pip_failed=()
pip_tool() {
  local what=$1 check=$2
  shift 2
  local packages=()
  while [ "$1" != "--" ]; do packages+=("$1"); shift; done
  local use=$2
  if [ -x "$root/.venv/bin/python3" ] && "$root/.venv/bin/python3" -c "$check" 2>/dev/null; then
    return 0
  fi
  # A .venv without pip (left by a venv that failed half way) is made again.
  if [ ! -x "$root/.venv/bin/pip" ]; then
    rm -rf "$root/.venv"
  fi
  if { [ -x "$root/.venv/bin/pip" ] || python3 -m venv "$root/.venv"; } &&
     "$root/.venv/bin/pip" install -q "${packages[@]}" &&
     "$root/.venv/bin/python3" -c "$check"; then
    echo "seedrl: $what installed into .venv"
  else
    echo "seedrl: could not install $what (pip install ${packages[*]}); $use" >&2
    pip_failed+=("$what")
  fi
}

if [ "$test_tools" = 1 ]; then
  pip_tool "Conan" "import conan, shutil, sys; sys.exit(not shutil.which('conan', path='$root/.venv/bin'))" conan -- "the Conan packaging test will skip"
  # The metrics tests read event files with TensorBoard's reader and draw with matplotlib.
  pip_tool "TensorBoard and matplotlib" "import tensorboard, matplotlib" tensorboard matplotlib \
    -- "the metrics tests will skip"
  # The Python actor's tests (python/tests) step gymnasium environments.
  pip_tool "numpy and gymnasium" "import numpy, gymnasium" numpy gymnasium \
    -- "the Python actor tests will skip"
  # The Atari tests (python/tests/test_atari.py) run the real emulator through ale-py, which
  # ships the ROMs.
  pip_tool "ale-py" "import ale_py" ale-py -- "the Atari tests will skip"
  # The MuJoCo tests (the HalfCheetah smoke test, docs/mujoco.md) step gymnasium's MuJoCo
  # environments through Python actors.
  pip_tool "mujoco and gymnasium[mujoco]" "import mujoco, gymnasium.envs.mujoco" \
    mujoco "gymnasium[mujoco]" -- "the MuJoCo tests will skip"
  # The Kubernetes manifests' test (test/deploy/) validates against the schemas this package
  # bundles (no download at test time).
  pip_tool "kubernetes-validate" "import kubernetes_validate, yaml" kubernetes-validate \
    -- "the Kubernetes manifest test will skip"
  if [ "${#pip_failed[@]}" -gt 0 ] && [ "${CI:-}" = true ]; then
    printf 'seedrl: CI=true and these test tools are missing: %s\n' "${pip_failed[*]}" >&2
    exit 1
  fi
fi
