#pragma once
/// \file
/// `backend_core_config`: what `backend_agent_trainer` (seedrl/train/agent_trainer.hpp) builds
/// after the torso: the core (an n-layer LSTM or none, optionally fed the reward and the
/// previous action next to the torso's features) and the policy and value heads, in the
/// terms `actor_critic_agent` (seedrl/net/actor_critic_agent.hpp) is configured by.

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

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
  /// > 0: separate policy and value networks: the value head reads the first value_features
  /// columns of the core output, the policy head the rest (with the reward and previous action
  /// when fed), so a torso with two towers side by side shares no weights between them. Needs
  /// lstm_size 0.
  std::ptrdiff_t value_features = 0;
  std::ptrdiff_t lstm_size = 0;  ///< 0: no LSTM, the heads read the core input
  std::ptrdiff_t lstm_layers = 1;
  bool reward_and_action_inputs = true;        ///< columns after the torso's features
  std::optional<double> max_abs_input_reward;  ///< clip the reward fed to the core
};

namespace detail {
inline std::string shortest_double(double v) {  // round-trips: distinct values, distinct text
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}
}  // namespace detail

/// The core and heads in one line (e.g. "core actions=3 continuous=0 lstm=64x1 reward_action=1
/// max_abs_reward=none log_std=outputs value_features=0"): equal lines, the same
/// core and heads.
inline std::string describe_core(const backend_core_config& c) {
  return "core actions=" + std::to_string(c.num_actions) +
         " continuous=" + std::to_string(c.continuous_action_size) +
         " lstm=" + std::to_string(c.lstm_size) + "x" + std::to_string(c.lstm_layers) +
         " reward_action=" + (c.reward_and_action_inputs ? "1" : "0") + " max_abs_reward=" +
         (c.max_abs_input_reward ? detail::shortest_double(*c.max_abs_input_reward) : "none") +
         " log_std=" + (c.independent_log_std ? "vector" : "outputs") +
         " value_features=" + std::to_string(c.value_features);
}

}  // namespace seedrl
