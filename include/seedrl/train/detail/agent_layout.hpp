#pragma once
/// \file
/// `detail::agent_layout`: where each part of a backend agent (a torso, an LSTM core or none,
/// policy and value heads) sits in the flat parameter array, in the CPU agents' order: the
/// torso's parameters, then per LSTM layer W [4H, I + H] and b [4H], the policy layer's
/// (detail::policy_layer: W [A', C_p], b [A'], and D log-stds when state-independent, where
/// A' = A - D), value W [1, C_v] and b [1]. C_p = C_v = C, the core's output, unless the policy
/// and value networks are separate (value_features: C_v = value_features, C_p = C - C_v). One
/// computation for the training step
/// (backend_agent_trainer) and the inference step (backend_agent_step), so both read the same
/// parameter array the CPU network writes.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/train/backend_core_config.hpp"

namespace seedrl::detail {

/// Offsets and widths of a backend agent; see the file comment. Throws std::invalid_argument,
/// naming `who`, for a core config that cannot work.
struct agent_layout {
  std::size_t A = 0;               ///< policy outputs per row
  std::size_t D = 0;               ///< continuous action elements (0: discrete)
  std::size_t H = 0;               ///< LSTM width (0: no LSTM)
  std::size_t L = 0;               ///< LSTM layers (0 when H is 0)
  std::size_t features = 0;        ///< the torso's output width
  std::size_t action_inputs = 0;   ///< previous-action columns: D values, or a one-hot of A
  std::size_t core_in_width = 0;   ///< features, then reward and previous action
  std::size_t core_out_width = 0;  ///< what the heads read: H, or the core input without LSTM
  std::size_t value_in = 0;        ///< the value head's columns (the first of the core output)
  std::size_t policy_col = 0;      ///< the policy head's first column
  std::size_t policy_in = 0;       ///< ... and its width
  std::size_t log_std = 0;         ///< state-independent log-stds (0: none)
  std::size_t num_parameters = 0;
  std::vector<std::size_t> lstm_w, lstm_b;  ///< per layer
  std::size_t policy_w = 0, value_w = 0;    ///< each head's parameters start here

  agent_layout() = default;
  agent_layout(std::size_t torso_parameters, std::size_t torso_features,
               const backend_core_config& core, const std::string& who) {
    if (core.num_actions <= 0 || core.lstm_size < 0 || core.lstm_layers < 0 ||
        core.continuous_action_size < 0 || core.value_features < 0)
      throw std::invalid_argument(who +
                                  ": num_actions must be positive, lstm_size, lstm_layers, "
                                  "continuous_action_size and value_features non-negative");
    A = static_cast<std::size_t>(core.num_actions);
    D = static_cast<std::size_t>(core.continuous_action_size);
    H = static_cast<std::size_t>(core.lstm_size);
    L = H > 0 ? static_cast<std::size_t>(core.lstm_layers) : 0;
    features = torso_features;
    if (D > 0 && A != 2 * D)
      throw std::invalid_argument(
          who + ": continuous actions of " + std::to_string(D) + " elements need 2 * " +
          std::to_string(D) + " policy outputs (means, then log-stds), not " + std::to_string(A));
    if (core.independent_log_std && D == 0)
      throw std::invalid_argument(who + ": a state-independent log-std needs continuous actions");
    action_inputs = D > 0 ? D : A;
    core_in_width = features + (core.reward_and_action_inputs ? 1 + action_inputs : 0);
    std::size_t at = torso_parameters;
    for (std::size_t l = 0; l < L; ++l) {
      lstm_w.push_back(at);
      at += 4 * H * (layer_input(l) + H);
      lstm_b.push_back(at);
      at += 4 * H;
    }
    core_out_width = L > 0 ? H : core_in_width;
    value_in = core_out_width;
    if (core.value_features > 0) {
      value_in = static_cast<std::size_t>(core.value_features);
      if (L > 0 || value_in >= core_out_width)
        throw std::invalid_argument(who + ": separate policy and value networks (value_features " +
                                    std::to_string(value_in) +
                                    ") need no LSTM and fewer value features than the " +
                                    std::to_string(core_out_width) + " core outputs");
      policy_col = value_in;
    }
    policy_in = core_out_width - policy_col;
    log_std = core.independent_log_std ? D : 0;
    policy_w = at;
    at += (A - log_std) * (policy_in + 1) + log_std;
    value_w = at;
    at += value_in + 1;
    num_parameters = at;
  }

  /// Inputs of LSTM layer l: the core input for the first, the layer below's h after.
  std::size_t layer_input(std::size_t l) const noexcept { return l == 0 ? core_in_width : H; }
};

}  // namespace seedrl::detail
