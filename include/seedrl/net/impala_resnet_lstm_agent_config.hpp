#pragma once
/// \file
/// The shape of an `impala_resnet_lstm_agent` (seedrl/net/impala_resnet_lstm_agent.hpp), its
/// defaults and the parser of its description, apart from the network so that code which only
/// needs the shape (a GPU trainer compiled by nvcc, a checkpoint reader) does not pull in Eigen.

#include <cstddef>
#include <string_view>
#include <vector>

#include "seedrl/net/impala_resnet_config.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"

namespace seedrl {

/// Shape of an `impala_resnet_lstm_agent`.
using impala_resnet_lstm_agent_config = pixel_lstm_agent_config<impala_resnet_config>;

/// IMPALA's sizes: dense 256 and LSTM 256 (the config's defaults are the Nature agent's 512).
inline impala_resnet_lstm_agent_config impala_resnet_lstm_agent_defaults() {
  impala_resnet_lstm_agent_config c;
  c.dense_size = 256;
  c.lstm_size = 256;
  return c;
}

/// Reads what `describe(impala_resnet_lstm_agent_config)` wrote; throws std::invalid_argument
/// naming the bad field.
inline impala_resnet_lstm_agent_config parse_impala_resnet_lstm_agent_description(
    std::string_view text) {
  return parse_pixel_lstm_agent_description<impala_resnet_config>(
      text, [](impala_resnet_config& t, std::string_view key, std::string_view value) {
        if (key == "stacks")
          return detail::parse_int_list(value, t.channels) && !t.channels.empty();
        std::vector<std::ptrdiff_t> v;
        if (!detail::parse_int_list(value, v) || v.size() != 1)
          return false;
        t.blocks_per_stack = v[0];
        return true;
      });
}

}  // namespace seedrl
