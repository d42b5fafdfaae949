#pragma once
/// \file
/// Gradient clipping by global L2 norm, as `torch.nn.utils.clip_grad_norm_` (norm_type 2) does:
///   norm = sqrt(sum g^2);  coef = min(max_norm / (norm + 1e-6), 1);  g *= coef
/// The 1e-6 keeps the division finite at norm 0; it also leaves a clipped gradient with a norm
/// slightly below `max_norm`, exactly as in PyTorch (and unlike TF's `clip_by_global_norm`,
/// which divides by max(norm, max_norm)).
///
/// Differences from PyTorch, on purpose:
///   - the norm is accumulated in double whatever the gradient type (PyTorch accumulates in the
///     tensor's type), and finite values whose squares overflow double still give a finite norm;
///   - a NaN or infinite norm throws `std::domain_error` and leaves the gradients untouched,
///     where PyTorch (error_if_nonfinite=False, its default) would scale every gradient to NaN.
///     A non-finite gradient almost always means the loss diverged, and silently writing NaN
///     into the parameters hides where it happened; catch the exception to skip the update.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace seedrl {

/// The constant PyTorch adds to the norm before dividing: coef = max_norm / (norm + 1e-6).
inline constexpr double clip_norm_epsilon = 1e-6;

/// The L2 norm of `values`, accumulated in double. NaN if any value is NaN, +inf if any value is
/// infinite (and none is NaN); otherwise finite, even when squares would overflow double
/// (the sum is then redone scaled by the largest magnitude, as BLAS nrm2 does).
template <std::floating_point S>
[[nodiscard]] double global_norm(std::span<const S> values) {
  double sum = 0.0;
  for (const S v : values) {
    const double d = static_cast<double>(v);
    sum += d * d;
  }
  if (std::isfinite(sum)) {
    return std::sqrt(sum);
  }
  // Slow path, only reached on overflow or non-finite input.
  bool has_inf = false;
  double scale = 0.0;
  for (const S v : values) {
    const double a = std::abs(static_cast<double>(v));
    if (std::isnan(a)) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (std::isinf(a)) {
      has_inf = true;
    } else {
      scale = std::max(scale, a);
    }
  }
  if (has_inf) {
    return std::numeric_limits<double>::infinity();
  }
  double scaled = 0.0;
  for (const S v : values) {
    const double d = static_cast<double>(v) / scale;
    scaled += d * d;
  }
  return scale * std::sqrt(scaled);
}

/// `global_norm` for a mutable span (template deduction does not add the const itself).
template <std::floating_point S>
requires(!std::is_const_v<S>) [[nodiscard]] double global_norm(std::span<S> values) {
  return global_norm(std::span<const S>(values));
}

/// Scales `grads` in place by min(1, max_norm / (norm + 1e-6)) and returns the norm they had
/// before clipping (what PyTorch returns, and what a learner logs).
///
/// Throws `std::invalid_argument` when `max_norm` is not > 0 (NaN included), and
/// `std::domain_error` when the norm is NaN or infinite; in both cases `grads` is unchanged.
/// `max_norm` = +infinity is accepted and never clips.
template <std::floating_point S>
requires(!std::is_const_v<S>) double clip_by_global_norm(std::span<S> grads, double max_norm) {
  if (!(max_norm > 0.0)) {
    throw std::invalid_argument("seedrl: clip_by_global_norm needs max_norm > 0, got " +
                                std::to_string(max_norm) +
                                " (to disable clipping, do not call it)");
  }
  const double norm = global_norm(std::span<const S>(grads));
  if (!std::isfinite(norm)) {
    throw std::domain_error("seedrl: gradient norm is not finite (" + std::to_string(norm) +
                            "); the gradients were left unchanged. A NaN or infinite gradient "
                            "usually means the loss diverged: check the loss inputs or lower "
                            "the learning rate, or catch this to skip the update");
  }
  const double coef = std::min(max_norm / (norm + clip_norm_epsilon), 1.0);
  if (coef < 1.0) {  // multiplying by exactly 1 (what PyTorch does otherwise) changes nothing
    const S c = static_cast<S>(coef);
    for (S& g : grads) {
      g *= c;
    }
  }
  return norm;
}

}  // namespace seedrl
