#pragma once
/// \file
/// What `app::program` (app/program.hpp) asks of an agent recipe, and how it gets the agent.
/// A recipe provides
///
///   void add_flags(CLI::App&);               its own flags, if any
///   std::string checkpoint_hint() const;     what to check when a checkpoint holds another
///                                            network (may be empty)
///
/// and one of
///
///   agent_parts<Net, Opt> make(const run_options&, const observation_spec&,
///                              const action_spec&) const;     one network type (mlp_recipe)
///   template <class F> int with_agent(const run_options&, const observation_spec&,
///                                     const action_spec&, F&& f) const;
///
/// The second is for recipes that choose the network at run time (pixel_recipe): it calls
/// `f(parts, std::type_identity<G>{})` with the chosen network's parts and its GPU trainer type
/// G (void: none). Agent parts are built in place and never moved: networks keep pointers into
/// their own buffers.

#include <type_traits>
#include <utility>

#include "seedrl/app/run_options.hpp"
#include "seedrl/core/spec.hpp"

namespace seedrl::app {

/// Calls `f(parts, std::type_identity<G>{})` with the recipe's agent: through its `with_agent`
/// when it has one, else with `make`'s parts and `GpuTrainer` as G.
template <class GpuTrainer, class Recipe, class F>
int with_recipe_agent(const Recipe& recipe, const run_options& o, const observation_spec& obs,
                      const action_spec& act, F&& f) {
  if constexpr (requires { recipe.make(o, obs, act); }) {
    return std::forward<F>(f)(recipe.make(o, obs, act), std::type_identity<GpuTrainer>{});
  } else {
    return recipe.with_agent(o, obs, act, std::forward<F>(f));
  }
}

}  // namespace seedrl::app
