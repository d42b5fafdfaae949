#pragma once
/// \file
/// `detail::agent_layout`: where each part of a backend agent (a torso, an LSTM core or none,
/// policy and value heads) sits in the flat parameter array, in the CPU agents' order: the
/// torso's parameters, then per LSTM layer W [4H, I + H] and b [4H], policy W [A, C] and
/// b [A], value W [1, C] and b [1]. One computation for the training step
/// (backend_agent_trainer) and the inference step (backend_agent_step), so both read the same
/// parameter array the CPU network writes.

#include <cstddef>
#include <vector>

#include "seedrl/train/backend_core_config.hpp"

namespace seedrl::detail {

/// Offsets and widths of a backend agent; see the file comment. The core config must have
/// been checked (positive actions, non-negative sizes).
struct agent_layout {
  std::size_t A = 0;               ///< actions
  std::size_t H = 0;               ///< LSTM width (0: no LSTM)
  std::size_t L = 0;               ///< LSTM layers (0 when H is 0)
  std::size_t features = 0;        ///< the torso's output width
  std::size_t core_in_width = 0;   ///< features, then reward and one-hot previous action
  std::size_t core_out_width = 0;  ///< what the heads read: H, or the core input without LSTM
  std::size_t num_parameters = 0;
  std::vector<std::size_t> lstm_w, lstm_b;  ///< per layer
  std::size_t policy_w = 0, policy_b = 0, value_w = 0, value_b = 0;

  agent_layout() = default;
  agent_layout(std::size_t torso_parameters, std::size_t torso_features,
               const backend_core_config& core)
      : A(static_cast<std::size_t>(core.num_actions)),
        H(static_cast<std::size_t>(core.lstm_size)),
        L(H > 0 ? static_cast<std::size_t>(core.lstm_layers) : 0),
        features(torso_features),
        core_in_width(features + (core.reward_and_action_inputs ? 1 + A : 0)) {
    std::size_t at = torso_parameters;
    for (std::size_t l = 0; l < L; ++l) {
      lstm_w.push_back(at);
      at += 4 * H * (layer_input(l) + H);
      lstm_b.push_back(at);
      at += 4 * H;
    }
    core_out_width = L > 0 ? H : core_in_width;
    policy_w = at;
    at += A * core_out_width;
    policy_b = at;
    at += A;
    value_w = at;
    at += core_out_width;
    value_b = at;
    at += 1;
    num_parameters = at;
  }

  /// Inputs of LSTM layer l: the core input for the first, the layer below's h after.
  std::size_t layer_input(std::size_t l) const noexcept { return l == 0 ? core_in_width : H; }
};

}  // namespace seedrl::detail
