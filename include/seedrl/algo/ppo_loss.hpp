#pragma once
/// \file
/// PPO's clipped-surrogate loss (Schulman et al. 2017) for any PolicyDistribution (categorical
/// logits, or a diagonal Gaussian's means and log-stds for continuous actions), decoupled from
/// the behaviour policy as in Hilton, Cobbe and Schulman ("Batch size-invariance for policy
/// optimization", 2021), for SEED's asynchronous setting where the actors' policy mu lags the
/// learner's: the surrogate clips against a proximal policy pi_prox (the learner's policy at the
/// start of the update), and each step is weighted by the truncated ratio pi_prox / mu.
/// Advantages come from GAE(lambda) or from V-trace, with optional value clipping, advantage
/// normalisation and an entropy bonus; the gradient is w.r.t. the network's outputs (policy
/// outputs and values). Below, "logits" are the policy outputs and log pi(a_t), H(pi_t) and
/// their gradients are the distribution's (the formulas spelled out are the categorical's). It
/// models `seedrl::Loss` and reads the batch `host_trainer` builds.
///
/// Time alignment is the IMPALA loss's (seedrl/algo/impala_loss.hpp), SEED's: an unroll has
/// T+1 steps t = 0..T, and for t in [0, T), with N = T * B,
///   log pi_t = log pi(a_t) from logits[t],  log mu_t = behaviour_log_probs[t],
///   log prox_t = log pi(a_t) from proximal_logits[t] (or log pi_t, held constant, when the
///                batch has no proximal_logits),
///   r_t = rewards[t+1],  gamma_t = discount * (1 - dones[t+1]),
///   U_t = old_values[t] (or values[t], held constant, when the batch has no old_values),
///   bootstrap U_T = old_values[T] (or values[T]).
/// Step T only supplies the bootstrap value and the reward/done of the last transition.
/// host_trainer fills proximal_logits and old_values with one forward pass of the parameters the
/// batch arrived to, before the update's first gradient step, so that the proximal policy,
/// advantages and value targets stay fixed across the update's epochs and minibatches.
///
/// Advantages Adv_t and value targets R_t (constants for differentiation, from the proximal
/// values U):
///   gae:    delta_t = r_t + gamma_t U_{t+1} - U_t,
///           Adv_t = delta_t + gamma_t lambda Adv_{t+1}  (Adv_T = 0),   R_t = Adv_t + U_t.
///   vtrace: vs = V-trace(log prox - log mu, gamma, r, U, bootstrap; rho-bar =
///           clip_rho_threshold, lambda) (seedrl/algo/vtrace.hpp), R_t = vs_t,
///           Adv_t = r_t + gamma_t vs_{t+1} - U_t  (vs_T = U_T): V-trace's q-estimate minus the
///           baseline, without V-trace's own rho factor, because the policy term is already
///           weighted by pi_prox / mu (a second one would weight the step by rho^2).
/// Time-limit truncation is cut as in impala_loss: truncated[t+1] set leaves transition t out
/// (Adv_t = 0, R_t = U_t, no policy or value term or gradient from it), and the recursion
/// restarts there as at an unroll end (step t-1 sees U_t and Adv_t = 0, or vs_t = U_t).
/// K is the set of kept (not cut) transitions and |K| its size.
///
/// Normalisation (normalize_advantages): A_t = (Adv_t - m) / (s + advantage_epsilon) with m and
/// s the mean and population standard deviation (divisor |K|) of Adv over K; otherwise
/// A_t = Adv_t.
///
/// With ratio_t = exp(log pi_t - log prox_t), eps = clip_epsilon, and the proximal weight
/// w_t = min(exp(log prox_t - log mu_t), proximal_weight_clip) (no min when that is empty):
///   policy   = -(1/N) sum_{t in K} w_t min(ratio_t A_t, clip(ratio_t, 1-eps, 1+eps) A_t)
///   baseline = value_cost * 0.5 * (1/N) sum_{t in K} e_t, where e_t = (V_t - R_t)^2, or with
///              value_clip c: e_t = max((V_t - R_t)^2, (U_t + clip(V_t - U_t, -c, c) - R_t)^2)
///   entropy  = -entropy_cost * (1/N) sum_{all t} H(pi_t)
///   total    = policy + baseline + entropy
/// With mu = pi_prox (no lag) w_t = 1 and this is PPO's usual objective. N is T * B for every
/// term, as in impala_loss: a step's weight must not depend on how many others hit a time limit,
/// and the entropy term keeps every step (H(pi_t) is about the real state s_t).
///
/// Gradients (step T's rows get 0; w_t, A_t, R_t and U_t are constants):
///   d total / d logits[t] = g_t (onehot(a_t) - p_t) - (entropy_cost / N) dH/dz, where
///     g_t = -w_t ratio_t A_t / N when the unclipped term is the minimum, and 0 when the clip is
///     active (A_t > 0 and ratio_t > 1+eps, or A_t < 0 and ratio_t < 1-eps), and 0 if t is cut;
///   d total / d values[t] = value_cost (V_t - R_t) / N for t in K, except 0 when the clipped
///     value error is strictly the larger (its clip is then active, so it is flat in V_t).
///
/// Metrics (loss_terms), over K, and 0 when K is empty:
///   approx_kl     = (1/|K|) sum (ratio_t - 1) - log ratio_t  (the "k3" estimator of
///                   KL(pi_prox || pi): unbiased, never negative);
///   clip_fraction = (1/|K|) #{t : |ratio_t - 1| > eps}, against the proximal policy;
///   behaviour_clip_fraction = (1/|K|) #{t : |pi_t / mu_t - 1| > eps}, against the behaviour
///                   policy: what a PPO that clipped against mu would clip.
///
/// Allocation: the loss keeps its scratch (9 * T * B scalars, 7 * T * B doubles) between calls
/// and allocates only when a batch is larger than every one before, so one object must not be
/// called from two threads at once (the learner's trainer thread is its only caller).
///
/// Backends: `compute` runs the same loss on a ComputeBackend's arrays (per-row kernels with
/// the policy's row math, GAE one column per kernel call, V-trace and the sums as backend
/// primitives); operator() is `compute` on the host.

