#pragma once
/// \file
/// `cuda::pixel_lstm_trainer<S, TorsoConfig>`: trains the Atari example's networks on a GPU,
/// `frame_stacked<nature_cnn_lstm_agent<S>>` (TorsoConfig = nature_cnn_config, the default) or
/// `frame_stacked<impala_resnet_lstm_agent<S>>` (TorsoConfig = impala_resnet_config) or
/// `frame_stacked<small_conv_lstm_agent<S>>` (TorsoConfig = small_conv_torso_config), as a
/// `seedrl::Trainer` (seedrl/runtime/trainer.hpp) the learner can use instead of `host_trainer`.
/// It is the one GPU trainer, `cuda::agent_trainer` (seedrl/cuda/agent_trainer.hpp), with the
/// pixel recipe below: the step is `backend_pixel_lstm_trainer`
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
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "seedrl/cuda/agent_trainer.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/impala_resnet_config.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/net/small_conv_lstm_agent_config.hpp"
#include "seedrl/train/pixel_torso.hpp"

namespace seedrl::cuda {

/// How `frame_stacked<pixel_lstm_agent<Torso, S>>` (the torso configured by TorsoConfig) maps
/// onto the GPU step (a Recipe of cuda::agent_trainer).
template <class TorsoConfig>
struct pixel_lstm_recipe {
  static constexpr const char* name = "seedrl::cuda::pixel_lstm_trainer";
  using agent_config = pixel_lstm_agent_config<TorsoConfig>;
  /// The frame stacking and the agent over the stacks.
  struct shape_type {
    frame_stack_config stack;
    agent_config agent;
  };

  template <class Net>
  static shape_type shape_of(const Net& net) {
    return {net.stack_config(), net.inner().config()};
  }

  static std::string describe(const shape_type& s) {
    return "frames " + std::to_string(s.stack.height) + "x" + std::to_string(s.stack.width) + "x" +
           std::to_string(s.stack.channels) + " depth " + std::to_string(s.stack.depth) +
           (s.stack.channels_last ? " hwc " : " chw ") + seedrl::describe(s.agent);
  }

  template <class Net>
  static constexpr void check_network() {
    static_assert(
        std::is_same_v<std::remove_cvref_t<decltype(std::declval<const Net&>().stack_config())>,
                       frame_stack_config> &&
            std::is_same_v<
                std::remove_cvref_t<decltype(std::declval<const Net&>().inner().config())>,
                agent_config>,
        "seedrl: cuda::pixel_lstm_trainer<S, TorsoConfig> trains a "
        "seedrl::frame_stacked<pixel_lstm_agent> whose torso's config is TorsoConfig "
        "(nature_cnn_config, impala_resnet_config or small_conv_torso_config); use "
        "host_trainer for other networks");
  }

  template <class Backend, class S>
  using torso = backend_pixel_torso<Backend, S, TorsoConfig>;

  template <class Trainer, class Backend>
  static std::unique_ptr<Trainer> make_trainer(Backend& backend, const shape_type& shape) {
    return std::make_unique<Trainer>(backend, shape.stack, shape.agent);
  }
};

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
