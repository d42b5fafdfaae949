#pragma once
/// \file
/// The agent for an environment known only by its specs (a gymnasium environment behind the
/// Python actor): a vector observation gets `mlp_recipe`'s MLP torso; an image (H x W x C, or
/// H x W uint8 frames) gets the conv torso `--torso` names, a dense layer and an LSTM. One set
/// of defaults for vectors and one for images, never per environment (docs/gym.md says how
/// they were chosen). Also the Python actor's flags (--env, --env-import, --env-arg, --python)
/// and the resolved configuration printed at start.
///
///   gym_recipe r;  r.add_flags(cli);  ...parse...
///   r.visit(options, env, actor, [&](auto parts, auto gpu) { ... with_trainer<typename
///       decltype(gpu)::type>(...) ... run_learner<gpu_engine_for_t<...>>(..., parts, ...); });
///
/// `gpu` names the GPU trainer for --device cuda (and, through gpu_engine_for_t, the GPU
/// inference engine of the same network): `VectorGpu` for vectors, `PixelGpu<torso
/// config>` for images (`basic_gym_recipe<pixel_gpu_trainer, cuda::mlp_lstm_trainer<float>>` in
/// a program built with CUDA); `gym_recipe`'s are void, and --device cuda then says how to
/// build with CUDA. Images train as `frame_stacked` agents of depth 1 (stacking nothing), the
/// network the GPU pixel trainer takes; parameters and descriptions are the agent's.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/pixel_recipe.hpp"
#include "seedrl/app/python_actor.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/net/small_conv_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"

namespace seedrl::app {

/// --env ID (required), --env-import MODULE[:FUNCTION], --env-arg KEY=VALUE and --python,
/// written into `p` as the Python actor's command.
inline void add_python_actor_flags(CLI::App& cli, python_actor& p) {
  cli.add_option("--env", p.env_id, "gymnasium environment id, e.g. CartPole-v1")->required();
  cli.add_option_function<std::vector<std::string>>(
         "--env-import",
         [&p](const std::vector<std::string>& v) {
           for (const auto& m : v)
             p.options.insert(p.options.end(), {"--env-import", m});
         },
         "import MODULE before making --env (a third-party package registering its "
         "environments), or import it and call MODULE.FUNCTION() to register them (repeatable)")
      ->option_text("MODULE[:FUNCTION]");
  cli.add_option_function<std::vector<std::string>>(
         "--env-arg",
         [&p](const std::vector<std::string>& v) {
           for (const auto& a : v)
             p.options.insert(p.options.end(), {"--env-arg", a});
         },
         "keyword argument for gymnasium.make; VALUE is read as JSON when it parses "
         "(repeatable)")
      ->option_text("KEY=VALUE");
  cli.add_option("--python", p.python, "Python for the actors (default $SEEDRL_PYTHON or python3)");
}

/// See the file comment.
template <template <class> class PixelGpu = no_gpu_trainer, class VectorGpu = void>
struct basic_gym_recipe {
  /// Vector observations: the MLP recipe and its defaults, as every C++ program's
  /// (--hidden-sizes, --lstm).
  mlp_recipe vector;
  /// Images: the conv torso, its widths (empty: the torso's defaults), dense and LSTM widths.
  std::string torso = "nature";
  std::vector<std::ptrdiff_t> conv_channels;
  std::ptrdiff_t dense_size = 256;
  std::ptrdiff_t lstm_size = 256;
  double image_learning_rate = 4.8e-4;

