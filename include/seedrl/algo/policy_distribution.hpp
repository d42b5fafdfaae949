#pragma once
/// \file
/// The action distribution a policy-gradient loss differentiates, as a type parameter of the
/// loss (e.g. `impala_loss<S, Dist>`): what turns a row of policy outputs and the action of
/// that row into log pi(a) and d(coef * log pi(a) + entropy_coef * H) / d(outputs).
///
/// A type `D` models `seedrl::PolicyDistribution<D, S, Batch>` when it provides, for a batch
/// `b` (an `impala_batch`-shaped view: `num_actions` outputs per row in `logits`, int32
/// `actions`, and for continuous actions `raw_actions` with `action_dim` values per row):
///   - `void check(const char* who, const Batch& b) const;` throws std::invalid_argument for a
///     batch it cannot read (beyond the loss's own shape checks);
///   - `S log_prob(const Batch& b, std::size_t row) const;`
///   - `S log_prob_entropy_gradient(const Batch& b, std::size_t row, S log_prob_coef,
///     S entropy_coef, S* grad_row) const;` writes the gradient of row `row`'s outputs
///     (`num_actions` values) and returns the row's entropy.
///
/// Ready: `categorical_distribution` (logits over `num_actions` actions; the default),
/// `diag_gaussian_distribution<S>` (rows of D means then D log-stds, the sampled pre-squash u
/// in `raw_actions`, with the same bounds handling as the sampler that drew u, so that the
/// learner's log pi and the recorded log mu are the same function), and
/// `spec_distribution<S>`, which is one or the other by the batch (spec_sampler's partner).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/net/categorical.hpp"
#include "seedrl/net/diag_gaussian.hpp"

namespace seedrl {

/// A policy distribution over the rows of a batch; see the file comment.
template <class D, class S, class Batch>
concept PolicyDistribution = std::floating_point<S> && std::copy_constructible<D> &&
    requires(const D& d, const Batch& b, std::size_t i, S coef, S* grad) {
  d.check("", b);
  { d.log_prob(b, i) } -> std::same_as<S>;
  { d.log_prob_entropy_gradient(b, i, coef, coef, grad) } -> std::same_as<S>;
};

/// Logits over `num_actions` actions, the action an int32 index (SEED's discrete policies).
struct categorical_distribution {
  template <class Batch>
  void check(const char*, const Batch&) const {}  // the loss checks the actions already

  template <class Batch>
  auto log_prob(const Batch& b, std::size_t i) const {
    const int A = static_cast<int>(b.num_actions);
    return seedrl::log_prob(b.logits.data() + i * b.num_actions, A, static_cast<int>(b.actions[i]));
  }

  template <class Batch, std::floating_point S>
  S log_prob_entropy_gradient(const Batch& b, std::size_t i, S log_prob_coef, S entropy_coef,
                              S* grad_row) const {
    const int A = static_cast<int>(b.num_actions);
    return seedrl::log_prob_entropy_gradient(b.logits.data() + i * b.num_actions, A,
                                             static_cast<int>(b.actions[i]), log_prob_coef,
                                             entropy_coef, grad_row);
  }
};

/// A diagonal Gaussian over D = `action_dim` dimensions, rows of D means then D log-stds
/// (num_actions = 2D), evaluated at the pre-squash sample u in `raw_actions`. With `squash`,
/// log pi carries the tanh correction for the bounds `low`, `high` (D values each), as
/// gaussian_sampler's recorded log mu does; the gradient does not depend on it.
template <std::floating_point S>
struct diag_gaussian_distribution {
  bool squash = false;
  std::vector<S> low;   ///< [D] when squashing
  std::vector<S> high;  ///< [D] when squashing

  template <class Batch>
  void check(const char* who, const Batch& b) const {
    const std::size_t D = b.action_dim;
    const auto fail = [who](const std::string& what) {
      throw std::invalid_argument(std::string(who) + ": " + what);
    };
    if (D == 0 || b.num_actions != 2 * D) {
      fail("a diagonal Gaussian needs num_actions = 2 * action_dim (means then log-stds), got " +
           std::to_string(b.num_actions) + " and " + std::to_string(D));
    }
    if (b.raw_actions.size() != b.actions.size() * D) {
      fail("batch.raw_actions holds " + std::to_string(b.raw_actions.size()) +
           " values, expected (T+1)*B*action_dim = " + std::to_string(b.actions.size() * D));
    }
    if (squash && (low.size() != D || high.size() != D)) {
      fail("tanh squashing needs " + std::to_string(D) + " bounds each, got " +
           std::to_string(low.size()) + " and " + std::to_string(high.size()));
    }
  }

  template <class Batch>
  S log_prob(const Batch& b, std::size_t i) const {
    const std::size_t D = b.action_dim;
    const S* mean = b.logits.data() + i * 2 * D;
    const S* u = b.raw_actions.data() + i * D;
    const int d = static_cast<int>(D);
    return squash ? squashed_diag_gaussian_log_prob(mean, mean + D, u, low.data(), high.data(), d)
                  : diag_gaussian_log_prob(mean, mean + D, u, d);
  }

  template <class Batch>
  S log_prob_entropy_gradient(const Batch& b, std::size_t i, S log_prob_coef, S entropy_coef,
                              S* grad_row) const {
    const std::size_t D = b.action_dim;
    const S* mean = b.logits.data() + i * 2 * D;
    return diag_gaussian_log_prob_entropy_gradient(mean, mean + D, b.raw_actions.data() + i * D,
                                                   static_cast<int>(D), log_prob_coef, entropy_coef,
                                                   grad_row, grad_row + D);
  }
};

/// The categorical distribution for a discrete batch (`action_dim` 0), the diagonal Gaussian
/// `gaussian` for a continuous one: the loss side of `spec_sampler`, so that one loss type
/// serves environments of either kind. `gaussian`'s squash and bounds must be the sampler's.
template <std::floating_point S>
struct spec_distribution {
  diag_gaussian_distribution<S> gaussian{};

  template <class Batch>
  void check(const char* who, const Batch& b) const {
    if (b.action_dim != 0)
      gaussian.check(who, b);
  }

  template <class Batch>
  S log_prob(const Batch& b, std::size_t i) const {
    return b.action_dim == 0 ? static_cast<S>(categorical_distribution().log_prob(b, i))
                             : gaussian.log_prob(b, i);
  }

  template <class Batch>
  S log_prob_entropy_gradient(const Batch& b, std::size_t i, S log_prob_coef, S entropy_coef,
                              S* grad_row) const {
    return b.action_dim == 0
               ? categorical_distribution().log_prob_entropy_gradient(b, i, log_prob_coef,
                                                                      entropy_coef, grad_row)
               : gaussian.log_prob_entropy_gradient(b, i, log_prob_coef, entropy_coef, grad_row);
  }
};

}  // namespace seedrl
