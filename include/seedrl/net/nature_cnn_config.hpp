#pragma once
/// \file
/// The channel counts of the Nature CNN torso (seedrl/net/nature_cnn.hpp), apart from the
/// network so that code which only needs the shape (a GPU trainer compiled by nvcc) does not
/// pull in Eigen.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace seedrl {

/// Channel counts of the Nature CNN's three convolutions (32, 64, 64 in the paper; tests use
/// tiny ones).
struct nature_cnn_config {
  std::array<std::ptrdiff_t, 3> channels{32, 64, 64};

  /// The name an agent over this torso goes by in checkpoints.
  static constexpr std::string_view agent_name = "nature_cnn_lstm_agent";
  /// This config's part of an agent description, e.g. " convs=32,64,64".
  std::string describe_fields() const {
    return " convs=" + std::to_string(channels[0]) + "," + std::to_string(channels[1]) + "," +
           std::to_string(channels[2]);
  }
  /// The keys `describe_fields` writes.
  static constexpr std::array<std::string_view, 1> field_keys{"convs"};
};

}  // namespace seedrl
