// Any gymnasium environment with discrete actions, trained the SEED way: one C++ learner and
// Python actor processes (python -m seedrl_actor --env ID) on loopback or over TCP.
//
//   seedrl_gym local --env CartPole-v1 --target-return 475
//   seedrl_gym local --env Acrobot-v1 --target-return -100
//   seedrl_gym local --env my_pkg/MyEnv-v0 --env-import my_pkg     a third-party environment
//   seedrl_gym learner --env ID --port P        actors: python -m seedrl_actor --learner H:P ...
//   seedrl_gym eval --env CartPole-v1 --checkpoint-dir DIR     the greedy policy of a checkpoint
//
// A vector observation gets an MLP torso (64-64, feed-forward unless --lstm); an image (H x W x C,
// or H x W) gets the conv torso --torso names, a dense layer and an LSTM. docs/gym.md lists the
// defaults (one set for vectors, one for images) and how they were measured.
#include <cstdio>
#include <string>
#include <vector>

#include "seedrl/app/auth.hpp"
#include "seedrl/app/cli.hpp"
#include "seedrl/app/gym_recipe.hpp"
#include "seedrl/app/pixel_gpu_trainer.hpp"  // CUDA: instantiated in cuda_trainer.cu
#include "seedrl/app/python_actor.hpp"
#include "seedrl/app/run_actor_eval.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/app/trainer_choice.hpp"
#if defined(SEEDRL_HAS_CUDA)
#include "seedrl/cuda/mlp_lstm_trainer.hpp"  // instantiated in cuda_trainer.cu
using vector_gpu_trainer = seedrl::cuda::mlp_lstm_trainer<float>;
#else
using vector_gpu_trainer = void;  // --device cuda says how to build with CUDA
#endif
#ifndef SEEDRL_PYTHON_PACKAGE_DIR
#define SEEDRL_PYTHON_PACKAGE_DIR ""
#endif

namespace app = seedrl::app;

int main(int argc, char** argv) {
  app::run_options o;
  o.target_return.reset();  // no target unless --target-return: --total-frames
  o.total_frames = 5'000'000;
  app::basic_gym_recipe<app::pixel_gpu_trainer, vector_gpu_trainer> recipe;
  app::python_actor python;
  CLI::App cli("Any gymnasium environment with discrete actions, through Python actors",
               "seedrl_gym");
  app::add_run_flags(cli, o, {.actor = false});
  app::add_python_actor_flags(cli, python);
  recipe.add_flags(cli);
  if (const auto rc = app::parse_command_line(cli, argc, argv))
    return *rc;
  app::finish_run_options(o);
  app::python_actor::use_package_from(SEEDRL_PYTHON_PACKAGE_DIR);
  app::install_stop_handlers();
  try {
    const auto spec = python.spec();  // Python names what it refuses on stderr
    if (!spec) {
      std::fprintf(stderr, "seedrl_gym: %s cannot be trained (see above)\n", python.env_id.c_str());
      return 2;
    }
    recipe.use_kind_defaults(o, spec->observations, spec->actions, cli);
    app::environment_info env;
    env.name = env.actor_kind = python.env_id;
    env.observations = spec->observations;
    env.actions = spec->actions;
    env.announce_network = true;
    env.checkpoint_hint =
        "use the network flags the run was trained with (--hidden-sizes, --lstm, --torso, "
        "--conv-channels, --dense-size, --lstm-size)";
    env.actor_command = [&](const std::string& address, int, std::uint64_t seed) {
      return python.command(address, o.envs_per_actor, seed);
    };
    auto secret = app::load_secret(o);
    return recipe.visit(o, env, python, [&](auto parts, auto gpu) {
      if (o.mode == app::run_mode::eval)
        return app::run_actor_eval(o, std::move(secret), parts, env);
      using gpu_trainer = typename decltype(gpu)::type;
      return app::with_trainer<gpu_trainer>(o, "seedrl_gym", [&](auto trainer) {
        return app::run_learner<app::gpu_engine_for_t<gpu_trainer>>(o, std::move(secret), parts,
                                                                    env, std::move(trainer));
      });
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seedrl_gym: %s\n", e.what());
    return 2;
  }
}