  void add_flags(CLI::App& cli) {
    cli.add_option(
           "--hidden-sizes", vector.network.hidden_sizes,
           "vector observations: MLP widths (ReLU after each; 128,128 for continuous actions)")
        ->delimiter(',')
        ->check(positive_number);
    cli.add_flag("--lstm", vector.lstm, "vector observations: add an LSTM core (64) to the MLP");
    cli.add_flag("--orthogonal-init", vector.orthogonal_init,
                 "vector observations: orthogonal initialization (gains sqrt(2) hidden, 0.01 "
                 "policy, 1 value) instead of PyTorch's default");
    vector.add_value_network_flag(cli);
    vector.add_log_std_flags(cli);
    cli.add_option("--torso", torso,
                   "images: nature (Nature CNN), impala (IMPALA ResNet) or small (3x3 "
                   "convolutions for low-resolution images such as 10x10xC)")
        ->check(CLI::IsMember({"nature", "impala", "small"}));
    cli.add_option("--conv-channels", conv_channels,
                   "images: convolution widths (nature: 3 values, default 32,64,64; impala: one "
                   "per stack, default 16,32,32; small: one per 3x3 convolution, default 16,32)")
        ->delimiter(',')
        ->check(positive_number);
    cli.add_option("--dense-size", dense_size, "images: dense layer after the torso")
        ->check(positive_number);
    cli.add_option("--lstm-size", lstm_size, "images: LSTM width")->check(positive_number);
    if (auto* lr = cli.get_option_no_throw("--learning-rate"))
      lr->description("Adam learning rate (default " + detail::format_number(vector.learning_rate) +
                      " for vector observations, " +
                      detail::format_number(vector.continuous_learning_rate) +
                      " with continuous actions, " + detail::format_number(image_learning_rate) +
                      " for images)");
  }

  /// The run's settings for the spec's kind where the command line left them: vectors keep
  /// run_options' own (PPO, rewards scaled), with the continuous-action changes for a
  /// continuous action space (mlp_recipe::use_action_kind_defaults); images train with IMPALA
  /// on rewards as they are, SEED's setting. Call after parsing, once the spec is known.
  void use_kind_defaults(run_options& o, const observation_spec& observations,
                         const action_spec& actions, const CLI::App& cli) {
    if (!is_image(observations)) {
      vector.use_action_kind_defaults(o, actions, cli);
      return;
    }
    if (cli.count("--algo") == 0)
      o.algorithm = "impala";
    if (!o.given.scale_rewards)
      o.scale_rewards = false;
  }

  /// Images: rank 3 (H x W x C), or rank 2 uint8 frames (H x W, one channel). Everything else
  /// is a vector, flattened.
  static bool is_image(const observation_spec& s) {
    return s.shape.rank() == 3 || (s.shape.rank() == 2 && s.type == dtype::uint8);
  }

  /// Builds the agent for `env`'s specs, prints the resolved configuration, and returns
  /// `f(agent_parts, std::type_identity<GPU trainer>{})`. Throws std::invalid_argument for a
  /// configuration that cannot work.
  template <class F>
  int visit(const run_options& o, const environment_info& env, const python_actor& actor,
            F&& f) const {
    if (!is_image(env.observations)) {
      auto parts = vector.make(o, env.observations, env.actions);
      const double lr = o.learning_rate
                            ? *o.learning_rate
                            : (vector.lstm ? vector.lstm_learning_rate : vector.learning_rate);
      print(o, env, actor, "vector -> MLP torso", parts.description, lr);
      return f(std::move(parts), std::type_identity<VectorGpu>{});
    }
    if (!env.actions.is_discrete())
      throw std::invalid_argument(
          "continuous actions " + env.actions.shape.to_string() + " with image observations " +
          env.observations.shape.to_string() +
          ": seedrl_gym gives continuous actions to vector observations only so far");
    if (torso == "small") {
      small_conv_lstm_agent_config c;
      if (!conv_channels.empty())
        c.torso.channels = conv_channels;
      return image<small_conv_lstm_agent<float>>(o, env, actor, c, f);
    }
    if (torso == "nature") {
      nature_cnn_lstm_agent_config c;
      if (!conv_channels.empty()) {
        if (conv_channels.size() != 3)
          throw std::invalid_argument("--conv-channels needs 3 values for --torso nature");
        std::copy_n(conv_channels.begin(), 3, c.torso.channels.begin());
      }
      return image<nature_cnn_lstm_agent<float>>(o, env, actor, c, f);
    }
    auto c = impala_resnet_lstm_agent_defaults();
    if (!conv_channels.empty())
      c.torso.channels = conv_channels;
    return image<impala_resnet_lstm_agent<float>>(o, env, actor, c, f);
  }

