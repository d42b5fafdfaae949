#pragma once
/// \file
/// SEED RL's IMPALA loss, for a discrete (categorical) policy by default: V-trace targets from the
/// learner's and the actors' log-probabilities, then a policy-gradient term, a value
/// regression term and an entropy bonus, with their gradient w.r.t. the network's outputs
/// (policy logits and values). It models `seedrl::Loss`. The action distribution is a type
/// parameter (seedrl/algo/policy_distribution.hpp): `diag_gaussian_distribution<S>` reads rows
/// of means and log-stds and the continuous actions' raw samples instead, with the same formulas
/// below for log pi and H.
///
/// Time alignment is SEED's `compute_loss` (agents/vtrace/learner.py). An unroll has T+1 steps
/// t = 0..T; step t holds the env output the agent saw (reward and done that came with it) and
/// the action it then took. For t in [0, T):
///   log pi(a_t) from logits[t], log mu(a_t) = behaviour_log_probs[t],
///   r_t = rewards[t+1] (optionally clipped to +-max_abs_reward),
///   gamma_t = discount * (1 - dones[t+1]), V_t = values[t], bootstrap = values[T].
/// Step T only supplies the bootstrap value and the reward/done of the last transition.
///
/// With N = T * B and (vs, pg_adv) = V-trace(log pi - log mu, gamma, r, V, bootstrap):
///   policy   = -(1/N) sum log pi(a_t) * pg_adv_t
///   baseline = baseline_cost * 0.5 * (1/N) sum (vs_t - V_t)^2
///   entropy  = -entropy_cost * (1/N) sum H(pi_t)
///   total    = policy + baseline + entropy
/// vs and pg_adv are constants for differentiation (SEED's tf.stop_gradient), so
///   d total / d logits[t] = -(pg_adv_t / N) (onehot(a_t) - p_t) - (entropy_cost / N) dH/dz
///   d total / d values[t] = -baseline_cost (vs_t - V_t) / N
/// and both are 0 at step T: the bootstrap value only enters through vs and pg_adv.
///
/// Time-limit truncation. truncated[t+1] set means the env output after a_t ended the episode
/// by a time limit, not by reaching a terminal state (dones[t+1] is set too, so recurrent state
/// still resets there). The right target, r_t + discount * V(s_final), needs the episode's final
/// observation, which the automatic reset has replaced (seedrl/env/env_batch.hpp), and
/// gamma_t = 0 would wrongly treat the timeout as a terminal state. So transition t is left
/// out, as if the unroll ended there:
///   vs_t = V_t and pg_adv_t = 0: no policy-gradient and no baseline term or gradient from t;
///   V-trace's recursion restarts at t: step t-1 bootstraps from V_t with acc_t = 0.
/// Its entropy term stays: H(pi_t) depends on the state s_t only, which is a real state of the
/// episode, so regularising the policy there is as valid as anywhere. N stays T * B: dividing
/// by the number of kept steps instead would make each transition's weight depend on how many
/// others in the batch hit a time limit, and the entropy term, which keeps every step, shares
/// the denominator. Cut steps are rare (one per episode at most), so the policy and baseline
/// terms shrink by that share only. gamma_t of a cut step does not matter. truncated[0] is
/// never read (its transition belongs to the unroll before).

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss_config.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/vtrace.hpp"
#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/detail/impala_math.hpp"
#include "seedrl/net/categorical.hpp"