#include <algorithm>
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

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss_config.hpp"
#include "seedrl/algo/vtrace.hpp"
#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/detail/impala_math.hpp"
#include "seedrl/net/categorical.hpp"

namespace seedrl {

/// A PPO training batch as views, time-major [(T+1)][B]: `impala_batch`'s discrete fields in the
/// same order (so code that brace-initialises one initialises this), then the proximal values,
/// the continuous actions and the proximal policy outputs (each group after the ones that
/// existed before it, so that older brace-initialisers still mean what they meant).
template <std::floating_point S = float>
struct ppo_batch {
  std::size_t T = 0;                        ///< unroll length; the arrays hold T+1 steps
  std::size_t B = 0;                        ///< number of unrolls
  std::size_t num_actions = 0;              ///< A, logits per row
  std::span<const S> logits;                ///< [(T+1)*B*A] the learner's policy logits
  std::span<const S> values;                ///< [(T+1)*B] the learner's value estimates
  std::span<const std::int32_t> actions;    ///< [(T+1)*B] action taken at step t
  std::span<const S> behaviour_log_probs;   ///< [(T+1)*B] log mu(a_t) when the actor acted
  std::span<const S> rewards;               ///< [(T+1)*B] reward in the env output of step t
  std::span<const std::uint8_t> dones;      ///< [(T+1)*B] nonzero: step t's output ended an episode
  std::span<const std::uint8_t> truncated;  ///< [(T+1)*B] nonzero: that end was a time limit
  /// [(T+1)*B] the value estimates of the parameters the batch arrived to, before any of its
  /// update steps (host_trainer fills them): the advantages' and targets' values, and value
  /// clipping's centre. Empty: `values`, held constant (a one-step update).
  std::span<const S> old_values = {};
  /// Continuous actions (diag_gaussian_distribution): [(T+1)*B*action_dim] the pre-squash
  /// samples taken; `actions` then holds zeros. Empty for discrete actions.
  std::span<const S> raw_actions = {};
  std::size_t action_dim = 0;  ///< D for continuous actions, else 0
  /// [(T+1)*B*A] the policy outputs of the parameters the batch arrived to (the proximal
  /// policy; host_trainer fills them with old_values). Empty: `logits`, held constant.
  std::span<const S> proximal_logits = {};
};

/// Pointers of one `ppo_loss::compute` call, in a backend's memory: a time-major [(T+1)][B]
/// batch as `ppo_batch` holds it and where the gradients go. `proximal.outputs` null means no
/// proximal outputs (log prox = log pi, held constant), `old_values` null means `values`.
/// The caller has checked the batch on the host: kernels trust it.
template <class S>
struct ppo_loss_operands {
  int T = 0;
  int B = 0;
  policy_rows<S> policy;    ///< [(T+1)*B] rows: the learner's outputs and the actions taken
  policy_rows<S> proximal;  ///< the same rows with the proximal outputs
  const S* values = nullptr;
  const S* old_values = nullptr;
  const S* behaviour_log_probs = nullptr;
  const S* rewards = nullptr;
  const std::uint8_t* dones = nullptr;
  const std::uint8_t* truncated = nullptr;  ///< required
  S* grad_logits = nullptr;                 ///< out [(T+1)*B*A]
  S* grad_values = nullptr;                 ///< out [(T+1)*B]
};

/// `ppo_loss::compute`'s scratch (impala_loss.hpp's loss_workspace): 9 arrays of scalars, 7 of
/// terms.
template <class Backend, class S>
using ppo_loss_workspace = loss_workspace<Backend, S, 9, 7>;

namespace detail {

/// `b < a ? b : a`, std::min's choice, usable in kernels.
template <class S>
SEEDRL_HOST_DEVICE S ppo_min(S a, S b) {
  return b < a ? b : a;
}

/// std::clamp(v, lo, hi), usable in kernels.
template <class S>
SEEDRL_HOST_DEVICE S ppo_clamp(S v, S lo, S hi) {
  return v < lo ? lo : (hi < v ? hi : v);
}

/// Per row i < T*B: log pi, log pi - log prox, log prox - log mu, the truncated log weight,
/// the reward and discount of transition t.
template <class S, class Math>
struct ppo_prepare_kernel {
  Math math;
  policy_rows<S> policy, proximal;
  const S* behaviour_log_probs;
  const S* rewards_in;
  const std::uint8_t* dones;
  S discount;
  bool clip_weights;
  S log_weight_clip;
  std::size_t B;
  S *log_pi, *log_ratio, *log_prox_mu, *log_weights, *rewards, *discounts;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    log_pi[i] = math.log_prob(policy, i);
    const S log_prox = proximal.outputs != nullptr ? math.log_prob(proximal, i) : log_pi[i];
    log_ratio[i] = log_pi[i] - log_prox;
    log_prox_mu[i] = log_prox - behaviour_log_probs[i];
    log_weights[i] = clip_weights ? ppo_min(log_prox_mu[i], log_weight_clip) : log_prox_mu[i];
    rewards[i] = rewards_in[i + B];
    discounts[i] = impala_discount(discount, dones[i + B]);
  }
};

/// GAE(lambda) for column b, t from T-1 down to 0; a cut step restarts the recursion as an
/// unroll end does. Advantages and targets R = Adv + U.
template <class S>
struct ppo_gae_kernel {
  std::size_t T, B;
  S lambda;
  const S *discounts, *rewards, *values, *bootstrap;
  const std::uint8_t* cut;
  S *advantages, *targets;

