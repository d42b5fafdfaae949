#pragma once
/// \file
/// R2D2's loss (Kapturowski et al. 2019, as SEED RL's agents/r2d2/learner.py): a dueling Q
/// network trained on sequences from a prioritized replay with n-step double-Q targets and
/// value rescaling, after a burn-in. It models `seedrl::Loss` and is written once over the
/// ComputeBackend (`compute`), as the IMPALA loss is.
///
/// Dueling head without a new network part: an actor-critic agent's two output streams are
/// the advantage stream (its "logits", A per row) and the state value (its "value"), and
///   Q(x, a) = V(x) + Adv(x, a) - mean_a' Adv(x, a').
/// So every torso and core serves R2D2 as it is, and the greedy action argmax_a Q is
/// argmax_a Adv: the inference side reads the logits as it always does.
///
/// Time alignment is every seedrl loss's: step t holds x_t, the reward r_t and done/truncated
/// flags that came with it, and the action a_t taken at x_t; a sequence has T+1 steps. The
/// n-step target of step s reads steps s+1 .. s+n:
///   - a termination at s+j (done, not truncated): y = h(sum_{k=1..j} g^(k-1) r_{s+k});
///   - a time-limit truncation at s+j, j >= 2: the automatic reset replaced the final
///     observation, so the target bootstraps from the last real state x_{s+j-1}:
///     y = h(sum_{k<j} g^(k-1) r_{s+k} + g^(j-1) Qbar(x_{s+j-1})) - a truncation bootstraps,
///     it is not treated as a terminal state;
///   - a truncation at s+1: there is no next state to bootstrap from, so step s is left out
///     (mask 0), as IMPALA leaves out that transition (seedrl/algo/impala_loss.hpp);
///   - the sequence ends first: the target bootstraps from its last step T;
///   - otherwise it bootstraps from x_{s+n};
/// with Qbar(x) = h^-1(Q_target(x, argmax_a Q_online(x, a))) (double Q: the online network
/// picks, the target network values). h is value_rescale (identity when rescaling is off).
///
/// Steps s in [burn_in, T) are trained (burn_in: the batch's, see r2d2_batch::burn_in): with N = (T
/// - burn_in) B and w_b the sequence's importance weight (seedrl/replay/priorities.hpp),
///   total = (1/N) sum_{b, s kept} w_b 0.5 (y_s - Q(x_s, a_s))^2,
/// the targets held constant (stop gradient), so with g = -w_b (y - Q) / N
///   d total / d Adv(x_s, a) = g (onehot(a_s)_a - 1/A),   d total / d V(x_s) = g,
/// and every other row's gradient is zero (burn-in rows, step T, left-out steps). N counts the
/// left-out steps as IMPALA does, so a step's weight does not depend on how many others were cut.
///
/// Each sequence's priority, for the replay: eta max |TD| + (1 - eta) mean |TD| over its kept
/// trained steps (0 when none is kept). Checked against tools/gen_r2d2_fixture.py's float64
/// reference (targets written from the definition, gradients by finite differences).

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/algo/r2d2_loss_config.hpp"
#include "seedrl/algo/value_rescaling.hpp"
#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/core/config.hpp"

