#pragma once
/// \file
/// The IMPALA, the PPO or the R2D2 loss, picked at run time (a program's --algo flag), as one
/// seedrl::Loss type. A learner is a type per loss: a program that offered both as two learner
/// types would compile the training side twice per network. This type keeps it at one, and
/// costs a branch per training step. A program that always runs one algorithm names that
/// loss's type instead (the learner's LossFn parameter).
///
/// Its batch is loss_choice_batch<S>: ppo_batch's fields (impala_batch's, then the proximal
/// outputs host_trainer fills) and R2D2's (the target network's outputs, importance weights);
/// each loss reads its own. `Dist` is the policy losses' PolicyDistribution (categorical by
/// default; diag_gaussian_distribution for continuous actions); R2D2 reads Q values (discrete
/// actions only). Its schedule is PPO's epochs x minibatches, or one step per batch. It models
/// seedrl::ReplayLoss, and `uses_replay()` says whether R2D2 is the one chosen.

#include <concepts>
#include <string>
#include <utility>
#include <variant>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/algo/r2d2_loss.hpp"

namespace seedrl {

/// What loss_choice reads: every field each of its losses reads (see the file comment).
template <std::floating_point S>
struct loss_choice_batch : ppo_batch<S> {
  std::span<const S> target_logits = {};       ///< R2D2: the target network's advantages
  std::span<const S> target_values = {};       ///< R2D2: the target network's values
  std::span<const S> importance_weights = {};  ///< R2D2: [B], empty: all 1
  std::size_t burn_in = 0;                     ///< R2D2: steps with no loss at the start
};

/// See the file comment.
template <std::floating_point S = float, class Dist = categorical_distribution>
class loss_choice {
 public:
  using scalar_type = S;
  using batch_type = loss_choice_batch<S>;
  using gradient_type = r2d2_gradients<S>;  // logits, values, and R2D2's priorities
  using distribution_type = Dist;
  using impala_type = impala_loss<S, Dist>;
  using ppo_type = ppo_loss<S, Dist>;
  using r2d2_type = r2d2_loss<S>;

  /// IMPALA's loss with its defaults.
  loss_choice() : loss_(impala_type()) {}
  explicit loss_choice(impala_type loss) : loss_(std::move(loss)) {}
  explicit loss_choice(ppo_type loss) : loss_(std::move(loss)) {}
  explicit loss_choice(r2d2_type loss) : loss_(std::move(loss)) {}

  /// "IMPALA (V-trace)" or "PPO (GAE advantages)" / "PPO (V-trace advantages)", for a
  /// program's configuration line.
  std::string name() const {
    if (r2d2() != nullptr)
      return "R2D2 (prioritized replay, n-step double Q)";
    if (const auto* ppo = std::get_if<ppo_type>(&loss_)) {
      return std::string("PPO (") +
             (ppo->config().advantage == ppo_advantage::gae ? "GAE" : "V-trace") + " advantages)";
    }
    return "IMPALA (V-trace)";
  }

  bool is_ppo() const noexcept { return std::holds_alternative<ppo_type>(loss_); }

  /// Whether training samples from a replay: R2D2 chosen (seedrl::uses_replay).
  bool uses_replay() const noexcept { return r2d2() != nullptr; }

  /// The loss chosen, or nullptr when it is the other one.
  const impala_type* impala() const noexcept { return std::get_if<impala_type>(&loss_); }
  const ppo_type* ppo() const noexcept { return std::get_if<ppo_type>(&loss_); }
  const r2d2_type* r2d2() const noexcept { return std::get_if<r2d2_type>(&loss_); }

  /// R2D2's burn-in and target update period (seedrl::ReplayLoss); 0 for the others.
  std::size_t burn_in() const noexcept { return r2d2() ? r2d2()->burn_in() : 0; }
  std::size_t target_update_period() const noexcept {
    return r2d2() ? r2d2()->target_update_period() : 0;
  }

  update_schedule schedule() const {
    return std::visit([](const auto& l) { return schedule_of(l); }, loss_);
  }

  /// Whether the batch's proximal outputs are read: PPO's (seedrl::Loss).
  bool needs_proximal_outputs() const noexcept {
    const auto* p = ppo();
    return p != nullptr && p->needs_proximal_outputs();
  }

  loss_terms operator()(const batch_type& b, gradient_type& g) const {
    if (const auto* r2d2_loss = r2d2())
      return (*r2d2_loss)(
          {b.T, b.B, b.num_actions, b.logits, b.values, b.target_logits, b.target_values, b.actions,
           b.rewards, b.dones, b.truncated, b.importance_weights, b.burn_in},
          g);
    impala_gradients<S> policy_grads{g.logits, g.values};
    if (const auto* ppo = std::get_if<ppo_type>(&loss_))
      return (*ppo)(b, policy_grads);
    return std::get<impala_type>(loss_)(
        {b.T, b.B, b.num_actions, b.logits, b.values, b.actions, b.behaviour_log_probs, b.rewards,
         b.dones, b.truncated, b.raw_actions, b.action_dim},
        policy_grads);
  }

 private:
  std::variant<impala_type, ppo_type, r2d2_type> loss_;
};

static_assert(Loss<loss_choice<float>> && ReplayLoss<loss_choice<float>>);
static_assert(Loss<loss_choice<double>>);
static_assert(Loss<loss_choice<float, diag_gaussian_distribution<float>>>);

}  // namespace seedrl