  SEEDRL_HOST_DEVICE void operator()(std::size_t b) const {
    for (std::size_t t = T; t-- > 0;) {
      const bool last = t + 1 == T;
      const std::size_t i = t * B + b;
      const S next_value = last ? bootstrap[b] : values[i + B];
      const S next_adv = last ? S(0) : advantages[i + B];
      const S delta = rewards[i] + discounts[i] * next_value - values[i];
      advantages[i] = cut[i] != 0 ? S(0) : delta + discounts[i] * lambda * next_adv;
      targets[i] = advantages[i] + values[i];
    }
  }
};

/// V-trace advantages per row: r_t + gamma_t vs_{t+1} - U_t (vs_T = U_T), 0 where cut.
template <class S>
struct ppo_vtrace_advantage_kernel {
  std::size_t n, B;
  const S *targets, *bootstrap, *rewards, *discounts, *values;
  const std::uint8_t* cut;
  S* advantages;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const S next_vs = i + B < n ? targets[i + B] : bootstrap[i % B];
    advantages[i] = cut[i] != 0 ? S(0) : rewards[i] + discounts[i] * next_vs - values[i];
  }
};

/// Advantage standardisation, pass 1 (which = 0: each kept row's 1 and advantage) or pass 2
/// (which = 1: each kept row's squared deviation from `mean`), into `terms`; cut rows give 0.
template <class S>
struct ppo_advantage_moments_kernel {
  int which;
  std::size_t n;
  const S* advantages;
  const std::uint8_t* cut;
  double mean;
  double* terms;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const bool kept = cut[i] == 0;
    if (which == 0) {
      terms[i] = kept ? 1.0 : 0.0;
      terms[n + i] = kept ? static_cast<double>(advantages[i]) : 0.0;
    } else {
      const double d = static_cast<double>(advantages[i]) - mean;
      terms[i] = kept ? d * d : 0.0;
    }
  }
};

