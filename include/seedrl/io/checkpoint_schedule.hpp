#pragma once
/// \file
/// When a learner saves a checkpoint: every N training steps, every S seconds, and at exit.
///
/// Pure logic over the (step, time) pairs the caller passes in, so that tests drive it with
/// made-up times; `Clock` only supplies the time for the overloads that take none. Nothing is
/// due unless training has moved past the last saved step: an idle learner does not rewrite the
/// same checkpoint, and a run resumed at step k does not save step k again.
///
/// Steps trigger when the step crosses a multiple of `every_steps` (not "N steps after the last
/// save"), so checkpoints land on round steps after a resume and when a caller's step advances
/// by more than one at a time. Any save, whatever its trigger, restarts the timer: the timer
/// bounds how much work a crash can lose.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace seedrl {

/// What `checkpoint_schedule` follows.
struct checkpoint_schedule_config {
  std::optional<std::int64_t> every_steps;  ///< save at each multiple of this step; none: never
  std::optional<double> every_seconds;      ///< save when this long has passed; none: never
  bool at_exit = true;                      ///< save at exit if anything is unsaved
};

/// Why a checkpoint is due (or `none`).
enum class checkpoint_reason { none, steps, time, exit };

/// "steps", "time", ..., for logs.
constexpr const char* to_string(checkpoint_reason r) noexcept {
  switch (r) {
    case checkpoint_reason::none:
      return "none";
    case checkpoint_reason::steps:
      return "steps";
    case checkpoint_reason::time:
      return "time";
    case checkpoint_reason::exit:
      return "exit";
  }
  return "unknown";
}

/// Decides when to save; see the file comment. `Clock` is any std::chrono clock (a test may
/// pass its own).
template <class Clock = std::chrono::steady_clock>
class checkpoint_schedule {
 public:
  using clock = Clock;
  using time_point = typename Clock::time_point;

  /// Starts counting at `start_step` (the step resumed from, else 0) and `start`. Throws
  /// `std::invalid_argument` for a non-positive `every_steps` or `every_seconds`, or a negative
  /// `start_step`.
  explicit checkpoint_schedule(const checkpoint_schedule_config& config,
                               std::int64_t start_step = 0, time_point start = Clock::now())
      : config_(config), last_step_(start_step), last_time_(start) {
    if (config.every_steps && *config.every_steps <= 0) {
      throw std::invalid_argument("seedrl: checkpoint every_steps must be positive, got " +
                                  std::to_string(*config.every_steps));
    }
    if (config.every_seconds &&
        !(std::isfinite(*config.every_seconds) && *config.every_seconds > 0.0)) {
      throw std::invalid_argument(
          "seedrl: checkpoint every_seconds must be finite and positive, "
          "got " +
          std::to_string(*config.every_seconds));
    }
    if (start_step < 0) {
      throw std::invalid_argument("seedrl: checkpoint schedule start step must be >= 0, got " +
                                  std::to_string(start_step));
    }
  }

  /// Whether to save after the training step that brought the count to `step`, at `now`.
  [[nodiscard]] checkpoint_reason due(std::int64_t step, time_point now) const {
    if (step <= last_step_) {
      return checkpoint_reason::none;
    }
    if (config_.every_steps && step / *config_.every_steps > last_step_ / *config_.every_steps) {
      return checkpoint_reason::steps;
    }
    if (config_.every_seconds &&
        std::chrono::duration<double>(now - last_time_).count() >= *config_.every_seconds) {
      return checkpoint_reason::time;
    }
    return checkpoint_reason::none;
  }

  /// `due(step, Clock::now())`.
  [[nodiscard]] checkpoint_reason due(std::int64_t step) const { return due(step, Clock::now()); }

  /// Whether to save when the learner stops at `step`: `exit` if `at_exit` is set and `step` is
  /// past the last saved step.
  [[nodiscard]] checkpoint_reason due_at_exit(std::int64_t step) const {
    return config_.at_exit && step > last_step_ ? checkpoint_reason::exit : checkpoint_reason::none;
  }

  /// Records a save of `step` that finished at `now`; restarts the timer.
  void saved(std::int64_t step, time_point now) {
    last_step_ = step;
    last_time_ = now;
  }

  /// `saved(step, Clock::now())`.
  void saved(std::int64_t step) { saved(step, Clock::now()); }

  /// The step of the last save (or the start step).
  [[nodiscard]] std::int64_t last_saved_step() const noexcept { return last_step_; }

  /// The configuration.
  [[nodiscard]] const checkpoint_schedule_config& config() const noexcept { return config_; }

 private:
  checkpoint_schedule_config config_;
  std::int64_t last_step_;
  time_point last_time_;
};

}  // namespace seedrl
