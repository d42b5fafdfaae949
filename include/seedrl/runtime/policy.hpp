#pragma once
/// \file
/// An inference-only runtime for a trained agent: give it a network (e.g. restored from a
/// checkpoint) and a number of environments, then call `act` once per step with what the
/// environments returned. It keeps each environment's recurrent state and previous action and
/// resets them where an episode starts, exactly as the learner does during training, so a
/// policy behaves the same in evaluation as it did while it was trained.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/runtime/action_sampler.hpp"  // action_selection

namespace seedrl {

/// See the file comment. `Net` is an agent network with `agent_io.hpp`'s inputs and outputs
/// (e.g. mlp_lstm_agent). Steady-state `act` calls do not allocate.
template <class Net>
class policy {
 public:
  using scalar = typename Net::scalar_type;

  /// Serves `num_envs` environments with `net`'s current parameters; `seed` drives sampling.
  policy(const Net& net, std::size_t num_envs, std::uint64_t seed = 0)
      : net_(net),
        num_envs_(num_envs),
        num_actions_(static_cast<std::size_t>(net.num_actions())),
        state_(net.initial_state(num_envs)),
        prev_actions_(num_envs, 0),
        actions_(num_envs, 0),
        logits_(num_envs * num_actions_),
        values_(num_envs),
        rng_(seed) {
    if (num_envs == 0)
      throw std::invalid_argument("seedrl::policy: num_envs must be positive");
  }

  /// One step for every environment. `observations` is [num_envs, observation_size];
  /// `rewards[i]` came with observation i; `dones[i]` is 1 where observation i starts an
  /// episode (always 1 on the first call), which resets that environment's state. Returns the
  /// actions, valid until the next call.
  std::span<const std::int32_t> act(std::span<const scalar> observations,
                                    std::span<const scalar> rewards,
                                    std::span<const std::uint8_t> dones,
                                    action_selection how = action_selection::greedy) {
    if (rewards.size() != num_envs_ || dones.size() != num_envs_) {
      throw std::invalid_argument("seedrl::policy::act: expected " + std::to_string(num_envs_) +
                                  " rewards and dones, got " + std::to_string(rewards.size()) +
                                  " and " + std::to_string(dones.size()));
    }
    // A new episode has no previous action: the learner feeds 0 there too (env_state_store).
    for (std::size_t i = 0; i < num_envs_; ++i) {
      if (dones[i] != 0)
        prev_actions_[i] = 0;
    }
    agent_step_output<scalar> out{logits_, values_};
    net_.infer({observations, rewards, dones, prev_actions_}, state_, out);
    if (how == action_selection::greedy) {
      argmax_actions<scalar>(logits_, num_envs_, num_actions_, actions_);
    } else {
      sample_actions<scalar>(logits_, num_envs_, num_actions_, rng_, actions_);
    }
    std::copy(actions_.begin(), actions_.end(), prev_actions_.begin());
    return actions_;
  }

  /// The value estimates of the last `act` call, one per environment.
  std::span<const scalar> values() const noexcept { return values_; }

  /// The network the policy runs (its parameters may be replaced, e.g. with newer ones).
  Net& network() noexcept { return net_; }

  std::size_t num_envs() const noexcept { return num_envs_; }

 private:
  Net net_;
  std::size_t num_envs_;
  std::size_t num_actions_;
  typename Net::state_type state_;
  std::vector<std::int32_t> prev_actions_, actions_;
  std::vector<scalar> logits_, values_;
  random_generator rng_;
};

}  // namespace seedrl
