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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "seedrl/app/compiled.hpp"
#include "seedrl/app/program_setup.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/env/any_env_batch.hpp"
#include "seedrl/env/environment.hpp"

#if !SEEDRL_APP_COMPILED
#include "seedrl/app/program_run.hpp"
#endif

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
  /// --device cuda, or void without CUDA (a recipe with `with_agent` names its own). The
  /// compiled seedrl::app holds the whole program for the library's recipes without a GPU
  /// trainer; for others, include seedrl/app/program_run.hpp.
  template <class GpuTrainer = void, class Recipe>
  int run(int argc, char** argv, Recipe recipe) {
    static_assert(
        detail::compiled_program<GpuTrainer, Recipe>::value ||
            requires { sizeof(detail::program_run_definitions<Recipe>); },
        "seedrl: the compiled seedrl::app holds programs for its own recipes without a "
        "GPU trainer; for this recipe or GPU trainer, #include "
        "\"seedrl/app/program_run.hpp\" (or link seedrl::app_header_only)");
    program_setup setup{name_, description_, options, environment_name, announce_network, {}, {}};
    setup.specs = [make = make_env](std::uint64_t seed) {
      const Env probe = make(0, seed);
      return environment_specs{probe.observation_spec(), probe.action_spec()};
    };
    setup.batches = [make = make_env](std::uint64_t seed) {
      return make_env_batch_factory<Env>([make, seed](std::size_t i) { return make(i, seed); });
    };
    return run_program<GpuTrainer>(setup, recipe, argc, argv);
  }

 private:
  std::string name_;
  std::string description_;
};

}  // namespace seedrl::app
