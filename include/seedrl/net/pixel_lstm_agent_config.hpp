#pragma once
/// \file
/// The shape of a `pixel_lstm_agent` (seedrl/net/pixel_lstm_agent.hpp) over any torso config,
/// its one-line description and the parser for it, apart from the network so that code which
/// only needs the shape (a GPU trainer compiled by nvcc, a checkpoint reader) does not pull in
/// Eigen.

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "seedrl/net/detail/description_fields.hpp"

namespace seedrl {

/// Shape of a pixel agent over a torso with configuration `TorsoConfig`.
template <class TorsoConfig>
struct pixel_lstm_agent_config {
  std::ptrdiff_t height = 84;
  std::ptrdiff_t width = 84;
  std::ptrdiff_t channels = 4;  ///< input channels: frame stack depth x channels per frame
  bool channels_last = false;   ///< observations are H x W x C (else C x H x W)
  std::int32_t num_actions = 6;
  TorsoConfig torso{};
  std::ptrdiff_t dense_size = 512;  ///< ReLU layer between the torso and the LSTM
  std::ptrdiff_t lstm_size = 512;
  double forget_bias = 1.0;
  /// Clip the reward fed to the LSTM (SEED clips Atari rewards to 1); nullopt: feed it raw.
  std::optional<double> max_abs_input_reward = 1.0;
  double observation_scale = 1.0 / 255.0;  ///< pixels times this go into the torso
  std::uint64_t seed = 0;                  ///< initialisation
};

/// The architecture as one line, e.g. "nature_cnn_lstm_agent height=84 width=84 channels=4
/// channels_last=0 actions=6 convs=32,64,64 dense=512 lstm=512 max_abs_input_reward=1
/// scale=0.00392156862745098": stored in checkpoints so that an evaluation program can rebuild
/// the network. Initialisation (seed, forget bias) is left out.
template <class TorsoConfig>
std::string describe(const pixel_lstm_agent_config<TorsoConfig>& c) {
  const auto number = [](double x) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, x);  // shortest round-trip form
    return std::string(buf, r.ptr);
  };
  return std::string(TorsoConfig::agent_name) + " height=" + std::to_string(c.height) +
         " width=" + std::to_string(c.width) + " channels=" + std::to_string(c.channels) +
         " channels_last=" + (c.channels_last ? "1" : "0") +
         " actions=" + std::to_string(c.num_actions) + c.torso.describe_fields() +
         " dense=" + std::to_string(c.dense_size) + " lstm=" + std::to_string(c.lstm_size) +
         " max_abs_input_reward=" +
         (c.max_abs_input_reward ? number(*c.max_abs_input_reward) : std::string("none")) +
         " scale=" + number(c.observation_scale);
}

/// Reads what `describe` wrote for an agent over a torso with configuration `TorsoConfig`;
/// throws std::invalid_argument naming the bad field. `set_torso_field(config, key, value)`
/// returns false when the value is malformed.
template <class TorsoConfig, class SetTorsoField>
pixel_lstm_agent_config<TorsoConfig> parse_pixel_lstm_agent_description(
    std::string_view text, SetTorsoField&& set_torso_field) {
  const std::string_view kind = TorsoConfig::agent_name;
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument("seedrl: bad " + std::string(kind) + " description \"" +
                                 std::string(text) + "\": " + why);
  };
  const auto integer = [&](std::string_view v, std::string_view key) {
    std::int64_t x = 0;
    if (!detail::parse_non_negative(v, x))
      throw fail(std::string(key) + " is not a non-negative integer");
    return x;
  };
  pixel_lstm_agent_config<TorsoConfig> c;
  const std::size_t fields = detail::for_each_description_field(
      text, kind, fail, [&](std::string_view key, std::string_view value) {
        if (key == "height") {
          c.height = static_cast<std::ptrdiff_t>(integer(value, key));
        } else if (key == "width") {
          c.width = static_cast<std::ptrdiff_t>(integer(value, key));
        } else if (key == "channels") {
          c.channels = static_cast<std::ptrdiff_t>(integer(value, key));
        } else if (key == "channels_last") {
          c.channels_last = integer(value, key) != 0;
        } else if (key == "actions") {
          c.num_actions = static_cast<std::int32_t>(integer(value, key));
        } else if (key == "dense") {
          c.dense_size = static_cast<std::ptrdiff_t>(integer(value, key));
        } else if (key == "lstm") {
          c.lstm_size = static_cast<std::ptrdiff_t>(integer(value, key));
        } else if (key == "max_abs_input_reward") {
          if (!detail::parse_optional_double(value, c.max_abs_input_reward))
            throw fail("max_abs_input_reward is not a number");
        } else if (key == "scale") {
          if (!detail::parse_double(value, c.observation_scale))
            throw fail("scale is not a number");
        } else if (std::find(TorsoConfig::field_keys.begin(), TorsoConfig::field_keys.end(), key) !=
                   TorsoConfig::field_keys.end()) {
          if (!set_torso_field(c.torso, key, value))
            throw fail(std::string(key) + " is malformed");
        } else {
          throw fail("unknown field \"" + std::string(key) + "\"");
        }
      });
  const std::size_t want = 9 + TorsoConfig::field_keys.size();
  if (fields != want)
    throw fail("expected " + std::to_string(want) + " fields, got " + std::to_string(fields));
  return c;
}

}  // namespace seedrl
