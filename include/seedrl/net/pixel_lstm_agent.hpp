#pragma once
/// \file
/// The agent every SEED-style pixel agent shares, over any convolutional feature stack: pixels
/// scaled by `observation_scale` (and moved to CHW if they come HWC), the stack, a dense layer
/// with ReLU, then an LSTM core whose input is the dense output concatenated with the clipped
/// reward and the one-hot previous action, then policy logits and a value. Models
/// seedrl::Network.
///
/// It is an `actor_critic_agent` (seedrl/net/actor_critic_agent.hpp): `backend_pixel_torso`
/// with a stack of one frame (the scaling and the move to CHW are its input kernel) and
/// `detail::agent_body`, on host_backend, the code the GPU trainer and inference step run.
/// `Torso` names the convolutional stack: its `config_type` (with `agent_name`) picks the
/// backend stack (`backend_conv_stack<Backend, S, config_type>`, seedrl/net/conv_stack.hpp),
/// the library's or a user's own. Built from a
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

#include <concepts>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/conv_stack.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/train/pixel_torso.hpp"

namespace seedrl {

/// A name for a convolutional stack `pixel_lstm_agent` can run: `using config_type = ...;`
/// whose config has `static constexpr std::string_view agent_name` and a backend stack
/// (`backend_conv_stack<host_backend, S, config_type>`, seedrl/net/conv_stack.hpp, with the
/// config's checkpoint fields).
template <class T, class S>
concept PixelTorso = requires {
  typename backend_conv_stack<host_backend, S, typename T::config_type>::type;
  { T::config_type::agent_name } -> std::convertible_to<std::string_view>;
};

/// The composition `pixel_lstm_agent<S, Torso>` is: the pixel torso (a stack of one frame) over
/// `Torso`'s conv stack.
template <std::floating_point S, class Torso>
using pixel_lstm_composition =
    actor_critic_agent<S, backend_pixel_torso<host_backend, S, typename Torso::config_type>,
                       frame_stack_config, pixel_lstm_agent_config<typename Torso::config_type>>;

/// Pixel actor-critic over the feature stack `Torso`; see the file comment.
template <std::floating_point S, class Torso>
requires PixelTorso<Torso, S>
class pixel_lstm_agent : public pixel_lstm_composition<S, Torso> {
 public:
  using torso_type = Torso;  ///< the feature stack under the dense layer
  using config_type = pixel_lstm_agent_config<typename Torso::config_type>;

  explicit pixel_lstm_agent(config_type config = {})
      : pixel_lstm_composition<S, Torso>(agent_options{.name = "pixel_lstm_agent",
                                                       .seed = checked(config).seed,
                                                       .forget_bias = config.forget_bias},
                                         agent_core(config),
                                         frame_stack_config{.height = config.height,
                                                            .width = config.width,
                                                            .channels = config.channels,
                                                            .depth = 1,
                                                            .channels_last = config.channels_last},
                                         config),
        config_(std::move(config)) {}

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

  static backend_core_config agent_core(const config_type& c) {
    return backend_pixel_torso<host_backend, S, typename Torso::config_type>::core_config({}, c);
  }

  config_type config_;
};

}  // namespace seedrl
