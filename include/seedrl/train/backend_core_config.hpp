#pragma once
/// \file
/// `backend_core_config`: what `backend_agent_trainer` (seedrl/train/agent_trainer.hpp) builds
/// after the torso: the core (an n-layer LSTM or none, optionally fed the reward and the
/// previous action next to the torso's features) and the policy and value heads, in the
/// terms of `actor_critic_agent`'s options (seedrl/net/actor_critic_agent.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>

namespace seedrl {

/// The core and heads of a backend-trained agent; see the file comment.
struct backend_core_config {
  /// The policy's outputs per row: logits of a categorical policy, or 2D for a diagonal
  /// Gaussian over D continuous dimensions (D means then D log-stds).
  std::int32_t num_actions = 2;
  /// D > 0: continuous actions of D elements; the previous action enters the core as its D
  /// values instead of a one-hot, and num_actions must be 2D. 0: discrete.
  std::int32_t continuous_action_size = 0;
  /// Continuous actions only: true, the log-stds are one parameter vector of D values after the
  /// policy layer's (`detail::policy_layer`); false, the policy layer outputs them.
  bool independent_log_std = false;
  /// > 0: separate policy and value networks (agent_options::value_features): the value head
  /// reads the first value_features columns of the core output, the policy head the rest.
  /// Needs lstm_size 0.
  std::ptrdiff_t value_features = 0;
  std::ptrdiff_t lstm_size = 0;  ///< 0: no LSTM, the heads read the core input
  std::ptrdiff_t lstm_layers = 1;
  bool reward_and_action_inputs = true;        ///< columns after the torso's features
  std::optional<double> max_abs_input_reward;  ///< clip the reward fed to the core
};

}  // namespace seedrl
