#pragma once
/// \file
/// The categorical distribution over one row of `A` logits (a discrete policy head).
///
/// Per-row math is in `SEEDRL_HOST_DEVICE` functions taking raw pointers, so that the CUDA
/// kernels run the same arithmetic the CPU tests check; they neither allocate nor throw, and
/// they trust their arguments (`A >= 1`, `0 <= action < A`). The batch helpers below them
/// work on spans of `B` rows stored one after another (`logits[b * A + i]`), check sizes and
/// actions first and throw `std::invalid_argument` before touching any output.
///
/// Every function subtracts the row's maximum before exponentiating, so logits of any
/// magnitude give finite results (a naive softmax overflows from about 89 in float).
///
/// Gradients, with p = softmax(z), log p_i = z_i - logsumexp(z), H = -sum_i p_i log p_i:
///   d log p_a / d z_j = [j == a] - p_j                  (d log p_i / d z_j = [i == j] - p_j)
///   d H / d z_j       = -p_j (log p_j + H)
/// The second follows from d p_i / d z_j = p_i ([i == j] - p_j):
///   dH/dz_j = -sum_i (dp_i/dz_j) log p_i - sum_i dp_i/dz_j
///           = -p_j log p_j + p_j sum_i p_i log p_i - 0      (sum_i p_i = 1, so its derivative is
///           0) = -p_j (log p_j + H).

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"

namespace seedrl {

/// Index of the largest logit; ties go to the lowest index so the choice is deterministic.
template <std::floating_point S>
SEEDRL_HOST_DEVICE int argmax(const S* logits, int A) {
  int best = 0;
  for (int i = 1; i < A; ++i) {
    if (logits[i] > logits[best]) {
      best = i;
    }
  }
  return best;
}

/// sum_i exp(z_i - m) for the row maximum m = `max_logit`: at least 1 (the maximum's own
/// term) and at most A, so neither it nor its log overflows or underflows.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S shifted_exp_sum(const S* logits, int A, S max_logit) {
  S sum = S(0);
  for (int i = 0; i < A; ++i) {
    sum += std::exp(logits[i] - max_logit);
  }
  return sum;
}

/// log(sum_i exp(z_i)), as m + log(sum_i exp(z_i - m)) with m the row maximum.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S log_sum_exp(const S* logits, int A) {
  const S m = logits[argmax(logits, A)];
  return m + std::log(shifted_exp_sum(logits, A, m));
}

/// Writes log softmax(z) to `out` (may be the same array as `logits`). Formed as
/// (z_i - m) - log(sum_j exp(z_j - m)) rather than z_i - logsumexp(z): with large logits,
/// rounding logsumexp to the logits' magnitude would cost absolute accuracy (in float, up to
/// 3e-5 at |z| = 1000), while z_i - m is exact for nearby values.
template <std::floating_point S>
SEEDRL_HOST_DEVICE void log_softmax(const S* logits, int A, S* out) {
  const S m = logits[argmax(logits, A)];
  const S log_sum = std::log(shifted_exp_sum(logits, A, m));
  for (int i = 0; i < A; ++i) {
    out[i] = (logits[i] - m) - log_sum;
  }
}

/// Writes softmax(z) to `out` (may be the same array as `logits`); exp of the log-softmax, so
/// probabilities and log-probabilities agree with `log_softmax`.
template <std::floating_point S>
SEEDRL_HOST_DEVICE void softmax(const S* logits, int A, S* out) {
  log_softmax(logits, A, out);
  for (int i = 0; i < A; ++i) {
    out[i] = std::exp(out[i]);
  }
}

/// log pi(action) for the row, the same value `log_softmax` gives at `action`.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S log_prob(const S* logits, int A, int action) {
  const S m = logits[argmax(logits, A)];
  return (logits[action] - m) - std::log(shifted_exp_sum(logits, A, m));
}

/// Entropy H = -sum_i p_i log p_i, in nats. Written as logsumexp - sum_i p_i z_i on shifted
/// logits, which needs no scratch array and stays finite when some p_i underflow to 0 (a
/// naive p log p would give 0 * -inf = NaN there).
template <std::floating_point S>
SEEDRL_HOST_DEVICE S entropy(const S* logits, int A) {
  const S m = logits[argmax(logits, A)];
  S sum = S(0);
  S weighted = S(0);
  for (int i = 0; i < A; ++i) {
    const S shifted = logits[i] - m;
    const S e = std::exp(shifted);
    sum += e;
    weighted += e * shifted;
  }
  return std::log(sum) - weighted / sum;
}

/// Writes d log pi(action) / d z = onehot(action) - softmax(z) to `grad` (not `logits`).
template <std::floating_point S>
SEEDRL_HOST_DEVICE void log_prob_gradient(const S* logits, int A, int action, S* grad) {
  softmax(logits, A, grad);
  for (int i = 0; i < A; ++i) {
    grad[i] = (i == action ? S(1) : S(0)) - grad[i];
  }
}

/// Writes dH / d z = -p * (log p + H) to `grad` (not `logits`) and returns H.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S entropy_gradient(const S* logits, int A, S* grad) {
  log_softmax(logits, A, grad);
  S h = S(0);
  for (int i = 0; i < A; ++i) {
    h -= std::exp(grad[i]) * grad[i];
  }
  for (int i = 0; i < A; ++i) {
    const S logp = grad[i];
    grad[i] = -std::exp(logp) * (logp + h);
  }
  return h;
}