namespace seedrl {

/// What the R2D2 loss reads, time-major [(T+1)][B] (advantages [(T+1)][B][A]): the online and
/// the target network's outputs on the same sequences, and the sequences themselves.
template <std::floating_point S = float>
struct r2d2_batch {
  std::size_t T = 0;                        ///< the arrays hold T+1 steps
  std::size_t B = 0;                        ///< sequences
  std::size_t num_actions = 0;              ///< A
  std::span<const S> logits;                ///< [(T+1)*B*A] the online network's advantage stream
  std::span<const S> values;                ///< [(T+1)*B] the online network's state values
  std::span<const S> target_logits;         ///< [(T+1)*B*A] the target network's advantage stream
  std::span<const S> target_values;         ///< [(T+1)*B] the target network's state values
  std::span<const std::int32_t> actions;    ///< [(T+1)*B] action taken at step t
  std::span<const S> rewards;               ///< [(T+1)*B] reward in step t's env output
  std::span<const std::uint8_t> dones;      ///< [(T+1)*B] step t's env output ended an episode
  std::span<const std::uint8_t> truncated;  ///< [(T+1)*B] ... by a time limit (dones set too)
  std::span<const S> importance_weights = {};  ///< [B]; empty: every weight 1
  /// Steps at the start that only warmed the state: no loss there. A trainer that ran the
  /// burn-in itself (seedrl/runtime/training_step.hpp) hands over the rest with 0 here.
  std::size_t burn_in = 0;
};

/// Where the R2D2 loss writes d(total)/d(online outputs) (every element, not accumulated) and,
/// when not empty, each sequence's new priority.
template <std::floating_point S = float>
struct r2d2_gradients {
  std::span<S> logits;                ///< [(T+1)*B*A]
  std::span<S> values;                ///< [(T+1)*B]
  std::span<double> priorities = {};  ///< [B] out, optional
};

/// Pointers of one `r2d2_loss::compute` call, in a backend's memory (as r2d2_batch holds
/// them). The caller checked the batch on the host: kernels trust it.
template <class S>
struct r2d2_loss_operands {
  int T = 0;
  int B = 0;
  int A = 0;
  int burn_in = 0;  ///< steps with no loss at the start
  const S* logits = nullptr;
  const S* values = nullptr;
  const S* target_logits = nullptr;
  const S* target_values = nullptr;
  const std::int32_t* actions = nullptr;
  const S* rewards = nullptr;
  const std::uint8_t* dones = nullptr;
  const std::uint8_t* truncated = nullptr;
  const S* importance_weights = nullptr;  ///< [B]; null: every weight 1
  S* grad_logits = nullptr;               ///< out [(T+1)*B*A]
  S* grad_values = nullptr;               ///< out [(T+1)*B]
};

/// `r2d2_loss::compute`'s scratch: TD errors and masks (2 arrays of T*B scalars); each row's
/// squared error and Q, and the B priorities (3 arrays of T*B doubles).
template <class Backend, class S>
using r2d2_loss_workspace = loss_workspace<Backend, S, 2, 3>;

namespace detail {

/// Q(x, a) of one row from the dueling streams: V + Adv(a) - mean Adv.
template <class S>
SEEDRL_HOST_DEVICE S dueling_q(const S* advantages, S value, int A, int a) {
  S mean = S(0);
  for (int k = 0; k < A; ++k)
    mean += advantages[k];
  return value + advantages[a] - mean / static_cast<S>(A);
}

/// argmax_a Q(x, a) of one row (the first on ties).
template <class S>
SEEDRL_HOST_DEVICE int dueling_argmax(const S* advantages, S value, int A) {
  int best = 0;
  S best_q = dueling_q(advantages, value, A, 0);
  for (int a = 1; a < A; ++a) {
    const S q = dueling_q(advantages, value, A, a);
    if (q > best_q) {
      best_q = q;
      best = a;
    }
  }
  return best;
}

/// Step 1 for row i = s*B + b < T*B: the n-step double-Q target, the TD error and mask, and the
/// row's weighted squared error and Q (see the file comment).
template <class S>
struct r2d2_target_kernel {
  r2d2_loss_operands<S> op;
  int n_step;
  S discount, eps;
  bool rescale;
  S *td, *mask;
  double* terms;  // [0, n): 0.5 w td^2; [n, 2n): Q(x_s, a_s)

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const int B = op.B, A = op.A, T = op.T;
    const int s = static_cast<int>(i) / B, b = static_cast<int>(i) % B;
    const std::size_t n = static_cast<std::size_t>(T) * static_cast<std::size_t>(B);
    if (s < op.burn_in) {
      td[i] = S(0);
      mask[i] = S(0);
      terms[i] = 0.0;
      terms[n + i] = 0.0;
      return;
    }
    S ret = S(0), scale = S(1);
    int bootstrap = -1;
    bool kept = true;
    for (int j = 1; j <= n_step; ++j) {
      const int t = s + j;
      if (t > T) {  // the sequence ended: bootstrap from its last step
        bootstrap = T;
        break;
      }
      const int r = t * B + b;
      if (op.dones[r] != 0) {
        if (op.truncated[r] != 0) {  // bootstrap from the last real state, if there is one
          kept = j > 1;
          bootstrap = t - 1;
        } else {
          ret += scale * op.rewards[r];  // terminal: no bootstrap
        }
        break;
      }
      ret += scale * op.rewards[r];
      scale *= discount;
      if (j == n_step)
        bootstrap = t;
    }
    if (kept && bootstrap >= 0) {
      const int row = bootstrap * B + b;
      const int best =
          dueling_argmax(op.logits + static_cast<std::size_t>(row) * A, op.values[row], A);
      const S q_target = dueling_q(op.target_logits + static_cast<std::size_t>(row) * A,
                                   op.target_values[row], A, best);
      ret += scale * (rescale ? value_unrescale(q_target, eps) : q_target);
    }
    const S y = rescale ? value_rescale(ret, eps) : ret;
    const S q =
        dueling_q(op.logits + i * static_cast<std::size_t>(A), op.values[i], A, op.actions[i]);
    const S w = op.importance_weights != nullptr ? op.importance_weights[b] : S(1);
    td[i] = kept ? y - q : S(0);
    mask[i] = kept ? S(1) : S(0);
    terms[i] = kept ? 0.5 * static_cast<double>(w) * static_cast<double>(td[i]) *
                          static_cast<double>(td[i])
                    : 0.0;
    terms[n + i] = static_cast<double>(q);
  }
};

/// Step 2 for every row i < (T+1)*B: the gradient w.r.t. the two streams (see the file comment).
template <class S>
struct r2d2_gradient_kernel {
  r2d2_loss_operands<S> op;
  S inv_n;
  const S *td, *mask;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const int B = op.B, A = op.A;
    const int s = static_cast<int>(i) / B, b = static_cast<int>(i) % B;
    S g = S(0);
    if (s >= op.burn_in && s < op.T && mask[i] != S(0)) {
      const S w = op.importance_weights != nullptr ? op.importance_weights[b] : S(1);
      g = -w * td[i] * inv_n;
    }
    op.grad_values[i] = g;
    const S shared = g / static_cast<S>(A);
    S* out = op.grad_logits + i * static_cast<std::size_t>(A);
    for (int a = 0; a < A; ++a)
      out[a] = (a == op.actions[i] ? g : S(0)) - shared;
  }
};