namespace seedrl {

/// A training batch as views, time-major [(T+1)][B] (logits [(T+1)][B][A]); see the file
/// comment for how steps line up.
template <std::floating_point S = float>
struct impala_batch {
  std::size_t T = 0;                       ///< unroll length; the arrays hold T+1 steps
  std::size_t B = 0;                       ///< number of unrolls
  std::size_t num_actions = 0;             ///< A, logits per row
  std::span<const S> logits;               ///< [(T+1)*B*A] the learner's policy logits
  std::span<const S> values;               ///< [(T+1)*B] the learner's value estimates
  std::span<const std::int32_t> actions;   ///< [(T+1)*B] action taken at step t
  std::span<const S> behaviour_log_probs;  ///< [(T+1)*B] log mu(a_t) when the actor acted
  std::span<const S> rewards;              ///< [(T+1)*B] reward in the env output of step t
  std::span<const std::uint8_t> dones;  ///< [(T+1)*B] nonzero: step t's env output ended an episode
  /// [(T+1)*B] nonzero: step t's env output ended the episode by a time limit (dones is set
  /// too); transition t-1 is then left out of the loss (see the file comment)
  std::span<const std::uint8_t> truncated;
  /// Continuous actions (diag_gaussian_distribution): [(T+1)*B*action_dim] the pre-squash
  /// samples taken; `actions` then holds zeros. Empty for discrete actions.
  std::span<const S> raw_actions = {};
  std::size_t action_dim = 0;  ///< D for continuous actions, else 0
};

/// Where the loss writes d(total)/d(outputs); same shapes as the batch's logits and values.
/// Every element is written (not accumulated); the rows of step T are zero.
template <std::floating_point S = float>
struct impala_gradients {
  std::span<S> logits;  ///< [(T+1)*B*A]
  std::span<S> values;  ///< [(T+1)*B]
};

/// Pointers of one `impala_loss::compute` call, in a backend's memory: a time-major
/// [(T+1)][B] batch as `impala_batch` holds it (its policy rows as `policy_rows`, the logits
/// in `policy.outputs`) and where the gradients go. The caller has checked the batch (sizes,
/// actions, truncated steps done) on the host: kernels trust it.
template <class S>
struct impala_loss_operands {
  int T = 0;
  int B = 0;
  policy_rows<S> policy;  ///< [(T+1)*B] rows of policy.num_outputs outputs (A)
  const S* values = nullptr;
  const S* behaviour_log_probs = nullptr;
  const S* rewards = nullptr;
  const std::uint8_t* dones = nullptr;
  /// [(T+1)*B] nonzero: step t's env output ended the episode by a time limit; required
  const std::uint8_t* truncated = nullptr;
  S* grad_logits = nullptr;  ///< out [(T+1)*B*A]
  S* grad_values = nullptr;  ///< out [(T+1)*B]
};

/// The scratch a loss's `compute` uses on backend `Backend`, grown on demand (keep one to reuse
/// it between calls): `RowArrays` arrays of n = T*B scalars and `TermArrays` arrays of n
/// doubles, each row's loss terms before they are summed.
template <class Backend, class S, std::size_t RowArrays, std::size_t TermArrays>
struct loss_workspace {
  typename Backend::template buffer<S> rows;
  typename Backend::template buffer<double> terms;

