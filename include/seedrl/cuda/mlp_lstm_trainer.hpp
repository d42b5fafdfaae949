#pragma once
/// \file
/// `cuda::mlp_lstm_trainer<S>`: trains a `seedrl::mlp_lstm_agent` on a GPU, as a
/// `seedrl::Trainer` (seedrl/runtime/trainer.hpp) the learner can use instead of `host_trainer`.
/// It is the one GPU trainer, `cuda::agent_trainer` (seedrl/cuda/agent_trainer.hpp), with the
/// MLP recipe below: the step is `backend_mlp_lstm_trainer` (seedrl/train/mlp_lstm_trainer.hpp)
/// on `cuda::cuda_backend`.
///
/// Plain C++: no CUDA header, so programs compiled by g++ or clang (the learner) include it.
/// Its constructor is defined in seedrl/cuda/mlp_lstm_trainer.cuh; instantiate it once, in one
/// .cu file of the program compiled by nvcc:
///
///   #include "seedrl/cuda/mlp_lstm_trainer.cuh"
///   template class seedrl::cuda::mlp_lstm_trainer<float>;
///
/// and link it with `seedrl::cuda`.

#include <concepts>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "seedrl/cuda/agent_trainer.hpp"
#include "seedrl/net/mlp_lstm_agent_config.hpp"
#include "seedrl/train/mlp_torso.hpp"

namespace seedrl::cuda {

/// How `seedrl::mlp_lstm_agent` maps onto the GPU step (a Recipe of cuda::agent_trainer).
struct mlp_lstm_recipe {
  static constexpr const char* name = "seedrl::cuda::mlp_lstm_trainer";
  using shape_type = mlp_lstm_agent_config;

  template <class Net>
  static shape_type shape_of(const Net& net) {
    return net.config();
  }

  static std::string describe(const shape_type& shape) { return seedrl::describe(shape); }

  template <class Net>
  static constexpr void check_network() {
    static_assert(
        std::is_same_v<std::remove_cvref_t<decltype(std::declval<const Net&>().config())>,
                       mlp_lstm_agent_config>,
        "seedrl: cuda::mlp_lstm_trainer trains seedrl::mlp_lstm_agent only; use host_trainer "
        "for other networks");
  }

  template <class Backend, class S>
  using torso = backend_mlp_torso<Backend, S>;

  template <class Trainer, class Backend>
  static std::unique_ptr<Trainer> make_trainer(Backend& backend, const shape_type& shape) {
    return std::make_unique<Trainer>(backend, shape);
  }
};

/// Trains an `mlp_lstm_agent<S>` on a GPU; see the file comment.
template <std::floating_point S>
class mlp_lstm_trainer : public agent_trainer<S, mlp_lstm_recipe> {
 public:
  /// Uses CUDA device `device`; throws std::runtime_error saying what to do when no usable
  /// device has that number (no GPU, no driver, or too few GPUs).
  explicit mlp_lstm_trainer(int device = 0);
};

}  // namespace seedrl::cuda
