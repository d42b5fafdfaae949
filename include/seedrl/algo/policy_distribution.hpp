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
/// and, for losses written over a ComputeBackend (`impala_loss::compute`), which read the rows
/// in the backend's memory from kernels:
///   - `auto row_math() const;` a trivially copyable object whose `SEEDRL_HOST_DEVICE`
///     members `log_prob(const seedrl::policy_rows<S>&, std::size_t row)` and
///     `log_prob_entropy_gradient(rows, row, log_prob_coef, entropy_coef, grad_row)` are the two
///     functions above on a `policy_rows` view. The batch members call them, so host and device
///     run the same per-row math.
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
#include <type_traits>
#include <vector>

#include "seedrl/core/config.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/net/diag_gaussian.hpp"

namespace seedrl {

/// A batch's policy rows as a loss reads them, in host or backend memory: `num_outputs`
/// outputs per row and the int32 action; for continuous actions also the pre-squash sample u
/// (`action_dim` values per row) and, when squashing, the bounds (`action_dim` each; null
/// otherwise). Trivially copyable, so kernels take it by value.
template <class S>
struct policy_rows {
  const S* outputs = nullptr;
  std::size_t num_outputs = 0;
  const std::int32_t* actions = nullptr;
  const S* raw_actions = nullptr;
  std::size_t action_dim = 0;
  const S* low = nullptr;
  const S* high = nullptr;
};

/// A distribution over the rows of a batch; see the file comment.
template <class D, class S, class Batch>
concept PolicyDistribution = std::floating_point<S> && std::copy_constructible<D> &&
    requires(const D& d, const Batch& b, std::size_t i, S coef, S* grad) {
  d.check("", b);
  { d.log_prob(b, i) } -> std::same_as<S>;
  { d.log_prob_entropy_gradient(b, i, coef, coef, grad) } -> std::same_as<S>;
};

/// The per-row math of `categorical_distribution`.
struct categorical_row_math {
  template <class S>
  SEEDRL_HOST_DEVICE S log_prob(const policy_rows<S>& r, std::size_t i) const {
    return seedrl::log_prob(r.outputs + i * r.num_outputs, static_cast<int>(r.num_outputs),
                            static_cast<int>(r.actions[i]));
  }
  template <class S>
  SEEDRL_HOST_DEVICE S log_prob_entropy_gradient(const policy_rows<S>& r, std::size_t i,
                                                 S log_prob_coef, S entropy_coef,
                                                 S* grad_row) const {
    return seedrl::log_prob_entropy_gradient(
        r.outputs + i * r.num_outputs, static_cast<int>(r.num_outputs),
        static_cast<int>(r.actions[i]), log_prob_coef, entropy_coef, grad_row);
  }
};

/// The per-row math of `diag_gaussian_distribution`: rows of D means then D log-stds at u;
/// with `squash`, log pi carries the tanh correction for the rows' bounds.
template <std::floating_point S>
struct diag_gaussian_row_math {
  bool squash = false;

  SEEDRL_HOST_DEVICE S log_prob(const policy_rows<S>& r, std::size_t i) const {
    const std::size_t D = r.action_dim;
    const S* mean = r.outputs + i * 2 * D;
    const S* u = r.raw_actions + i * D;
    const int d = static_cast<int>(D);
    return squash ? squashed_diag_gaussian_log_prob(mean, mean + D, u, r.low, r.high, d)
                  : diag_gaussian_log_prob(mean, mean + D, u, d);
  }
  SEEDRL_HOST_DEVICE S log_prob_entropy_gradient(const policy_rows<S>& r, std::size_t i,
                                                 S log_prob_coef, S entropy_coef,
                                                 S* grad_row) const {
    const std::size_t D = r.action_dim;
    const S* mean = r.outputs + i * 2 * D;
    return diag_gaussian_log_prob_entropy_gradient(mean, mean + D, r.raw_actions + i * D,
                                                   static_cast<int>(D), log_prob_coef, entropy_coef,
                                                   grad_row, grad_row + D);
  }
};

/// The per-row math of `spec_distribution`: categorical rows where `action_dim` is 0.
template <std::floating_point S>
struct spec_row_math {
  diag_gaussian_row_math<S> gaussian{};

  SEEDRL_HOST_DEVICE S log_prob(const policy_rows<S>& r, std::size_t i) const {
    return r.action_dim == 0 ? categorical_row_math().log_prob(r, i) : gaussian.log_prob(r, i);
  }
  SEEDRL_HOST_DEVICE S log_prob_entropy_gradient(const policy_rows<S>& r, std::size_t i,
                                                 S log_prob_coef, S entropy_coef,
                                                 S* grad_row) const {
    return r.action_dim == 0
               ? categorical_row_math().log_prob_entropy_gradient(r, i, log_prob_coef, entropy_coef,
                                                                  grad_row)
               : gaussian.log_prob_entropy_gradient(r, i, log_prob_coef, entropy_coef, grad_row);
  }
};

/// Logits over `num_actions` actions, the action an int32 index (SEED's discrete policies).
struct categorical_distribution {
  template <class Batch>
  void check(const char*, const Batch&) const {}  // the loss checks the actions already

  categorical_row_math row_math() const noexcept { return {}; }

  /// The batch's rows (outputs and actions) as the row math reads them.
  template <class Batch>
  static auto rows(const Batch& b) {
    using S = std::remove_cv_t<typename decltype(b.logits)::element_type>;
    return policy_rows<S>{b.logits.data(), b.num_actions, b.actions.data()};
  }

  template <class Batch>
  auto log_prob(const Batch& b, std::size_t i) const {
    return row_math().log_prob(rows(b), i);
  }

  template <class Batch, std::floating_point S>
  S log_prob_entropy_gradient(const Batch& b, std::size_t i, S log_prob_coef, S entropy_coef,
                              S* grad_row) const {
    return row_math().log_prob_entropy_gradient(rows(b), i, log_prob_coef, entropy_coef, grad_row);
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

  diag_gaussian_row_math<S> row_math() const noexcept { return {squash}; }

  /// The batch's rows as the row math reads them, the bounds this object's (host memory).
  template <class Batch>
  policy_rows<S> rows(const Batch& b) const {
    return {b.logits.data(),
            b.num_actions,
            b.actions.data(),
            b.raw_actions.data(),
            b.action_dim,
            squash ? low.data() : nullptr,
            squash ? high.data() : nullptr};
  }

  template <class Batch>
  S log_prob(const Batch& b, std::size_t i) const {
    return row_math().log_prob(rows(b), i);
  }

  template <class Batch>
  S log_prob_entropy_gradient(const Batch& b, std::size_t i, S log_prob_coef, S entropy_coef,
                              S* grad_row) const {
    return row_math().log_prob_entropy_gradient(rows(b), i, log_prob_coef, entropy_coef, grad_row);
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

  spec_row_math<S> row_math() const noexcept { return {gaussian.row_math()}; }

  template <class Batch>
  policy_rows<S> rows(const Batch& b) const {
    return b.action_dim == 0 ? policy_rows<S>{b.logits.data(), b.num_actions, b.actions.data()}
                             : gaussian.rows(b);
  }

  template <class Batch>
  S log_prob(const Batch& b, std::size_t i) const {
    return row_math().log_prob(rows(b), i);
  }

  template <class Batch>
  S log_prob_entropy_gradient(const Batch& b, std::size_t i, S log_prob_coef, S entropy_coef,
                              S* grad_row) const {
    return row_math().log_prob_entropy_gradient(rows(b), i, log_prob_coef, entropy_coef, grad_row);
  }
};

}  // namespace seedrl
