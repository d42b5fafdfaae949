#pragma once
/// \file
/// The diagonal Gaussian over `D` action dimensions (a continuous policy head), optionally
/// squashed by tanh into per-dimension bounds.
///
/// Like `categorical.hpp`: per-row math is in `SEEDRL_HOST_DEVICE` functions on raw pointers,
/// shared with CUDA kernels, that neither allocate nor throw and trust their arguments
/// (`D >= 1`; when squashing, finite bounds with low < high). The batch helpers below them work
/// on spans, check sizes and bounds first and throw `std::invalid_argument` before touching
/// any output.
///
/// Layouts. A row's parameters are a pointer to its D means and a pointer to its D log-stds:
///   - state-dependent log-std: the head's row holds D means then D log-stds
///     (`outputs[b * 2D + i]` and `outputs[b * 2D + D + i]`);
///   - state-independent log-std: the head's row holds D means (`outputs[b * D + i]`) and the
///     D log-stds are one parameter vector shared by every row.
/// The row functions serve both: the shared case passes the same log-std pointer for every row
/// (a log-std row stride of 0, see `diag_gaussian_batch::log_std_stride`). The gradient of the
/// shared vector is the sum over rows of the per-row gradients.
///
/// Clamp. Every function uses l = clamp(log_std, -20, 2) (`diag_gaussian_log_std_min/max`):
/// std in [2e-9, 7.4], so exp and 1/std stay finite in float and a collapsing std cannot make
/// the log-prob blow up. The gradient is that of the clamp itself, as `torch.clamp` gives:
/// d l / d log_std = 1 for log_std in [-20, 2] (ends included) and 0 outside, so a log-std
/// beyond the range gets no gradient from the distribution.
///
/// Math per dimension, with s = exp(l) and z = (u - mean) / s:
///   log N(u)        = -z^2 / 2 - l - log(2 pi) / 2
///   H               = 1/2 + log(2 pi) / 2 + l
///   d log N / d mean = z / s,  d log N / d l = z^2 - 1,  d H / d l = 1,  d H / d mean = 0.
/// The row's log-prob and entropy are sums over its D dimensions.
///
/// Bounds. Each dimension has [low, high] (from the action spec), handled one of two ways:
///   - tanh squashing: the sample u is Gaussian and the env gets
///     a = low + (tanh(u) + 1) / 2 * (high - low), inside the bounds. Its log-density is
///       log p(a) = log N(u) - sum_i log(1 - tanh(u_i)^2) - sum_i log((high_i - low_i) / 2),
///     with log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), which stays finite and accurate
///     where 1 - tanh(u)^2 rounds to 0 (|u| > 9 in float, > 19 in double).
///   - clipping: the env gets u clipped to [low, high]; the log-prob is that of the unclipped u.
/// Either way the learner keeps the pre-squash, unclipped sample u and the loss evaluates the
/// log-prob at u. We store u rather than recover it as atanh of the action: atanh amplifies
/// the action's rounding by 1 / (1 - tanh(u)^2) (750 at |u| = 4), in float tanh(u) rounds to
/// +-1 from |u| of about 9, where atanh cannot give u back at all, and the log-prob of a
/// clipped action would be that of a different sample. The squashing correction does not
/// depend on mean or log-std, so the gradients are the same with or without squashing.
/// `tanh_unsquash` exists for actions that did not come from this sampler, with a documented
/// clip.
///
/// Entropy under squashing has no closed form: H(a) = H(u) + E[log |da/du|], an expectation
/// over u. Every entropy here is the Gaussian's, H(u), squashed or not: it is exact,
/// deterministic and has the simple gradient above, so an entropy bonus keeps pushing the
/// std up as it does without squashing. Since log |da/du| <= log((high - low) / 2), the
/// squashed entropy is at most H(u) + sum_i log((high_i - low_i) / 2). A loss that wants an
/// estimate of H(a) itself can use -log p(a) of the sampled actions.

#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"

