#pragma once
/// \file
/// The PPO loss's hyper-parameters (the loss is in seedrl/algo/ppo_loss.hpp), apart so that
/// headers compiled by nvcc can take them without the CPU loss's Eigen.

#include <concepts>
#include <cstddef>
#include <optional>

namespace seedrl {

/// Where PPO's advantages and value targets come from; see seedrl/algo/ppo_loss.hpp.
enum class ppo_advantage {
  gae,     ///< GAE(lambda) on the learner's values: on-policy, ignores policy lag
  vtrace,  ///< V-trace targets with the actors' log-probabilities: corrects for policy lag
};

/// The PPO loss's hyper-parameters; defaults are the usual ones for discrete control
/// (Schulman et al. 2017, and the Stable-Baselines3 / CleanRL defaults).
template <std::floating_point S = float>
struct ppo_loss_config {
  S discount = S(0.99);  ///< gamma, applied where the next step is not an end
  S lambda = S(0.95);    ///< GAE lambda, or V-trace lambda
  ppo_advantage advantage = ppo_advantage::gae;  ///< how advantages and targets are formed
  S clip_epsilon = S(0.2);                       ///< surrogate clip: ratio kept in [1-eps, 1+eps]
  /// Truncation of the proximal weight pi_prox / mu, which corrects for the actors' lag
  /// (decoupled PPO, seedrl/algo/ppo_loss.hpp); empty: untruncated.
  std::optional<S> proximal_weight_clip = S(1);
  /// Value clipping range c around old_values; empty: off. Needs the batch's old_values.
  std::optional<S> value_clip = std::nullopt;
  S value_cost = S(0.5);             ///< weight of the value regression term
  S entropy_cost = S(0.01);          ///< weight of the entropy bonus
  bool normalize_advantages = true;  ///< standardise advantages over the batch's kept steps
  S advantage_epsilon = S(1e-8);     ///< added to the standard deviation when normalising
  /// V-trace only: rho-bar, clipping importance weights in the value targets; empty: none.
  std::optional<S> clip_rho_threshold = S(1);
  /// Passes over each training batch, and minibatches (of whole unrolls) per pass: one
  /// gradient step each (seedrl::update_schedule, followed by host_trainer). The learner's
  /// batch_size must be a multiple of `minibatches`.
  std::size_t epochs = 4;
  std::size_t minibatches = 4;
};

}  // namespace seedrl
