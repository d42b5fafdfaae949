// Pixel agents trained the SEED way: one learner with a CNN+LSTM network and learner-side frame
// stacking, and actor processes that send single 84x84 uint8 frames over TCP.
//
//   seedrl_atari local --game Pong [--actors 4] ...   learner + N Python actors on loopback
//                                                     (ALE through ale-py, python/seedrl_actor)
//   seedrl_atari local --game catch ...               learner + N C++ actors playing Catch
//   seedrl_atari learner --game Pong --port P ...     learner only; actors connect to it
//   seedrl_atari actor --game catch --learner H:P     one C++ Catch actor
//
// Python actors for ALE games can also be started by hand on other machines:
//   python -m seedrl_actor --learner HOST:PORT --env ALE/Pong-v5 --envs 8
// docs/atari.md says how to run a full training and what to expect. Modes, flags, signals,
// checkpoints and the progress loop are seedrl/app; this file holds what is specific to pixels.
#include <algorithm>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/app/cli.hpp"
#include "seedrl/app/python_actor.hpp"
#include "seedrl/app/run_actor.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/trainer_choice.hpp"
#include "seedrl/env/catch.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#if defined(SEEDRL_HAS_CUDA)
#include "seedrl/cuda/pixel_lstm_trainer.hpp"  // instantiated in cuda_trainer.cu
template <class TorsoConfig>
using gpu_trainer = seedrl::cuda::pixel_lstm_trainer<float, TorsoConfig>;
#else
template <class>
using gpu_trainer = void;  // --device cuda says how to build with CUDA
#endif
#ifndef SEEDRL_PYTHON_PACKAGE_DIR
#define SEEDRL_PYTHON_PACKAGE_DIR ""
#endif

namespace {

namespace app = seedrl::app;

struct pixel_options {
  std::string game = "Pong";
  std::string network = "nature";
  std::ptrdiff_t lstm_size = 0;   // 0: the network's default (Nature 512, ResNet 256)
  std::ptrdiff_t dense_size = 0;  // 0: the network's default
  std::ptrdiff_t frame_stack = 4;
  std::vector<std::ptrdiff_t> conv_channels;  // empty: the network's default
  double sticky_actions = 0.0;
  bool full_action_space = false;
  app::python_actor python;  // ALE games: python -m seedrl_actor --env ALE/NAME-v5
  bool is_catch() const { return game == "catch"; }
  std::string ale_id() const { return "ALE/" + game + "-v5"; }
};

void add_pixel_flags(CLI::App& cli, pixel_options& p) {
  cli.add_option("--game", p.game,
                 "an ALE game (Pong, Breakout, ...: ALE/NAME-v5 through the Python actor) or catch "
                 "(a C++ pixel game)");
  cli.add_option("--network", p.network, "Nature CNN + LSTM 512, or IMPALA ResNet + LSTM 256")
      ->check(CLI::IsMember({"nature", "resnet"}));
  cli.add_option("--lstm-size", p.lstm_size, "LSTM width (0: the network's default)")
      ->check(app::non_negative_number);
  cli.add_option("--dense-size", p.dense_size, "dense layer width (0: the network's default)")
      ->check(app::non_negative_number);
  cli.add_option("--conv-channels", p.conv_channels,
                 "convolution widths A,B,C (Nature: 3 values, default 32,64,64; ResNet: one per "
                 "stack, default 16,32,32)")
      ->delimiter(',')
      ->check(app::positive_number);
  cli.add_option("--frame-stack", p.frame_stack, "frames per stack, kept on the learner")
      ->check(app::positive_number);
  cli.add_option("--sticky-actions", p.sticky_actions, "ALE repeat_action_probability")
      ->check(CLI::Range(0.0, 1.0));
  cli.add_flag("--full-action-space", p.full_action_space,
               "all 18 ALE actions instead of the game's minimal set");
  cli.add_option("--python", p.python.python,
                 "Python for the ALE actors (default $SEEDRL_PYTHON or python3)");
}

/// Trains `Agent` (a pixel agent under learner-side frame stacking) sized by the flags.
template <class Agent, class Config>
int train(const app::run_options& o, const pixel_options& p, app::secret_ptr secret, Config c,
          app::environment_info env) {
  c.height = c.width = 84;
  c.channels = p.frame_stack;
  c.num_actions = env.actions.num_actions;
  c.seed = o.seed;
  if (p.lstm_size > 0)
    c.lstm_size = p.lstm_size;
  if (p.dense_size > 0)
    c.dense_size = p.dense_size;
  seedrl::frame_stack_config stack;
  stack.depth = p.frame_stack;
  seedrl::adam_config adam;
  adam.learning_rate = *o.learning_rate;
  app::agent_parts<seedrl::frame_stacked<Agent>> agent{
      seedrl::frame_stacked<Agent>(stack, c), seedrl::describe(c), seedrl::adam<float>(adam), {}};
  agent.loss.max_abs_reward = 1.0f;  // SEED clips Atari rewards on the learner
  return app::with_trainer<gpu_trainer<std::remove_cvref_t<decltype(c.torso)>>>(
      o, "seedrl_atari", [&](auto trainer) {
        return app::run_learner(o, std::move(secret), agent, env, std::move(trainer));
      });
}

int run_learner(const app::run_options& o, const pixel_options& p, app::secret_ptr secret) {
  app::environment_info env;
  env.name = p.is_catch() ? "catch" : p.ale_id();
  env.observations = seedrl::catch_game::observation_spec();  // single 84x84x1 uint8 frames
  env.actions = seedrl::action_spec::discrete(3);
  env.announce_network = true;
  if (p.is_catch()) {
    env.actor_kind = "C++ catch";
    env.actor_command = [&o](const std::string& address, int, std::uint64_t seed) {
      return app::self_actor_command(o, address, seed, {"--game", "catch"});
    };
  } else {
    const auto spec = p.python.spec();
    if (!spec) {
      std::fprintf(stderr,
                   "cannot ask the Python actor for %s's action count: is ale-py installed for %s?"
                   " (pip install ale-py gymnasium numpy; or --python PATH)\n",
                   p.ale_id().c_str(), p.python.python.c_str());
      return 3;
    }
    env.actions = spec->actions;
    env.actor_kind = p.ale_id();
    env.actor_command = [&o, &p](const std::string& address, int, std::uint64_t seed) {
      return p.python.command(address, o.envs_per_actor, seed);
    };
  }
  if (p.network == "nature") {
    seedrl::nature_cnn_lstm_agent_config c;
    if (!p.conv_channels.empty())
      std::copy_n(p.conv_channels.begin(), 3, c.torso.channels.begin());
    return train<seedrl::nature_cnn_lstm_agent<float>>(o, p, std::move(secret), c, env);
  }
  auto c = seedrl::impala_resnet_lstm_agent_defaults();
  if (!p.conv_channels.empty())
    c.torso.channels = p.conv_channels;
  return train<seedrl::impala_resnet_lstm_agent<float>>(o, p, std::move(secret), c, env);
}

}  // namespace

