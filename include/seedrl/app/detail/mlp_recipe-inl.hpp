#pragma once
/// \file
/// The definitions of `mlp_recipe`'s members that build its network and flags
/// (app/mlp_recipe.hpp): inline in header-only use, in the library's src/app/flags.cpp in
/// compiled use (app/compiled.hpp).

#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>

#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"

namespace seedrl::app {

SEEDRL_APP_API void mlp_recipe::add_flags(CLI::App& cli) {
  flags_.push_back(cli.add_flag("--lstm", lstm, "use the MLP+LSTM network instead of the MLP"));
  cli.add_flag("--orthogonal-init", orthogonal_init,
               "orthogonal initialization (gains sqrt(2) hidden, 0.01 policy, 1 value) instead "
               "of PyTorch's default (the default for continuous actions; =false turns it off)");
  add_value_network_flag(cli);
  add_log_std_flags(cli);
  if (auto* lr = cli.get_option_no_throw("--learning-rate")) {
    lr->description("Adam learning rate (default " + detail::format_number(learning_rate) + ", " +
                    detail::format_number(continuous_learning_rate) +
                    " for continuous actions, or " + detail::format_number(lstm_learning_rate) +
                    " with --lstm)");
  }
}

SEEDRL_APP_API void mlp_recipe::add_value_network_flag(CLI::App& cli) {
  flags_.push_back(cli.add_flag(
      "--separate-value-network", network.separate_value_network,
      "separate policy and value MLPs instead of one both heads share (the default for "
      "continuous actions without --lstm; =false shares one)"));
}

SEEDRL_APP_API void mlp_recipe::add_log_std_flags(CLI::App& cli) {
  flags_.push_back(
      cli.add_option_function<double>(
             "--log-std-init", [this](double v) { log_std_init = v; },
             "continuous actions: the state-independent log-std vector starts here (default " +
                 (log_std_init ? detail::format_number(*log_std_init) : std::string("none")) + ")")
          ->check(CLI::Range(-20.0, 2.0)));
  flags_.push_back(cli.add_flag_callback(
      "--state-dependent-log-std", [this] { log_std_init.reset(); },
      "continuous actions: the policy layer outputs the log-stds (per state) instead of one "
      "vector"));
}

SEEDRL_APP_API void mlp_recipe::use_action_kind_defaults(run_options& o, const action_spec& act,
                                                         const CLI::App& cli) {
  if (act.is_discrete())
    return;
  use_continuous_action_defaults(o, cli);
  const auto left = [&cli](const char* flag) { return !detail::flag_given(cli, flag); };
  learning_rate = continuous_learning_rate;  // --learning-rate, when given, still wins in make()
  if (left("--hidden-sizes"))                // seedrl_gym's flag; the C++ programs set the field
    network.hidden_sizes = continuous_hidden_sizes;
  if (left("--orthogonal-init"))
    orthogonal_init = true;
  if (left("--log-std-init") && left("--state-dependent-log-std"))
    log_std_init = -0.5;
  if (left("--separate-value-network"))
    network.separate_value_network = !lstm;
}

SEEDRL_APP_API agent_parts<mlp_recipe::network_type> mlp_recipe::make(
    const run_options& o, const observation_spec& obs, const action_spec& act) const {
  const auto c = shape(o, obs, act);
  const adam_config adam = run_adam(o, lstm ? lstm_learning_rate : learning_rate);
  return {network_type(c), describe(c), seedrl::adam<float>(adam), {}};
}

SEEDRL_APP_API void mlp_recipe::use_checkpoint_network(const std::string& held) {
  for (const CLI::Option* f : flags_)
    if (f->count() > 0)
      return;
  if (!held.starts_with("mlp_lstm_agent "))
    return;  // another network: eval refuses it with both descriptions
  try {
    const mlp_lstm_agent_config c = parse_mlp_lstm_agent_description(held);
    network.hidden_sizes = c.hidden_sizes;
    network.lstm_layers = c.lstm_layers;
    network.reward_and_action_inputs = c.reward_and_action_inputs;
    network.max_abs_input_reward = c.max_abs_input_reward;
    network.separate_value_network = c.separate_value_network;
    lstm = c.lstm_size > 0;
    if (lstm)
      network.lstm_size = c.lstm_size;
    if (c.continuous_action_size > 0)
      log_std_init = c.log_std_init;  // its kind: the values are in the checkpoint
  } catch (const std::invalid_argument&) {
    // unreadable: eval refuses the checkpoint with both descriptions
  }
}

}  // namespace seedrl::app
