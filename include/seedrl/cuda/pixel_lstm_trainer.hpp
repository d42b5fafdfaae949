#pragma once
/// \file
/// `cuda::pixel_lstm_trainer<S, TorsoConfig>`: trains the Atari example's networks on a GPU,
/// `frame_stacked<nature_cnn_lstm_agent<S>>` (TorsoConfig = nature_cnn_config, the default) or
/// `frame_stacked<impala_resnet_lstm_agent<S>>` (TorsoConfig = impala_resnet_config) or
/// `frame_stacked<small_conv_lstm_agent<S>>` (TorsoConfig = small_conv_torso_config), as a
/// `seedrl::Trainer` (seedrl/runtime/trainer.hpp) the learner can use instead of `host_trainer`.
/// It is the one GPU trainer, `cuda::agent_trainer` (seedrl/cuda/agent_trainer.hpp), with the
/// pixel recipe (seedrl/train/pixel_lstm_recipe.hpp): the step is `backend_pixel_lstm_trainer`
/// (seedrl/train/pixel_lstm_trainer.hpp) on `cuda::cuda_backend`, convolutions in cuDNN.
///
/// Plain C++: no CUDA header, so programs compiled by g++ or clang (the learner) include it.
/// Its constructor is defined in seedrl/cuda/pixel_lstm_trainer.cuh; instantiate it once, in
/// one .cu file of the program compiled by nvcc:
///
///   #include "seedrl/cuda/pixel_lstm_trainer.cuh"
///   template class seedrl::cuda::pixel_lstm_trainer<float>;  // Nature CNN
///   template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;
///   template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::small_conv_torso_config>;
///
/// and link it with `seedrl::cuda`.

#include <concepts>

#include "seedrl/cuda/agent_trainer.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/train/pixel_lstm_recipe.hpp"

namespace seedrl::cuda {

/// The recipe of the pixel agents (seedrl/train/pixel_lstm_recipe.hpp), by its old name.
template <class TorsoConfig>
using pixel_lstm_recipe = seedrl::pixel_lstm_recipe<TorsoConfig>;

/// Trains a `frame_stacked<pixel_lstm_agent<Torso, S>>` on a GPU, the torso given by its config
/// type; see the file comment.
template <std::floating_point S, class TorsoConfig = nature_cnn_config>
class pixel_lstm_trainer : public agent_trainer<S, pixel_lstm_recipe<TorsoConfig>> {
 public:
  using agent_config = pixel_lstm_agent_config<TorsoConfig>;  ///< the network's shape

  /// Uses CUDA device `device`; throws std::runtime_error saying what to do when no usable
  /// device has that number (no GPU, no driver, or too few GPUs).
  explicit pixel_lstm_trainer(int device = 0);
};

}  // namespace seedrl::cuda
