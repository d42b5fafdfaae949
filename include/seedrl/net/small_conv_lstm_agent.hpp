#pragma once
/// \file
/// `small_conv_lstm_agent<S>`: `pixel_lstm_agent` (seedrl/net/pixel_lstm_agent.hpp) over the
/// small conv stack for low-resolution images (3x3 stride-1 convolutions with ReLU, any number
/// of input channels: MinAtar's 10x10xC, grid worlds; `detail::backend_small_conv_torso`), as
/// `seedrl_gym --torso small` trains it. `small_conv_pixel_torso<S>` names the stack; its config
/// is `small_conv_torso_config` (small_conv_lstm_agent_config.hpp).

#include <concepts>
#include <cstddef>

#include "seedrl/net/detail/small_conv_torso.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/pixel_lstm_agent.hpp"
#include "seedrl/net/small_conv_lstm_agent_config.hpp"

namespace seedrl {

/// Names the small conv stack for pixel_lstm_agent.
template <std::floating_point S>
struct small_conv_pixel_torso {
  using config_type = small_conv_torso_config;
};

/// See the file comment.
template <std::floating_point S = float>
using small_conv_lstm_agent = pixel_lstm_agent<S, small_conv_pixel_torso<S>>;

static_assert(Network<small_conv_lstm_agent<float>>);
static_assert(Network<small_conv_lstm_agent<double>>);

}  // namespace seedrl
