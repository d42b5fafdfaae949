#pragma once
/// \file
/// The agent every SEED-style pixel agent shares, over any convolutional feature stack: pixels
/// scaled by `observation_scale` (and moved to CHW if they come HWC), the stack, a dense layer
/// with ReLU, then an LSTM core whose input is the dense output concatenated with the clipped
/// reward and the one-hot previous action, then policy logits and a value. Models
/// seedrl::Network.
///
/// Over the library's stacks (`nature_cnn`, `impala_resnet`, `small_conv_pixel_torso`) it is a
/// backend agent (seedrl/net/backend_agent.hpp): `backend_pixel_torso` with a stack of one
/// frame (the scaling and the move to CHW are its input kernel) and `detail::agent_body`, on
/// host_backend, the code the GPU trainer and inference step run. Over a user's own PixelTorso
/// (one without a backend stack, `detail::backend_torso`) it is the composition of CPU parts
///
///     actor_critic_agent<S, image_observations, dense_torso<S, Torso>, lstm_core<S>,
///                        categorical_head<S>, value_head<S>>
///
/// which the backend form starts and computes as. Built from a
/// `pixel_lstm_agent_config<Torso::config_type>`, whose description checkpoints
/// store. Observations are rows of `channels * height * width` scalars holding raw pixel values
/// (0..255: the learner converts uint8 observations to S unchanged); the config's
/// `observation_scale` (1/255 by default, and written in the description) scales them. For frame
/// stacks built by the learner wrap the agent in `frame_stacked` (frame_stack.hpp) with
/// `channels` = stack depth x frame channels.
///
/// Ready agents: `nature_cnn_lstm_agent<S>` (nature_cnn_lstm_agent.hpp),
/// `impala_resnet_lstm_agent<S>` (impala_resnet_lstm_agent.hpp) and `small_conv_lstm_agent<S>`.
///
/// Parameter layout: torso, dense, LSTM, policy, value; initialised in that order.

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/backend_agent.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/parts/dense_torso.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/lstm_core.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/parts/torso.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/train/pixel_torso.hpp"

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

namespace detail {

/// Whether the stack `Torso` has a backend form (`detail::backend_torso` for its config): the
/// library's stacks do.
template <class Torso, class S>
concept backend_pixel_stack = requires {
  typename backend_torso<host_backend, S, typename Torso::config_type>::type;
};

/// The backend agent over a library stack: backend_pixel_torso with a stack of one frame.
template <std::floating_point S, class Torso>
class pixel_backend_agent
    : public backend_agent<S, backend_pixel_torso<host_backend, S, typename Torso::config_type>,
                           frame_stack_config,
                           pixel_lstm_agent_config<typename Torso::config_type>> {
  using torso_part = backend_pixel_torso<host_backend, S, typename Torso::config_type>;
  using base = backend_agent<S, torso_part, frame_stack_config,
                             pixel_lstm_agent_config<typename Torso::config_type>>;

 public:
  explicit pixel_backend_agent(const pixel_lstm_agent_config<typename Torso::config_type>& c)
      : base(
            backend_agent_options{
                .name = "pixel_lstm_agent", .seed = c.seed, .forget_bias = c.forget_bias},
            [](const torso_part& t, random_generator& rng, S* p) { t.init(rng, p); },
            frame_stack_config{.height = c.height,
                               .width = c.width,
                               .channels = c.channels,
                               .depth = 1,
                               .channels_last = c.channels_last},
            c) {}
};

/// The composition of CPU parts over a user's own stack.
template <std::floating_point S, class Torso>
class pixel_parts_agent : public pixel_lstm_composition<S, Torso> {
 public:
  explicit pixel_parts_agent(const pixel_lstm_agent_config<typename Torso::config_type>& c)
      : pixel_lstm_composition<S, Torso>(
            agent_options{.num_actions = c.num_actions,
                          .reward_and_action_inputs = true,
                          .max_abs_input_reward = c.max_abs_input_reward,
                          .seed = c.seed,
                          .name = "pixel_lstm_agent"},
            image_observations{.height = c.height,
                               .width = c.width,
                               .channels = c.channels,
                               .channels_last = c.channels_last,
                               .scale = c.observation_scale,
                               .flatten = false},
            dense_torso<S, Torso>(Torso(c.torso, c.channels, c.height, c.width),
                                  dense_torso_options{c.dense_size}),
            lstm_core_options{
                .hidden_size = c.lstm_size, .num_layers = 1, .forget_bias = c.forget_bias},
            typename categorical_head<S>::options_type{.num_actions = c.num_actions}) {}
};

template <std::floating_point S, class Torso>
using pixel_agent_base =
    std::conditional_t<backend_pixel_stack<Torso, S>, pixel_backend_agent<S, Torso>,
                       pixel_parts_agent<S, Torso>>;

}  // namespace detail

/// Pixel actor-critic over the feature stack `Torso`; see the file comment.
template <std::floating_point S, class Torso>
requires PixelTorso<Torso, S>
class pixel_lstm_agent : public detail::pixel_agent_base<S, Torso> {
 public:
  using torso_type = Torso;  ///< the feature stack under the dense layer
  using config_type = pixel_lstm_agent_config<typename Torso::config_type>;

  explicit pixel_lstm_agent(config_type config = {})
      : detail::pixel_agent_base<S, Torso>(checked(config)), config_(std::move(config)) {}

  pixel_lstm_agent(const pixel_lstm_agent&) = default;
  pixel_lstm_agent& operator=(const pixel_lstm_agent&) = delete;
  pixel_lstm_agent(pixel_lstm_agent&&) = delete;  // parts point into the agent

  const config_type& config() const noexcept { return config_; }

 private:
  static const config_type& checked(const config_type& c) {
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
