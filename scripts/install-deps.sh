#!/usr/bin/env bash
# Installs what seedrl's build needs on Debian 12, skipping what is already there.
#   scripts/install-deps.sh              compiler, CMake, Eigen, Boost, Catch2, Google Benchmark,
#                                        oneDNN (the CPU convolutions)
#   scripts/install-deps.sh --test-tools also clang-format, Conan, TensorBoard, matplotlib,
#                                        numpy, gymnasium, ale-py and MuJoCo (all but the
#                                        first from PyPI, into .venv)
# Runs apt-get through sudo when not root. The CUDA toolkit is optional and not installed
# here: with nvcc on PATH the CUDA backend is built too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
test_tools=0
[ "${1:-}" = "--test-tools" ] && test_tools=1

packages=(build-essential cmake git pkg-config libeigen3-dev libboost-dev libcli11-dev catch2 nlohmann-json3-dev
          libbenchmark-dev libdnnl-dev python3)
if [ "$test_tools" = 1 ]; then
  # clang, libFuzzer's runtime (libclang_rt.fuzzer) and llvm-symbolizer: scripts/fuzz.sh.
  packages+=(clang-format python3-venv python3-pip clang libclang-rt-dev llvm)
fi

# A python3 from elsewhere (e.g. pyenv) is as good as Debian's, with working venv and pip.
have() {
  case "$1" in
    python3) command -v python3 >/dev/null ;;
    python3-venv) python3 -m venv --help >/dev/null 2>&1 ;;
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

if [ "$test_tools" = 1 ] && [ ! -x "$root/.venv/bin/conan" ]; then
  # Conan only tests the recipe; a failure here makes that one test skip, not the build fail.
  if python3 -m venv "$root/.venv" && "$root/.venv/bin/pip" install -q conan; then
    echo "seedrl: Conan installed into .venv"
  else
    echo "seedrl: could not install Conan; the conan packaging test will be skipped" >&2
  fi
fi

if [ "$test_tools" = 1 ] && ! "$root/.venv/bin/python3" -c "import tensorboard, matplotlib" 2>/dev/null; then
  # The metrics tests read event files with TensorBoard's reader and draw with matplotlib; a
  # failure here makes those tests skip, not the build fail.
  if python3 -m venv "$root/.venv" && "$root/.venv/bin/pip" install -q tensorboard matplotlib; then
    echo "seedrl: TensorBoard and matplotlib installed into .venv"
  else
    echo "seedrl: could not install TensorBoard and matplotlib; the metrics tests will skip" >&2
  fi
fi

if [ "$test_tools" = 1 ] && ! "$root/.venv/bin/python3" -c "import numpy, gymnasium" 2>/dev/null; then
  # The Python actor's tests (python/tests) step gymnasium environments; a failure here makes
  # them skip, not the build fail.
  if python3 -m venv "$root/.venv" && "$root/.venv/bin/pip" install -q numpy gymnasium; then
    echo "seedrl: numpy and gymnasium installed into .venv"
  else
    echo "seedrl: could not install numpy and gymnasium; the Python actor tests will skip" >&2
  fi
fi

if [ "$test_tools" = 1 ] && ! "$root/.venv/bin/python3" -c "import ale_py" 2>/dev/null; then
  # The Atari tests (python/tests/test_atari.py) run the real emulator through ale-py, which
  # ships the ROMs; a failure here makes those tests skip, not the build fail.
  if python3 -m venv "$root/.venv" && "$root/.venv/bin/pip" install -q ale-py; then
    echo "seedrl: ale-py installed into .venv"
  else
    echo "seedrl: could not install ale-py; the Atari tests will skip" >&2
  fi
fi

if [ "$test_tools" = 1 ] && ! "$root/.venv/bin/python3" -c "import mujoco, gymnasium.envs.mujoco" 2>/dev/null; then
  # The MuJoCo tests (the HalfCheetah smoke test, docs/mujoco.md) step gymnasium's MuJoCo
  # environments through Python actors; a failure here makes them skip, not the build fail.
  if python3 -m venv "$root/.venv" && "$root/.venv/bin/pip" install -q mujoco "gymnasium[mujoco]"; then
    echo "seedrl: mujoco and gymnasium[mujoco] installed into .venv"
  else
    echo "seedrl: could not install mujoco; the MuJoCo tests will skip" >&2
  fi
fi
