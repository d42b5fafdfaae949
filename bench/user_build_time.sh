#!/usr/bin/env bash
# What a user's program costs to rebuild after a one-line change to its environment
# (docs/performance.md, "A user's build"). Installs seedrl at Release into a temporary prefix,
# writes a consumer project as a new user would (an environment header of its own, here a copy
# of include/seedrl/env/acrobot.hpp, and a 10-line main on app::program + mlp_recipe, found with
# find_package(seedrl COMPONENTS app)), builds it once, appends a line to the environment and
# times the rebuild on one core: wall seconds and the compiler's peak memory, the median of
# ROUNDS edits, for the compiled seedrl::app and for seedrl::app_header_only.
#   bench/user_build_time.sh [ROUNDS] [WORK_DIR]
set -euo pipefail
rounds=${1:-3}
work=${2:-$(mktemp -d)}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
echo "work dir: $work"

# seedrl as a user installs it: Release, no tests, examples or benchmarks.
cmake -S "$src" -B "$work/seedrl-build" -DCMAKE_BUILD_TYPE=Release -DSEEDRL_BUILD_TESTS=OFF \
  -DSEEDRL_BUILD_EXAMPLES=OFF -DSEEDRL_BUILD_BENCHMARKS=OFF -DSEEDRL_ENABLE_CUDA=OFF \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" > "$work/seedrl-configure.log"
cmake --build "$work/seedrl-build" -j "$(nproc)" > "$work/seedrl-build.log"
cmake --install "$work/seedrl-build" > "$work/seedrl-install.log"

for target in app app_header_only; do
  proj=$work/consumer-$target
  mkdir -p "$proj"
  # The user's own environment: Acrobot-v1 in a namespace of theirs.
  sed 's/^namespace seedrl {/namespace user {\nusing namespace seedrl;/' \
    "$src/include/seedrl/env/acrobot.hpp" > "$proj/my_env.hpp"
  cat > "$proj/main.cpp" <<'EOF'
#include "my_env.hpp"
#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/program.hpp"

int main(int argc, char** argv) {
  seedrl::app::program<user::acrobot> p("my_program", "my environment, trained the SEED way");
  p.options.target_return = -100.0;
  p.make_env = [](std::size_t i, std::uint64_t seed) { return user::acrobot(seed * 7919 + i); };
  return p.run(argc, argv, seedrl::app::mlp_recipe{});
}
EOF
  cat > "$proj/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(my_program LANGUAGES CXX)
find_package(seedrl CONFIG REQUIRED COMPONENTS app)
add_executable(my_program main.cpp)
target_link_libraries(my_program PRIVATE seedrl::$target)
EOF
  cmake -S "$proj" -B "$proj/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" \
    > "$proj/configure.log"
  cmake --build "$proj/build" -j 1 > "$proj/first-build.log"
  "$proj/build/my_program" --help > /dev/null  # it runs
  for r in $(seq "$rounds"); do
    echo "// edit $r" >> "$proj/my_env.hpp"
    /usr/bin/time -f "%e %M" -o "$proj/time-$r.txt" cmake --build "$proj/build" -j 1 \
      > "$proj/rebuild-$r.log"
  done
done

python3 - "$work" "$rounds" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
print(f"rebuild after a one-line change to the environment, Release, one core; median of {rounds}")
for target in ("app", "app_header_only"):
    runs = [open(f"{work}/consumer-{target}/time-{r}.txt").read().split() for r in range(1, rounds + 1)]
    seconds = statistics.median(float(s) for s, _ in runs)
    gib = statistics.median(int(k) for _, k in runs) / 2**20
    print(f"  seedrl::{target:16s} {seconds:6.1f} s  peak {gib:4.2f} GiB")
PY
