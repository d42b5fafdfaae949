#pragma once
/// \file
/// The core input's reward and previous-action columns as a backend kernel, the one
/// implementation of SEED's episode-start rule for them: `detail::agent_body` (the backend
/// trainer, the inference step and every `actor_critic_agent`, CUDA included) runs it through
/// for_each_2d.

#include <cstddef>
#include <cstdint>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// Writes the reward (clipped to +-max_abs_reward when `clip`) and the previous action into
/// columns [first_col, first_col + 1 + action_inputs) of the core input: (r, k) is row r's
/// column first_col + k, a `for_each_2d` body over rows x (1 + action_inputs).
/// The previous action is a one-hot over `action_inputs` actions (prev_actions), or, with
/// `prev_continuous` set, its `action_inputs` values (row r's at prev_continuous[r *
/// action_inputs]). A row with `dones` (an episode start) gets zeros in all of them: reward 0 and
/// no action, whatever the row carries, so that a finished episode's last reward and action do not
/// leak into the next and action 0 keeps its meaning.
template <class S>
struct reward_action_inputs_kernel {
  S* core_in;
  std::size_t ld;
  std::size_t first_col;
  std::size_t action_inputs;
  const S* rewards;
  const std::uint8_t* dones;
  const std::int32_t* prev_actions;
  bool clip;
  double max_abs_reward;
  const S* prev_continuous = nullptr;

  SEEDRL_HOST_DEVICE void operator()(std::size_t r, std::size_t k) const {
    S* row = core_in + r * ld + first_col;
    if (dones[r] != 0) {
      row[k] = S(0);
    } else if (k == 0) {
      double x = static_cast<double>(rewards[r]);  // clamped in double, as the CPU agent does
      if (clip)
        x = x < -max_abs_reward ? -max_abs_reward : (max_abs_reward < x ? max_abs_reward : x);
      row[0] = static_cast<S>(x);
    } else if (prev_continuous != nullptr) {
      row[k] = prev_continuous[r * action_inputs + (k - 1)];
    } else {
      row[k] = prev_actions[r] == static_cast<std::int32_t>(k - 1) ? S(1) : S(0);
    }
  }
};

}  // namespace seedrl::detail
