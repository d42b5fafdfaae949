#pragma once
/// \file
/// Learning-rate schedules for the optimizers: constant, or linear decay to zero.
///
/// The position in the schedule is the optimizer's `step_count()` (the number of updates done
/// before the current one), so it is saved and restored with the optimizer's state and a resumed
/// run continues the schedule where it stopped. Step k = 0, 1, ... uses
///   lr_k = base                                   (no decay), or
///   lr_k = base * (1 - k / decay_steps), 0 once k >= decay_steps   (linear decay),
/// which is what PyTorch's `LambdaLR(opt, lambda k: 1 - k / total)` gives when
/// `scheduler.step()` follows every `optimizer.step()`. TorchBeast counts its decay in frames
/// (`1 - min(k * T * B, total_frames) / total_frames`); to reproduce it use
/// `decay_steps = total_frames / (T * B)`.

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace seedrl {

/// A constant or linearly decaying learning rate; see the file comment.
struct lr_schedule {
  double base = 0.0;                        ///< the learning rate of step 0
  std::optional<std::int64_t> decay_steps;  ///< none: constant; n: reaches 0 at step n

  /// Throws `std::invalid_argument` unless `base` is finite and >= 0 and `decay_steps`, when
  /// given, is positive. Optimizers call this from their constructors.
  void validate() const {
    if (!(std::isfinite(base) && base >= 0.0)) {
      throw std::invalid_argument("seedrl: learning rate must be finite and >= 0, got " +
                                  std::to_string(base));
    }
    if (decay_steps && *decay_steps <= 0) {
      throw std::invalid_argument(
          "seedrl: lr decay_steps must be positive (or std::nullopt for a constant learning "
          "rate), got " +
          std::to_string(*decay_steps));
    }
  }

  /// The learning rate of step `step` (0-based: the first update uses `at(0)`). Negative steps
  /// are treated as step 0; steps at or past `decay_steps` give exactly 0.
  [[nodiscard]] double at(std::int64_t step) const {
    if (!decay_steps) {
      return base;
    }
    if (*decay_steps <= 0) {
      validate();  // throws with the message above
    }
    if (step <= 0) {
      return base;
    }
    if (step >= *decay_steps) {
      return 0.0;
    }
    // Same expression and order as the LambdaLR reference: base * (1 - k / total).
    return base * (1.0 - static_cast<double>(step) / static_cast<double>(*decay_steps));
  }
};

}  // namespace seedrl
