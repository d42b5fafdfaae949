// Evaluates a trained CartPole policy from a checkpoint: rebuilds the network the checkpoint
// describes, loads its weights, and plays episodes with greedy (argmax) actions through
// seedrl::policy, which keeps each environment's LSTM state as the learner did in training.
//
//   seedrl_cartpole_eval CHECKPOINT [--episodes N] [--envs K] [--seed S] [--sample]
//
// CHECKPOINT is a checkpoint file or a directory (its newest good checkpoint is used), e.g.
// what `seedrl_cartpole_seed local --checkpoint-dir DIR` wrote. Unlike
// `seedrl_cartpole_seed eval`, it needs no flags to know the network (e.g. --lstm): the
// checkpoint's description says which.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "seedrl/app/cli.hpp"
#include "seedrl/app/run_eval.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"

int main(int argc, char** argv) {
  std::string from;
  int episodes = 100;
  std::size_t envs = 8;
  std::uint64_t seed = 1;
  bool sample = false;
  CLI::App cli("Plays a CartPole checkpoint's policy", "seedrl_cartpole_eval");
  cli.option_defaults()->always_capture_default();
  cli.add_option("CHECKPOINT", from,
                 "a checkpoint file, or a directory: its newest good checkpoint")
      ->required();
  cli.add_option("--episodes", episodes, "episodes to play")->check(seedrl::app::positive_number);
  cli.add_option("--envs", envs, "environments played at once")
      ->check(seedrl::app::positive_number);
  cli.add_option("--seed", seed, "environment seed");
  cli.add_flag("--sample", sample, "sample actions from the policy instead of taking the argmax");
  if (const auto rc = seedrl::app::parse_command_line(cli, argc, argv))
    return *rc;
  try {
    const auto c = seedrl::app::read_eval_checkpoint(from);
    if (!c)
      return 2;
    const auto description = c->meta_value("network");
    if (!description) {
      std::fprintf(stderr, "%s does not say which network it holds (no \"network\" meta entry)\n",
                   c->source.c_str());
      return 2;
    }
    seedrl::mlp_lstm_agent<float> net(seedrl::parse_mlp_lstm_agent_description(*description));
    seedrl::restore_parameters(*c, net);
    std::printf("%s: training step %lld, %s\n", c->source.c_str(), static_cast<long long>(c->step),
                description->c_str());
    const auto how = sample ? seedrl::action_selection::sample : seedrl::action_selection::greedy;
    seedrl::app::print_eval_result(
        seedrl::app::play_episodes<seedrl::cartpole>(
            net, [](std::size_t) { return seedrl::cartpole{}; }, envs, seed, episodes, how),
        how);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
