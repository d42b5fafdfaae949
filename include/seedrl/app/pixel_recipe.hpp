#pragma once
/// \file
/// The agent recipe for pixel observations (single H x W uint8 frames, Atari's 84x84 or
/// Catch's): frames stacked on the learner (`frame_stacked`, --frame-stack), then the Nature
/// CNN + LSTM (--network nature) or the IMPALA ResNet + LSTM (--network resnet), trained with
/// Adam and the IMPALA loss with rewards clipped to [-1, 1] as SEED does for Atari. The network
/// is chosen at run time, so the recipe hands its agent to a callback instead of returning it
/// (app/agent_recipe.hpp):
///
///   template <class F> int with_agent(const run_options&, const observation_spec&,
///                                     const action_spec&, F&& f) const;
///
/// calls `f(parts, std::type_identity<G>{})` with the `agent_parts` of the chosen network and
/// `G = GpuTrainer<torso config>`, the GPU trainer for --device cuda (e.g.
/// `cuda::pixel_lstm_trainer<float, TorsoConfig>`; the default, `no_gpu_trainer`, is void,
/// and --device cuda then says how to build with CUDA). `use_pixel_defaults` sets SEED's Atari
/// run settings. In eval mode, unless network flags are given, the recipe takes its network
/// from the checkpoint's description (`use_checkpoint_network`).

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/app/cli.hpp"
#include "seedrl/app/compiled.hpp"
#include "seedrl/app/program_setup.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"

namespace seedrl::app {

/// `GpuTrainer` of a program built without CUDA.
template <class TorsoConfig>
using no_gpu_trainer = void;

/// The image-observation defaults, SEED's Atari settings: IMPALA, rewards as they are, 8 envs
/// per actor, batches of 32, Adam 4.8e-4, entropy 0.01, 50M frames with no target;
/// checkpoints every 10 minutes and at exit; progress every 5 s.
inline void use_pixel_defaults(run_options& o) {
  o.algorithm = "impala";
  o.scale_rewards = false;
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
}

/// `frame_stacked<Agent>` that also answers `num_actions()`, which `seedrl::policy` (eval
/// mode) asks of its network; otherwise the same network, parameters and checkpoints.
template <class Agent>
class stacked_agent : public frame_stacked<Agent> {
 public:
  using frame_stacked<Agent>::frame_stacked;
  auto num_actions() const { return this->inner().num_actions(); }
};

/// See the file comment.
template <template <class> class GpuTrainer = no_gpu_trainer>
struct pixel_recipe {
  std::string network = "nature";  ///< nature or resnet
  std::ptrdiff_t lstm_size = 0;    ///< 0: the network's default (Nature 512, ResNet 256)
  std::ptrdiff_t dense_size = 0;   ///< 0: the network's default
  std::ptrdiff_t frame_stack = 4;
  std::vector<std::ptrdiff_t> conv_channels;  ///< empty: the network's default
  std::ptrdiff_t resnet_blocks = 2;           ///< residual blocks per ResNet stack (no flag)
  double learning_rate = 4.8e-4;              ///< when run_options has none
  float max_abs_reward = 1.0f;                ///< the loss's reward clip

  void add_flags(CLI::App& cli) {
    flags_.clear();
    flags_.push_back(
        cli.add_option("--network", network, "Nature CNN + LSTM 512, or IMPALA ResNet + LSTM 256")
            ->check(CLI::IsMember({"nature", "resnet"})));
    flags_.push_back(
        cli.add_option("--lstm-size", lstm_size, "LSTM width (0: the network's default)")
            ->check(non_negative_number));
    flags_.push_back(
        cli.add_option("--dense-size", dense_size, "dense layer width (0: the network's default)")
            ->check(non_negative_number));
    flags_.push_back(
        cli.add_option("--conv-channels", conv_channels,
                       "convolution widths A,B,C (Nature: 3 values, default 32,64,64; ResNet: one "
                       "per stack, default 16,32,32)")
            ->delimiter(',')
            ->check(positive_number));
    flags_.push_back(
        cli.add_option("--frame-stack", frame_stack, "frames per stack, kept on the learner")
            ->check(positive_number));
    // A usage error (exit 2), found before anything starts.
    cli.parse_complete_callback([this] {
      if (network == "nature" && !conv_channels.empty() && conv_channels.size() != 3)
        throw CLI::ValidationError("--conv-channels", "needs 3 values for the Nature CNN");
    });
  }

