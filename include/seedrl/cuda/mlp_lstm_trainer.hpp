#pragma once
/// \file
/// `cuda::mlp_lstm_trainer<S>`: trains a `seedrl::mlp_lstm_agent` on a GPU, as a
/// `seedrl::Trainer` (seedrl/runtime/trainer.hpp) the learner can use instead of `host_trainer`.
/// It is the one GPU trainer, `cuda::agent_trainer` (seedrl/cuda/agent_trainer.hpp), with the
/// MLP recipe (seedrl/train/mlp_lstm_recipe.hpp): the step is `backend_mlp_lstm_trainer`
/// (seedrl/train/mlp_lstm_trainer.hpp) on `cuda::cuda_backend`.
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

#include "seedrl/cuda/agent_trainer.hpp"
#include "seedrl/train/mlp_lstm_recipe.hpp"

namespace seedrl::cuda {

/// The recipe of mlp_lstm_agent (seedrl/train/mlp_lstm_recipe.hpp), by its old name.
using mlp_lstm_recipe = seedrl::mlp_lstm_recipe;

/// Trains an `mlp_lstm_agent<S>` on a GPU; see the file comment.
template <std::floating_point S>
class mlp_lstm_trainer : public agent_trainer<S, mlp_lstm_recipe> {
 public:
  /// Uses CUDA device `device`; throws std::runtime_error saying what to do when no usable
  /// device has that number (no GPU, no driver, or too few GPUs).
  explicit mlp_lstm_trainer(int device = 0);
};

}  // namespace seedrl::cuda