/// Advantage standardisation, pass 3: (A - mean) * scale on kept rows.
template <class S>
struct ppo_advantage_scale_kernel {
  double mean, scale;
  const std::uint8_t* cut;
  S* advantages;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    if (cut[i] == 0)
      advantages[i] = static_cast<S>((static_cast<double>(advantages[i]) - mean) * scale);
  }
};

/// Per row of the (T+1)*B: the outputs' gradients and the row's terms into terms[k*n + i]:
/// k = 0 policy (w ratio A), 1 value error, 2 entropy, 3 the k3 KL estimate, 4 clipped against
/// the proximal policy, 5 clipped against mu, 6 kept. Step T's rows get zero gradients.
template <class S, class Math>
struct ppo_gradient_kernel {
  Math math;
  policy_rows<S> policy;
  const S *values, *base_values, *targets, *advantages, *log_ratio, *log_weights, *log_pi;
  const S* behaviour_log_probs;
  const std::uint8_t* cut;
  S inv_n, entropy_coef, low, high, clip_epsilon, value_cost;
  bool clip_values;
  S value_clip;
  std::size_t n;
  S* grad_logits;
  S* grad_values;
  double* terms;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    using std::exp;
    const std::size_t A = policy.num_outputs;
    S* grad_row = grad_logits + i * A;
    if (i >= n) {
      for (std::size_t a = 0; a < A; ++a)
        grad_row[a] = S(0);
      grad_values[i] = S(0);
      return;
    }
    S log_prob_coef = S(0);
    S value_grad = S(0);
    double policy_term = 0.0, value_term = 0.0, kl = 0.0, clipped = 0.0, behaviour_clipped = 0.0;
    const bool kept = cut[i] == 0;
    if (kept) {
      const S adv = advantages[i];
      const S ratio = exp(log_ratio[i]);
      // The clipped term is the minimum and flat in the outputs exactly in these cases.
      const bool clip_active = (adv > S(0) && ratio > high) || (adv < S(0) && ratio < low);
      // w * ratio, or w * clip(ratio) where the clip is active.
      const S weighted_ratio = clip_active ? exp(log_weights[i]) * ppo_clamp(ratio, low, high)
                                           : exp(log_weights[i] + log_ratio[i]);
      policy_term = static_cast<double>(weighted_ratio * adv);
      log_prob_coef = clip_active ? S(0) : -weighted_ratio * adv * inv_n;
      kl = static_cast<double>(ratio - S(1) - log_ratio[i]);
      const S off = ratio - S(1);
      clipped = (off < S(0) ? -off : off) > clip_epsilon ? 1.0 : 0.0;
      const S behaviour_off = exp(log_pi[i] - behaviour_log_probs[i]) - S(1);
      behaviour_clipped =
          (behaviour_off < S(0) ? -behaviour_off : behaviour_off) > clip_epsilon ? 1.0 : 0.0;
      const S err = values[i] - targets[i];
      S square = err * err;
      value_grad = value_cost * err * inv_n;
      if (clip_values) {
        const S old = base_values[i];
        const S clipped_err =
            old + ppo_clamp(values[i] - old, -value_clip, value_clip) - targets[i];
        if (clipped_err * clipped_err > square) {
          // Only possible with the clip active, where the clipped value is flat in V_t.
          square = clipped_err * clipped_err;
          value_grad = S(0);
        }
      }
      value_term = static_cast<double>(square);
    }
    const S h = math.log_prob_entropy_gradient(policy, i, log_prob_coef, entropy_coef, grad_row);
    grad_values[i] = value_grad;
    terms[i] = policy_term;
    terms[n + i] = value_term;
    terms[2 * n + i] = static_cast<double>(h);
    terms[3 * n + i] = kl;
    terms[4 * n + i] = clipped;
    terms[5 * n + i] = behaviour_clipped;
    terms[6 * n + i] = kept ? 1.0 : 0.0;
  }
};

}  // namespace detail

