#pragma once
/// \file
/// The shape of a `small_conv_lstm_agent` (seedrl/net/small_conv_lstm_agent.hpp): the small conv
/// stack's config with the names a pixel agent's checkpoint description needs, apart from the
/// network so that code which only needs the shape (a GPU trainer compiled by nvcc) does not
/// pull in Eigen.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/net/small_conv_config.hpp"

namespace seedrl {

/// `small_conv_config` with the names a pixel agent's description needs: checkpoints carry e.g.
/// "small_conv_lstm_agent height=10 ... convs=16,32 padding=0 ...".
struct small_conv_torso_config : small_conv_config {
  static constexpr std::string_view agent_name = "small_conv_lstm_agent";
  /// This config's part of an agent description, e.g. " convs=16,32 padding=0".
  std::string describe_fields() const {
    // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on "," + std::string,
    // which broke check.sh's Release build of the GPU tests.
    std::string s = " convs=";
    for (std::size_t i = 0; i < channels.size(); ++i) {
      if (i > 0)
        s += ',';
      s += std::to_string(channels[i]);
    }
    s += " padding=";
    s += std::to_string(padding);
    return s;
  }
  /// The keys `describe_fields` writes.
  static constexpr std::array<std::string_view, 2> field_keys{"convs", "padding"};
};

/// Shape of a `small_conv_lstm_agent`.
using small_conv_lstm_agent_config = pixel_lstm_agent_config<small_conv_torso_config>;

}  // namespace seedrl