  template <class F>
  int with_agent(const run_options& o, const observation_spec& obs, const action_spec& act,
                 F&& f) const {
    if (network == "nature") {
      nature_cnn_lstm_agent_config c;
      if (!conv_channels.empty()) {
        if (conv_channels.size() != 3)
          throw std::invalid_argument("--conv-channels needs 3 values for the Nature CNN");
        std::copy_n(conv_channels.begin(), 3, c.torso.channels.begin());
      }
      return build<nature_cnn_lstm_agent<float>>(o, obs, act, c, std::forward<F>(f));
    }
    if (network != "resnet")
      throw std::invalid_argument("--network must be nature or resnet, not " + network);
    auto c = impala_resnet_lstm_agent_defaults();
    if (!conv_channels.empty())
      c.torso.channels = conv_channels;
    c.torso.blocks_per_stack = resnet_blocks;
    return build<impala_resnet_lstm_agent<float>>(o, obs, act, c, std::forward<F>(f));
  }

  /// Takes the network a checkpoint holds (its description, meta "network") when no network
  /// flag was given; a description of another kind of network is left to eval to refuse.
  void use_checkpoint_network(const std::string& held) {
    for (const CLI::Option* f : flags_) {
      if (f->count() > 0)
        return;  // the flags name the network; eval compares it with the checkpoint's
    }
    const auto adopt = [this](const auto& c) {
      dense_size = c.dense_size;
      lstm_size = c.lstm_size;
      frame_stack = c.channels;  // single-channel frames
    };
    try {
      if (held.starts_with("nature_cnn_lstm_agent ")) {
        const auto c = parse_nature_cnn_lstm_agent_description(held);
        network = "nature";
        conv_channels.assign(c.torso.channels.begin(), c.torso.channels.end());
        adopt(c);
      } else if (held.starts_with("impala_resnet_lstm_agent ")) {
        const auto c = parse_impala_resnet_lstm_agent_description(held);
        network = "resnet";
        conv_channels = c.torso.channels;
        resnet_blocks = c.torso.blocks_per_stack;
        adopt(c);
      }
    } catch (const std::invalid_argument&) {
      // not a description this recipe reads: eval says the networks differ
    }
  }

  std::string checkpoint_hint() const {
    return "(was it trained with other --network, --frame-stack, --conv-channels, --dense-size "
           "or --lstm-size?)";
  }

 private:
  std::vector<const CLI::Option*> flags_;  ///< the network flags, once added

  template <class Agent, class Config, class F>
  int build(const run_options& o, const observation_spec& obs, const action_spec& act, Config c,
            F&& f) const {
    const auto& s = obs.shape;
    if (!(s.rank() == 2 || (s.rank() == 3 && s[2] == 1))) {
      throw std::invalid_argument(
          "the pixel agents take single-channel frames, H x W or H x W x 1; this environment "
          "sends " +
          std::string(to_string(obs.type)) + " " + s.to_string());
    }
    frame_stack_config stack;
    stack.height = s[0];
    stack.width = s[1];
    stack.channels = 1;
    stack.depth = frame_stack;
    c.height = stack.height;
    c.width = stack.width;
    c.channels = frame_stack;
    c.num_actions = act.num_actions;
    c.seed = o.seed;
    if (lstm_size > 0)
      c.lstm_size = lstm_size;
    if (dense_size > 0)
      c.dense_size = dense_size;
    const adam_config adam = run_adam(o, learning_rate);
    agent_parts<stacked_agent<Agent>> parts{
        stacked_agent<Agent>(stack, c), describe(c), seedrl::adam<float>(adam), {}};
    parts.loss.max_abs_reward = max_abs_reward;
    using gpu = GpuTrainer<std::remove_cvref_t<decltype(c.torso)>>;
    return std::forward<F>(f)(parts, std::type_identity<gpu>{});
  }
};

}  // namespace seedrl::app

#if SEEDRL_APP_COMPILED && SEEDRL_APP_PIXEL_PROGRAM
namespace seedrl::app {
// Whole programs on pixel_recipe without a GPU trainer are compiled into seedrl::app.
extern template int run_program<void, pixel_recipe<>>(const program_setup&, pixel_recipe<>&, int,
                                                      char**);
namespace detail {
template <>
struct compiled_program<void, pixel_recipe<>> : std::true_type {};
}  // namespace detail
}  // namespace seedrl::app
#endif
