#pragma once
/// \file
/// The agent recipe for vector observations: `mlp_lstm_agent` (an MLP torso, by default
/// 64-64, and an LSTM core only with --lstm) trained with Adam and the IMPALA loss. Its
/// input size and action count come from the environment's specs; a continuous action spec of
/// D elements gets a diagonal Gaussian policy (2D outputs: means and state-dependent log-stds). An
/// agent recipe is what `app::program` (app/program.hpp) asks of one:
///
///   void add_flags(CLI::App&);               the recipe's own flags, if any
///   agent_parts<Net, Opt> make(const run_options&, const observation_spec&,
///                              const action_spec&) const;   the agent to train
///   std::string checkpoint_hint() const;     what to check when a checkpoint holds another
///                                            network (may be empty)

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/action_sampler.hpp"

namespace seedrl::app {

/// See the file comment.
struct mlp_recipe {
  using network_type = mlp_lstm_agent<float>;

  /// Widths and options; `observation_size` and `num_actions` are set from the environment.
  mlp_lstm_agent_config network{};
  /// Feed-forward by default: a Markov task (CartPole; SEED's MuJoCo setting) learns fastest
  /// so; --lstm adds the LSTM core, which learns too, more slowly and at a smaller rate.
  bool lstm = false;
  /// Orthogonal initialization with per-layer gains (sqrt(2) hidden, 0.01 policy, 1 value),
  /// as PPO implementations for continuous control use; PyTorch's default otherwise.
  bool orthogonal_init = false;
  double learning_rate = 2e-3;
  double lstm_learning_rate = 5e-4;

  void add_flags(CLI::App& cli) {
    cli.add_flag("--lstm", lstm, "use the MLP+LSTM network instead of the MLP");
    cli.add_flag("--orthogonal-init", orthogonal_init,
                 "orthogonal initialization (gains sqrt(2) hidden, 0.01 policy, 1 value) instead "
                 "of PyTorch's default");
    if (auto* lr = cli.get_option_no_throw("--learning-rate")) {
      lr->description("Adam learning rate (default " + detail::format_number(learning_rate) +
                      ", or " + detail::format_number(lstm_learning_rate) + " with --lstm)");
    }
  }

  mlp_lstm_agent_config shape(const run_options& o, const observation_spec& obs,
                              const action_spec& act) const {
    mlp_lstm_agent_config c = network;
    c.observation_size = static_cast<std::ptrdiff_t>(obs.num_elements());
    if (act.is_discrete()) {
      c.num_actions = act.num_actions;
    } else {  // a diagonal Gaussian: D means then D log-stds per row (spec_sampler's layout)
      c.continuous_action_size = static_cast<std::int32_t>(continuous_action_size(act));
      c.num_actions = 2 * c.continuous_action_size;
    }
    c.seed = o.seed;
    c.orthogonal_init = orthogonal_init;
    if (!lstm)
      c.lstm_size = 0;
    return c;
  }

  agent_parts<network_type> make(const run_options& o, const observation_spec& obs,
                                 const action_spec& act) const {
    const auto c = shape(o, obs, act);
    adam_config adam;
    adam.learning_rate =
        o.learning_rate ? *o.learning_rate : (lstm ? lstm_learning_rate : learning_rate);
    adam.lr_decay_steps = lr_decay_steps(o);
    return {network_type(c), describe(c), seedrl::adam<float>(adam), {}};
  }

  std::string checkpoint_hint() const {
    return std::string("(was it trained with") + (lstm ? "out" : "") + " --lstm?)";
  }
};

}  // namespace seedrl::app