/// Step 3 for each sequence b < B: eta max |TD| + (1 - eta) mean |TD| over its kept trained
/// steps, in double.
template <class S>
struct r2d2_priority_kernel {
  int T, B, burn_in;
  double eta;
  const S *td, *mask;
  double* priorities;

  SEEDRL_HOST_DEVICE void operator()(std::size_t b) const {
    double largest = 0.0, sum = 0.0;
    int kept = 0;
    for (int s = burn_in; s < T; ++s) {
      const std::size_t i = static_cast<std::size_t>(s) * B + b;
      if (mask[i] == S(0))
        continue;
      const double a = std::abs(static_cast<double>(td[i]));
      largest = a > largest ? a : largest;
      sum += a;
      ++kept;
    }
    priorities[b] = kept > 0 ? eta * largest + (1.0 - eta) * sum / kept : 0.0;
  }
};

}  // namespace detail

/// R2D2's loss; see the file comment.
template <std::floating_point S = float>
class r2d2_loss {
 public:
  using scalar_type = S;
  using batch_type = r2d2_batch<S>;
  using gradient_type = r2d2_gradients<S>;
  using config_type = r2d2_loss_config<S>;

  /// Validates `config` (throws std::invalid_argument) so that a bad setting fails at start.
  explicit r2d2_loss(config_type config = {}) : config_(config) {
    const auto fail = [](const std::string& what) {
      throw std::invalid_argument("seedrl::r2d2_loss: " + what);
    };
    if (config_.n_step == 0 || config_.n_step > 1000000)
      fail("n_step must be in [1, 1e6], got " + std::to_string(config_.n_step));
    if (!(config_.discount >= S(0) && config_.discount <= S(1)))
      fail("discount must be in [0, 1], got " + std::to_string(config_.discount));
    if (config_.value_rescaling &&
        !(config_.value_rescaling_eps > S(0) && std::isfinite(config_.value_rescaling_eps)))
      fail("value_rescaling_eps must be positive and finite, got " +
           std::to_string(config_.value_rescaling_eps));
    if (!(config_.priority_eta >= 0.0 && config_.priority_eta <= 1.0))
      fail("priority_eta must be in [0, 1], got " + std::to_string(config_.priority_eta));
    if (config_.burn_in > 1000000)
      fail("burn_in must be at most 1e6, got " + std::to_string(config_.burn_in));
    if (config_.target_update_period == 0)
      fail("target_update_period must be at least 1 (1: the target is the online network)");
  }

