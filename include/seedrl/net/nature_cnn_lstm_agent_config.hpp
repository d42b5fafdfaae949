#pragma once
/// \file
/// The shape of a `nature_cnn_lstm_agent` (seedrl/net/nature_cnn_lstm_agent.hpp) and the parser
/// of its description, apart from the network so that code which only needs the shape (a GPU
/// trainer compiled by nvcc, a checkpoint reader) does not pull in Eigen.

#include <cstddef>
#include <string_view>
#include <vector>

#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"

namespace seedrl {

/// Shape of a `nature_cnn_lstm_agent` (84x84x4 in, dense 512, LSTM 512 by default).
using nature_cnn_lstm_agent_config = pixel_lstm_agent_config<nature_cnn_config>;

/// Reads what `describe(nature_cnn_lstm_agent_config)` wrote; throws std::invalid_argument
/// naming the bad field.
inline nature_cnn_lstm_agent_config parse_nature_cnn_lstm_agent_description(std::string_view text) {
  return parse_pixel_lstm_agent_description<nature_cnn_config>(
      text, [](nature_cnn_config& t, std::string_view, std::string_view value) {
        std::vector<std::ptrdiff_t> v;
        if (!detail::parse_int_list(value, v) || v.size() != 3)
          return false;
        for (std::size_t i = 0; i < 3; ++i)
          t.channels[i] = v[i];
        return true;
      });
}

}  // namespace seedrl