/// Writes log_prob_coef * d log pi(action)/dz + entropy_coef * dH/dz to `grad` (not `logits`)
/// and returns H: what a policy-gradient loss with an entropy bonus needs per row, in one
/// log-softmax pass and without scratch memory (`grad` holds the log-probabilities meanwhile).
template <std::floating_point S>
SEEDRL_HOST_DEVICE S log_prob_entropy_gradient(const S* logits, int A, int action, S log_prob_coef,
                                               S entropy_coef, S* grad) {
  log_softmax(logits, A, grad);
  S h = S(0);
  for (int i = 0; i < A; ++i) {
    h -= std::exp(grad[i]) * grad[i];
  }
  for (int i = 0; i < A; ++i) {
    const S logp = grad[i];
    const S p = std::exp(logp);
    const S d_log_prob = (i == action ? S(1) : S(0)) - p;
    const S d_entropy = -p * (logp + h);
    grad[i] = log_prob_coef * d_log_prob + entropy_coef * d_entropy;
  }
  return h;
}

/// Draws an action by inverting the CDF of softmax(z) at `u` in [0, 1): the first i whose
/// cumulative weight exceeds u * (total weight). Weights are unnormalised exp(z_i - max), so no
/// division is needed; an action whose weight underflows to 0 is never chosen. If rounding
/// leaves u * total at or above the final sum, the last action with non-zero weight is taken.
template <std::floating_point S>
SEEDRL_HOST_DEVICE int sample_action(const S* logits, int A, S u) {
  const S m = logits[argmax(logits, A)];
  const S target = u * shifted_exp_sum(logits, A, m);
  S cumulative = S(0);
  int last_positive = 0;
  for (int i = 0; i < A; ++i) {
    const S w = std::exp(logits[i] - m);
    cumulative += w;
    if (w > S(0)) {
      last_positive = i;
    }
    if (cumulative > target) {
      return i;
    }
  }
  return last_positive;
}

namespace detail {

/// Checks the shape of a batch of logits rows and returns A as an int for the row functions.
inline int categorical_check_rows(const char* who, std::size_t logits_size, std::size_t B,
                                  std::size_t A, std::size_t per_row_size,
                                  const char* per_row_name) {
  if (A == 0 || A > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument(std::string(who) + ": num_actions must be in [1, INT_MAX], got " +
                                std::to_string(A));
  }
  if (B != 0 && A > std::numeric_limits<std::size_t>::max() / B) {
    throw std::invalid_argument(std::string(who) + ": B * A overflows std::size_t");
  }
  if (logits_size != B * A) {
    throw std::invalid_argument(std::string(who) + ": logits holds " + std::to_string(logits_size) +
                                " values, expected B * A = " + std::to_string(B) + " * " +
                                std::to_string(A));
  }
  if (per_row_size != B) {
    throw std::invalid_argument(std::string(who) + ": " + per_row_name + " holds " +
                                std::to_string(per_row_size) +
                                " values, expected B = " + std::to_string(B));
  }
  return static_cast<int>(A);
}

/// Checks every action against [0, A) before any output is written.
inline void categorical_check_actions(const char* who, std::span<const std::int32_t> actions,
                                      std::size_t A) {
  for (std::size_t b = 0; b < actions.size(); ++b) {
    if (actions[b] < 0 || static_cast<std::size_t>(actions[b]) >= A) {
      throw std::invalid_argument(std::string(who) + ": action " + std::to_string(actions[b]) +
                                  " at row " + std::to_string(b) + " is outside [0, " +
                                  std::to_string(A) + ")");
    }
  }
}

}  // namespace detail

/// out[b] = log pi_b(actions[b]) for B rows of A logits.
template <std::floating_point S>
void categorical_log_probs(std::span<const S> logits, std::size_t B, std::size_t A,
                           std::span<const std::int32_t> actions, std::span<S> out) {
  const char* who = "seedrl::categorical_log_probs";
  const int a = detail::categorical_check_rows(who, logits.size(), B, A, actions.size(), "actions");
  detail::categorical_check_rows(who, logits.size(), B, A, out.size(), "out");
  detail::categorical_check_actions(who, actions, A);
  for (std::size_t b = 0; b < B; ++b) {
    out[b] = log_prob(logits.data() + b * A, a, static_cast<int>(actions[b]));
  }
}

/// out[b] = entropy of row b, for B rows of A logits.
template <std::floating_point S>
void categorical_entropy(std::span<const S> logits, std::size_t B, std::size_t A,
                         std::span<S> out) {
  const int a = detail::categorical_check_rows("seedrl::categorical_entropy", logits.size(), B, A,
                                               out.size(), "out");
  for (std::size_t b = 0; b < B; ++b) {
    out[b] = entropy(logits.data() + b * A, a);
  }
}

/// Samples one action per row from softmax(logits), drawing one `rng.uniform()` per row in
/// row order, so a given seed gives the same actions on every compiler and platform.
template <std::floating_point S>
void sample_actions(std::span<const S> logits, std::size_t B, std::size_t A, random_generator& rng,
                    std::span<std::int32_t> actions) {
  const int a = detail::categorical_check_rows("seedrl::sample_actions", logits.size(), B, A,
                                               actions.size(), "actions");
  for (std::size_t b = 0; b < B; ++b) {
    // u < 1 in double can round up to 1 in float; the fallback in sample_action covers it.
    const S u = static_cast<S>(rng.uniform());
    actions[b] = static_cast<std::int32_t>(sample_action(logits.data() + b * A, a, u));
  }
}

/// The greedy action of each row (lowest index on ties), for evaluation.
template <std::floating_point S>
void argmax_actions(std::span<const S> logits, std::size_t B, std::size_t A,
                    std::span<std::int32_t> actions) {
  const int a = detail::categorical_check_rows("seedrl::argmax_actions", logits.size(), B, A,
                                               actions.size(), "actions");
  for (std::size_t b = 0; b < B; ++b) {
    actions[b] = static_cast<std::int32_t>(argmax(logits.data() + b * A, a));
  }
}

}  // namespace seedrl
