#pragma once
/// \file
/// The actor's inner loop: k environments stepped one after another, observations gathered in
/// one contiguous buffer that is sent as is. When an episode ends, the step reports the
/// terminal reward and done flag together with the first observation of the next episode, as
/// SEED RL's actors do, and the environment has already been reset.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/environment.hpp"

namespace seedrl {

/// Return and length of one finished episode.
struct episode_summary {
  std::size_t env_index = 0;
  double episode_return = 0.0;
  std::int64_t length = 0;
  bool truncated = false;  ///< ended by a time limit rather than a terminal state
};

/// Steps `k` environments of type `E` in lockstep. Buffers are allocated once, at
/// construction; `step` does not allocate.
template <class E>
class env_batch {
  static_assert(check_environment<E>());

 public:
  using environment_type = E;
  using observation_type = typename E::observation_type;
  using action_type = typename E::action_type;
  static constexpr bool discrete = std::is_integral_v<action_type>;

  /// Takes ownership of `envs` (at least one, all with the same specs), seeds environment i
  /// with `random_generator::derive(seed, i)` and resets them all.
  env_batch(std::vector<E> envs, std::uint64_t seed) : envs_(std::move(envs)) {
    if (envs_.empty()) {
      throw std::invalid_argument("seedrl::env_batch: needs at least one environment");
    }
    obs_spec_ = envs_.front().observation_spec();
    act_spec_ = envs_.front().action_spec();
    if (obs_spec_.type != dtype_of<observation_type>()) {
      throw std::invalid_argument(std::string("seedrl::env_batch: observation_spec says ") +
                                  to_string(obs_spec_.type) + " but observation_type is " +
                                  to_string(dtype_of<observation_type>()));
    }
    if (discrete != act_spec_.is_discrete()) {
      throw std::invalid_argument(
          "seedrl::env_batch: action_spec kind does not match action_type (integral action_type "
          "needs a discrete spec, std::span<const float> a continuous one)");
    }
    for (std::size_t i = 1; i < envs_.size(); ++i) {
      if (!(envs_[i].observation_spec() == obs_spec_) || !(envs_[i].action_spec() == act_spec_)) {
        throw std::invalid_argument("seedrl::env_batch: environment " + std::to_string(i) +
                                    " has different specs from environment 0");
      }
    }
    obs_size_ = static_cast<std::size_t>(obs_spec_.num_elements());
    action_size_ = discrete ? 1 : static_cast<std::size_t>(act_spec_.shape.num_elements());
    const std::size_t k = envs_.size();
    observations_.resize(k * obs_size_);
    rewards_.assign(k, 0.0f);
    dones_.assign(k, 0);
    truncated_.assign(k, 0);
    episode_steps_.assign(k, 0);
    returns_.assign(k, 0.0);
    finished_.reserve(k);
    for (std::size_t i = 0; i < k; ++i) {
      envs_[i].seed(random_generator::derive(seed, i));
      envs_[i].reset(observation_slot(i));
    }
  }

  /// Builds `k` environments with `make_env(i)`.
  template <class Factory>
  requires std::is_invocable_r_v<E, Factory&, std::size_t>
  static env_batch create(std::size_t k, Factory&& make_env, std::uint64_t seed) {
    std::vector<E> envs;
    envs.reserve(k);
    for (std::size_t i = 0; i < k; ++i) {
      envs.push_back(make_env(i));
    }
    return env_batch(std::move(envs), seed);
  }

  std::size_t size() const noexcept { return envs_.size(); }
  const seedrl::observation_spec& observation_spec() const noexcept { return obs_spec_; }
  const seedrl::action_spec& action_spec() const noexcept { return act_spec_; }

  /// Number of action elements per environment: 1 when discrete.
  std::size_t action_size() const noexcept { return action_size_; }

