#pragma once
/// \file
/// `backend_core_config`: what `backend_agent_trainer` (seedrl/train/agent_trainer.hpp) builds
/// after the torso: the core (an n-layer LSTM or none, optionally fed the reward and the
/// one-hot previous action next to the torso's features) and the policy and value heads.

#include <cstddef>
#include <cstdint>
#include <optional>

namespace seedrl {

/// The core and heads of a backend-trained agent; see the file comment.
struct backend_core_config {
  std::int32_t num_actions = 2;  ///< width of the categorical policy head
  std::ptrdiff_t lstm_size = 0;  ///< 0: no LSTM, the heads read the core input
  std::ptrdiff_t lstm_layers = 1;
  bool reward_and_action_inputs = true;        ///< columns after the torso's features
  std::optional<double> max_abs_input_reward;  ///< clip the reward fed to the core
};

}  // namespace seedrl
