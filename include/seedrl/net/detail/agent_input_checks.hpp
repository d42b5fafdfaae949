#pragma once
/// \file
/// `detail::check_agent_rows`: what every composed agent (actor_critic_agent, backend_agent)
/// checks of a step's or an unroll's per-row inputs before any arithmetic, with the same
/// messages: each array's extent, and each previous action within the action count when the
/// core reads it (a one-hot would otherwise write outside its columns).

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/net/agent_io.hpp"

namespace seedrl::detail {

/// The agent's side of the checks.
struct agent_input_shape {
  const std::string& name;  ///< "seedrl::<name>: ..." in messages
  std::size_t observation_size = 0;
  std::int32_t num_actions = 0;
  std::int32_t continuous_action_size = 0;  ///< D > 0: continuous actions
  bool reward_and_action_inputs = true;
};

/// Throws std::invalid_argument for an array of the wrong extent for n rows and
/// std::out_of_range for a previous action the core cannot read.
template <class S>
void check_agent_rows(const agent_input_shape& a, std::size_t n, std::span<const S> obs,
                      std::span<const S> rewards, std::span<const std::uint8_t> dones,
                      std::span<const std::int32_t> prev_actions,
                      std::span<const S> prev_continuous_actions) {
  check_extent("observations", obs.size(), n * a.observation_size);
  check_extent("rewards", rewards.size(), n);
  check_extent("dones", dones.size(), n);
  if (a.continuous_action_size > 0) {
    // The int32 previous actions mean nothing here: none, or the runtime's zeros.
    if (!prev_actions.empty())
      check_extent("prev_actions", prev_actions.size(), n);
    if (a.reward_and_action_inputs) {
      check_extent("prev_continuous_actions", prev_continuous_actions.size(),
                   n * static_cast<std::size_t>(a.continuous_action_size));
    }
    return;
  }
  check_extent("prev_actions", prev_actions.size(), n);
  if (a.reward_and_action_inputs) {
    for (std::int32_t v : prev_actions) {
      if (v < 0 || v >= a.num_actions) {
        throw std::out_of_range("seedrl::" + a.name + ": previous action " + std::to_string(v) +
                                " is outside [0, " + std::to_string(a.num_actions) + ")");
      }
    }
  }
}

}  // namespace seedrl::detail
