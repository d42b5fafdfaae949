#pragma once
/// \file
/// `--device cpu|cuda`: calls `f(trainer)` with `host_trainer` or a GPU trainer of type
/// `GpuTrainer` built for device 0. A program built without CUDA passes `void` as `GpuTrainer`
/// (the GPU trainer's header needs nvcc-built code), and `--device cuda` then exits 2 saying
/// how to build with CUDA. Lines starting "--device cuda: " are what test/e2e/gpu_learner.sh
/// reads as "no usable GPU here".

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "seedrl/app/run_options.hpp"
#include "seedrl/runtime/trainer.hpp"

namespace seedrl::app {

/// See the file comment. `program` names the binary in the message.
template <class GpuTrainer, class F>
int with_trainer(const run_options& o, const std::string& program, F&& f) {
  if (o.device == "cpu")
    return std::forward<F>(f)(host_trainer{});
  if constexpr (std::is_void_v<GpuTrainer>) {
    std::fprintf(stderr,
                 "--device cuda: this %s was built without CUDA (configure with nvcc on PATH, or "
                 "-DSEEDRL_ENABLE_CUDA=ON); use --device cpu\n",
                 program.c_str());
    return 2;
  } else {
    std::optional<GpuTrainer> gpu;
    try {
      gpu.emplace(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "--device cuda: %s\n", e.what());  // the message says what to do
      return 2;
    }
    return std::forward<F>(f)(std::move(*gpu));
  }
}

}  // namespace seedrl::app