namespace seedrl {

/// The log-std clamp range (see the file comment).
inline constexpr double diag_gaussian_log_std_min = -20.0;
/// The log-std clamp range (see the file comment).
inline constexpr double diag_gaussian_log_std_max = 2.0;

/// The default clip of `tanh_unsquash`: tanh(u) is kept within 1e-6 of +-1, so |u| <= 7.25
/// (7.248 in float, where 1 - 1e-6 rounds to 1 - 1.01e-6; float's spacing below 1 is 6e-8, so
/// the clip stays clear of 1 and atanh finite).
inline constexpr double tanh_unsquash_epsilon = 1e-6;

/// log std clamped to [diag_gaussian_log_std_min, diag_gaussian_log_std_max]; NaN stays NaN.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S clamp_log_std(S log_std) {
  const S lo = S(diag_gaussian_log_std_min);
  const S hi = S(diag_gaussian_log_std_max);
  return log_std < lo ? lo : (log_std > hi ? hi : log_std);
}

/// d clamp_log_std / d log_std: 1 inside the range, ends included (as torch.clamp), else 0.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S clamp_log_std_gradient(S log_std) {
  return (log_std >= S(diag_gaussian_log_std_min) && log_std <= S(diag_gaussian_log_std_max))
             ? S(1)
             : S(0);
}

namespace detail {

/// log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
template <std::floating_point S>
SEEDRL_HOST_DEVICE S softplus(S x) {
  return (x > S(0) ? x : S(0)) + std::log1p(std::exp(-std::abs(x)));
}

}  // namespace detail

/// log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)); finite for every finite u, where the
/// direct form is log(0) = -inf once tanh(u) rounds to +-1.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S log_one_minus_tanh_squared(S u) {
  return S(2) * (S(0.693147180559945309417) - u - detail::softplus(S(-2) * u));
}

/// log N(u; mean, exp(clamp(log_std))) for one row of D dimensions.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S diag_gaussian_log_prob(const S* mean, const S* log_std, const S* u, int D) {
  S sum = S(0);
  for (int i = 0; i < D; ++i) {
    const S l = clamp_log_std(log_std[i]);
    const S z = (u[i] - mean[i]) * std::exp(-l);
    sum += S(-0.5) * z * z - l;
  }
  return sum - S(D) * S(0.918938533204672741780);  // D * log(2 pi) / 2
}

/// sum_i log |d a_i / d u_i| of the tanh squashing into [low, high]:
/// sum_i log(1 - tanh(u_i)^2) + log((high_i - low_i) / 2).
template <std::floating_point S>
SEEDRL_HOST_DEVICE S tanh_squash_log_det(const S* u, const S* low, const S* high, int D) {
  S sum = S(0);
  for (int i = 0; i < D; ++i) {
    // Halves first: high - low may overflow for finite bounds, their halves' difference not.
    sum += log_one_minus_tanh_squared(u[i]) + std::log(S(0.5) * high[i] - S(0.5) * low[i]);
  }
  return sum;
}

/// log p(a) of the squashed action a = tanh_squash(u): the Gaussian log-prob of the
/// pre-squash sample u minus the squashing's log-determinant.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S squashed_diag_gaussian_log_prob(const S* mean, const S* log_std, const S* u,
                                                     const S* low, const S* high, int D) {
  return diag_gaussian_log_prob(mean, log_std, u, D) - tanh_squash_log_det(u, low, high, D);
}

/// The Gaussian's entropy sum_i (1/2 + log(2 pi)/2 + clamp(log_std_i)), in nats; also what is
/// reported under squashing (see the file comment).
template <std::floating_point S>
SEEDRL_HOST_DEVICE S diag_gaussian_entropy(const S* log_std, int D) {
  S sum = S(0);
  for (int i = 0; i < D; ++i) {
    sum += clamp_log_std(log_std[i]);
  }
  return sum + S(D) * S(1.418938533204672741780);  // D * (1 + log(2 pi)) / 2
}

/// One dimension's log_prob_coef * d log N / d(mean, log_std) + entropy_coef * d H / d log_std,
/// written to `d_mean` and `d_log_std`; the gradient with respect to the unclamped log-std.
template <std::floating_point S>
SEEDRL_HOST_DEVICE void diag_gaussian_dim_gradient(S mean, S log_std, S u, S log_prob_coef,
                                                   S entropy_coef, S& d_mean, S& d_log_std) {
  const S inv_std = std::exp(-clamp_log_std(log_std));
  const S z = (u - mean) * inv_std;
  d_mean = log_prob_coef * z * inv_std;
  d_log_std = (log_prob_coef * (z * z - S(1)) + entropy_coef) * clamp_log_std_gradient(log_std);
}

