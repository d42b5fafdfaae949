#pragma once
/// \file
/// The learner's per-environment table: recurrent state, previous action, run id and episode
/// statistics for every environment slot, and the allocation of slots to connected actors.
/// An environment's state is reset when its run id changes (the actor restarted it) and its
/// previous action and episode statistics when an episode ends; the network itself zeroes the
/// recurrent state at steps marked done. The previous action is an int32 index for discrete
/// action spaces, D floats (what the env got) for continuous ones. The learner's inference
/// loop builds it with a state width of 0: there the InferenceEngine owns the recurrent states
/// (seedrl/runtime/inference_engine.hpp), and a run-id change resets them through it.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace seedrl {

/// Return and length of an episode the learner saw end.
struct finished_episode {
  std::size_t slot = 0;
  double episode_return = 0.0;
  std::int64_t length = 0;
};

/// What `env_state_store::observe` found out about one incoming step.
struct observe_result {
  bool run_changed = false;  ///< the env was (re)started: drop its partial unroll
  std::optional<finished_episode> finished;
};

/// See the file comment. Not thread-safe: the inference thread owns it, except for slot
/// allocation, which the caller serialises.
template <std::floating_point S>
class env_state_store {
 public:
  /// `action_dim` is D for a continuous action space (a previous action vector per slot), 0
  /// for a discrete one.
  env_state_store(std::size_t max_envs, std::ptrdiff_t state_width, std::size_t action_dim = 0)
      : width_(state_width),
        action_dim_(action_dim),
        states_(max_envs * static_cast<std::size_t>(state_width), S(0)),
        prev_env_actions_(max_envs * action_dim, S(0)),
        slots_(max_envs) {}

  std::size_t capacity() const noexcept { return slots_.size(); }
  std::ptrdiff_t state_width() const noexcept { return width_; }
  std::size_t action_dim() const noexcept { return action_dim_; }

  /// Reserves `k` consecutive free slots and returns the first; nullopt when none fit.
  std::optional<std::size_t> allocate(std::size_t k) {
    std::size_t run = 0;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      run = slots_[i].in_use ? 0 : run + 1;
      if (run == k) {
        const std::size_t first = i + 1 - k;
        for (std::size_t j = first; j <= i; ++j) {
          reset(j);
          slots_[j].in_use = true;
        }
        in_use_ += k;
        return first;
      }
    }
    return std::nullopt;
  }

  /// Frees slots [first, first + k), e.g. when their actor disconnects.
  void release(std::size_t first, std::size_t k) {
    check(first + k - 1);
    for (std::size_t j = first; j < first + k; ++j) {
      reset(j);
      slots_[j].in_use = false;
    }
    in_use_ -= k;
  }

  std::size_t in_use() const noexcept { return in_use_; }

  /// Accounts one step of `slot`: a new run id resets the slot; a done flag closes the episode
  /// (the reward that comes with it is the episode's last) and clears the previous action.
  observe_result observe(std::size_t slot, std::uint64_t run_id, double reward, bool done) {
    check(slot);
    auto& e = slots_[slot];
    observe_result r;
    if (!e.started || e.run_id != run_id) {
      reset(slot);
      e.run_id = run_id;
      e.started = true;
      r.run_changed = true;
      return r;  // the first observation of a run starts it; its reward belongs to no episode
    }
    e.episode_return += reward;
    e.episode_length += 1;
    if (done) {
      r.finished = finished_episode{slot, e.episode_return, e.episode_length};
      e.episode_return = 0.0;
      e.episode_length = 0;
      e.prev_action = 0;
      clear_prev_env_action(slot);
    }
    return r;
  }

  /// The recurrent state row of `slot`.
  std::span<S> state(std::size_t slot) {
    return {states_.data() + slot * static_cast<std::size_t>(width_),
            static_cast<std::size_t>(width_)};
  }

  /// The continuous previous action of `slot` (D values; zero at an episode start).
  std::span<const S> prev_env_action(std::size_t slot) const {
    return {prev_env_actions_.data() + slot * action_dim_, action_dim_};
  }
  void set_prev_env_action(std::size_t slot, std::span<const S> a) {
    std::copy_n(a.begin(), action_dim_,
                prev_env_actions_.begin() + static_cast<std::ptrdiff_t>(slot * action_dim_));
  }

  std::int32_t prev_action(std::size_t slot) const { return slots_[slot].prev_action; }
  void set_prev_action(std::size_t slot, std::int32_t a) { slots_[slot].prev_action = a; }
  std::uint64_t run_id(std::size_t slot) const { return slots_[slot].run_id; }
  bool in_use(std::size_t slot) const { return slots_[slot].in_use; }

 private:
  struct slot_info {
    bool in_use = false;
    bool started = false;
    std::uint64_t run_id = 0;
    std::int32_t prev_action = 0;
    double episode_return = 0.0;
    std::int64_t episode_length = 0;
  };

  void reset(std::size_t slot) {
    auto st = state(slot);
    std::fill(st.begin(), st.end(), S(0));
    auto& e = slots_[slot];
    e.started = false;
    e.prev_action = 0;
    e.episode_return = 0.0;
    e.episode_length = 0;
    clear_prev_env_action(slot);
  }

  void clear_prev_env_action(std::size_t slot) {
    std::fill_n(prev_env_actions_.begin() + static_cast<std::ptrdiff_t>(slot * action_dim_),
                action_dim_, S(0));
  }

  void check(std::size_t slot) const {
    if (slot >= slots_.size()) {
      throw std::out_of_range("seedrl::env_state_store: slot " + std::to_string(slot) +
                              " is outside [0, " + std::to_string(slots_.size()) + ")");
    }
  }

  std::ptrdiff_t width_;
  std::size_t action_dim_;
  std::vector<S> states_;
  std::vector<S> prev_env_actions_;  // [slots, action_dim_]
  std::vector<slot_info> slots_;
  std::size_t in_use_ = 0;
};

}  // namespace seedrl
