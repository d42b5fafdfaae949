#!/usr/bin/env bash
# The GPU check of issue 6 in one script, for a machine with an NVIDIA GPU (written for the
# 16-core H200 device machine, where it must finish within 8 minutes):
#   1. configure a Release build for sm_90 only, with CUDA on and the CPU-only examples and
#      benchmarks off;
#   2. build just the GPU targets, seedrl_cuda_tests and seedrl_bench_gpu (four nvcc units and
#      two C++ ones, built in parallel);
#   3. run the gpu-labelled tests (ctest -L gpu), then the GPU benchmarks, which include one
#      mlp_lstm_agent training step on the GPU against the same step on one CPU thread, measured
#      in the same program on the same machine (bench/gpu/bench_train_step.cpp);
#   4. run the learner end to end (seedrl_bench_gpu --e2e, bench/gpu/bench_e2e.cpp): the Atari
#      network with Catch actors as threads on this machine's cores, over the in-process
#      transport (no Asio needed), GPU inference + GPU training against the CPU learner, each
#      for $SEEDRL_E2E_SECONDS (default 25) seconds;
#   5. print a short table, and the training-step, inference and end-to-end rows again as
#      GPU-vs-CPU summaries.
# The stages' timeouts sum to 470 s, inside the 8 minutes.
# Header-only dependencies (Eigen 3.4, Catch2 2.13, nlohmann_json 3.10+) come from the system or
# from $SEEDRL_GPU_DEPS (default: .gpu-deps/ in the repository), which bench/gpu/stage-deps.sh
# fills on a machine that has them; the device machine has none of them and cannot download.
# Logs go to $OUT when it is set (the device machine returns it), else to the build directory.
# Exit status 0 only when the GPU tests ran and passed and the benchmarks (end to end included)
# ran.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${SEEDRL_GPU_BUILD_DIR:-$root/build/gpu-check}"
deps="${SEEDRL_GPU_DEPS:-$root/.gpu-deps}"
logs="${OUT:-$build}"
mkdir -p "$build" "$logs"
start=$SECONDS
stage() { printf '== [%3ds] %s\n' "$((SECONDS - start))" "$*"; }

args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSEEDRL_ENABLE_CUDA=ON
      -DSEEDRL_BUILD_TESTS=ON -DSEEDRL_BUILD_EXAMPLES=OFF -DSEEDRL_BUILD_BENCHMARKS=OFF
      -DSEEDRL_BUILD_GPU_BENCHMARKS=ON -DSEEDRL_CHECK_HEADERS=OFF)
if [[ -d "$deps" ]]; then
  args+=("-DCMAKE_PREFIX_PATH=$deps")
fi
if command -v nvcc > /dev/null; then
  :
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
if command -v ninja > /dev/null && [[ ! -f "$build/CMakeCache.txt" ]]; then
  args+=(-G Ninja)
fi

stage "configure (sm_90) in $build"
if ! timeout 25 cmake -S "$root" -B "$build" "${args[@]}" > "$logs/configure.log" 2>&1; then
  tail -40 "$logs/configure.log"
  echo "check.sh: configure failed (log: $logs/configure.log)"
  exit 1
fi
grep -E "Found CUDAToolkit|Found CUDNN|cuDNN not found" "$logs/configure.log" || true

stage "build seedrl_cuda_tests seedrl_bench_gpu (and seedrl_nccl_tests when NCCL was found)"
targets=(seedrl_cuda_tests seedrl_bench_gpu)
grep -q "seedrl::nccl (data-parallel GPU learners)" "$logs/configure.log" &&
  targets+=(seedrl_nccl_tests)
if ! timeout 200 cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" \
    > "$logs/build.log" 2>&1; then
  grep -E "error|Error" "$logs/build.log" | head -40
  echo "check.sh: build failed (log: $logs/build.log)"
  exit 1
fi

stage "GPU tests (ctest -L gpu)"
timeout 80 ctest --test-dir "$build" -L gpu --output-on-failure > "$logs/tests.log" 2>&1
test_rc=$?
cat "$logs/tests.log"
tests="passed"
if [[ $test_rc -ne 0 ]]; then
  tests="FAILED (ctest exit $test_rc)"
elif grep -q "Skipped\|Not Run" "$logs/tests.log"; then
  tests="SKIPPED: no usable GPU (the tests say why above)"
  test_rc=1
fi

stage "GPU benchmarks"
timeout 85 "$build/bench/gpu/seedrl_bench_gpu" > "$logs/bench.txt" 2>&1
bench_rc=$?

# Two learner runs of e2e_seconds each, plus start-up and shutdown: bounded by the timeout too.
e2e_seconds="${SEEDRL_E2E_SECONDS:-25}"
stage "end to end, GPU learner vs CPU learner (${e2e_seconds} s each)"
timeout 80 "$build/bench/gpu/seedrl_bench_gpu" --e2e "$e2e_seconds" > "$logs/e2e.txt" \
  2> "$logs/e2e.log"
e2e_rc=$?

stage "done"
echo
echo "GPU tests: $tests"
echo "GPU benchmarks (exit $bench_rc; full output in $logs/bench.txt):"
cat "$logs/bench.txt"
echo "End to end (exit $e2e_rc; learner messages in $logs/e2e.log):"
cat "$logs/e2e.txt"
echo
echo "Training step, GPU (cuda::mlp_lstm_trainer, cuda::pixel_lstm_trainer) vs CPU (one thread), samples/s = T*B per step:"
grep -E '^\| train ' "$logs/bench.txt" || echo "(no training-step rows)"
echo
echo "Inference, GPU (cuda::inference_engine) vs CPU (cpu_inference_engine, one worker per core), per batch size:"
grep -E '^\| infer ' "$logs/bench.txt" || echo "(no inference rows)"
echo
echo "End to end, Atari network (Nature CNN + LSTM 512) with Catch actors on $(nproc) cores, frames/s: GPU learner (cuda inference + cuda training) vs CPU learner, and their ratio:"
grep -E '^\| e2e ' "$logs/e2e.txt" || echo "(no end-to-end rows)"
echo "elapsed: $((SECONDS - start)) s"
[[ $test_rc -eq 0 && $bench_rc -eq 0 && $e2e_rc -eq 0 ]]
