#pragma once
/// \file
/// The Loss plug point: turns a training batch and the network's outputs on it into loss
/// terms and the gradient with respect to those outputs.
///
/// A type `L` models `seedrl::Loss` when it provides:
///   - `using scalar_type = ...;` float or double;
///   - `using batch_type = ...;` what it reads: unrolls (actions, rewards, dones, behaviour
///     log-probabilities) and the learner's outputs on them;
///   - `using gradient_type = ...;` where it writes d(total loss)/d(outputs);
///   - `seedrl::loss_terms operator()(const batch_type&, gradient_type&) const;` computes the
///     loss, fills the gradient and reports each term for logging.
/// and, optionally (customization point):
///   - `seedrl::update_schedule schedule() const;` how many gradient steps it takes per
///     training batch (epochs x minibatches of whole unrolls; PPO's). Without it: one step on
///     the whole batch, as IMPALA. Read it with `seedrl::schedule_of(loss)`.
///   - `bool needs_proximal_outputs() const;` for a batch type with `old_values` (and
///     optionally `proximal_logits`): the network's outputs at the start of a multi-step
///     update, before its first gradient step. Whether this loss reads them (PPO does: its
///     proximal policy, advantages and value targets come from them). Filling them costs a
///     forward pass over the whole batch. Without it: filled whenever the batch has them. Read
///     it with `seedrl::needs_proximal_outputs(loss)`.

#include <concepts>
#include <cstddef>

namespace seedrl {

/// The terms of a policy-gradient loss, for logging; `total` is what was differentiated.
/// `entropy` is the weighted bonus term; `policy_entropy` the policy's mean entropy itself
/// (nats per step), which shows a collapse whatever the weight. The last three are diagnostics
/// of losses with a trust region (PPO) and stay 0 for the others; `q_value` is a value-based
/// loss's (R2D2).
struct loss_terms {
  double total = 0.0;
  double policy = 0.0;
  double baseline = 0.0;
  double entropy = 0.0;
  double policy_entropy = 0.0;  ///< mean H(pi_t) over the batch's steps
  double approx_kl = 0.0;       ///< estimated KL between the proximal and the current policy
  double clip_fraction = 0.0;   ///< share of steps whose ratio to the proximal policy left the clip
  /// share of steps whose ratio to the behaviour policy (the actors') left the clip range: how
  /// far policy lag alone would have clipped
  double behaviour_clip_fraction = 0.0;
  /// value-based losses (R2D2): the mean Q(x_t, a_t) over the trained steps; 0 for the others
  double q_value = 0.0;

  /// Field by field, so that means over several steps (an update schedule's) keep every term.
  friend constexpr loss_terms operator+(loss_terms a, const loss_terms& b) noexcept {
    a.total += b.total;
    a.policy += b.policy;
    a.baseline += b.baseline;
    a.entropy += b.entropy;
    a.policy_entropy += b.policy_entropy;
    a.approx_kl += b.approx_kl;
    a.clip_fraction += b.clip_fraction;
    a.behaviour_clip_fraction += b.behaviour_clip_fraction;
    a.q_value += b.q_value;
    return a;
  }
  friend constexpr loss_terms operator*(loss_terms a, double k) noexcept {
    a.total *= k;
    a.policy *= k;
    a.baseline *= k;
    a.entropy *= k;
    a.policy_entropy *= k;
    a.approx_kl *= k;
    a.clip_fraction *= k;
    a.behaviour_clip_fraction *= k;
    a.q_value *= k;
    return a;
  }
};

/// How an algorithm goes over each training batch of B unrolls: `epochs` passes, each over the
/// unrolls in a fresh random order split into `minibatches` minibatches of B / minibatches
/// whole unrolls (an unroll is never split: recurrent cores need its steps in order), one
/// gradient step per minibatch. B must be a multiple of `minibatches`.
struct update_schedule {
  std::size_t epochs = 1;
  std::size_t minibatches = 1;
  friend constexpr bool operator==(const update_schedule&, const update_schedule&) = default;
};

/// `loss.schedule()` when the loss has one, else one step per batch.
template <class L>
constexpr update_schedule schedule_of(const L& loss) {
  if constexpr (requires {
                  { loss.schedule() } -> std::convertible_to<update_schedule>;
                })
    return loss.schedule();
  else
    return {};
}

/// `loss.needs_proximal_outputs()` when the loss has it, else true.
template <class L>
constexpr bool needs_proximal_outputs(const L& loss) {
  if constexpr (requires {
                  { loss.needs_proximal_outputs() } -> std::convertible_to<bool>;
                })
    return loss.needs_proximal_outputs();
  else
    return true;
}

/// A loss trained from a prioritized replay against a target network (R2D2,
/// seedrl/algo/r2d2_loss.hpp). Beyond seedrl::Loss it provides
///   - `std::size_t burn_in() const`: steps at each sequence's start that only warm the
///     recurrent state (the trainer runs them forward without back-propagation and hands the
///     loss the rest);
///   - `std::size_t target_update_period() const`: gradient steps between copies of the online
///     parameters into the target network;
/// and its batch reads the target network's outputs on the same steps (`target_logits`,
/// `target_values`) and the sequences' importance weights, and its gradient type returns the
/// sequences' new priorities (`priorities`).
template <class L>
concept ReplayLoss = requires(const L& loss, typename L::batch_type b,
                              typename L::gradient_type g) {
  { loss.burn_in() } -> std::convertible_to<std::size_t>;
  { loss.target_update_period() } -> std::convertible_to<std::size_t>;
  b.target_logits;
  b.target_values;
  b.importance_weights;
  g.priorities;
};

/// Whether `loss` trains from a replay now: a ReplayLoss does, unless it is chosen at run time
/// and says otherwise (`loss.uses_replay()`, seedrl::loss_choice).
template <class L>
constexpr bool uses_replay(const L& loss) {
  if constexpr (!ReplayLoss<L>)
    return false;
  else if constexpr (requires {
                       { loss.uses_replay() } -> std::convertible_to<bool>;
                     })
    return loss.uses_replay();
  else
    return true;
}

/// A differentiable training objective; see the file comment for what it needs.
template <class L>
concept Loss = std::floating_point<typename L::scalar_type> &&
    requires(const L& loss, const typename L::batch_type& batch, typename L::gradient_type& grad) {
  { loss(batch, grad) } -> std::same_as<loss_terms>;
};

}  // namespace seedrl
