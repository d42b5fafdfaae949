#pragma once
/// \file
/// Builds each environment's unroll of `unroll_length + 1` steps, as SEED RL does: step t holds
/// the observation the agent saw, the reward, done and truncated flags that came with it, the
/// previous action, the action taken and its behaviour log-probability. For a continuous action
/// space (D = `action_dim` > 0) the actions are D values each, beside the int32 arrays (which
/// stay zero): the previous action the env got and the raw sample (pre-squash u) taken. When an
/// unroll is complete it is handed out by pointer and the next one starts with a copy of its last
/// `overlap` steps and the recurrent state from before the first of them: SEED's one-step
/// overlap by default (the last step only bootstraps), more for R2D2's sequences, whose first
/// steps are a burn-in (seedrl/algo/r2d2_loss.hpp). Observations come as
/// S or as uint8 frames (widened to S here, in the one copy into the unroll). Unrolls come from a
/// pool allocated up front; the trainer gives them back with `recycle`.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace seedrl {

/// One environment's unroll, `steps` = T + 1 long, plus the state it starts from.
template <std::floating_point S>
struct unroll {
  std::size_t slot = 0;         ///< environment it came from
  std::size_t length = 0;       ///< steps filled so far
  std::vector<S> observations;  ///< [steps, observation_size]
  std::vector<S> rewards;
  std::vector<std::uint8_t> dones;
  std::vector<std::uint8_t> truncated;  ///< the episode ended by a time limit (dones set too)
  std::vector<std::int32_t> prev_actions;
  std::vector<std::int32_t> actions;
  std::vector<S> behaviour_log_probs;
  std::vector<S> prev_env_actions;  ///< [steps, D] continuous: the action the env got before
  std::vector<S> raw_actions;       ///< [steps, D] continuous: the sample taken (pre-squash u)
  /// Parameter version (parameter_store) that chose each step's action: the trainer's version
  /// minus it is the policy lag that V-trace corrects for.
  std::vector<std::uint64_t> behaviour_versions;
  std::vector<S> start_state;  ///< recurrent state before step 0
};

/// See the file comment. `append` and `reset` are called by the inference thread only;
/// `recycle` may come from the trainer thread.
template <std::floating_point S>
class unroll_builder {
 public:
  /// `pool_size` unrolls beyond one per environment bound how many can be queued or in
  /// training at once; `action_dim` is D for continuous actions, else 0; `overlap` steps in
  /// [1, unroll_length] begin each unroll as copies of the previous one's last steps.
  unroll_builder(std::size_t max_envs, std::size_t unroll_length, std::size_t observation_size,
                 std::size_t state_width, std::size_t pool_size, std::size_t action_dim = 0,
                 std::size_t overlap = 1)
      : steps_(unroll_length + 1),
        overlap_(overlap),
        obs_size_(observation_size),
        state_width_(state_width),
        action_dim_(action_dim),
        current_(max_envs, nullptr),
        next_start_(max_envs * state_width) {
    if (unroll_length == 0)
      throw std::invalid_argument("seedrl::unroll_builder: unroll_length must be positive");
    if (overlap == 0 || overlap > unroll_length)
      throw std::invalid_argument(
          "seedrl::unroll_builder: overlap must be in [1, unroll_length = " +
          std::to_string(unroll_length) + "], got " + std::to_string(overlap));
    storage_.resize(max_envs + pool_size);
    for (auto& u : storage_) {
      u.observations.resize(steps_ * obs_size_);
      u.rewards.resize(steps_);
      u.dones.resize(steps_);
      u.truncated.resize(steps_);
      u.prev_actions.resize(steps_);
      u.actions.resize(steps_);
      u.behaviour_log_probs.resize(steps_);
      u.prev_env_actions.resize(steps_ * action_dim_);
      u.raw_actions.resize(steps_ * action_dim_);
      u.behaviour_versions.resize(steps_);
      u.start_state.resize(state_width);
      free_.push_back(&u);
    }
  }

  std::size_t steps() const noexcept { return steps_; }
  std::size_t overlap() const noexcept { return overlap_; }
  std::size_t action_dim() const noexcept { return action_dim_; }

  /// Appends one step for `slot`; `truncated` says the episode that `done` ends was cut by a
  /// time limit (it implies `done`); `behaviour_version` is the parameter version that chose
  /// `action`, `state_before` the recurrent state fed to inference at this step; for
  /// continuous actions `prev_env_action` and `raw_action` hold D values each. Returns the
  /// completed unroll when this step filled it, else nullptr. `state_before` is read only when
  /// needs_state_before(slot) says so and may be empty otherwise; where it is read, a state of
  /// another width throws std::logic_error (the caller did not ask its engine for that row).
  /// Values in each unroll's start state (the network's state size).
  std::size_t state_width() const noexcept { return state_width_; }

