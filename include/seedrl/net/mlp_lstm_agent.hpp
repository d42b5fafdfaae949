#pragma once
/// \file
/// A ready agent network for vector observations (CartPole, MuJoCo-like tasks), shaped like
/// SEED RL's: an MLP torso with ReLU, then the torso's output concatenated with the reward and
/// the one-hot previous action, then an optional LSTM core, then a policy head (logits; for
/// continuous actions a Gaussian's means and log-stds, the log-stds state-dependent or one
/// state-independent vector: `log_std_init`) and a value head. With
/// `separate_value_network` the torso is two MLPs side by side (backend_mlp_torso's two towers,
/// the value network's first) and each head reads its own (backend_core_config::value_features),
/// the policy head with the reward and previous action after its features; no LSTM then. Models
/// seedrl::Network.
///
/// It is an `actor_critic_agent` (seedrl/net/actor_critic_agent.hpp): the torso
/// `backend_mlp_torso` and `detail::agent_body` on host_backend, the code the GPU trainer and
/// inference step run. Built from an `mlp_lstm_agent_config` (whose description checkpoints
/// store). Parameters: the torso's layers (W then b each), the LSTM layers, the policy layer
/// (then a state-independent log-std vector), the value layer, drawn from one generator seeded
/// with `config.seed` in that order. For another activation compose
/// `actor_critic_agent<S, backend_mlp_torso<host_backend, S, Act>, mlp_lstm_agent_config>` with
/// `mlp_torso_init<S, Act>`; for your own torso, see docs/concepts/trainer.md.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/mlp_lstm_agent_config.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/train/mlp_torso.hpp"

namespace seedrl {

/// Draws an MLP torso's layers (each W then b) as PyTorch's default does, or orthogonal with
/// gain sqrt(2) (`init_scheme::orthogonal`, PPO's choice for continuous control): the torso
/// init of `actor_critic_agent` over `backend_mlp_torso<host_backend, S, Act>`.
template <std::floating_point S, Activation<S> Act = relu_activation>
auto mlp_torso_init(init_scheme scheme = init_scheme::pytorch_default) {
  return [scheme](const backend_mlp_torso<host_backend, S, Act>& torso, random_generator& rng,
                  S* params) {
    const auto gain =
        static_cast<S>(scheme == init_scheme::orthogonal ? orthogonal_hidden_gain : 1.0);
    torso.for_each_layer(params, [&](S* layer, std::size_t out, std::size_t in) {
      init_linear_parameters(rng, layer, static_cast<std::ptrdiff_t>(out),
                             static_cast<std::ptrdiff_t>(in), scheme, gain);
    });
  };
}

/// The composition `mlp_lstm_agent<S>` is.
template <std::floating_point S>
using mlp_lstm_composition =
    actor_critic_agent<S, backend_mlp_torso<host_backend, S>, mlp_lstm_agent_config>;

/// MLP(+LSTM) actor-critic; see the file comment.
template <std::floating_point S = float>
class mlp_lstm_agent : public mlp_lstm_composition<S> {
  struct checked_tag {};

 public:
  explicit mlp_lstm_agent(mlp_lstm_agent_config config = {})
      : mlp_lstm_agent(checked(std::move(config)), checked_tag{}) {}

  mlp_lstm_agent(const mlp_lstm_agent&) = default;
  mlp_lstm_agent& operator=(const mlp_lstm_agent&) = delete;
  mlp_lstm_agent(mlp_lstm_agent&&) = delete;  // parts point at the agent's backends

  const mlp_lstm_agent_config& config() const noexcept { return config_; }
  bool has_lstm() const noexcept { return config_.lstm_size > 0; }

 private:
  mlp_lstm_agent(mlp_lstm_agent_config config, checked_tag)
      : mlp_lstm_composition<S>(agent_options{.name = "mlp_lstm_agent",
                                              .seed = config.seed,
                                              .init = scheme(config),
                                              .forget_bias = config.forget_bias,
                                              .initial_log_std = config.log_std_init.value_or(0.0)},
                                mlp_torso_init<S>(scheme(config)), config),
        config_(std::move(config)) {}

  static init_scheme scheme(const mlp_lstm_agent_config& c) {
    return c.orthogonal_init ? init_scheme::orthogonal : init_scheme::pytorch_default;
  }

  static mlp_lstm_agent_config checked(mlp_lstm_agent_config c) {
    if (c.observation_size <= 0 || c.num_actions <= 0 || c.hidden_sizes.empty() ||
        c.lstm_size < 0 || c.lstm_layers <= 0 || c.continuous_action_size < 0 ||
        (c.log_std_init && (c.continuous_action_size == 0 || !std::isfinite(*c.log_std_init))) ||
        std::any_of(c.hidden_sizes.begin(), c.hidden_sizes.end(),
                    [](std::ptrdiff_t h) { return h <= 0; })) {
      throw std::invalid_argument(
          "seedrl::mlp_lstm_agent: observation_size, num_actions, lstm_layers must be positive, "
          "hidden_sizes non-empty, lstm_size and continuous_action_size >= 0, log_std_init "
          "finite and only with continuous actions");
    }
    if (c.separate_value_network && c.lstm_size > 0) {
      throw std::invalid_argument(
          "seedrl::mlp_lstm_agent: separate policy and value networks need lstm_size 0 (the "
          "heads read the two MLPs' features directly)");
    }
    return c;
  }

  mlp_lstm_agent_config config_;
};

static_assert(Network<mlp_lstm_agent<float>>);
static_assert(Network<mlp_lstm_agent<double>>);

}  // namespace seedrl