/// Writes d log N(u) / d mean and d log N(u) / d log_std to `d_mean` and `d_log_std`
/// (D values each). The same with or without squashing: the correction does not depend on them.
template <std::floating_point S>
SEEDRL_HOST_DEVICE void diag_gaussian_log_prob_gradient(const S* mean, const S* log_std, const S* u,
                                                        int D, S* d_mean, S* d_log_std) {
  for (int i = 0; i < D; ++i) {
    diag_gaussian_dim_gradient(mean[i], log_std[i], u[i], S(1), S(0), d_mean[i], d_log_std[i]);
  }
}

/// Writes d H / d log_std (1 inside the clamp range, 0 outside) to `d_log_std` and returns H;
/// d H / d mean is 0.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S diag_gaussian_entropy_gradient(const S* log_std, int D, S* d_log_std) {
  for (int i = 0; i < D; ++i) {
    d_log_std[i] = clamp_log_std_gradient(log_std[i]);
  }
  return diag_gaussian_entropy(log_std, D);
}

/// Writes log_prob_coef * d log N(u) + entropy_coef * d H with respect to the row's means and
/// log-stds and returns H: what a policy-gradient loss with an entropy bonus needs per row.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S diag_gaussian_log_prob_entropy_gradient(const S* mean, const S* log_std,
                                                             const S* u, int D, S log_prob_coef,
                                                             S entropy_coef, S* d_mean,
                                                             S* d_log_std) {
  for (int i = 0; i < D; ++i) {
    diag_gaussian_dim_gradient(mean[i], log_std[i], u[i], log_prob_coef, entropy_coef, d_mean[i],
                               d_log_std[i]);
  }
  return diag_gaussian_entropy(log_std, D);
}

/// Writes the sample u = mean + exp(clamp(log_std)) * noise, for standard normal `noise`
/// (D values; the caller draws them, so kernels can bring their own generator).
template <std::floating_point S>
SEEDRL_HOST_DEVICE void diag_gaussian_sample(const S* mean, const S* log_std, const S* noise, int D,
                                             S* u) {
  for (int i = 0; i < D; ++i) {
    u[i] = mean[i] + std::exp(clamp_log_std(log_std[i])) * noise[i];
  }
}

/// Writes a = low + (tanh(u) + 1) / 2 * (high - low) per dimension (may be the same array as
/// `u`). The result is clamped to [low, high], which rounding could otherwise leave by an ulp.
template <std::floating_point S>
SEEDRL_HOST_DEVICE void tanh_squash(const S* u, const S* low, const S* high, int D, S* action) {
  for (int i = 0; i < D; ++i) {
    const S a = low[i] + (std::tanh(u[i]) + S(1)) * (S(0.5) * high[i] - S(0.5) * low[i]);
    action[i] = a < low[i] ? low[i] : (a > high[i] ? high[i] : a);
  }
}

/// Writes u clipped to [low, high] per dimension (may be the same array as `u`); infinite
/// bounds leave u as it is, and a NaN stays NaN for the caller's check to see.
template <std::floating_point S>
SEEDRL_HOST_DEVICE void clip_to_bounds(const S* u, const S* low, const S* high, int D, S* action) {
  for (int i = 0; i < D; ++i) {
    action[i] = u[i] < low[i] ? low[i] : (u[i] > high[i] ? high[i] : u[i]);
  }
}

/// The inverse of `tanh_squash` for one dimension: atanh(y) of y = 2 (a - low) / (high - low)
/// - 1 clipped to [-1 + epsilon, 1 - epsilon]. Only for actions that did not come with their
/// u: an action at a bound gives back |u| = atanh(1 - epsilon), not the u that produced it.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S tanh_unsquash(S action, S low, S high, S epsilon = S(tanh_unsquash_epsilon)) {
  S y = (action - low) / (S(0.5) * high - S(0.5) * low) - S(1);
  const S limit = S(1) - epsilon;
  y = y < -limit ? -limit : (y > limit ? limit : y);
  return std::atanh(y);
}

