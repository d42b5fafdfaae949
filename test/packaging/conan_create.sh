#!/usr/bin/env bash
# conan create for seedrl's recipe, with the system's Eigen and Boost named in the profile's
# [platform_requires] so that nothing is downloaded. Exit 77 (skipped) when Conan is missing,
# or 1 in CI (CI=true).
set -euo pipefail
src=$1
work=$2
conan=""
for candidate in "$src/.venv/bin/conan" "$(command -v conan || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then conan=$candidate; break; fi
done
if [ -z "$conan" ]; then
  source "$(dirname "$0")/../missing_tool.sh"
  missing_tool "conan not found (scripts/install-deps.sh installs it from PyPI into .venv)"
fi
rm -rf "$work"
mkdir -p "$work/recipe"
# Conan builds test_package inside the recipe folder: work on a copy to keep the tree clean.
cp -r "$src/conanfile.py" "$src/CMakeLists.txt" "$src/LICENSE" "$src/cmake" "$src/include" \
  "$src/src" "$src/test_package" "$work/recipe/"
export CONAN_HOME="$work/home"
"$conan" profile detect --force >/dev/null
eigen=$(dpkg-query -W -f='${Version}' libeigen3-dev 2>/dev/null | sed 's/-.*//')
boost=$(sed -n 's/#define BOOST_LIB_VERSION "\([0-9]*\)_\([0-9]*\)"/\1.\2.0/p' /usr/include/boost/version.hpp)
cli11=$(dpkg-query -W -f='${Version}' libcli11-dev 2>/dev/null | sed 's/[+-].*//')
openssl=$(dpkg-query -W -f='${Version}' libssl-dev 2>/dev/null | sed 's/[~+-].*//')
# Debug without debug information (-O0 -g0): the test checks the recipe, the package and a
# consumer, not the optimiser; seedrl::app's compiled programs build in half the time of -O3
# (mlp_program.cpp: 26 s against 52 s), and this was CI's longest test.
cat >"$work/profile" <<PROFILE
include(default)
[settings]
compiler.cppstd=20
build_type=Debug
[conf]
tools.cmake.cmaketoolchain:extra_variables={"CMAKE_CXX_FLAGS_DEBUG": {"value": "-O0 -g0", "cache": True, "type": "STRING", "docstring": "seedrl conan test"}}
[platform_requires]
eigen/${eigen:-3.4.0}
boost/${boost:-1.74.0}
cli11/${cli11:-2.1.2}
openssl/${openssl:-3.0.0}
PROFILE
echo "profile:"; cat "$work/profile"
"$conan" create "$work/recipe" --profile:host "$work/profile" --profile:build "$work/profile" \
  --build=missing --no-remote 2>&1 | tee "$work/log"
grep -q "conan consumer ok" "$work/log"
