#pragma once
/// \file
/// The learner's counters behind one lock, written by its pieces (the actor server, the
/// inference loop, the training loop) and read whole by learner::stats(). One lock, not one per
/// piece, so that a snapshot never mixes counters from different moments (a checkpoint stores
/// frames, episodes and training steps together).

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "seedrl/runtime/learner_stats.hpp"

namespace seedrl::detail {

/// See the file comment.
class stats_board {
 public:
  /// Calls `change(stats)` under the lock; keep it short (it runs on the per-batch path).
  template <class F>
  void update(F&& change) {
    std::lock_guard lock(mutex_);
    change(stats_);
  }

  /// A consistent copy.
  learner_stats read() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  mutable std::mutex mutex_;
  learner_stats stats_;
};

/// Mean return and length of the last 100 episodes, as a ring with running sums: O(1) and
/// allocation-free per episode.
class episode_window {
 public:
  void add(double episode_return, double length) noexcept {
    if (counted_ == returns_.size()) {
      returns_sum_ -= returns_[next_];
      lengths_sum_ -= lengths_[next_];
    } else {
      ++counted_;
    }
    returns_[next_] = episode_return;
    lengths_[next_] = length;
    returns_sum_ += episode_return;
    lengths_sum_ += length;
    next_ = (next_ + 1) % returns_.size();
  }

  /// Writes the means into `s` once there is an episode.
  void report(learner_stats& s) const noexcept {
    if (counted_ == 0)
      return;
    s.mean_return = returns_sum_ / static_cast<double>(counted_);
    s.mean_episode_length = lengths_sum_ / static_cast<double>(counted_);
    s.returns_counted = counted_;
  }

 private:
  std::array<double, 100> returns_{}, lengths_{};
  std::size_t counted_ = 0, next_ = 0;
  double returns_sum_ = 0.0, lengths_sum_ = 0.0;
};

}  // namespace seedrl::detail