  void reserve(const Backend& be, std::size_t n) {
    if (rows.size() < RowArrays * n) {
      rows = be.template allocate<S>(RowArrays * n);
      terms = be.template allocate<double>(TermArrays * n);
    }
  }
};

/// `impala_loss::compute`'s scratch: 6 arrays of scalars, 3 of terms.
template <class Backend, class S>
using impala_loss_workspace = loss_workspace<Backend, S, 6, 3>;

namespace detail {

/// The checks shared by the losses over an `impala_batch`-shaped batch of categorical-policy
/// unrolls (impala_loss, ppo_loss), named `who` in their messages: sizes, actions of steps
/// 0..T-1, truncation flags, overlaps. `scratch_arrays` arrays of T * B scalars must fit.
template <class Batch, class Grad>
void check_unroll_batch(const char* who, const Batch& batch, const Grad& grad,
                        std::size_t scratch_arrays) {
  using S = std::remove_const_t<typename decltype(batch.values)::element_type>;
  const auto fail = [who](const std::string& what) {
    throw std::invalid_argument(std::string(who) + ": " + what);
  };
  const std::size_t T = batch.T;
  const std::size_t B = batch.B;
  const std::size_t A = batch.num_actions;
  if (T == 0 || B == 0) {
    fail("T and B must be positive (an unroll has T+1 >= 2 steps), got T = " + std::to_string(T) +
         ", B = " + std::to_string(B));
  }
  if (A == 0 || A > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    fail("num_actions must be in [1, INT_MAX], got " + std::to_string(A));
  }
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  if (T + 1 > max / B || (T + 1) * B > max / A || T * B > max / scratch_arrays) {
    fail("(T + 1) * B * num_actions overflows std::size_t");
  }
  const std::size_t steps = (T + 1) * B;
  const auto size = [&](std::size_t got, std::size_t expected, const char* name,
                        const char* shape) {
    if (got != expected) {
      fail(std::string(name) + " holds " + std::to_string(got) + " values, expected " + shape +
           " = " + std::to_string(expected) + " (T = " + std::to_string(T) +
           ", B = " + std::to_string(B) + ", A = " + std::to_string(A) + ")");
    }
  };
  size(batch.logits.size(), steps * A, "batch.logits", "(T+1)*B*A");
  size(batch.values.size(), steps, "batch.values", "(T+1)*B");
  size(batch.actions.size(), steps, "batch.actions", "(T+1)*B");
  size(batch.behaviour_log_probs.size(), steps, "batch.behaviour_log_probs", "(T+1)*B");
  size(batch.rewards.size(), steps, "batch.rewards", "(T+1)*B");
  size(batch.dones.size(), steps, "batch.dones", "(T+1)*B");
  size(batch.truncated.size(), steps, "batch.truncated", "(T+1)*B");
  size(grad.logits.size(), steps * A, "grad.logits", "(T+1)*B*A");
  size(grad.values.size(), steps, "grad.values", "(T+1)*B");
  detail::impala_check_truncated_done(batch.truncated.data(), batch.dones.data(), steps, B, who);
  // Step T's action is never used (its transition is in the next unroll), so only
  // steps 0..T-1 must hold valid actions.
  for (std::size_t i = 0; i < T * B; ++i) {
    const std::int32_t a = batch.actions[i];
    if (a < 0 || static_cast<std::size_t>(a) >= A) {
      fail("batch.actions[" + std::to_string(i) + "] (t = " + std::to_string(i / B) +
           ", b = " + std::to_string(i % B) + ") is " + std::to_string(a) + ", outside [0, " +
           std::to_string(A) + ")");
    }
  }
  const std::span<const S> grad_logits(grad.logits);
  const std::span<const S> grad_values(grad.values);
  // Named arrays, not braced lists in the range-for: nvcc 13's host front end rejects those.
  const std::span<const S> outputs[] = {grad_logits, grad_values};
  const std::span<const S> inputs[] = {batch.logits, batch.values, batch.behaviour_log_probs,
                                       batch.rewards};
  for (const auto& out : outputs) {
    for (const auto& in : inputs) {
      if (detail::spans_overlap(out, in)) {
        fail("gradient arrays must not overlap the batch's arrays");
      }
    }
  }
  if (detail::spans_overlap(grad_logits, grad_values)) {
    fail("grad.logits and grad.values overlap");
  }
}

/// The loss terms from the sums over n rows of the policy term (`sums[0]`), the squared value
/// error (`sums[1]`) and the entropy (`sums[2]`): policy = -sum / n, baseline = value_cost / 2
/// * sum / n, entropy = -entropy_cost * sum / n, total their sum (both losses' definitions).
template <class S>
loss_terms policy_value_entropy_terms(const double* sums, std::size_t n, S value_cost,
                                      S entropy_cost) {
  const double dn = static_cast<double>(n);
  loss_terms out;
  out.policy = -sums[0] / dn;
  out.baseline = static_cast<double>(value_cost) * 0.5 * sums[1] / dn;
  out.entropy = -static_cast<double>(entropy_cost) * sums[2] / dn;
  out.policy_entropy = sums[2] / dn;
  out.total = out.policy + out.baseline + out.entropy;
  return out;
}

/// Step 1 of the loss for row i < T*B (i + B is step t+1): log pi(a_t) by the policy's row
/// math, log rho, the clipped reward and the discount.
template <class S, class Math>
struct impala_prepare_kernel {
  Math math;
  policy_rows<S> policy;
  const S* behaviour_log_probs;
  const S* rewards_in;
  const std::uint8_t* dones;
  S discount, max_abs_reward;
  std::size_t B;
  S *target_log_probs, *log_rhos, *rewards, *discounts;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const S lp = math.log_prob(policy, i);
    target_log_probs[i] = lp;
    log_rhos[i] = lp - behaviour_log_probs[i];
    rewards[i] = impala_clip_reward(rewards_in[i + B], max_abs_reward);
    discounts[i] = impala_discount(discount, dones[i + B]);
  }
};

/// Step 3 for row i of the (T+1)*B: the outputs' gradients and the row's three terms (policy,
/// squared value error, entropy) into terms[i], terms[n + i], terms[2n + i]; step T's rows get
/// zero gradients (the bootstrap enters only through vs and the advantages).
template <class S, class Math>
struct impala_gradient_kernel {
  Math math;
  policy_rows<S> policy;
  const S* values;
  const S *target_log_probs, *vs, *pg_advantages;
  S baseline_cost, inv_n, entropy_coef;
  std::size_t n;
  S* grad_logits;
  S* grad_values;
  double* terms;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t A = policy.num_outputs;
    S* grad_row = grad_logits + i * A;
    if (i >= n) {
      for (std::size_t a = 0; a < A; ++a)
        grad_row[a] = S(0);
      grad_values[i] = S(0);
      return;
    }
    const S h = math.log_prob_entropy_gradient(policy, i, -pg_advantages[i] * inv_n, entropy_coef,
                                               grad_row);
    grad_values[i] = impala_value_gradient(baseline_cost, vs[i], values[i], inv_n);
    const double err = static_cast<double>(vs[i]) - static_cast<double>(values[i]);
    terms[i] = static_cast<double>(target_log_probs[i]) * pg_advantages[i];
    terms[n + i] = err * err;
    terms[2 * n + i] = h;
  }
};

}  // namespace detail

