#pragma once
/// \file
/// An inference-only runtime for a trained agent: give it a network (e.g. restored from a
/// checkpoint) and a number of environments, then call `act` once per step with what the
/// environments returned. It keeps each environment's recurrent state and previous action and
/// resets them where an episode starts, exactly as the learner does during training, so a
/// policy behaves the same in evaluation as it did while it was trained. A network trained with
/// the learner's observation normalization or reward scaling gets its inputs normalized with
/// the saved statistics, frozen (`normalize_observations`, `scale_rewards`).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/algo/running_mean_std.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/runtime/action_sampler.hpp"  // action_selection
#include "seedrl/runtime/learner_config.hpp"  // the normalization settings

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
    // What the learner's input_normalizer did in training, with its statistics frozen.
    if (obs_stats_) {
      if (observations.size() != num_envs_ * obs_stats_->size()) {
        throw std::invalid_argument("seedrl::policy::act: expected " + std::to_string(num_envs_) +
                                    " observations of " + std::to_string(obs_stats_->size()) +
                                    " values (the normalization statistics' size), got " +
                                    std::to_string(observations.size()) + " values");
      }
      std::copy(observations.begin(), observations.end(), normalized_obs_.begin());
      obs_stats_->normalize(std::span<scalar>(normalized_obs_), num_envs_, obs_how_.clip,
                            obs_how_.epsilon);
      observations = normalized_obs_;
    }
    if (reward_scale_) {
      for (std::size_t i = 0; i < num_envs_; ++i)
        scaled_rewards_[i] = static_cast<scalar>(std::clamp(
            static_cast<double>(rewards[i]) * *reward_scale_, -reward_clip_, reward_clip_));
      rewards = scaled_rewards_;
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

  /// From now on, observations are normalized with `stats` (frozen) before the network sees
  /// them, as the learner did with learner_config::normalize_observations = `how`: for a
  /// network trained so (its checkpoint holds the statistics, see input_normalizer).
  void normalize_observations(running_mean_std stats,
                              const observation_normalization_config& how = {}) {
    if (!(how.clip > 0.0 && how.epsilon > 0.0))
      throw std::invalid_argument(
          "seedrl::policy: observation normalization needs a positive clip and epsilon");
    normalized_obs_.assign(num_envs_ * stats.size(), scalar(0));
    obs_stats_.emplace(std::move(stats));
    obs_how_ = how;
  }

  /// From now on, rewards are scaled by 1 / sqrt(`return_var` + epsilon) and clipped before the
  /// network sees them, as the learner did with learner_config::scale_rewards = `how` and the
  /// variance of the discounted returns it had reached (its checkpoint holds it).
  void scale_rewards(double return_var, const reward_scaling_config& how = {}) {
    if (!(return_var >= 0.0 && std::isfinite(return_var) && how.clip > 0.0 && how.epsilon > 0.0))
      throw std::invalid_argument(
          "seedrl::policy: reward scaling needs a finite non-negative return variance and a "
          "positive clip and epsilon");
    scaled_rewards_.assign(num_envs_, scalar(0));
    reward_scale_ = 1.0 / std::sqrt(return_var + how.epsilon);
    reward_clip_ = how.clip;
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
  // Frozen input normalization (none unless asked for); buffers sized when it is set.
  std::optional<running_mean_std> obs_stats_;
  observation_normalization_config obs_how_;
  std::vector<scalar> normalized_obs_;
  std::optional<double> reward_scale_;
  double reward_clip_ = 0.0;
  std::vector<scalar> scaled_rewards_;
};

}  // namespace seedrl
