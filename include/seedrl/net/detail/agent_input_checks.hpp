#pragma once
/// \file
/// What every composed agent (actor_critic_agent and the agents built on it) checks of a step or an
/// unroll before any arithmetic, with the same messages: `check_agent_step` and
/// `check_agent_unroll` (the outputs' extents, the state's shape) over `check_agent_rows` (each
/// input array's extent, and each previous action within the action count when the core reads it: a
/// one-hot would otherwise write outside its columns).

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
  std::size_t policy_size = 0;  ///< policy outputs per row
  std::size_t state_size = 0;   ///< one environment's state
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

/// Throws as check_agent_rows does, and for outputs or a state that do not fit the step's rows.
template <class S>
void check_agent_step(const agent_input_shape& a, const agent_step_input<S>& in,
                      const recurrent_state<S>& state, const agent_step_output<S>& out) {
  const std::size_t B = in.rewards.size();
  check_agent_rows<S>(a, B, in.observations, in.rewards, in.dones, in.prev_actions,
                      in.prev_continuous_actions);
  check_extent("infer: logits", out.logits.size(), B * a.policy_size);
  check_extent("infer: values", out.values.size(), B);
  if (state.batch != static_cast<std::ptrdiff_t>(B) ||
      state.width != static_cast<std::ptrdiff_t>(a.state_size)) {
    throw std::invalid_argument("seedrl::" + a.name + "::infer: state is [" +
                                std::to_string(state.batch) + ", " + std::to_string(state.width) +
                                "], expected [" + std::to_string(B) + ", " +
                                std::to_string(a.state_size) + "]");
  }
}

/// Throws as check_agent_rows does, and for a start state or outputs that do not fit.
template <class S>
void check_agent_unroll(const agent_input_shape& a, const agent_unroll_input<S>& in,
                        const agent_unroll_output<S>& out) {
  const std::size_t N = in.steps * in.batch;
  check_agent_rows<S>(a, N, in.observations, in.rewards, in.dones, in.prev_actions,
                      in.prev_continuous_actions);
  check_extent("forward_unroll: start_state", in.start_state.size(), in.batch * a.state_size);
  check_extent("forward_unroll: logits", out.logits.size(), N * a.policy_size);
  check_extent("forward_unroll: values", out.values.size(), N);
}

}  // namespace seedrl::detail
