#pragma once
/// \file
/// The loss a program's learner trains with, from --algo and its --ppo-* flags
/// (app/run_options.hpp) over the agent recipe's IMPALA settings.

#include <concepts>
#include <stdexcept>
#include <type_traits>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/runtime/trainer.hpp"

namespace seedrl::app {

/// The learner's loss type for `Trainer`: the CPU trainer takes the IMPALA or the PPO loss
/// (--algo, picked at run time, one learner type); the CUDA trainers run the IMPALA loss.
template <class Trainer, class S>
using run_loss_t =
    std::conditional_t<std::same_as<Trainer, host_trainer>, loss_choice<S>, impala_loss<S>>;

/// The loss a run trains with: --algo and its flags over the recipe's IMPALA settings
/// (`recipe`: discount, reward clipping), with --entropy-cost. PPO takes the recipe's discount;
/// it has no reward clipping. Throws std::invalid_argument for --algo ppo with a CUDA trainer,
/// or settings the loss refuses.
template <class L, class S>
L make_run_loss(const run_options& o, const impala_loss_config<S>& recipe) {
  if (o.algorithm == "ppo") {
    if constexpr (std::same_as<L, loss_choice<S>>) {
      const auto& p = o.ppo;
      ppo_loss_config<S> c;
      c.discount = recipe.discount;
      c.lambda = static_cast<S>(p.lambda);
      c.advantage = p.advantage;
      c.clip_epsilon = static_cast<S>(p.clip_epsilon);
      if (p.value_clip)
        c.value_clip = static_cast<S>(*p.value_clip);
      c.value_cost = static_cast<S>(p.value_cost);
      c.entropy_cost = static_cast<S>(o.entropy_cost);
      c.normalize_advantages = p.normalize_advantages;
      c.advantage_epsilon = static_cast<S>(p.advantage_epsilon);
      c.clip_rho_threshold.reset();
      if (p.clip_rho_threshold)
        c.clip_rho_threshold = static_cast<S>(*p.clip_rho_threshold);
      c.epochs = p.epochs;
      c.minibatches = p.minibatches;
      return L(ppo_loss<S>(c));
    } else {
      throw std::invalid_argument(
          "--algo ppo trains on the CPU (--device cpu): the CUDA trainers run the IMPALA loss");
    }
  }
  impala_loss_config<S> c = recipe;
  c.entropy_cost = static_cast<S>(o.entropy_cost);
  return L(impala_loss<S>(c));
}

}  // namespace seedrl::app