  const config_type& config() const noexcept { return config_; }

  /// Steps at each sequence's start that only warm the recurrent state (seedrl::ReplayLoss:
  /// the trainer runs them without back-propagation).
  std::size_t burn_in() const noexcept { return config_.burn_in; }

  /// Gradient steps between copies of the online parameters into the target network.
  std::size_t target_update_period() const noexcept { return config_.target_update_period; }

  /// Throws std::invalid_argument, naming `who`, unless `weights` is empty (every weight 1) or
  /// holds B finite, non-negative importance weights.
  static void check_importance_weights(std::span<const S> weights, std::size_t B, const char* who) {
    const auto fail = [who](const std::string& what) {
      throw std::invalid_argument(std::string(who) + ": " + what);
    };
    if (!weights.empty() && weights.size() != B)
      fail("batch.importance_weights holds " + std::to_string(weights.size()) +
           " values, expected B = " + std::to_string(B));
    for (std::size_t b = 0; b < weights.size(); ++b) {
      const S w = weights[b];
      if (!(w >= S(0)) || !std::isfinite(w))
        fail("importance weight " + std::to_string(b) + " is " + std::to_string(w) +
             "; weights must be finite and non-negative");
    }
  }

  /// Computes the loss on `batch`, its gradient into `grad` and, when grad.priorities is not
  /// empty, the sequences' priorities; steps before batch.burn_in get no loss. Throws
  /// std::invalid_argument, before writing anything, on inconsistent sizes, T <= batch.burn_in, an
  /// action of steps 0..T-1 outside [0, A), a step truncated but not done, an importance weight
  /// that is negative or not finite, or gradient arrays overlapping the batch.
  loss_terms operator()(const batch_type& batch, gradient_type& grad) const {
    check(batch, grad);
    r2d2_loss_operands<S> op;
    op.T = static_cast<int>(batch.T);
    op.B = static_cast<int>(batch.B);
    op.A = static_cast<int>(batch.num_actions);
    op.burn_in = static_cast<int>(batch.burn_in);
    op.logits = batch.logits.data();
    op.values = batch.values.data();
    op.target_logits = batch.target_logits.data();
    op.target_values = batch.target_values.data();
    op.actions = batch.actions.data();
    op.rewards = batch.rewards.data();
    op.dones = batch.dones.data();
    op.truncated = batch.truncated.data();
    op.importance_weights =
        batch.importance_weights.empty() ? nullptr : batch.importance_weights.data();
    op.grad_logits = grad.logits.data();
    op.grad_values = grad.values.data();
    const detail::host_primitives host;
    r2d2_loss_workspace<detail::host_primitives, S> ws;
    return compute(host, op, ws, grad.priorities);
  }

  /// The loss on a ComputeBackend's arrays, as operator() computes it on the host: per row
  /// the targets (`r2d2_target_kernel`), per row the gradients, per sequence the priorities,
  /// the terms summed by `be.sums` in double. `priorities` (host memory, B values or empty)
  /// receives the sequences' priorities. `op` must be valid: nothing is checked here.
  template <class Backend>
  loss_terms compute(const Backend& be, const r2d2_loss_operands<S>& op,
                     r2d2_loss_workspace<Backend, S>& ws, std::span<double> priorities) const {
    const auto T = static_cast<std::size_t>(op.T), B = static_cast<std::size_t>(op.B);
    const std::size_t n = T * B;
    if (n == 0)
      return {};
    ws.reserve(be, n);
    S* td = ws.rows.data();
    S* mask = td + n;
    double* terms = ws.terms.data();
    be.for_each(n, detail::r2d2_target_kernel<S>{op, static_cast<int>(config_.n_step),
                                                 config_.discount, config_.value_rescaling_eps,
                                                 config_.value_rescaling, td, mask, terms});
    const std::size_t trained = (T - static_cast<std::size_t>(op.burn_in)) * B;
    be.for_each(n + B,
                detail::r2d2_gradient_kernel<S>{op, S(1) / static_cast<S>(trained), td, mask});
    if (!priorities.empty()) {
      double* device_priorities = terms + 2 * n;
      be.for_each(B, detail::r2d2_priority_kernel<S>{op.T, op.B, op.burn_in, config_.priority_eta,
                                                     td, mask, device_priorities});
      be.download(static_cast<const double*>(device_priorities), priorities.first(B));
    }
    double sums[2] = {};
    be.sums(terms, 2, n, std::span<double>(sums));
    loss_terms out;
    out.baseline = sums[0] / static_cast<double>(trained);
    out.total = out.baseline;
    out.q_value = sums[1] / static_cast<double>(trained);
    return out;
  }

