#pragma once
/// \file
/// `small_conv_lstm_agent<S>`: `pixel_lstm_agent` (seedrl/net/pixel_lstm_agent.hpp) over the small
/// conv stack for low-resolution images (seedrl/net/parts/small_conv.hpp), for `seedrl_gym
/// --torso small`. `small_conv` has no agent name or checkpoint fields of its own, which a
/// PixelTorso needs; this adds them, so checkpoints carry e.g. "small_conv_lstm_agent height=10
/// ... convs=16,32 padding=0 ...".

#include <array>
#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>

#include "seedrl/net/parts/small_conv.hpp"
#include "seedrl/net/pixel_lstm_agent.hpp"

namespace seedrl::app {

/// `small_conv_config` with the names a pixel agent's description needs.
struct small_conv_torso_config : small_conv_config {
  static constexpr std::string_view agent_name = "small_conv_lstm_agent";
  /// This config's part of an agent description, e.g. " convs=16,32 padding=0".
  std::string describe_fields() const {
    std::string s = " convs=";
    for (std::size_t i = 0; i < channels.size(); ++i)
      s += (i ? "," : "") + std::to_string(channels[i]);
    return s + " padding=" + std::to_string(padding);
  }
  static constexpr std::array<std::string_view, 2> field_keys{"convs", "padding"};
};

/// `small_conv` as a PixelTorso.
template <std::floating_point S>
class small_conv_torso : public small_conv<S> {
 public:
  using config_type = small_conv_torso_config;
  small_conv_torso(const config_type& c, std::ptrdiff_t channels, std::ptrdiff_t height,
                   std::ptrdiff_t width)
      : small_conv<S>(c, channels, height, width) {}
};

/// See the file comment.
template <std::floating_point S = float>
using small_conv_lstm_agent = pixel_lstm_agent<S, small_conv_torso<S>>;
using small_conv_lstm_agent_config = pixel_lstm_agent_config<small_conv_torso_config>;

}  // namespace seedrl::app