  /// Steps every environment once. `actions` holds `size()` indices (discrete) or
  /// `size() * action_size()` floats (continuous), environment-major. Every action is checked
  /// before any environment moves, so a bad action leaves the batch untouched.
  void step(std::span<const action_type> actions) requires discrete {
    check_action_count(actions.size());
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (actions[i] < 0 || actions[i] >= act_spec_.num_actions) {
        throw std::out_of_range("seedrl::env_batch::step: action " + std::to_string(actions[i]) +
                                " for environment " + std::to_string(i) + " is outside [0, " +
                                std::to_string(act_spec_.num_actions) + ")");
      }
    }
    finished_.clear();
    for (std::size_t i = 0; i < envs_.size(); ++i) {
      advance(i, actions[i]);
    }
  }

  /// Continuous-action overload; see the discrete one.
  void step(std::span<const float> actions) requires(!discrete) {
    check_action_count(actions.size());
    for (std::size_t j = 0; j < actions.size(); ++j) {
      const double lo = act_spec_.low_at(j % action_size_),
                   hi = act_spec_.high_at(j % action_size_);
      if (!(actions[j] >= lo && actions[j] <= hi)) {
        throw std::out_of_range("seedrl::env_batch::step: action element " + std::to_string(j) +
                                " is " + std::to_string(actions[j]) + ", outside [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "]");
      }
    }
    finished_.clear();
    for (std::size_t i = 0; i < envs_.size(); ++i) {
      advance(i, actions.subspan(i * action_size_, action_size_));
    }
  }

  /// All observations, `[size(), obs_elements]` row-major: after a step that ended an
  /// episode, the row holds the first observation of the next one.
  std::span<const observation_type> observations() const noexcept { return observations_; }
  std::span<const observation_type> observation(std::size_t i) const noexcept {
    return {observations_.data() + i * obs_size_, obs_size_};
  }

  /// Reward of the last step, per environment.
  std::span<const float> rewards() const noexcept { return rewards_; }
  /// 1 where the last step ended an episode (terminated or truncated).
  std::span<const std::uint8_t> dones() const noexcept { return dones_; }
  /// 1 where the last step ended an episode by truncation.
  std::span<const std::uint8_t> truncated() const noexcept { return truncated_; }
  /// Steps taken in each environment's current episode (0 right after a reset).
  std::span<const std::int64_t> episode_steps() const noexcept { return episode_steps_; }
  /// Return accumulated so far in each environment's current episode.
  std::span<const double> episode_returns() const noexcept { return returns_; }
  /// Episodes that ended during the last step.
  std::span<const episode_summary> finished_episodes() const noexcept { return finished_; }

  E& env(std::size_t i) noexcept { return envs_[i]; }

 private:
  std::span<observation_type> observation_slot(std::size_t i) noexcept {
    return {observations_.data() + i * obs_size_, obs_size_};
  }

  void check_action_count(std::size_t n) const {
    if (n != envs_.size() * action_size_) {
      throw std::invalid_argument("seedrl::env_batch::step: got " + std::to_string(n) +
                                  " action elements for " + std::to_string(envs_.size()) +
                                  " environments of " + std::to_string(action_size_) + " each");
    }
  }

  void advance(std::size_t i, action_type action) {
    const step_result r = envs_[i].step(action, observation_slot(i));
    rewards_[i] = static_cast<float>(r.reward);
    dones_[i] = r.done();
    truncated_[i] = r.truncated && !r.terminated;
    returns_[i] += r.reward;
    episode_steps_[i] += 1;
    if (r.done()) {
      finished_.push_back({i, returns_[i], episode_steps_[i], truncated_[i] != 0});
      returns_[i] = 0.0;
      episode_steps_[i] = 0;
      envs_[i].reset(observation_slot(i));
    }
  }

  std::vector<E> envs_;
  seedrl::observation_spec obs_spec_;
  seedrl::action_spec act_spec_;
  std::size_t obs_size_ = 0;
  std::size_t action_size_ = 1;
  std::vector<observation_type> observations_;
  std::vector<float> rewards_;
  std::vector<std::uint8_t> dones_;
  std::vector<std::uint8_t> truncated_;
  std::vector<std::int64_t> episode_steps_;
  std::vector<double> returns_;
  std::vector<episode_summary> finished_;
};

}  // namespace seedrl
