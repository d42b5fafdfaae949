#pragma once
/// \file
/// `pixel_lstm_recipe<TorsoConfig>`: how `frame_stacked<pixel_lstm_agent<Torso, S>>` (the torso
/// configured by TorsoConfig: nature_cnn_config, impala_resnet_config or
/// small_conv_torso_config) maps onto the backend trainer, a Recipe of `recipe_trainer`
/// (seedrl/train/recipe_trainer.hpp): the shape is the frame stacking and the agent's config,
/// the torso `backend_pixel_torso`. The trainers on it: `backend_trainer<S,
/// pixel_lstm_recipe<TorsoConfig>>` (the CPU) and `cuda::pixel_lstm_trainer<S, TorsoConfig>` (a
/// GPU). Plain C++ without Eigen, so nvcc compiles it.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/impala_resnet_config.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/net/small_conv_lstm_agent_config.hpp"
#include "seedrl/train/pixel_torso.hpp"

namespace seedrl {

/// See the file comment.
template <class TorsoConfig>
struct pixel_lstm_recipe {
  /// The trainer's name in messages (with " on CUDA" or " on host_backend" after it).
  static constexpr const char* name = "seedrl::pixel_lstm_trainer";
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
        "seedrl: the pixel_lstm_trainer recipe <TorsoConfig> trains a "
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

}  // namespace seedrl