/// Where a batch of B Gaussians lives, for the batch helpers below.
enum class log_std_layout {
  state_dependent,    ///< each row of `outputs` is D means then D log-stds
  state_independent,  ///< each row of `outputs` is D means; `shared_log_std` holds D log-stds
};

/// B rows of a Gaussian head's outputs in one of the two layouts (see the file comment).
template <std::floating_point S>
struct diag_gaussian_batch {
  std::span<const S> outputs;         ///< B * row_width() values
  std::span<const S> shared_log_std;  ///< D values when state_independent, else empty
  std::size_t B = 0;                  ///< rows
  std::size_t D = 0;                  ///< action dimensions, >= 1
  log_std_layout layout = log_std_layout::state_dependent;

  /// Values per row of `outputs`: 2D or D.
  std::size_t row_width() const noexcept {
    return layout == log_std_layout::state_dependent ? 2 * D : D;
  }
  /// Distance between consecutive rows' log-stds: 2D, or 0 for the shared vector.
  std::size_t log_std_stride() const noexcept {
    return layout == log_std_layout::state_dependent ? 2 * D : 0;
  }
  /// Row b's D means.
  const S* mean(std::size_t b) const noexcept { return outputs.data() + b * row_width(); }
  /// Row b's D log-stds: row 0's plus b strides (0 for the shared vector).
  const S* log_std(std::size_t b) const noexcept {
    const S* first =
        layout == log_std_layout::state_dependent ? outputs.data() + D : shared_log_std.data();
    return first + b * log_std_stride();
  }
};

/// Per-dimension action bounds (D values each, shared by all rows) and how they are enforced.
template <std::floating_point S>
struct diag_gaussian_bounds {
  std::span<const S> low;   ///< D values; may be -inf unless squashing
  std::span<const S> high;  ///< D values; may be +inf unless squashing
  bool squash = false;      ///< tanh squashing (true) or clipping (false)
};

namespace detail {

/// Checks a batch's shape and returns D as an int for the row functions.
template <std::floating_point S>
int diag_gaussian_check_batch(const char* who, const diag_gaussian_batch<S>& batch) {
  const std::size_t B = batch.B;
  const std::size_t D = batch.D;
  // 2D must fit an int for the state-dependent rows' offsets.
  if (D == 0 || D > static_cast<std::size_t>(std::numeric_limits<int>::max() / 2)) {
    throw std::invalid_argument(std::string(who) + ": D (action dimensions) must be in [1, " +
                                std::to_string(std::numeric_limits<int>::max() / 2) + "], got " +
                                std::to_string(D));
  }
  const std::size_t width = batch.row_width();
  if (B != 0 && width > std::numeric_limits<std::size_t>::max() / B) {
    throw std::invalid_argument(std::string(who) + ": B * row width overflows std::size_t");
  }
  const bool dependent = batch.layout == log_std_layout::state_dependent;
  if (batch.outputs.size() != B * width) {
    throw std::invalid_argument(std::string(who) + ": outputs holds " +
                                std::to_string(batch.outputs.size()) + " values, expected B * " +
                                (dependent ? "2D = " : "D = ") + std::to_string(B) + " * " +
                                std::to_string(width) +
                                (dependent ? " (state-dependent log-std: D means then D log-stds)"
                                           : " (state-independent log-std: D means)"));
  }
  const std::size_t shared = dependent ? 0 : D;
  if (batch.shared_log_std.size() != shared) {
    throw std::invalid_argument(
        std::string(who) + ": shared_log_std holds " + std::to_string(batch.shared_log_std.size()) +
        " values, expected " + std::to_string(shared) +
        (dependent ? " (state-dependent log-std: the log-stds are in outputs)"
                   : " (state-independent log-std: one per dimension)"));
  }
  return static_cast<int>(D);
}

/// Checks that `name` holds `expected` values.
inline void diag_gaussian_check_size(const char* who, const char* name, std::size_t size,
                                     std::size_t expected, const char* what) {
  if (size != expected) {
    throw std::invalid_argument(std::string(who) + ": " + name + " holds " + std::to_string(size) +
                                " values, expected " + what + " = " + std::to_string(expected));
  }
}

/// Checks the bounds: D values each; low <= high and neither NaN; finite with low < high (and
/// a positive half-range) when squashing.
template <std::floating_point S>
void diag_gaussian_check_bounds(const char* who, const diag_gaussian_bounds<S>& bounds,
                                std::size_t D) {
  diag_gaussian_check_size(who, "bounds.low", bounds.low.size(), D, "D");
  diag_gaussian_check_size(who, "bounds.high", bounds.high.size(), D, "D");
  for (std::size_t i = 0; i < D; ++i) {
    const S lo = bounds.low[i];
    const S hi = bounds.high[i];
    const std::string where = std::string(who) + ": bounds of dimension " + std::to_string(i) +
                              " are [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (std::isnan(lo) || std::isnan(hi) || lo > hi) {
      throw std::invalid_argument(where + "; they must be numbers with low <= high");
    }
    if (bounds.squash &&
        (!std::isfinite(lo) || !std::isfinite(hi) || !(S(0.5) * hi - S(0.5) * lo > S(0)))) {
      throw std::invalid_argument(where + "; tanh squashing needs finite bounds with low < high");
    }
  }
}

}  // namespace detail

