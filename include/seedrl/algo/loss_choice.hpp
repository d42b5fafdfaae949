#pragma once
/// \file
/// The IMPALA or the PPO loss, picked at run time (a program's --algo flag), as one
/// seedrl::Loss type. A learner is a type per loss: a program that offered both as two learner
/// types would compile the training side twice per network. This type keeps it at one, and
/// costs a branch per training step. A program that always runs one algorithm names that
/// loss's type instead (the learner's LossFn parameter).
///
/// Its batch is ppo_batch<S> (impala_batch's fields, then the proximal outputs host_trainer
/// fills); with IMPALA chosen, the proximal outputs are ignored. `Dist` is both losses'
/// PolicyDistribution (categorical by default; diag_gaussian_distribution for continuous actions).
/// Its schedule is PPO's epochs x minibatches, or one step per batch for IMPALA.

#include <concepts>
#include <string>
#include <utility>
#include <variant>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss.hpp"

namespace seedrl {

/// See the file comment.
template <std::floating_point S = float, class Dist = categorical_distribution>
class loss_choice {
 public:
  using scalar_type = S;
  using batch_type = ppo_batch<S>;
  using gradient_type = impala_gradients<S>;
  using distribution_type = Dist;
  using impala_type = impala_loss<S, Dist>;
  using ppo_type = ppo_loss<S, Dist>;

  /// IMPALA's loss with its defaults.
  loss_choice() : loss_(impala_type()) {}
  explicit loss_choice(impala_type loss) : loss_(std::move(loss)) {}
  explicit loss_choice(ppo_type loss) : loss_(std::move(loss)) {}

  /// "IMPALA (V-trace)" or "PPO (GAE advantages)" / "PPO (V-trace advantages)", for a
  /// program's configuration line.
  std::string name() const {
    if (const auto* ppo = std::get_if<ppo_type>(&loss_)) {
      return std::string("PPO (") +
             (ppo->config().advantage == ppo_advantage::gae ? "GAE" : "V-trace") + " advantages)";
    }
    return "IMPALA (V-trace)";
  }

  bool is_ppo() const noexcept { return std::holds_alternative<ppo_type>(loss_); }

  /// The loss chosen, or nullptr when it is the other one.
  const impala_type* impala() const noexcept { return std::get_if<impala_type>(&loss_); }
  const ppo_type* ppo() const noexcept { return std::get_if<ppo_type>(&loss_); }

  update_schedule schedule() const {
    return std::visit([](const auto& l) { return schedule_of(l); }, loss_);
  }

  /// Whether the batch's proximal outputs are read: PPO's (seedrl::Loss).
  bool needs_proximal_outputs() const noexcept {
    const auto* p = ppo();
    return p != nullptr && p->needs_proximal_outputs();
  }

  loss_terms operator()(const batch_type& b, gradient_type& g) const {
    if (const auto* ppo = std::get_if<ppo_type>(&loss_))
      return (*ppo)(b, g);
    return std::get<impala_type>(loss_)(
        {b.T, b.B, b.num_actions, b.logits, b.values, b.actions, b.behaviour_log_probs, b.rewards,
         b.dones, b.truncated, b.raw_actions, b.action_dim},
        g);
  }

 private:
  std::variant<impala_type, ppo_type> loss_;
};

static_assert(Loss<loss_choice<float>>);
static_assert(Loss<loss_choice<double>>);
static_assert(Loss<loss_choice<float, diag_gaussian_distribution<float>>>);

}  // namespace seedrl
