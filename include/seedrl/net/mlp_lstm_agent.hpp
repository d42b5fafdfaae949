#pragma once
/// \file
/// A ready agent network for vector observations (CartPole, MuJoCo-like tasks), shaped like
/// SEED RL's: an MLP torso with ReLU, then the torso's output concatenated with the reward and
/// the one-hot previous action, then an optional LSTM core, then a policy head (logits; for
/// continuous actions a Gaussian's means and log-stds, the log-stds state-dependent or one
/// state-independent vector: `log_std_init`) and a value head. With
/// `separate_value_network` the torso is two MLPs side by side (mlp_torso's `towers = 2`, the
/// value network's first) and each head reads its own (agent_options::value_features), the
/// policy head with the reward and previous action after its features; no LSTM then. Models
/// seedrl::Network.
///
/// It is a name for a composition (seedrl/net/actor_critic_agent.hpp):
///
///     actor_critic_agent<S, vector_observations, mlp_torso<S>, lstm_core<S>,
///                        spec_policy_head<S>, value_head<S>>
///
/// built from an `mlp_lstm_agent_config` (whose description checkpoints store). Its parameter
/// layout and initialisation order are the composition's: torso layers, LSTM layers, policy,
/// value, drawn from one generator seeded with `config.seed`. For other activations, a
/// feed-forward core or your own torso, compose the parts directly.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/mlp_lstm_agent_config.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/lstm_core.hpp"
#include "seedrl/net/parts/mlp_torso.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/parts/spec_policy_head.hpp"

namespace seedrl {

/// The composition `mlp_lstm_agent<S>` names.
template <std::floating_point S>
using mlp_lstm_composition = actor_critic_agent<S, vector_observations, mlp_torso<S>, lstm_core<S>,
                                                spec_policy_head<S>, value_head<S>>;

/// MLP(+LSTM) actor-critic; see the file comment.
template <std::floating_point S = float>
class mlp_lstm_agent : public mlp_lstm_composition<S> {
  struct checked_tag {};

 public:
  explicit mlp_lstm_agent(mlp_lstm_agent_config config = {})
      : mlp_lstm_agent(checked(std::move(config)), checked_tag{}) {}

  mlp_lstm_agent(const mlp_lstm_agent&) = default;
  mlp_lstm_agent& operator=(const mlp_lstm_agent&) = delete;
  mlp_lstm_agent(mlp_lstm_agent&&) = delete;  // parts point into the buffers: keep them put

  const mlp_lstm_agent_config& config() const noexcept { return config_; }
  bool has_lstm() const noexcept { return this->core().has_lstm(); }

 private:
  mlp_lstm_agent(mlp_lstm_agent_config config, checked_tag)
      : mlp_lstm_composition<S>(
            agent_options{.num_actions = config.num_actions,
                          .reward_and_action_inputs = config.reward_and_action_inputs,
                          .max_abs_input_reward = config.max_abs_input_reward,
                          .seed = config.seed,
                          .name = "mlp_lstm_agent",
                          .continuous_action_size = config.continuous_action_size,
                          .value_features = config.separate_value_network
                                                ? config.hidden_sizes.back()
                                                : std::ptrdiff_t{0}},
            vector_observations{config.observation_size},
            mlp_torso<S>(mlp_torso_options{.input_size = config.observation_size,
                                           .widths = config.hidden_sizes,
                                           .init = scheme(config),
                                           .towers = config.separate_value_network ? 2 : 1}),
            lstm_core_options{.hidden_size = config.lstm_size,
                              .num_layers = config.lstm_layers,
                              .forget_bias = config.forget_bias},
            typename spec_policy_head<S>::options_type{
                .num_outputs = config.num_actions,
                .independent_log_std_size = config.log_std_init ? config.continuous_action_size : 0,
                .initial_log_std = config.log_std_init.value_or(0.0),
                .init = scheme(config)},
            typename value_head<S>::options_type{.init = scheme(config)}),
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