/// SEED RL's IMPALA loss; see the file comment for the formulas.
template <std::floating_point S = float, class Dist = categorical_distribution>
class impala_loss {
  static_assert(PolicyDistribution<Dist, S, impala_batch<S>>,
                "seedrl::impala_loss: Dist does not model seedrl::PolicyDistribution (see "
                "seedrl/algo/policy_distribution.hpp)");

 public:
  using scalar_type = S;                      ///< float or double
  using distribution_type = Dist;             ///< the policy's action distribution
  using batch_type = impala_batch<S>;         ///< what the loss reads
  using gradient_type = impala_gradients<S>;  ///< where it writes d(total)/d(outputs)
  using config_type = impala_loss_config<S>;  ///< hyper-parameters

  /// Validates `config` (throws std::invalid_argument) so a bad setting fails at start-up,
  /// not at the first training step.
  explicit impala_loss(config_type config = {}, Dist dist = {})
      : config_(config), dist_(std::move(dist)) {
    const char* who = "seedrl::impala_loss";
    const auto fail = [who](const std::string& what) {
      throw std::invalid_argument(std::string(who) + ": " + what);
    };
    if (!(config_.discount >= S(0) && config_.discount <= S(1))) {
      fail("discount must be in [0, 1], got " + std::to_string(config_.discount));
    }
    if (!(config_.baseline_cost >= S(0)) || !std::isfinite(config_.baseline_cost)) {
      fail("baseline_cost must be finite and >= 0, got " + std::to_string(config_.baseline_cost));
    }
    if (!(config_.entropy_cost >= S(0)) || !std::isfinite(config_.entropy_cost)) {
      fail("entropy_cost must be finite and >= 0, got " + std::to_string(config_.entropy_cost));
    }
    if (config_.max_abs_reward && !(*config_.max_abs_reward > S(0))) {
      fail("max_abs_reward must be positive, got " + std::to_string(*config_.max_abs_reward) +
           " (use std::nullopt to turn reward clipping off)");
    }
    // V-trace checks its own parameters; ask it now rather than at the first batch.
    static_cast<void>(detail::make_vtrace_coefficients(to_vtrace_params(), who));
  }

  /// The hyper-parameters in use.
  const config_type& config() const noexcept { return config_; }

  /// The action distribution the loss evaluates.
  const Dist& distribution() const noexcept { return dist_; }

  /// Computes the loss terms on `batch` and writes their gradient to `grad`. Throws
  /// std::invalid_argument, before writing anything, on inconsistent sizes, an action of
  /// steps 0..T-1 outside [0, A), a step truncated but not done, or gradient arrays that
  /// overlap the batch's arrays. Runs `compute` on the host, with scratch (6 * T * B scalars
  /// and 3 * T * B doubles) allocated on each call.
  loss_terms operator()(const batch_type& batch, gradient_type& grad) const {
    check(batch, grad);
    impala_loss_operands<S> op;
    op.T = static_cast<int>(batch.T);
    op.B = static_cast<int>(batch.B);
    op.policy = dist_.rows(batch);
    op.values = batch.values.data();
    op.behaviour_log_probs = batch.behaviour_log_probs.data();
    op.rewards = batch.rewards.data();
    op.dones = batch.dones.data();
    op.truncated = batch.truncated.data();
    op.grad_logits = grad.logits.data();
    op.grad_values = grad.values.data();
    const detail::host_primitives host;
    impala_loss_workspace<detail::host_primitives, S> ws;
    return compute(host, op, ws);
  }

