#pragma once
/// \file
/// `small_conv_lstm_agent<S>`: `pixel_lstm_agent` (seedrl/net/pixel_lstm_agent.hpp) over the
/// small conv stack for low-resolution images (seedrl/net/parts/small_conv.hpp), as `seedrl_gym
/// --torso small` trains it. `small_conv` has no agent name or checkpoint fields of its own,
/// which a PixelTorso needs; `small_conv_pixel_torso` adds them (its config,
/// `small_conv_torso_config`, is in small_conv_lstm_agent_config.hpp). Not named
/// `small_conv_torso`: that is the small conv stack under a dense layer
/// (seedrl/net/parts/dense_torso.hpp).

#include <concepts>
#include <cstddef>

#include "seedrl/net/network.hpp"
#include "seedrl/net/parts/small_conv.hpp"
#include "seedrl/net/pixel_lstm_agent.hpp"
#include "seedrl/net/small_conv_lstm_agent_config.hpp"

namespace seedrl {

/// `small_conv` as a PixelTorso.
template <std::floating_point S>
class small_conv_pixel_torso : public small_conv<S> {
 public:
  using config_type = small_conv_torso_config;
  small_conv_pixel_torso(const config_type& c, std::ptrdiff_t channels, std::ptrdiff_t height,
                         std::ptrdiff_t width)
      : small_conv<S>(c, channels, height, width) {}
};

/// See the file comment.
template <std::floating_point S = float>
using small_conv_lstm_agent = pixel_lstm_agent<S, small_conv_pixel_torso<S>>;

static_assert(Network<small_conv_lstm_agent<float>>);
static_assert(Network<small_conv_lstm_agent<double>>);

}  // namespace seedrl