/// PPO's clipped-surrogate loss; see the file comment for the formulas. `Dist` models
/// PolicyDistribution (seedrl/algo/policy_distribution.hpp): categorical logits by default, or
/// a diagonal Gaussian for continuous actions.
template <std::floating_point S = float, class Dist = categorical_distribution>
class ppo_loss {
  static_assert(PolicyDistribution<Dist, S, ppo_batch<S>>,
                "seedrl::ppo_loss: Dist does not model seedrl::PolicyDistribution (see "
                "seedrl/algo/policy_distribution.hpp)");

 public:
  using scalar_type = S;                      ///< float or double
  using batch_type = ppo_batch<S>;            ///< what the loss reads
  using gradient_type = impala_gradients<S>;  ///< where it writes d(total)/d(outputs)
  using config_type = ppo_loss_config<S>;     ///< hyper-parameters
  using distribution_type = Dist;             ///< the policy's action distribution

  /// Validates `config` (throws std::invalid_argument) so a bad setting fails at start-up.
  explicit ppo_loss(config_type config = {}, Dist dist = {})
      : config_(config), dist_(std::move(dist)) {
    const auto fail = [](const std::string& what) {
      throw std::invalid_argument(std::string(who_) + ": " + what);
    };
    const auto finite_nonnegative = [&](S x, const char* name) {
      if (!(x >= S(0)) || !std::isfinite(x)) {
        fail(std::string(name) + " must be finite and >= 0, got " + std::to_string(x));
      }
    };
    if (!(config_.discount >= S(0) && config_.discount <= S(1))) {
      fail("discount must be in [0, 1], got " + std::to_string(config_.discount));
    }
    if (!(config_.lambda >= S(0) && config_.lambda <= S(1))) {
      fail("lambda must be in [0, 1], got " + std::to_string(config_.lambda));
    }
    if (!(config_.clip_epsilon > S(0) && config_.clip_epsilon < S(1))) {
      fail("clip_epsilon must be in (0, 1), got " + std::to_string(config_.clip_epsilon));
    }
    if (config_.value_clip && !(*config_.value_clip > S(0) && std::isfinite(*config_.value_clip))) {
      fail("value_clip must be finite and positive, got " + std::to_string(*config_.value_clip) +
           " (use std::nullopt to turn value clipping off)");
    }
    if (config_.proximal_weight_clip &&
        !(*config_.proximal_weight_clip > S(0) && std::isfinite(*config_.proximal_weight_clip))) {
      fail("proximal_weight_clip must be finite and positive, got " +
           std::to_string(*config_.proximal_weight_clip) +
           " (use std::nullopt for untruncated weights)");
    }
    finite_nonnegative(config_.value_cost, "value_cost");
    finite_nonnegative(config_.entropy_cost, "entropy_cost");
    if (!(config_.advantage_epsilon > S(0)) || !std::isfinite(config_.advantage_epsilon)) {
      fail("advantage_epsilon must be finite and positive, got " +
           std::to_string(config_.advantage_epsilon));
    }
    if (config_.epochs == 0 || config_.minibatches == 0) {
      fail("epochs and minibatches must be at least 1, got " + std::to_string(config_.epochs) +
           " and " + std::to_string(config_.minibatches));
    }
    if (config_.advantage != ppo_advantage::gae && config_.advantage != ppo_advantage::vtrace) {
      fail("advantage must be ppo_advantage::gae or ppo_advantage::vtrace, got " +
           std::to_string(static_cast<int>(config_.advantage)));
    }
    static_cast<void>(detail::make_vtrace_coefficients(to_vtrace_params(), who_));
  }