  /// The loss on a ComputeBackend's arrays (seedrl/backend/compute_backend.hpp), as
  /// operator() computes it on the host: per row, log pi and the importance weight
  /// (`impala_prepare_kernel`); V-trace (`be.vtrace`, cut where step t+1 was truncated); per
  /// row, the gradients and terms (`impala_gradient_kernel`); the terms summed by `be.sums` in
  /// double (on the host in row order). Uses the policy's row math (`Dist::row_math`), so the
  /// per-row functions are the same on every device. `op` must be valid (see
  /// impala_loss_operands): nothing is checked here.
  template <class Backend>
  loss_terms compute(const Backend& be, const impala_loss_operands<S>& op,
                     impala_loss_workspace<Backend, S>& ws) const {
    const auto T = static_cast<std::size_t>(op.T), B = static_cast<std::size_t>(op.B);
    const std::size_t n = T * B;
    if (n == 0)
      return {};
    ws.reserve(be, n);
    S* rows = ws.rows.data();
    S* target_log_probs = rows;
    S* log_rhos = rows + n;
    S* discounts = rows + 2 * n;
    S* rewards = rows + 3 * n;
    S* vs = rows + 4 * n;
    S* pg_advantages = rows + 5 * n;
    double* terms = ws.terms.data();
    const auto math = dist_.row_math();
    using math_type = std::remove_const_t<decltype(math)>;
    const S max_abs_reward =
        config_.max_abs_reward ? *config_.max_abs_reward : std::numeric_limits<S>::infinity();
    be.for_each(n,
                detail::impala_prepare_kernel<S, math_type>{
                    math, op.policy, op.behaviour_log_probs, op.rewards, op.dones, config_.discount,
                    max_abs_reward, B, target_log_probs, log_rhos, rewards, discounts});
    // V_t for t < T are the first n values (time-major); the bootstrap is step T's row.
    // Transition t is cut where step t+1 was truncated.
    const vtrace_operands<S> v{.T = op.T,
                               .B = op.B,
                               .log_rhos = log_rhos,
                               .discounts = discounts,
                               .rewards = rewards,
                               .values = op.values,
                               .bootstrap = op.values + n,
                               .truncated = op.truncated + B,
                               .vs = vs,
                               .pg_advantages = pg_advantages};
    be.vtrace(detail::make_vtrace_coefficients(to_vtrace_params(), "seedrl::impala_loss"), v);
    const S inv_n = S(1) / static_cast<S>(n);
    be.for_each(n + B, detail::impala_gradient_kernel<S, math_type>{
                           math, op.policy, op.values, target_log_probs, vs, pg_advantages,
                           config_.baseline_cost, inv_n, -config_.entropy_cost * inv_n, n,
                           op.grad_logits, op.grad_values, terms});
    double sums[3] = {};
    be.sums(terms, 3, n, std::span<double>(sums));
    return detail::policy_value_entropy_terms(sums, n, config_.baseline_cost, config_.entropy_cost);
  }

 private:
  void check(const batch_type& batch, const gradient_type& grad) const {
    detail::check_unroll_batch("seedrl::impala_loss", batch, grad, 6);
    dist_.check("seedrl::impala_loss", batch);
  }

  /// The V-trace part of the config, in the form vtrace() takes.
  vtrace_params<S> to_vtrace_params() const {
    return {config_.clip_rho_threshold, config_.clip_pg_rho_threshold, config_.lambda};
  }

  config_type config_;
  Dist dist_;
};

static_assert(Loss<impala_loss<float>>, "seedrl: impala_loss<float> must model seedrl::Loss");
static_assert(Loss<impala_loss<double>>, "seedrl: impala_loss<double> must model seedrl::Loss");

}  // namespace seedrl
