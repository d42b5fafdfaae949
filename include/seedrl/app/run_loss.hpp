#pragma once
/// \file
/// The loss a program's learner trains with, from --algo and its --ppo-* flags
/// (app/run_options.hpp) over the agent recipe's IMPALA settings.

#include <algorithm>
#include <concepts>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/algo/r2d2_loss.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/trainer.hpp"

namespace seedrl::app {

/// The learner's loss type: the IMPALA or the PPO loss (--algo, picked at run time, one learner
/// type), over categorical or Gaussian policies (by the action spec, at run time too), on every
/// trainer (`Trainer`: host_trainer or a CUDA trainer, which run the same losses).
template <class Trainer, class S>
using run_loss_t = loss_choice<S, spec_distribution<S>>;

/// The learner's action sampler: the one the action spec calls for, on every trainer (a GPU
/// inference engine samples discrete actions on the device, continuous ones are sampled on
/// the host).
template <class Trainer>
using run_sampler_t = spec_sampler;

/// The sampler a run chooses actions with: --action-bounds, and `how` (greedy in eval); for
/// --algo r2d2 epsilon-greedy with the --epsilon-* schedule over --explorers.
template <class Sampler>
Sampler make_run_sampler(const run_options& o, action_selection how = action_selection::sample) {
  if constexpr (std::same_as<Sampler, spec_sampler>) {
    spec_sampler s{how, o.action_bounds};
    if (o.algorithm == "r2d2") {
      const auto& r = o.r2d2;
      s.epsilon_greedy = epsilon_greedy_sampler{r.epsilon_base, r.epsilon_alpha,
                                                std::max<std::size_t>(1, r.explorers), how};
    }
    return s;
  } else {
    return Sampler{how};
  }
}

/// The loss a run trains with: --algo and its flags over the recipe's IMPALA settings (R2D2
/// takes the recipe's discount too)
/// (`recipe`: discount, reward clipping), with --entropy-cost (per action dimension for
/// continuous actions: `loss_entropy_cost`) and --discount. PPO takes the
/// recipe's discount; it has no reward clipping. For continuous `actions` the policy is a
/// diagonal Gaussian with --action-bounds' handling of the bounds (the sampler's). Throws
/// std::invalid_argument for continuous actions with a loss over categorical policies, or
/// settings the loss refuses.
template <class L, class S>
L make_run_loss(const run_options& o, impala_loss_config<S> recipe, const action_spec& actions) {
  if (o.discount)
    recipe.discount = static_cast<S>(*o.discount);
  if (!actions.is_discrete() &&
      std::same_as<typename L::distribution_type, categorical_distribution>) {
    throw std::invalid_argument(
        "continuous actions need a loss over their distribution (spec_distribution or "
        "diag_gaussian_distribution), not a categorical one");
  }
  if constexpr (std::same_as<L, impala_loss<S>>) {
    recipe.entropy_cost = static_cast<S>(loss_entropy_cost(o, continuous_action_size(actions)));
    return L(recipe);
  } else {
    using dist_type = typename L::distribution_type;
    dist_type dist{};
    if constexpr (requires { dist.gaussian; }) {
      auto& g = dist.gaussian;
      g.squash = o.action_bounds == bounds_handling::squash;
      if (g.squash && !actions.is_discrete()) {
        for (std::size_t i = 0; i < continuous_action_size(actions); ++i) {
          // The bounds as the sampler keeps to them (inference_loop rounds them inwards to
          // float); the squash correction's constant only shifts log pi and log mu alike.
          g.low.push_back(static_cast<S>(actions.low_at(i)));
          g.high.push_back(static_cast<S>(actions.high_at(i)));
        }
      }
    }
    if constexpr (requires { typename L::r2d2_type; }) {
      if (o.algorithm == "r2d2") {
        if (!actions.is_discrete())
          throw std::invalid_argument(
              "--algo r2d2 learns Q values of discrete actions; this environment's actions are "
              "continuous (use --algo ppo or impala)");
        const auto& r = o.r2d2;
        r2d2_loss_config<S> c;
        c.n_step = r.n_step;
        c.discount = recipe.discount;
        c.value_rescaling = r.value_rescaling;
        c.burn_in = r.burn_in;
        c.target_update_period = r.target_update_period;
        c.priority_eta = r.priority_eta;
        return L(typename L::r2d2_type(c));
      }
    }
    if (o.algorithm == "ppo") {
      const auto& p = o.ppo;
      ppo_loss_config<S> c;
      c.discount = recipe.discount;
      c.lambda = static_cast<S>(p.lambda);
      c.advantage = p.advantage;
      c.clip_epsilon = static_cast<S>(p.clip_epsilon);
      if (p.value_clip)
        c.value_clip = static_cast<S>(*p.value_clip);
      c.value_cost = static_cast<S>(p.value_cost);
      c.entropy_cost = static_cast<S>(loss_entropy_cost(o, continuous_action_size(actions)));
      c.normalize_advantages = p.normalize_advantages;
      c.advantage_epsilon = static_cast<S>(p.advantage_epsilon);
      c.clip_rho_threshold.reset();
      if (p.clip_rho_threshold)
        c.clip_rho_threshold = static_cast<S>(*p.clip_rho_threshold);
      c.epochs = p.epochs;
      c.minibatches = p.minibatches;
      return L(typename L::ppo_type(c, std::move(dist)));
    }
    recipe.entropy_cost = static_cast<S>(loss_entropy_cost(o, continuous_action_size(actions)));
    return L(typename L::impala_type(recipe, std::move(dist)));
  }
}

}  // namespace seedrl::app
