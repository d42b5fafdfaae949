#pragma once
/// \file
/// `run_program` (declared in app/program_setup.hpp): a program's flags and modes for any
/// recipe and GPU trainer. The compiled seedrl::app holds it for the library's recipes without
/// a GPU trainer (app/compiled.hpp); a program with a recipe of its own, or with a GPU trainer,
/// includes this header, and app/program.hpp does so itself in header-only use.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include "seedrl/app/agent_recipe.hpp"
#include "seedrl/app/auth.hpp"
#include "seedrl/app/cli.hpp"
#include "seedrl/app/learner_ranks.hpp"
#include "seedrl/app/program_setup.hpp"
#include "seedrl/app/run_actor.hpp"
#include "seedrl/app/run_actor_eval.hpp"
#include "seedrl/app/run_eval.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/app/trainer_choice.hpp"

namespace seedrl::app {

namespace detail {
template <class Recipe>
struct program_run_definitions {};

template <class Recipe>
environment_info learner_side_info(const program_setup& setup, const environment_specs& specs,
                                   const Recipe& recipe) {
  environment_info env;
  env.name = setup.environment_name.empty() ? setup.name : setup.environment_name;
  env.observations = specs.observations;
  env.actions = specs.actions;
  env.checkpoint_hint = recipe.checkpoint_hint();
  env.announce_network = setup.announce_network;
  return env;
}
}  // namespace detail

template <class GpuTrainer, class Recipe>
int run_program(const program_setup& setup, Recipe& recipe, int argc, char** argv) {
  run_options& options = setup.options;
  CLI::App cli(setup.description, setup.name);
  add_run_flags(cli, options);
  recipe.add_flags(cli);
  if (const auto rc = parse_command_line(cli, argc, argv))
    return *rc;
  finish_run_options(options);
  select_rank_gpu(options);  // before anything touches CUDA
  install_stop_handlers();
  try {
    const std::string env_name =
        setup.environment_name.empty() ? setup.name : setup.environment_name;
    if (options.mode == run_mode::actor)  // actors train nothing: no specs, no defaults
      return run_actor(options, load_secret(options), setup.batches(options.seed),
                       env_name + "-actor");
    const environment_specs specs = setup.specs(options.seed);
    // A recipe with settings by action kind (mlp_recipe: continuous actions) applies them
    // where the command line left them.
    if constexpr (requires { recipe.use_action_kind_defaults(options, action_spec{}, cli); })
      recipe.use_action_kind_defaults(options, specs.actions, cli);
    if (options.mode == run_mode::eval) {
      // A recipe that can rebuild its network from a checkpoint's description does so.
      if constexpr (requires { recipe.use_checkpoint_network(std::string()); }) {
        if (const auto held = eval_checkpoint_network(options))
          recipe.use_checkpoint_network(*held);
      }
      if (!specs.actions.is_discrete()) {
        // seedrl::policy plays discrete actions; a Gaussian policy plays through the learner.
        return with_recipe_agent<GpuTrainer>(
            recipe, options, specs.observations, specs.actions, [&](const auto& parts, auto) {
              return run_actor_eval(options, load_secret(options), parts,
                                    detail::learner_side_info(setup, specs, recipe));
            });
      }
      return with_recipe_agent<GpuTrainer>(
          recipe, options, specs.observations, specs.actions, [&](const auto& parts, auto) {
            return run_eval(options, parts.network, parts.description, setup.batches(options.seed),
                            recipe.checkpoint_hint());
          });
    }
    secret_ptr secret = load_secret(options);
    const environment_info env = detail::learner_side_info(setup, specs, recipe);
    return with_recipe_agent<GpuTrainer>(
        recipe, options, env.observations, env.actions, [&](const auto& parts, auto gpu) {
          using gpu_trainer = typename decltype(gpu)::type;
          return with_trainer<gpu_trainer>(options, setup.name, [&](auto trainer) {
            return run_learner<gpu_engine_for_t<gpu_trainer>>(options, std::move(secret), parts,
                                                              env, std::move(trainer));
          });
        });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}

}  // namespace seedrl::app
