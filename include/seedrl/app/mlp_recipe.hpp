#pragma once
/// \file
/// The agent recipe for vector observations: `mlp_lstm_agent` (an MLP torso, by default
/// 64-64, and an LSTM core only with --lstm) trained with Adam (1e-3; the loss is --algo's,
/// PPO by default: app/run_options.hpp). Its
/// input size and action count come from the environment's specs; a continuous action spec of
/// D elements gets a diagonal Gaussian policy (2D outputs: means and log-stds, the log-stds one
/// state-independent vector starting at --log-std-init, or state-dependent on request). An
/// agent recipe is what `app::program` (app/program.hpp) asks of one:
///
///   void add_flags(CLI::App&);               the recipe's own flags, if any
///   agent_parts<Net, Opt> make(const run_options&, const observation_spec&,
///                              const action_spec&) const;   the agent to train
///   std::string checkpoint_hint() const;     what to check when a checkpoint holds another
///                                            network (may be empty)

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/app/agent_parts.hpp"
#include "seedrl/app/compiled.hpp"
#include "seedrl/app/program_setup.hpp"
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
  double learning_rate = 1e-3;
  double lstm_learning_rate = 5e-4;
  /// Continuous actions' rate (use_action_kind_defaults), with the learning rate decayed.
  double continuous_learning_rate = 3e-4;
  /// Continuous actions' MLP widths (use_action_kind_defaults; each of the two networks):
  /// HalfCheetah's mean at 1M steps rose from 4226 (64-64) to more than SB3's, Pendulum took
  /// 1.3x the frames (docs/learning.md).
  std::vector<std::ptrdiff_t> continuous_hidden_sizes{128, 128};
  /// Continuous actions: the state-independent log-std's start; unset: state-dependent log-stds.
  std::optional<double> log_std_init = 0.0;

  /// --lstm, --orthogonal-init, --separate-value-network and the log-std flags (continuous
  /// actions).
  SEEDRL_APP_API void add_flags(CLI::App& cli);

  /// A continuous action space's settings, where the command line (`cli`, parsed) left them:
  /// run_options' (`use_continuous_action_defaults`) and the network's: Adam 3e-4, MLPs of
  /// `continuous_hidden_sizes`, orthogonal initialization, the log-std vector from -0.5, and
  /// separate policy and value MLPs (not with --lstm). Nothing for discrete actions. Call after
  /// parsing, once the spec is known.
  SEEDRL_APP_API void use_action_kind_defaults(run_options& o, const action_spec& act,
                                               const CLI::App& cli);

  /// --separate-value-network.
  SEEDRL_APP_API void add_value_network_flag(CLI::App& cli);

  /// --log-std-init and --state-dependent-log-std (continuous actions).
  SEEDRL_APP_API void add_log_std_flags(CLI::App& cli);

  mlp_lstm_agent_config shape(const run_options& o, const observation_spec& obs,
                              const action_spec& act) const {
    mlp_lstm_agent_config c = network;
    c.observation_size = static_cast<std::ptrdiff_t>(obs.num_elements());
    if (act.is_discrete()) {
      c.num_actions = act.num_actions;
    } else {  // a diagonal Gaussian: D means then D log-stds per row (spec_sampler's layout)
      c.continuous_action_size = static_cast<std::int32_t>(continuous_action_size(act));
      c.num_actions = 2 * c.continuous_action_size;
      c.log_std_init = log_std_init;
    }
    c.seed = o.seed;
    c.orthogonal_init = orthogonal_init;
    if (!lstm)
      c.lstm_size = 0;
    return c;
  }

  /// The network the environment's specs ask for, its description and Adam.
  SEEDRL_APP_API agent_parts<network_type> make(const run_options& o, const observation_spec& obs,
                                                const action_spec& act) const;

  /// Eval: a checkpoint's network (its description) replaces the defaults when no network flag
  /// was given, so that a run trained with --lstm or another log-std plays without repeating
  /// them; with a flag given, eval compares the two and refuses a mismatch.
  SEEDRL_APP_API void use_checkpoint_network(const std::string& held);

  std::string checkpoint_hint() const {
    return std::string("(was it trained with") + (lstm ? "out" : "") + " --lstm, with" +
           (network.separate_value_network ? "out" : "") +
           " --separate-value-network, or, for continuous actions, with " +
           (log_std_init ? "--state-dependent-log-std" : "a state-independent log-std") + "?)";
  }

 private:
  std::vector<const CLI::Option*> flags_;  ///< the network's flags, once registered
};

}  // namespace seedrl::app

#if SEEDRL_APP_COMPILED
namespace seedrl::app {
// Whole programs on mlp_recipe without a GPU trainer are compiled into seedrl::app.
extern template int run_program<void, mlp_recipe>(const program_setup&, mlp_recipe&, int, char**);
namespace detail {
template <>
struct compiled_program<void, mlp_recipe> : std::true_type {};
}  // namespace detail
}  // namespace seedrl::app
#else
#include "seedrl/app/detail/mlp_recipe-inl.hpp"
#endif
