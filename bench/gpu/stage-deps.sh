#!/usr/bin/env bash
# Copies the header-only libraries check.sh's build needs (Eigen 3.4, Catch2 2.13,
# nlohmann_json) with their CMake package files from this machine's system directories into
# DIR (default: .gpu-deps/ in the repository), keeping the layout their package files expect
# (prefix/include, prefix/share/..., prefix/lib/cmake/...). About 12 MB. For the device
# machine, which has nvcc and CMake but none of these and cannot download:
#   bench/gpu/stage-deps.sh && echo /.gpu-deps/ >> .git/info/exclude
# then carry `.gpu-deps` in the run and start its command with bench/gpu/check.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="${1:-$root/.gpu-deps}"
copy() {  # copy SRC to DEST/REL, failing clearly when SRC is missing
  if [[ ! -e "$1" ]]; then
    echo "stage-deps.sh: $1 not found (install Eigen 3.4, Catch2 2 and nlohmann_json here)" >&2
    exit 1
  fi
  mkdir -p "$dest/$(dirname "$2")"
  cp -a "$1" "$dest/$2"
}
rm -rf "$dest"
copy /usr/include/eigen3 include/eigen3
copy /usr/share/eigen3/cmake share/eigen3/cmake
copy /usr/include/catch2 include/catch2
copy /usr/lib/cmake/Catch2 lib/cmake/Catch2
copy /usr/lib/libCatch2WithMain.a lib/libCatch2WithMain.a  # Catch2's package file checks it
copy /usr/include/nlohmann include/nlohmann
copy /usr/share/cmake/nlohmann_json share/cmake/nlohmann_json
du -sh "$dest"
