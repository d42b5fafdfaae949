// Atari games trained the SEED way: Python actor processes play ALE games through ale-py
// (python/seedrl_actor) and send single 84x84 uint8 frames over TCP; the C++ learner stacks
// them and trains a Nature CNN (or IMPALA ResNet) + LSTM.
//
//   seedrl_atari local --game Pong [--actors 4] ...   learner + N Python actors on loopback
//   seedrl_atari learner --game Pong --port P ...     learner only; actors connect to it
//   seedrl_atari eval --game Pong --checkpoint-dir D  the greedy policy of a checkpoint
//
// Python actors can also be started by hand on other machines:
//   python -m seedrl_actor --learner HOST:PORT --env ALE/Pong-v5 --envs 8
// `--game catch` runs seedrl_catch (examples/catch), the C++ pixel game, with the other flags.
// docs/atari.md says how to run a full training and what to expect. Modes, flags, signals,
// checkpoints and the progress loop are seedrl/app, the network app/pixel_recipe.hpp; this
// file holds what is specific to ALE.
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "seedrl/app/pixel_gpu_trainer.hpp"  // CUDA: instantiated in cuda_trainer.cu
#include "seedrl/app/pixel_recipe.hpp"
#include "seedrl/app/python_actor.hpp"
#include "seedrl/app/run_actor_eval.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/app/trainer_choice.hpp"
#ifndef SEEDRL_PYTHON_PACKAGE_DIR
#define SEEDRL_PYTHON_PACKAGE_DIR ""
#endif

namespace app = seedrl::app;

namespace {

/// `--game catch` (or --game=catch): runs seedrl_catch from this binary's folder with the
/// other arguments; returns only when that fails.
int run_catch_instead(int argc, char** argv) {
  std::vector<char*> args;
  const auto catch_bin =
      std::filesystem::read_symlink("/proc/self/exe").parent_path() / "seedrl_catch";
  args.push_back(const_cast<char*>(catch_bin.c_str()));
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--game" && i + 1 < argc && std::string_view(argv[i + 1]) == "catch")
      ++i;
    else if (a != "--game=catch")
      args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  std::fprintf(stderr, "--game catch runs %s: %s\n", args[0], std::strerror(errno));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--game=catch" ||
        (a == "--game" && i + 1 < argc && std::string_view(argv[i + 1]) == "catch"))
      return run_catch_instead(argc, argv);
  }
  app::run_options o;
  app::use_pixel_defaults(o);
  app::pixel_recipe<app::pixel_gpu_trainer> recipe;
  std::string game = "Pong";
  double sticky_actions = 0.0;
  bool full_action_space = false;
  app::python_actor python;
  CLI::App cli("Atari games trained the SEED way (ALE through Python actors)", "seedrl_atari");
  app::add_run_flags(cli, o);
  recipe.add_flags(cli);
  cli.add_option("--game", game,
                 "an ALE game (Pong, Breakout, ...: ALE/NAME-v5 through the Python actor), or "
                 "catch (runs seedrl_catch)");
  cli.add_option("--sticky-actions", sticky_actions, "ALE repeat_action_probability")
      ->check(CLI::Range(0.0, 1.0));
  cli.add_flag("--full-action-space", full_action_space,
               "all 18 ALE actions instead of the game's minimal set");
  cli.add_option("--python", python.python,
                 "Python for the ALE actors (default $SEEDRL_PYTHON or python3)");
  if (const auto rc = app::parse_command_line(cli, argc, argv))
    return *rc;
  app::finish_run_options(o);
  python.env_id = "ALE/" + game + "-v5";
  if (sticky_actions > 0.0)
    python.options.insert(python.options.end(),
                          {"--sticky-actions", std::to_string(sticky_actions)});
  if (full_action_space)
    python.options.emplace_back("--full-action-space");
  app::python_actor::use_package_from(SEEDRL_PYTHON_PACKAGE_DIR);
  if (o.mode == app::run_mode::actor) {
    std::fprintf(stderr,
                 "actor mode plays catch (seedrl_catch); for ALE games run: %s -m seedrl_actor "
                 "--learner HOST:PORT --env %s --envs K\n",
                 python.python.c_str(), python.env_id.c_str());
    return 2;
  }
  app::install_stop_handlers();
  try {
    auto secret = app::load_secret(o);
    const auto spec = python.spec();
    if (!spec) {
      std::fprintf(stderr,
                   "cannot ask the Python actor for %s's action count: is ale-py installed for %s?"
                   " (pip install ale-py gymnasium numpy; or --python PATH)\n",
                   python.env_id.c_str(), python.python.c_str());
      return 3;
    }
    app::environment_info env;
    env.name = python.env_id;
    env.observations = {seedrl::dtype::uint8, {84, 84}};  // single frames
    env.actions = spec->actions;
    env.announce_network = true;
    env.checkpoint_hint = recipe.checkpoint_hint();
    env.actor_kind = python.env_id;
    env.actor_command = [&](const std::string& address, int, std::uint64_t seed) {
      return python.command(address, o.envs_per_actor, seed);
    };
    if (o.mode == app::run_mode::eval) {
      // The checkpoint names its network (--torso and its widths): play that one.
      if (const auto held = app::eval_checkpoint_network(o))
        recipe.use_checkpoint_network(*held);
    }
    return recipe.with_agent(o, env.observations, env.actions, [&](auto& parts, auto gpu) {
      if (o.mode == app::run_mode::eval)
        return app::run_actor_eval(o, std::move(secret), parts, env);
      using gpu_trainer = typename decltype(gpu)::type;
      return app::with_trainer<gpu_trainer>(o, "seedrl_atari", [&](auto t) {
        return app::run_learner<app::gpu_engine_for_t<gpu_trainer>>(o, std::move(secret), parts,
                                                                    env, std::move(t));
      });
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
