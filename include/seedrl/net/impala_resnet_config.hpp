#pragma once
/// \file
/// The stacks of the IMPALA ResNet torso (seedrl/net/impala_resnet.hpp), apart from the network
/// so that code which only needs the shape (a GPU trainer compiled by nvcc) does not pull in
/// Eigen.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace seedrl {

/// Channels of each stack and residual blocks per stack: (16, 32, 32) and 2 in IMPALA.
struct impala_resnet_config {
  std::vector<std::ptrdiff_t> channels{16, 32, 32};
  std::ptrdiff_t blocks_per_stack = 2;

  /// The name an agent over this torso goes by in checkpoints.
  static constexpr std::string_view agent_name = "impala_resnet_lstm_agent";
  /// This config's part of an agent description, e.g. " stacks=16,32,32 blocks=2".
  std::string describe_fields() const {
    std::string s = " stacks=";
    for (std::size_t i = 0; i < channels.size(); ++i) {
      if (i > 0)
        s += ',';  // appended apart: GCC 12 -O3 warns (-Wrestrict) on "," + std::string
      s += std::to_string(channels[i]);
    }
    s += " blocks=";
    s += std::to_string(blocks_per_stack);
    return s;
  }
  /// The keys `describe_fields` writes.
  static constexpr std::array<std::string_view, 2> field_keys{"stacks", "blocks"};
};

}  // namespace seedrl
