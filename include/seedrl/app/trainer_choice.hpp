#pragma once
/// \file
/// `--device cpu|cuda` (`--train-device`, `--inference-device`): calls `f(trainer)` with
/// `host_trainer` or a GPU trainer of type `GpuTrainer` built for device 0, as the training
/// device asks. A program built without CUDA passes `void` as `GpuTrainer` (the GPU trainer's
/// header needs nvcc-built code), and asking for cuda, to train or to infer, then exits 2
/// saying how to build with CUDA. `gpu_engine_for_t<GpuTrainer>` is the GPU inference engine
/// of the same network (the recipe the GPU trainer trains), which run_learner takes for
/// `--inference-device cuda`; the program's .cu instantiates both. Lines starting "--device
/// cuda: " are what test/e2e/gpu_learner.sh reads as "no usable GPU here".

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "seedrl/app/run_options.hpp"
#include "seedrl/cuda/inference_engine.hpp"
#include "seedrl/runtime/trainer.hpp"

namespace seedrl::app {

namespace detail {
template <class GpuTrainer>
struct gpu_engine_for {
  using type =
      cuda::inference_engine<typename GpuTrainer::scalar_type, typename GpuTrainer::recipe_type>;
};
template <>
struct gpu_engine_for<void> {
  using type = void;
};

/// "--device cuda: this P was built without CUDA ...", for the flag that asked for it.
inline int refuse_without_cuda(const std::string& flag, const std::string& program) {
  std::fprintf(stderr,
               "%s: this %s was built without CUDA (configure with nvcc on PATH, or "
               "-DSEEDRL_ENABLE_CUDA=ON); use --device cpu\n",
               flag.c_str(), program.c_str());
  return 2;
}
}  // namespace detail

/// The GPU inference engine for the network `GpuTrainer` trains; void for void.
template <class GpuTrainer>
using gpu_engine_for_t = typename detail::gpu_engine_for<GpuTrainer>::type;

/// See the file comment. `program` names the binary in the message.
template <class GpuTrainer, class F>
int with_trainer(const run_options& o, const std::string& program, F&& f) {
  if constexpr (std::is_void_v<GpuTrainer>) {
    if (inference_device(o) == "cuda")
      return detail::refuse_without_cuda(device_flag(o, true), program);
  }
  if (train_device(o) == "cpu")
    return std::forward<F>(f)(host_trainer{});
  if constexpr (std::is_void_v<GpuTrainer>) {
    return detail::refuse_without_cuda(device_flag(o, false), program);
  } else {
    std::optional<GpuTrainer> gpu;
    try {
      gpu.emplace(0);
    } catch (const std::exception& e) {
      // The message says what to do.
      std::fprintf(stderr, "%s: %s\n", device_flag(o, false).c_str(), e.what());
      return 2;
    }
    return std::forward<F>(f)(std::move(*gpu));
  }
}

}  // namespace seedrl::app
