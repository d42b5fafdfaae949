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

#include <concepts>

namespace seedrl {

/// The terms of a policy-gradient loss, for logging; `total` is what was differentiated.
/// The last two are diagnostics of losses with a trust region (PPO) and stay 0 for the others.
struct loss_terms {
  double total = 0.0;
  double policy = 0.0;
  double baseline = 0.0;
  double entropy = 0.0;
  double approx_kl = 0.0;      ///< estimated KL between the acting and the current policy
  double clip_fraction = 0.0;  ///< share of steps whose probability ratio left the clip range
};

/// A differentiable training objective; see the file comment for what it needs.
template <class L>
concept Loss = std::floating_point<typename L::scalar_type> &&
    requires(const L& loss, const typename L::batch_type& batch, typename L::gradient_type& grad) {
  { loss(batch, grad) } -> std::same_as<loss_terms>;
};

}  // namespace seedrl
