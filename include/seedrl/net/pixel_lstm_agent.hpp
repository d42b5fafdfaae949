#pragma once
/// \file
/// The agent every SEED-style pixel agent shares, over any convolutional feature stack: pixels
/// scaled by `observation_scale` (and moved to CHW if they come HWC), the stack, a dense layer
/// with ReLU, then an LSTM core whose input is the dense output concatenated with the clipped
/// reward and the one-hot previous action, then policy logits and a value. Models
/// seedrl::Network.
///
/// It is a name for a composition (seedrl/net/actor_critic_agent.hpp):
///
///     actor_critic_agent<S, image_observations, dense_torso<S, Torso>, lstm_core<S>,
///                        categorical_head<S>, value_head<S>>
///
/// built from a `pixel_lstm_agent_config<Torso::config_type>`, whose description checkpoints
/// store. Observations are rows of `channels * height * width` scalars holding raw pixel values
/// (0..255: the learner converts uint8 observations to S unchanged); the config's
/// `observation_scale` (1/255 by default, and written in the description) goes to the
/// `image_observations` part. For frame stacks built by the learner wrap the agent in
/// `frame_stacked` (frame_stack.hpp) with `channels` = stack depth x frame channels.
///
/// Ready agents: `nature_cnn_lstm_agent<S>` (nature_cnn_lstm_agent.hpp) and
/// `impala_resnet_lstm_agent<S>` (impala_resnet_lstm_agent.hpp).
///
/// Parameter layout: torso, dense, LSTM, policy, value; initialised in that order.

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/parts/dense_torso.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/lstm_core.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/parts/torso.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"

namespace seedrl {

/// A convolutional feature stack `pixel_lstm_agent` can run: a FeatureStack
/// (seedrl/net/parts/torso.hpp) that also provides
///   - `using config_type = ...;` with `static constexpr std::string_view agent_name`,
///     `std::string describe_fields() const` (" key=value ..." for checkpoints) and
///     `static constexpr std::array<std::string_view, n> field_keys` (the keys it writes);
///   - a constructor `T(const config_type&, channels, height, width)`.
template <class T, class S>
concept PixelTorso =
    FeatureStack<T, S> && std::constructible_from<T, const typename T::config_type&, std::ptrdiff_t,
                                                  std::ptrdiff_t, std::ptrdiff_t> && requires {
  { T::config_type::agent_name } -> std::convertible_to<std::string_view>;
};

/// The composition `pixel_lstm_agent<S, Torso>` names.
template <std::floating_point S, class Torso>
using pixel_lstm_composition = actor_critic_agent<S, image_observations, dense_torso<S, Torso>,
                                                  lstm_core<S>, categorical_head<S>, value_head<S>>;

/// Pixel actor-critic over the feature stack `Torso`; see the file comment.
template <std::floating_point S, class Torso>
requires PixelTorso<Torso, S>
class pixel_lstm_agent : public pixel_lstm_composition<S, Torso> {
  struct checked_tag {};

 public:
  using torso_type = Torso;  ///< the feature stack under the dense layer
  using config_type = pixel_lstm_agent_config<typename Torso::config_type>;

  explicit pixel_lstm_agent(config_type config = {})
      : pixel_lstm_agent(checked(std::move(config)), checked_tag{}) {}

  pixel_lstm_agent(const pixel_lstm_agent&) = default;
  pixel_lstm_agent& operator=(const pixel_lstm_agent&) = delete;
  pixel_lstm_agent(pixel_lstm_agent&&) = delete;  // parts point into the buffers

  const config_type& config() const noexcept { return config_; }

 private:
  pixel_lstm_agent(config_type config, checked_tag)
      : pixel_lstm_composition<S, Torso>(
            agent_options{.num_actions = config.num_actions,
                          .reward_and_action_inputs = true,
                          .max_abs_input_reward = config.max_abs_input_reward,
                          .seed = config.seed,
                          .name = "pixel_lstm_agent"},
            image_observations{.height = config.height,
                               .width = config.width,
                               .channels = config.channels,
                               .channels_last = config.channels_last,
                               .scale = config.observation_scale,
                               .flatten = false},
            dense_torso<S, Torso>(Torso(config.torso, config.channels, config.height, config.width),
                                  dense_torso_options{config.dense_size}),
            lstm_core_options{.hidden_size = config.lstm_size,
                              .num_layers = 1,
                              .forget_bias = config.forget_bias},
            typename categorical_head<S>::options_type{.num_actions = config.num_actions}),
        config_(std::move(config)) {}

  static config_type checked(config_type c) {
    if (c.num_actions <= 0 || c.dense_size <= 0 || c.lstm_size <= 0) {
      throw std::invalid_argument(std::string("seedrl::") +
                                  std::string(Torso::config_type::agent_name) +
                                  ": num_actions, dense_size and lstm_size must be positive");
    }
    return c;
  }

  config_type config_;
};

}  // namespace seedrl