 private:
  template <class Agent, class Config, class F>
  int image(const run_options& o, const environment_info& env, const python_actor& actor, Config c,
            F& f) const {
    const auto& shape = env.observations.shape;
    c.height = shape[0];
    c.width = shape[1];
    c.channels = shape.rank() == 3 ? shape[2] : 1;
    c.channels_last = true;
    c.num_actions = env.actions.num_actions;
    c.dense_size = dense_size;
    c.lstm_size = lstm_size;
    // Explicit, never hidden: uint8 pixels are scaled to [0, 1]; other dtypes go in as they are.
    c.observation_scale = env.observations.type == dtype::uint8 ? 1.0 / 255.0 : 1.0;
    c.seed = o.seed;
    const adam_config adam = run_adam(o, image_learning_rate);
    // Depth 1: the frame is the agent's whole input (channels_last as the frame).
    const frame_stack_config stack{.height = c.height,
                                   .width = c.width,
                                   .channels = c.channels,
                                   .depth = 1,
                                   .channels_last = true};
    agent_parts<stacked_agent<Agent>> parts{
        stacked_agent<Agent>(stack, c), describe(c), seedrl::adam<float>(adam), {}};
    print(o, env, actor, "image -> " + torso + " conv torso", parts.description,
          adam.learning_rate);
    return f(std::move(parts),
             std::type_identity<PixelGpu<std::remove_cvref_t<decltype(c.torso)>>>{});
  }

  static std::string stop_condition(const run_options& o) {
    if (o.mode == run_mode::eval)
      return "after " + std::to_string(o.eval_episodes) +
             " episodes (eval: " + (o.eval_sample ? "sampled" : "greedy") +
             " actions, no training)";
    return std::to_string(o.total_frames) + " frames or mean return " +
           (o.target_return ? detail::format_number(*o.target_return) : "none (no target)");
  }

  // "2 (discrete)", or "continuous [6] in [-1, 1] (Gaussian head, squashed by tanh)".
  static std::string describe_actions(const environment_info& env) {
    const action_spec& a = env.actions;
    if (a.is_discrete())
      return std::to_string(a.num_actions) + " (discrete)";
    std::string d = a.to_string();
    d += " (Gaussian head)";
    return d;
  }

  static void print(const run_options& o, const environment_info& env, const python_actor& actor,
                    const std::string& kind, const std::string& network, double lr) {
    std::string command;
    for (const auto& a : actor.args())
      command += (command.empty() ? "" : " ") + a;
    std::printf(
        "configuration:\n"
        "  environment     %s (actors: %s)\n"
        "  observations    %s %s: %s\n"
        "  actions         %s\n"
        "  network         %s\n"
        "  optimizer       Adam, learning rate %s\n"
        "  loss            %s, entropy cost %s%s\n"
        "  unrolls         length %zu, batch %zu, inference batch %zu\n"
        "  actors          %d x %zu envs, seed %llu\n"
        "  stop            %s\n",
        env.name.c_str(), command.c_str(), to_string(env.observations.type),
        env.observations.shape.to_string().c_str(), kind.c_str(), describe_actions(env).c_str(),
        network.c_str(), detail::format_number(lr).c_str(), algorithm_summary(o).c_str(),
        detail::format_number(o.entropy_cost).c_str(),
        env.actions.is_discrete() ? "" : " per action dimension", o.unroll_length, o.batch_size,
        o.inference_batch, o.actors, o.envs_per_actor, static_cast<unsigned long long>(o.seed),
        stop_condition(o).c_str());
    std::fflush(stdout);
  }
};

/// The recipe of a program without GPU trainers: --device cuda says how to build with CUDA.
using gym_recipe = basic_gym_recipe<>;

}  // namespace seedrl::app
