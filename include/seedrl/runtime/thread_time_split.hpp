#pragma once
/// \file
/// Where one thread's time goes, split over a few states (waiting, working, blocked...), and
/// readable by other threads at any moment with the stretch in progress counted up to that
/// moment. Two readings at t1 < t2 then differ by exactly the time spent in each state between
/// t1 and t2, so a state's share of a reporting window lies in [0, 1] however long one stretch
/// lasts. (Crediting a stretch only when it ended gave the window it ended in time from before
/// the window began: progress lines read "busy: inference 110% training 127%".)

#include <array>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <stdexcept>

namespace seedrl {

template <std::size_t N, class Clock = std::chrono::steady_clock>
class thread_time_split;

/// Calls `use(now, seconds...)` with every split's reading at one instant `now`. All splits are
/// locked before the clock is read, so no stretch can have begun after `now`: each split's states
/// then sum to exactly `now` minus its start, and so do differences between two such readings.
/// (Reading the clock first let a thread that had just entered a state start a stretch after
/// `now`; that reading's states summed to more than the wall time, by microseconds.) Needs the
/// threads to use `enter(state)`, which reads the clock under the split's lock.
template <class F, class Clock, std::size_t... N>
void read_at_one_instant(F&& use, const thread_time_split<N, Clock>&... splits) {
  std::scoped_lock lock(splits.mutex_...);
  const auto now = Clock::now();
  use(now, splits.seconds_locked(now)...);
}

/// See the file comment. `N` states, numbered 0..N-1; one thread calls `enter`, any thread may
/// call `seconds`. Time points are passed in, so that tests can use a fake clock.
template <std::size_t N, class Clock>
class thread_time_split {
 public:
  using time_point = typename Clock::time_point;

  thread_time_split(std::size_t initial_state, time_point now)
      : state_(checked(initial_state)), since_(now) {}

  /// Ends the current stretch at `now` and starts one in `state` (the same state is fine).
  void enter(std::size_t state, time_point now) {
    checked(state);
    std::lock_guard lock(mutex_);
    close_stretch(now);
    state_ = state;
  }

  /// As above at `Clock::now()`, read under the lock (what `read_at_one_instant` relies on).
  void enter(std::size_t state) {
    checked(state);
    std::lock_guard lock(mutex_);
    close_stretch(Clock::now());
    state_ = state;
  }

  /// Seconds spent in each state up to `now`, the stretch in progress included. A `now` before
  /// the current stretch began counts that stretch as 0, never negative.
  std::array<double, N> seconds(time_point now) const {
    std::lock_guard lock(mutex_);
    return seconds_locked(now);
  }

  /// The state now.
  std::size_t state() const {
    std::lock_guard lock(mutex_);
    return state_;
  }

 private:
  template <class F, class C, std::size_t... M>
  friend void read_at_one_instant(F&& use, const thread_time_split<M, C>&... splits);

  std::array<double, N> seconds_locked(time_point now) const {
    std::array<double, N> s = totals_;
    if (now > since_)
      s[state_] += std::chrono::duration<double>(now - since_).count();
    return s;
  }

  static std::size_t checked(std::size_t state) {
    if (state >= N)
      throw std::out_of_range("seedrl::thread_time_split: no such state");
    return state;
  }

  void close_stretch(time_point now) {
    if (now > since_) {
      totals_[state_] += std::chrono::duration<double>(now - since_).count();
      since_ = now;
    }
  }

  mutable std::mutex mutex_;
  std::size_t state_;
  time_point since_;
  std::array<double, N> totals_{};
};

}  // namespace seedrl
