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
  /// overlap the batch's arrays.
  /// Allocates scratch for V-trace (6 * T * B scalars) on each call.
  loss_terms operator()(const batch_type& batch, gradient_type& grad) const {
    check(batch, grad);
    const std::size_t T = batch.T;
    const std::size_t B = batch.B;
    const std::size_t A = batch.num_actions;
    const std::size_t n = T * B;

    std::vector<S> scratch(6 * n);
    const std::span<S> all(scratch);
    const std::span<S> target_log_probs = all.subspan(0, n);
    const std::span<S> log_rhos = all.subspan(n, n);
    const std::span<S> discounts = all.subspan(2 * n, n);
    const std::span<S> rewards = all.subspan(3 * n, n);
    const std::span<S> vs = all.subspan(4 * n, n);
    const std::span<S> pg_advantages = all.subspan(5 * n, n);

    const S max_abs_reward =
        config_.max_abs_reward ? *config_.max_abs_reward : std::numeric_limits<S>::infinity();
    for (std::size_t i = 0; i < n; ++i) {  // i = t * B + b; i + B is step t+1
      target_log_probs[i] = dist_.log_prob(batch, i);
      log_rhos[i] = target_log_probs[i] - batch.behaviour_log_probs[i];
      rewards[i] = detail::impala_clip_reward(batch.rewards[i + B], max_abs_reward);
      discounts[i] = detail::impala_discount(config_.discount, batch.dones[i + B]);
    }
    // V_t for t < T are the first n values (time-major); the bootstrap is step T's row.
    const std::span<const S> values = batch.values.subspan(0, n);
    const std::span<const S> bootstrap = batch.values.subspan(n, B);
    // Transition t is cut where step t+1's env output was a time-limit truncation.
    vtrace<S>(T, B, log_rhos, discounts, rewards, values, bootstrap, batch.truncated.subspan(B, n),
              to_vtrace_params(), vs, pg_advantages);

    const S inv_n = S(1) / static_cast<S>(n);
    const S entropy_coef = -config_.entropy_cost * inv_n;
    // The terms are for logging only, so they are summed in double whatever S is.
    double policy_sum = 0.0;
    double baseline_sum = 0.0;
    double entropy_sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const S h = dist_.log_prob_entropy_gradient(batch, i, -pg_advantages[i] * inv_n, entropy_coef,
                                                  grad.logits.data() + i * A);
      grad.values[i] =
          detail::impala_value_gradient(config_.baseline_cost, vs[i], values[i], inv_n);
      const double err = static_cast<double>(vs[i]) - static_cast<double>(values[i]);
      policy_sum += static_cast<double>(target_log_probs[i]) * pg_advantages[i];
      baseline_sum += err * err;
      entropy_sum += h;
    }
    for (std::size_t j = n * A; j < grad.logits.size(); ++j) {
      grad.logits[j] = S(0);
    }
    for (std::size_t j = n; j < grad.values.size(); ++j) {
      grad.values[j] = S(0);
    }

    const double dn = static_cast<double>(n);
    loss_terms terms;
    terms.policy = -policy_sum / dn;
    terms.baseline = static_cast<double>(config_.baseline_cost) * 0.5 * baseline_sum / dn;
    terms.entropy = -static_cast<double>(config_.entropy_cost) * entropy_sum / dn;
    terms.policy_entropy = entropy_sum / dn;
    terms.total = terms.policy + terms.baseline + terms.entropy;
    return terms;
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