 private:
  void check(const batch_type& batch, const gradient_type& grad) const {
    const char* who = "seedrl::r2d2_loss";
    const auto fail = [who](const std::string& what) {
      throw std::invalid_argument(std::string(who) + ": " + what);
    };
    const std::size_t T = batch.T, B = batch.B, A = batch.num_actions;
    if (T <= batch.burn_in || B == 0)
      fail("needs T > burn_in (" + std::to_string(batch.burn_in) +
           ") and B > 0, got T = " + std::to_string(T) + ", B = " + std::to_string(B));
    if (A == 0 || A > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
        T + 1 > static_cast<std::size_t>(std::numeric_limits<int>::max()) / B ||
        (T + 1) * B > std::numeric_limits<std::size_t>::max() / A)
      fail("(T + 1) * B * num_actions must fit: T = " + std::to_string(T) +
           ", B = " + std::to_string(B) + ", A = " + std::to_string(A));
    const std::size_t steps = (T + 1) * B;
    const auto size = [&](std::size_t got, std::size_t expected, const char* name) {
      if (got != expected)
        fail(std::string(name) + " holds " + std::to_string(got) + " values, expected " +
             std::to_string(expected) + " (T = " + std::to_string(T) +
             ", B = " + std::to_string(B) + ", A = " + std::to_string(A) + ")");
    };
    size(batch.logits.size(), steps * A, "batch.logits");
    size(batch.values.size(), steps, "batch.values");
    size(batch.target_logits.size(), steps * A, "batch.target_logits");
    size(batch.target_values.size(), steps, "batch.target_values");
    size(batch.actions.size(), steps, "batch.actions");
    size(batch.rewards.size(), steps, "batch.rewards");
    size(batch.dones.size(), steps, "batch.dones");
    size(batch.truncated.size(), steps, "batch.truncated");
    size(grad.logits.size(), steps * A, "grad.logits");
    size(grad.values.size(), steps, "grad.values");
    if (!grad.priorities.empty())
      size(grad.priorities.size(), B, "grad.priorities");
    detail::impala_check_truncated_done(batch.truncated.data(), batch.dones.data(), steps, B, who);
    for (std::size_t i = 0; i < T * B; ++i) {
      const std::int32_t a = batch.actions[i];
      if (a < 0 || static_cast<std::size_t>(a) >= A)
        fail("batch.actions[" + std::to_string(i) + "] (t = " + std::to_string(i / B) +
             ", b = " + std::to_string(i % B) + ") is " + std::to_string(a) + ", outside [0, " +
             std::to_string(A) + ")");
    }
    check_importance_weights(batch.importance_weights, B, who);
    const std::span<const S> outs[] = {std::span<const S>(grad.logits),
                                       std::span<const S>(grad.values)};
    const std::span<const S> ins[] = {batch.logits,        batch.values,  batch.target_logits,
                                      batch.target_values, batch.rewards, batch.importance_weights};
    for (const auto& out : outs)
      for (const auto& in : ins)
        if (detail::spans_overlap(out, in))
          fail("gradient arrays must not overlap the batch's arrays");
    if (detail::spans_overlap(outs[0], outs[1]))
      fail("grad.logits and grad.values overlap");
  }

  config_type config_;
};

static_assert(Loss<r2d2_loss<float>> && ReplayLoss<r2d2_loss<float>>,
              "seedrl: r2d2_loss<float> must model seedrl::Loss and seedrl::ReplayLoss");
static_assert(Loss<r2d2_loss<double>>, "seedrl: r2d2_loss<double> must model seedrl::Loss");

}  // namespace seedrl