int main(int argc, char** argv) {
  app::run_options o;  // SEED's Atari settings; checkpoints every 10 minutes and at exit
  o.envs_per_actor = 8;
  o.max_envs = 256;
  o.batch_size = o.inference_batch = 32;
  o.learning_rate = 4.8e-4;
  o.entropy_cost = 0.01;
  o.total_frames = 50'000'000;
  o.target_return.reset();
  o.checkpoint_every_steps = 0;
  o.checkpoint_every_seconds = 600;
  o.progress_seconds = 5;
  pixel_options p;
  CLI::App cli("Pixel agents trained the SEED way (ALE through Python actors, or Catch)",
               "seedrl_atari");
  app::add_run_flags(cli, o, {.eval = false});
  add_pixel_flags(cli, p);
  if (const auto rc = app::parse_command_line(cli, argc, argv))
    return *rc;
  app::finish_run_options(o);
  p.python.env_id = p.ale_id();
  if (p.sticky_actions > 0.0)
    p.python.options.insert(p.python.options.end(),
                            {"--sticky-actions", std::to_string(p.sticky_actions)});
  if (p.full_action_space)
    p.python.options.emplace_back("--full-action-space");
  app::python_actor::use_package_from(SEEDRL_PYTHON_PACKAGE_DIR);
  if (p.network == "nature" && !p.conv_channels.empty() && p.conv_channels.size() != 3) {
    std::fprintf(stderr, "seedrl_atari: --conv-channels needs 3 values for the Nature CNN\n");
    return 2;
  }
  if (o.mode == app::run_mode::actor && !p.is_catch()) {
    std::fprintf(stderr,
                 "actor mode plays catch; for ALE games run: %s -m seedrl_actor --learner "
                 "HOST:PORT --env %s --envs K\n",
                 p.python.python.c_str(), p.ale_id().c_str());
    return 2;
  }
  app::install_stop_handlers();
  try {
    auto secret = app::load_secret(o);
    if (o.mode != app::run_mode::actor)
      return run_learner(o, p, std::move(secret));
    return app::run_actor<seedrl::catch_game>(
        o, std::move(secret),
        [seed = o.seed](std::size_t i) { return seedrl::catch_game({}, seed * 7919 + i); },
        "catch-actor");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
