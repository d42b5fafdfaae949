#pragma once
/// \file
/// The IMPALA ResNet + LSTM agent: `impala_resnet` (stacks of 16, 32, 32 channels with two
/// residual blocks each) on frame stacks scaled by 1/255, dense 256 with ReLU, an LSTM 256 fed
/// the dense output, the clipped reward and the one-hot previous action, then policy logits
/// and a value. Models seedrl::Network; see pixel_lstm_agent.hpp for the shared parts and
/// frame_stack.hpp for stacking single frames on the learner.

#include <string_view>
#include <vector>

#include "seedrl/net/impala_resnet.hpp"
#include "seedrl/net/pixel_lstm_agent.hpp"

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

/// IMPALA ResNet + LSTM actor-critic; see the file comment.
template <std::floating_point S = float>
using impala_resnet_lstm_agent = pixel_lstm_agent<S, impala_resnet<S>>;

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

static_assert(Network<impala_resnet_lstm_agent<float>>);
static_assert(Network<impala_resnet_lstm_agent<double>>);

}  // namespace seedrl
