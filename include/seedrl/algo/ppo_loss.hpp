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
/// Allocation: the loss keeps its scratch (9 * T * B scalars) between calls and allocates only
/// when a batch is larger than every one before, so one object must not be called from two
/// threads at once (the learner's trainer thread is its only caller).

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
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss_config.hpp"
#include "seedrl/algo/vtrace.hpp"
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
  /// the batch's, or value_clip set without old_values.
  loss_terms operator()(const batch_type& batch, gradient_type& grad) const {
    detail::check_unroll_batch(who_, batch, grad, 9);
    dist_.check(who_, batch);
    check_proximal(batch, grad);
    const std::size_t T = batch.T;
    const std::size_t B = batch.B;
    const std::size_t A = batch.num_actions;
    const std::size_t n = T * B;

    if (scratch_.size() < 9 * n) {
      scratch_.resize(9 * n);
    }
    const std::span<S> all(scratch_.data(), 9 * n);
    const std::span<S> log_pi = all.subspan(0, n);
    const std::span<S> log_ratio = all.subspan(n, n);        // log pi - log prox
    const std::span<S> log_prox_mu = all.subspan(2 * n, n);  // log prox - log mu
    const std::span<S> discounts = all.subspan(3 * n, n);
    const std::span<S> rewards = all.subspan(4 * n, n);
    const std::span<S> targets = all.subspan(5 * n, n);
    const std::span<S> advantages = all.subspan(6 * n, n);
    const std::span<S> spare = all.subspan(7 * n, n);  // V-trace's pg_advantages, unused
    // log w_t: the weight is applied in log space, with the ratio, so that a weight that
    // underflows to 0 beside a ratio that overflows gives their finite product, not 0 * inf.
    const std::span<S> log_weights = all.subspan(8 * n, n);
    const std::optional<S> log_weight_clip =
        config_.proximal_weight_clip ? std::optional<S>(std::log(*config_.proximal_weight_clip))
                                     : std::nullopt;

    batch_type proximal = batch;  // the proximal policy's rows, read by the distribution
    const bool has_proximal = !batch.proximal_logits.empty();
    if (has_proximal)
      proximal.logits = batch.proximal_logits;
    for (std::size_t i = 0; i < n; ++i) {  // i = t * B + b; i + B is step t+1
      log_pi[i] = dist_.log_prob(batch, i);
      const S log_prox = has_proximal ? dist_.log_prob(proximal, i) : log_pi[i];
      log_ratio[i] = log_pi[i] - log_prox;
      log_prox_mu[i] = log_prox - batch.behaviour_log_probs[i];
      log_weights[i] =
          log_weight_clip ? std::min(log_prox_mu[i], *log_weight_clip) : log_prox_mu[i];
      rewards[i] = batch.rewards[i + B];
      discounts[i] = detail::impala_discount(config_.discount, batch.dones[i + B]);
    }
    const std::span<const S> base = batch.old_values.empty() ? batch.values : batch.old_values;
    const std::span<const S> base_values = base.subspan(0, n);
    const std::span<const S> bootstrap = base.subspan(n, B);
    // Transition t is cut where step t+1's env output was a time-limit truncation.
    const std::span<const std::uint8_t> cut = batch.truncated.subspan(B, n);
    if (config_.advantage == ppo_advantage::gae) {
      gae(T, B, discounts, rewards, base_values, bootstrap, cut, advantages, targets);
    } else {
      vtrace<S>(T, B, log_prox_mu, discounts, rewards, base_values, bootstrap, cut,
                to_vtrace_params(), targets, spare);
      for (std::size_t i = 0; i < n; ++i) {
        const S next_vs = i + B < n ? targets[i + B] : bootstrap[i % B];
        advantages[i] = cut[i] != 0 ? S(0) : rewards[i] + discounts[i] * next_vs - base_values[i];
      }
    }

    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
      kept += cut[i] == 0 ? 1 : 0;
    }
    if (config_.normalize_advantages && kept > 0) {
      normalize(advantages, cut, kept);
    }

    const std::span<const S> values = batch.values.subspan(0, n);
    const S inv_n = S(1) / static_cast<S>(n);
    const S entropy_coef = -config_.entropy_cost * inv_n;
    const S low = S(1) - config_.clip_epsilon;
    const S high = S(1) + config_.clip_epsilon;
    // The terms are for logging only, so they are summed in double whatever S is.
    double policy_sum = 0.0, value_sum = 0.0, entropy_sum = 0.0, kl_sum = 0.0;
    std::size_t clipped = 0, behaviour_clipped = 0;
    for (std::size_t i = 0; i < n; ++i) {
      S log_prob_coef = S(0);
      S value_grad = S(0);
      if (cut[i] == 0) {
        const S adv = advantages[i];
        const S ratio = std::exp(log_ratio[i]);
        // The clipped term is the minimum and flat in the logits exactly in these cases.
        const bool clip_active = (adv > S(0) && ratio > high) || (adv < S(0) && ratio < low);
        // w * ratio, or w * clip(ratio) where the clip is active.
        const S weighted_ratio = clip_active
                                     ? std::exp(log_weights[i]) * std::clamp(ratio, low, high)
                                     : std::exp(log_weights[i] + log_ratio[i]);
        policy_sum += static_cast<double>(weighted_ratio * adv);
        log_prob_coef = clip_active ? S(0) : -weighted_ratio * adv * inv_n;
        kl_sum += static_cast<double>(ratio - S(1) - log_ratio[i]);
        clipped += std::abs(ratio - S(1)) > config_.clip_epsilon ? 1 : 0;
        const S behaviour_ratio = std::exp(log_pi[i] - batch.behaviour_log_probs[i]);
        behaviour_clipped += std::abs(behaviour_ratio - S(1)) > config_.clip_epsilon ? 1 : 0;

        const S err = values[i] - targets[i];
        S square = err * err;
        value_grad = config_.value_cost * err * inv_n;
        if (config_.value_clip) {
          const S c = *config_.value_clip;
          const S old = base_values[i];
          const S clipped_err = old + std::clamp(values[i] - old, -c, c) - targets[i];
          if (clipped_err * clipped_err > square) {
            // Only possible with the clip active, where the clipped value is flat in V_t.
            square = clipped_err * clipped_err;
            value_grad = S(0);
          }
        }
        value_sum += square;
      }
      const S h = dist_.log_prob_entropy_gradient(batch, i, log_prob_coef, entropy_coef,
                                                  grad.logits.data() + i * A);
      grad.values[i] = value_grad;
      entropy_sum += h;
    }
    std::fill(grad.logits.begin() + static_cast<std::ptrdiff_t>(n * A), grad.logits.end(), S(0));
    std::fill(grad.values.begin() + static_cast<std::ptrdiff_t>(n), grad.values.end(), S(0));

    const double dn = static_cast<double>(n);
    loss_terms terms;
    terms.policy = -policy_sum / dn;
    terms.baseline = static_cast<double>(config_.value_cost) * 0.5 * value_sum / dn;
    terms.entropy = -static_cast<double>(config_.entropy_cost) * entropy_sum / dn;
    terms.policy_entropy = entropy_sum / dn;
    terms.total = terms.policy + terms.baseline + terms.entropy;
    if (kept > 0) {
      const double dk = static_cast<double>(kept);
      terms.approx_kl = kl_sum / dk;
      terms.clip_fraction = static_cast<double>(clipped) / dk;
      terms.behaviour_clip_fraction = static_cast<double>(behaviour_clipped) / dk;
    }
    return terms;
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

  /// GAE(lambda) backwards over t, b innermost; a cut step restarts the recursion as an
  /// unroll end does. Writes advantages and targets R = Adv + V.
  void gae(std::size_t T, std::size_t B, std::span<const S> discounts, std::span<const S> rewards,
           std::span<const S> values, std::span<const S> bootstrap,
           std::span<const std::uint8_t> cut, std::span<S> advantages, std::span<S> targets) const {
    for (std::size_t t = T; t-- > 0;) {
      const bool last = t + 1 == T;
      for (std::size_t b = 0; b < B; ++b) {
        const std::size_t i = t * B + b;
        const S next_value = last ? bootstrap[b] : values[i + B];
        const S next_adv = last ? S(0) : advantages[i + B];
        const S delta = rewards[i] + discounts[i] * next_value - values[i];
        advantages[i] = cut[i] != 0 ? S(0) : delta + discounts[i] * config_.lambda * next_adv;
        targets[i] = advantages[i] + values[i];
      }
    }
  }

  /// Standardises the kept steps' advantages in place (mean and population deviation in
  /// double, so float batches lose nothing there).
  void normalize(std::span<S> advantages, std::span<const std::uint8_t> cut,
                 std::size_t kept) const {
    double sum = 0.0;
    for (std::size_t i = 0; i < advantages.size(); ++i) {
      sum += cut[i] == 0 ? static_cast<double>(advantages[i]) : 0.0;
    }
    const double mean = sum / static_cast<double>(kept);
    double squares = 0.0;
    for (std::size_t i = 0; i < advantages.size(); ++i) {
      const double d = static_cast<double>(advantages[i]) - mean;
      squares += cut[i] == 0 ? d * d : 0.0;
    }
    const double scale = 1.0 / (std::sqrt(squares / static_cast<double>(kept)) +
                                static_cast<double>(config_.advantage_epsilon));
    for (std::size_t i = 0; i < advantages.size(); ++i) {
      if (cut[i] == 0) {
        advantages[i] = static_cast<S>((static_cast<double>(advantages[i]) - mean) * scale);
      }
    }
  }

  /// The V-trace part of the config; pg_advantages are not used, so their clip is off.
  vtrace_params<S> to_vtrace_params() const {
    return {config_.clip_rho_threshold, std::nullopt, config_.lambda};
  }

  config_type config_;
  Dist dist_;
  mutable std::vector<S> scratch_;  ///< see the file comment: reused between calls
};

static_assert(Loss<ppo_loss<float>>, "seedrl: ppo_loss<float> must model seedrl::Loss");
static_assert(Loss<ppo_loss<double>>, "seedrl: ppo_loss<double> must model seedrl::Loss");
static_assert(Loss<ppo_loss<float, diag_gaussian_distribution<float>>>,
              "seedrl: a Gaussian ppo_loss must model seedrl::Loss");

}  // namespace seedrl