/// out[b] = log-prob of row b's pre-squash sample u[b * D .. b * D + D): log N(u) when
/// clipping, log p(tanh_squash(u)) when squashing.
template <std::floating_point S>
void diag_gaussian_log_probs(const diag_gaussian_batch<S>& batch,
                             const diag_gaussian_bounds<S>& bounds, std::span<const S> u,
                             std::span<S> out) {
  const char* who = "seedrl::diag_gaussian_log_probs";
  const int d = detail::diag_gaussian_check_batch(who, batch);
  detail::diag_gaussian_check_bounds(who, bounds, batch.D);
  detail::diag_gaussian_check_size(who, "u", u.size(), batch.B * batch.D, "B * D");
  detail::diag_gaussian_check_size(who, "out", out.size(), batch.B, "B");
  for (std::size_t b = 0; b < batch.B; ++b) {
    const S* ub = u.data() + b * batch.D;
    out[b] = bounds.squash
                 ? squashed_diag_gaussian_log_prob(batch.mean(b), batch.log_std(b), ub,
                                                   bounds.low.data(), bounds.high.data(), d)
                 : diag_gaussian_log_prob(batch.mean(b), batch.log_std(b), ub, d);
  }
}

/// out[b] = the Gaussian entropy of row b (also under squashing; see the file comment).
template <std::floating_point S>
void diag_gaussian_entropies(const diag_gaussian_batch<S>& batch, std::span<S> out) {
  const char* who = "seedrl::diag_gaussian_entropies";
  const int d = detail::diag_gaussian_check_batch(who, batch);
  detail::diag_gaussian_check_size(who, "out", out.size(), batch.B, "B");
  for (std::size_t b = 0; b < batch.B; ++b) {
    out[b] = diag_gaussian_entropy(batch.log_std(b), d);
  }
}