  /// The hyper-parameters in use.
  const config_type& config() const noexcept { return config_; }

  /// The action distribution the loss evaluates.
  const Dist& distribution() const noexcept { return dist_; }

  /// Epochs x minibatches gradient steps per training batch (seedrl::update_schedule).
  update_schedule schedule() const noexcept { return {config_.epochs, config_.minibatches}; }

  /// PPO reads the proximal outputs (old_values, proximal_logits) whenever its update has more
  /// than one step (seedrl::Loss); a one-step update's are its own outputs.
  bool needs_proximal_outputs() const noexcept { return true; }

  /// Computes the loss terms on `batch` and writes their gradient to `grad`. Throws
  /// std::invalid_argument, before writing anything, on inconsistent sizes, an action of
  /// steps 0..T-1 outside [0, A), a step truncated but not done, gradient arrays that overlap
  /// the batch's, or value_clip set without old_values. Runs `compute` on the host.
  loss_terms operator()(const batch_type& batch, gradient_type& grad) const {
    detail::check_unroll_batch(who_, batch, grad, 9);
    dist_.check(who_, batch);
    check_proximal(batch, grad);
    ppo_loss_operands<S> op;
    op.T = static_cast<int>(batch.T);
    op.B = static_cast<int>(batch.B);
    op.policy = dist_.rows(batch);
    if (!batch.proximal_logits.empty()) {
      batch_type proximal = batch;
      proximal.logits = batch.proximal_logits;
      op.proximal = dist_.rows(proximal);
    }
    op.values = batch.values.data();
    op.old_values = batch.old_values.empty() ? nullptr : batch.old_values.data();
    op.behaviour_log_probs = batch.behaviour_log_probs.data();
    op.rewards = batch.rewards.data();
    op.dones = batch.dones.data();
    op.truncated = batch.truncated.data();
    op.grad_logits = grad.logits.data();
    op.grad_values = grad.values.data();
    return compute(detail::host_primitives{}, op, workspace_);
  }

