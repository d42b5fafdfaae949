#pragma once
/// \file
/// A whole training program for an environment written in C++: `local`, `learner`, `actor`
/// and `eval` modes, flags with --help (app/run_options.hpp), clean stops on signals,
/// authentication, the progress line, TensorBoard metrics, checkpoints and resume. A program
/// is its environment plus a few lines:
///
///   int main(int argc, char** argv) {
///     seedrl::app::program<my_env> p("my_program", "trains my_env the SEED way");
///     p.options.target_return = 90.0;            // defaults, shown by --help
///     return p.run(argc, argv, seedrl::app::mlp_recipe{});
///   }
///
/// Exit status: 0 done (target reached, or --total-frames without a target; an actor told to
/// stop), 1 stopped short of the target or failed, 2 a usage error (bad flag or value, unusable
/// checkpoint), 130 stopped by SIGINT/SIGTERM.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "seedrl/app/agent_recipe.hpp"
#include "seedrl/app/auth.hpp"
#include "seedrl/app/cli.hpp"
#include "seedrl/app/run_actor.hpp"
#include "seedrl/app/run_actor_eval.hpp"
#include "seedrl/app/run_eval.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/app/trainer_choice.hpp"
#include "seedrl/env/environment.hpp"

namespace seedrl::app {

/// See the file comment. `Env` models seedrl::Environment, with discrete or continuous actions
/// (the latter trained as a diagonal Gaussian policy; eval mode then plays through actor
/// processes and an inference-only learner, app/run_actor_eval.hpp).
template <class Env>
class program {
  static_assert(check_environment<Env>());

 public:
  /// `name` is the binary's name in messages; `description` heads --help.
  program(std::string name, std::string description)
      : name_(std::move(name)), description_(std::move(description)) {}

  /// Defaults of the shared flags; change them before run().
  run_options options;
  /// Builds environment `i` of a process from the process's seed (default: `Env{}`; env_batch
  /// seeds each environment on reset anyway).
  std::function<Env(std::size_t index, std::uint64_t seed)> make_env =
      [](std::size_t, std::uint64_t) { return Env{}; };
  /// Checkpoint meta "environment" (default: the program's name).
  std::string environment_name;
  /// Print "actions: N; network: ..." once the learner listens.
  bool announce_network = false;

  /// Parses the flags and runs the mode they name; returns main's exit status. `Recipe` is an
  /// agent recipe (app/agent_recipe.hpp). `GpuTrainer` is the recipe network's GPU trainer for
  /// --device cuda, or void without CUDA (a recipe with `with_agent` names its own).
  template <class GpuTrainer = void, class Recipe>
  int run(int argc, char** argv, Recipe recipe) {
    CLI::App cli(description_, name_);
    add_run_flags(cli, options);
    recipe.add_flags(cli);
    if (const auto rc = parse_command_line(cli, argc, argv))
      return *rc;
    finish_run_options(options);
    install_stop_handlers();
    try {
      const auto make = [f = make_env, seed = options.seed](std::size_t i) { return f(i, seed); };
      const std::string env_name = environment_name.empty() ? name_ : environment_name;
      if (options.mode == run_mode::eval) {
        const Env probe = make_env(0, options.seed);
        // A recipe that can rebuild its network from a checkpoint's description does so.
        if constexpr (requires { recipe.use_checkpoint_network(std::string()); }) {
          if (const auto held = eval_checkpoint_network(options))
            recipe.use_checkpoint_network(*held);
        }
        if constexpr (!std::is_integral_v<typename Env::action_type>) {
          // seedrl::policy plays discrete actions; a Gaussian policy plays through the learner.
          return with_recipe_agent<GpuTrainer>(recipe, options, probe.observation_spec(),
                                               probe.action_spec(), [&](const auto& parts, auto) {
                                                 return run_actor_eval(
                                                     options, load_secret(options), parts,
                                                     learner_side_info(env_name, probe, recipe));
                                               });
        } else {
          return with_recipe_agent<GpuTrainer>(recipe, options, probe.observation_spec(),
                                               probe.action_spec(), [&](const auto& parts, auto) {
                                                 return run_eval<Env>(options, parts.network,
                                                                      parts.description, make,
                                                                      recipe.checkpoint_hint());
                                               });
        }
      }
      secret_ptr secret = load_secret(options);
      if (options.mode == run_mode::actor)
        return run_actor<Env>(options, std::move(secret), make, env_name + "-actor");
      const Env probe = make_env(0, options.seed);
      const environment_info env = learner_side_info(env_name, probe, recipe);
      return with_recipe_agent<GpuTrainer>(
          recipe, options, env.observations, env.actions, [&](const auto& parts, auto gpu) {
            using gpu_trainer = typename decltype(gpu)::type;
            return with_trainer<gpu_trainer>(options, name_, [&](auto trainer) {
              return run_learner<gpu_engine_for_t<gpu_trainer>>(options, std::move(secret), parts,
                                                                env, std::move(trainer));
            });
          });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
  }

 private:
  template <class Recipe>
  environment_info learner_side_info(const std::string& env_name, const Env& probe,
                                     const Recipe& recipe) const {
    environment_info env;
    env.name = env_name;
    env.observations = probe.observation_spec();
    env.actions = probe.action_spec();
    env.checkpoint_hint = recipe.checkpoint_hint();
    env.announce_network = announce_network;
    return env;
  }

  std::string name_;
  std::string description_;
};

}  // namespace seedrl::app