/// The gradient of L = sum_b (log_prob_coef[b] * log p_b(u_b) + entropy_coef[b] * H_b) with
/// respect to the head's outputs (same layout as batch.outputs) and, for the state-independent
/// layout, the shared log-std vector (the sum over rows; empty for state-dependent). Squashing
/// does not change it (the correction does not depend on the outputs), so no bounds are needed.
template <std::floating_point S>
void diag_gaussian_gradients(const diag_gaussian_batch<S>& batch, std::span<const S> u,
                             std::span<const S> log_prob_coef, std::span<const S> entropy_coef,
                             std::span<S> grad_outputs, std::span<S> grad_shared_log_std) {
  const char* who = "seedrl::diag_gaussian_gradients";
  const int d = detail::diag_gaussian_check_batch(who, batch);
  const std::size_t D = batch.D;
  detail::diag_gaussian_check_size(who, "u", u.size(), batch.B * D, "B * D");
  detail::diag_gaussian_check_size(who, "log_prob_coef", log_prob_coef.size(), batch.B, "B");
  detail::diag_gaussian_check_size(who, "entropy_coef", entropy_coef.size(), batch.B, "B");
  detail::diag_gaussian_check_size(who, "grad_outputs", grad_outputs.size(), batch.outputs.size(),
                                   "outputs.size()");
  detail::diag_gaussian_check_size(who, "grad_shared_log_std", grad_shared_log_std.size(),
                                   batch.shared_log_std.size(), "shared_log_std.size()");
  const std::size_t width = batch.row_width();
  if (batch.layout == log_std_layout::state_dependent) {
    for (std::size_t b = 0; b < batch.B; ++b) {
      S* g = grad_outputs.data() + b * width;
      diag_gaussian_log_prob_entropy_gradient(batch.mean(b), batch.log_std(b), u.data() + b * D, d,
                                              log_prob_coef[b], entropy_coef[b], g, g + D);
    }
    return;
  }
  for (std::size_t i = 0; i < D; ++i) {
    grad_shared_log_std[i] = S(0);
  }
  for (std::size_t b = 0; b < batch.B; ++b) {
    const S* mean = batch.mean(b);
    for (std::size_t i = 0; i < D; ++i) {
      S d_log_std = S(0);
      diag_gaussian_dim_gradient(mean[i], batch.shared_log_std[i], u[b * D + i], log_prob_coef[b],
                                 entropy_coef[b], grad_outputs[b * width + i], d_log_std);
      grad_shared_log_std[i] += d_log_std;
    }
  }
}

/// Samples every row: writes the pre-squash sample to `u` (what the unroll keeps for the loss)
/// and the env's action, squashed or clipped into the bounds, to `actions` (B * D each). Draws
/// `rng.normal()` B * D times in row-major order, so a seed gives the same samples every run.
template <std::floating_point S>
void sample_diag_gaussian(const diag_gaussian_batch<S>& batch,
                          const diag_gaussian_bounds<S>& bounds, random_generator& rng,
                          std::span<S> u, std::span<S> actions) {
  const char* who = "seedrl::sample_diag_gaussian";
  const int d = detail::diag_gaussian_check_batch(who, batch);
  detail::diag_gaussian_check_bounds(who, bounds, batch.D);
  detail::diag_gaussian_check_size(who, "u", u.size(), batch.B * batch.D, "B * D");
  detail::diag_gaussian_check_size(who, "actions", actions.size(), batch.B * batch.D, "B * D");
  for (std::size_t b = 0; b < batch.B; ++b) {
    S* ub = u.data() + b * batch.D;
    // The noise goes through u itself, which the row function may read and write in place.
    for (std::size_t i = 0; i < batch.D; ++i) {
      ub[i] = static_cast<S>(rng.normal());
    }
    diag_gaussian_sample(batch.mean(b), batch.log_std(b), ub, d, ub);
    S* ab = actions.data() + b * batch.D;
    if (bounds.squash) {
      tanh_squash(ub, bounds.low.data(), bounds.high.data(), d, ab);
    } else {
      clip_to_bounds(ub, bounds.low.data(), bounds.high.data(), d, ab);
    }
  }
}

/// The deterministic action of each row, for evaluation: the mean, squashed or clipped
/// (B * D values). Under squashing that is the median of each dimension's action (tanh is
/// monotonic), the usual choice, though not the squashed density's mode.
template <std::floating_point S>
void diag_gaussian_deterministic_actions(const diag_gaussian_batch<S>& batch,
                                         const diag_gaussian_bounds<S>& bounds,
                                         std::span<S> actions) {
  const char* who = "seedrl::diag_gaussian_deterministic_actions";
  const int d = detail::diag_gaussian_check_batch(who, batch);
  detail::diag_gaussian_check_bounds(who, bounds, batch.D);
  detail::diag_gaussian_check_size(who, "actions", actions.size(), batch.B * batch.D, "B * D");
  for (std::size_t b = 0; b < batch.B; ++b) {
    S* ab = actions.data() + b * batch.D;
    if (bounds.squash) {
      tanh_squash(batch.mean(b), bounds.low.data(), bounds.high.data(), d, ab);
    } else {
      clip_to_bounds(batch.mean(b), bounds.low.data(), bounds.high.data(), d, ab);
    }
  }
}

}  // namespace seedrl
