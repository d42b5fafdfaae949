#pragma once
/// \file
/// What `app::program<Env>` (app/program.hpp) hands `run_program`, the code that parses a
/// program's flags and runs its modes (app/program_run.hpp): the program's names and defaults
/// and its environments with their type erased (seedrl/env/any_env_batch.hpp). So
/// `run_program` depends on the recipe and the GPU trainer only, and whole programs for the
/// library's recipes are compiled once into seedrl::app (app/compiled.hpp): a recipe's header
/// declares its `extern template` and marks it with `detail::compiled_program`.

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "seedrl/app/run_options.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/any_env_batch.hpp"

namespace seedrl::app {

/// What a program's environments are, as one of them reports it.
struct environment_specs {
  observation_spec observations;
  action_spec actions;
};

/// A program as `run_program` sees it; see the file comment.
struct program_setup {
  std::string name;               ///< the binary's name in messages
  std::string description;        ///< heads --help
  run_options& options;           ///< the flags' defaults, then what they parse to
  std::string environment_name;   ///< checkpoint meta "environment" (empty: the name)
  bool announce_network = false;  ///< print "actions: N; network: ..." once listening
  /// The specs of the environments of a process seeded `seed` (--seed).
  std::function<environment_specs(std::uint64_t seed)> specs;
  /// Batches of the environments of a process seeded `seed`.
  std::function<env_batch_factory(std::uint64_t seed)> batches;
};

/// Parses the flags (the shared ones and the recipe's) and runs the mode they name; returns
/// main's exit status (app/program.hpp). Defined in app/program_run.hpp.
template <class GpuTrainer, class Recipe>
int run_program(const program_setup& setup, Recipe& recipe, int argc, char** argv);

namespace detail {
/// Complete where app/program_run.hpp, run_program's definition, is included.
template <class Recipe>
struct program_run_definitions;

/// True for the (GPU trainer, recipe) pairs whose run_program seedrl::app holds compiled.
template <class GpuTrainer, class Recipe>
struct compiled_program : std::false_type {};
}  // namespace detail

}  // namespace seedrl::app