  template <class T>
  requires std::same_as<T, S> || std::same_as<T, std::uint8_t> unroll<S>
  *append(std::size_t slot, std::span<const T> observation, S reward, bool done, bool truncated,
          std::int32_t prev_action, std::int32_t action, S behaviour_log_prob,
          std::uint64_t behaviour_version, std::span<const S> state_before,
          std::span<const S> prev_env_action = {}, std::span<const S> raw_action = {}) {
    unroll<S>*& u = current_.at(slot);
    if (needs_state_before(slot) && state_before.size() != state_width_) {
      throw std::logic_error("seedrl::unroll_builder: slot " + std::to_string(slot) +
                             "'s step starts an unroll and came with " +
                             std::to_string(state_before.size()) + " state values, not " +
                             std::to_string(state_width_) +
                             " (its state before the step was not asked for)");
    }
    if (u == nullptr) {
      u = take();
      u->slot = slot;
      u->length = 0;
      std::copy(state_before.begin(), state_before.end(), u->start_state.begin());
    }
    const std::size_t t = u->length;
    if (t == steps_ - overlap_) {  // the next unroll starts here: keep the state before it
      std::copy(state_before.begin(), state_before.end(),
                next_start_.begin() + static_cast<std::ptrdiff_t>(slot * state_width_));
    }
    std::transform(observation.begin(), observation.end(),
                   u->observations.begin() + static_cast<std::ptrdiff_t>(t * obs_size_),
                   [](T x) { return static_cast<S>(x); });
    u->rewards[t] = reward;
    u->dones[t] = done;
    u->truncated[t] = truncated;
    u->prev_actions[t] = prev_action;
    u->actions[t] = action;
    u->behaviour_log_probs[t] = behaviour_log_prob;
    u->behaviour_versions[t] = behaviour_version;
    const auto at = static_cast<std::ptrdiff_t>(t * action_dim_);
    std::copy_n(prev_env_action.begin(), action_dim_, u->prev_env_actions.begin() + at);
    std::copy_n(raw_action.begin(), action_dim_, u->raw_actions.begin() + at);
    if (++u->length < steps_)
      return nullptr;
    unroll<S>* done_unroll = u;
    // The next unroll starts with this one's last `overlap` steps and the state before them.
    u = take();
    u->slot = slot;
    u->length = overlap_;
    std::copy_n(next_start_.begin() + static_cast<std::ptrdiff_t>(slot * state_width_),
                state_width_, u->start_state.begin());
    const std::size_t first = steps_ - overlap_;
    const auto from = [&](std::size_t width) { return static_cast<std::ptrdiff_t>(first * width); };
    std::copy_n(done_unroll->observations.begin() + from(obs_size_), overlap_ * obs_size_,
                u->observations.begin());
    std::copy_n(done_unroll->rewards.begin() + from(1), overlap_, u->rewards.begin());
    std::copy_n(done_unroll->dones.begin() + from(1), overlap_, u->dones.begin());
    std::copy_n(done_unroll->truncated.begin() + from(1), overlap_, u->truncated.begin());
    std::copy_n(done_unroll->prev_actions.begin() + from(1), overlap_, u->prev_actions.begin());
    std::copy_n(done_unroll->actions.begin() + from(1), overlap_, u->actions.begin());
    std::copy_n(done_unroll->behaviour_log_probs.begin() + from(1), overlap_,
                u->behaviour_log_probs.begin());
    std::copy_n(done_unroll->behaviour_versions.begin() + from(1), overlap_,
                u->behaviour_versions.begin());
    std::copy_n(done_unroll->prev_env_actions.begin() + from(action_dim_), overlap_ * action_dim_,
                u->prev_env_actions.begin());
    std::copy_n(done_unroll->raw_actions.begin() + from(action_dim_), overlap_ * action_dim_,
                u->raw_actions.begin());
    return done_unroll;
  }

  /// Drops `slot`'s partial unroll (its actor restarted the env or went away).
  void reset(std::size_t slot) {
    unroll<S>*& u = current_.at(slot);
    if (u != nullptr) {
      recycle(u);
      u = nullptr;
    }
  }

  /// Whether `slot`'s next append reads its state_before: it starts an unroll (none is open) or
  /// is the first of the steps the next unroll repeats (the next starts from the state before
  /// it; with overlap 1, the step that completes the unroll). The inference loop asks its
  /// engine for those rows' states only (agent_step_input::keep_state).
  bool needs_state_before(std::size_t slot) const {
    const unroll<S>* u = current_.at(slot);
    return u == nullptr || u->length == steps_ - overlap_;
  }

  /// Steps collected so far in `slot`'s current unroll.
  std::size_t pending(std::size_t slot) const {
    return current_.at(slot) ? current_.at(slot)->length : 0;
  }

  /// Returns a finished unroll to the pool.
  void recycle(unroll<S>* u) {
    std::lock_guard lock(mutex_);
    free_.push_back(u);
  }

  std::size_t available() const {
    std::lock_guard lock(mutex_);
    return free_.size();
  }

 private:
  unroll<S>* take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
      // Sized so this cannot happen while the training queue applies backpressure.
      throw std::logic_error(
          "seedrl::unroll_builder: unroll pool exhausted; make pool_size at least "
          "(queue capacity + 2) * batch size");
    }
    unroll<S>* u = free_.back();
    free_.pop_back();
    return u;
  }

  std::size_t steps_;
  std::size_t overlap_;
  std::size_t obs_size_;
  std::size_t state_width_;
  std::size_t action_dim_;
  std::vector<unroll<S>> storage_;
  std::vector<unroll<S>*> current_;
  std::vector<unroll<S>*> free_;
  std::vector<S> next_start_;  // [max_envs, state_width]: each slot's next unroll's start state
  mutable std::mutex mutex_;
};

}  // namespace seedrl