  /// The loss on a ComputeBackend's arrays (seedrl/backend/compute_backend.hpp), as operator()
  /// computes it on the host: per row, the log-probabilities and weights
  /// (`ppo_prepare_kernel`, with the policy's row math); the advantages by GAE (one column per
  /// call of `ppo_gae_kernel`) or V-trace (`be.vtrace`, then `ppo_vtrace_advantage_kernel`);
  /// their standardisation from `be.sums`; per row, the gradients and terms
  /// (`ppo_gradient_kernel`), summed by `be.sums` in double. `op` must be valid (see
  /// ppo_loss_operands): nothing is checked here.
  template <class Backend>
  loss_terms compute(const Backend& be, const ppo_loss_operands<S>& op,
                     ppo_loss_workspace<Backend, S>& ws) const {
    const auto T = static_cast<std::size_t>(op.T), B = static_cast<std::size_t>(op.B);
    const std::size_t n = T * B;
    if (n == 0)
      return {};
    ws.reserve(be, n);
    S* rows = ws.rows.data();
    S* log_pi = rows;
    S* log_ratio = rows + n;        // log pi - log prox
    S* log_prox_mu = rows + 2 * n;  // log prox - log mu
    S* discounts = rows + 3 * n;
    S* rewards = rows + 4 * n;
    S* targets = rows + 5 * n;
    S* advantages = rows + 6 * n;
    S* spare = rows + 7 * n;  // V-trace's pg_advantages, unused
    // log w_t: the weight is applied in log space, with the ratio, so that a weight that
    // underflows to 0 beside a ratio that overflows gives their finite product, not 0 * inf.
    S* log_weights = rows + 8 * n;
    double* terms = ws.terms.data();
    const auto math = dist_.row_math();
    using math_type = std::remove_const_t<decltype(math)>;
    const bool clip_weights = config_.proximal_weight_clip.has_value();
    be.for_each(
        n, detail::ppo_prepare_kernel<S, math_type>{
               math, op.policy, op.proximal, op.behaviour_log_probs, op.rewards, op.dones,
               config_.discount, clip_weights,
               clip_weights ? static_cast<S>(std::log(*config_.proximal_weight_clip)) : S(0), B,
               log_pi, log_ratio, log_prox_mu, log_weights, rewards, discounts});
    const S* base = op.old_values != nullptr ? op.old_values : op.values;
    const S* bootstrap = base + n;
    // Transition t is cut where step t+1's env output was a time-limit truncation.
    const std::uint8_t* cut = op.truncated + B;
    if (config_.advantage == ppo_advantage::gae) {
      be.for_each(B, detail::ppo_gae_kernel<S>{T, B, config_.lambda, discounts, rewards, base,
                                               bootstrap, cut, advantages, targets});
    } else {
      const vtrace_operands<S> v{.T = op.T,
                                 .B = op.B,
                                 .log_rhos = log_prox_mu,
                                 .discounts = discounts,
                                 .rewards = rewards,
                                 .values = base,
                                 .bootstrap = bootstrap,
                                 .truncated = cut,
                                 .vs = targets,
                                 .pg_advantages = spare};
      be.vtrace(detail::make_vtrace_coefficients(to_vtrace_params(), who_), v);
      be.for_each(n, detail::ppo_vtrace_advantage_kernel<S>{n, B, targets, bootstrap, rewards,
                                                            discounts, base, cut, advantages});
    }
    if (config_.normalize_advantages) {
      // Mean and population deviation over the kept steps, in double.
      double moments[2] = {};
      be.for_each(n, detail::ppo_advantage_moments_kernel<S>{0, n, advantages, cut, 0.0, terms});
      be.sums(terms, 2, n, std::span<double>(moments));
      if (moments[0] > 0.0) {
        const double mean = moments[1] / moments[0];
        double squares = 0.0;
        be.for_each(n, detail::ppo_advantage_moments_kernel<S>{1, n, advantages, cut, mean, terms});
        be.sums(terms, 1, n, std::span<double>(&squares, 1));
        const double scale = 1.0 / (std::sqrt(squares / moments[0]) +
                                    static_cast<double>(config_.advantage_epsilon));
        be.for_each(n, detail::ppo_advantage_scale_kernel<S>{mean, scale, cut, advantages});
      }
    }
    const S inv_n = S(1) / static_cast<S>(n);
    be.for_each(n + B, detail::ppo_gradient_kernel<S, math_type>{math,
                                                                 op.policy,
                                                                 op.values,
                                                                 base,
                                                                 targets,
                                                                 advantages,
                                                                 log_ratio,
                                                                 log_weights,
                                                                 log_pi,
                                                                 op.behaviour_log_probs,
                                                                 cut,
                                                                 inv_n,
                                                                 -config_.entropy_cost * inv_n,
                                                                 S(1) - config_.clip_epsilon,
                                                                 S(1) + config_.clip_epsilon,
                                                                 config_.clip_epsilon,
                                                                 config_.value_cost,
                                                                 config_.value_clip.has_value(),
                                                                 config_.value_clip.value_or(S(0)),
                                                                 n,
                                                                 op.grad_logits,
                                                                 op.grad_values,
                                                                 terms});
    double sums[7] = {};
    be.sums(terms, 7, n, std::span<double>(sums));
    loss_terms out =
        detail::policy_value_entropy_terms(sums, n, config_.value_cost, config_.entropy_cost);
    if (sums[6] > 0.0) {
      out.approx_kl = sums[3] / sums[6];
      out.clip_fraction = sums[4] / sums[6];
      out.behaviour_clip_fraction = sums[5] / sums[6];
    }
    return out;
  }

 private:
  static constexpr const char* who_ = "seedrl::ppo_loss";

  void check_proximal(const batch_type& batch, const gradient_type& grad) const {
    const std::size_t steps = (batch.T + 1) * batch.B;
    if (!batch.proximal_logits.empty() && batch.proximal_logits.size() != batch.logits.size()) {
      throw std::invalid_argument(
          std::string(who_) + ": batch.proximal_logits holds " +
          std::to_string(batch.proximal_logits.size()) +
          " values, expected (T+1)*B*A = " + std::to_string(batch.logits.size()) + " or none");
    }
    if (config_.value_clip && batch.old_values.empty()) {
      throw std::invalid_argument(std::string(who_) +
                                  ": value_clip is set but batch.old_values is empty; pass the "
                                  "values at collection or turn value clipping off");
    }
    if (!batch.old_values.empty() && batch.old_values.size() != steps) {
      throw std::invalid_argument(std::string(who_) + ": batch.old_values holds " +
                                  std::to_string(batch.old_values.size()) +
                                  " values, expected (T+1)*B = " + std::to_string(steps) +
                                  " or none");
    }
    if (detail::spans_overlap(grad.logits, batch.old_values) ||
        detail::spans_overlap(grad.values, batch.old_values) ||
        detail::spans_overlap(grad.logits, batch.proximal_logits) ||
        detail::spans_overlap(grad.values, batch.proximal_logits)) {
      throw std::invalid_argument(std::string(who_) +
                                  ": gradient arrays must not overlap the batch's arrays");
    }
  }

  /// The V-trace part of the config; pg_advantages are not used, so their clip is off.
  vtrace_params<S> to_vtrace_params() const {
    return {config_.clip_rho_threshold, std::nullopt, config_.lambda};
  }

  config_type config_;
  Dist dist_;
  /// operator()'s scratch, reused between calls (see the file comment)
  mutable ppo_loss_workspace<detail::host_primitives, S> workspace_;
};

static_assert(Loss<ppo_loss<float>>, "seedrl: ppo_loss<float> must model seedrl::Loss");
static_assert(Loss<ppo_loss<double>>, "seedrl: ppo_loss<double> must model seedrl::Loss");
static_assert(Loss<ppo_loss<float, diag_gaussian_distribution<float>>>,
              "seedrl: a Gaussian ppo_loss must model seedrl::Loss");

}  // namespace seedrl
