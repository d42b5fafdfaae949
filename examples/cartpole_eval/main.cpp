// Evaluates a trained CartPole policy from a checkpoint: rebuilds the network the checkpoint
// describes, loads its weights, and plays episodes with greedy (argmax) actions through
// seedrl::policy, which keeps each environment's LSTM state as the learner did in training.
//
//   seedrl_cartpole_eval CHECKPOINT [--episodes N] [--envs K] [--seed S] [--sample]
//
// CHECKPOINT is a checkpoint file or a directory (its newest good checkpoint is used), e.g.
// what `seedrl_cartpole_seed local --checkpoint-dir DIR` wrote.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/env_batch.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/runtime/policy.hpp"

namespace {

[[noreturn]] void usage(int code) {
  std::printf(
      "usage: seedrl_cartpole_eval CHECKPOINT [--episodes N] [--envs K] [--seed S] [--sample]\n"
      "  CHECKPOINT     a checkpoint file, or a directory: its newest good checkpoint\n"
      "  --episodes N   episodes to play (default 100)\n"
      "  --envs K       environments played at once (default 8)\n"
      "  --seed S       environment seed (default 1)\n"
      "  --sample       sample actions from the policy instead of taking the argmax\n");
  std::exit(code);
}

int run(int argc, char** argv) {
  if (argc < 2)
    usage(2);
  const std::string first = argv[1];
  if (first == "--help" || first == "-h")
    usage(0);
  const std::filesystem::path from = first;
  int episodes = 100;
  std::size_t envs = 8;
  std::uint64_t seed = 1;
  auto how = seedrl::action_selection::greedy;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--episodes")
      episodes = std::atoi(value());
    else if (a == "--envs")
      envs = std::strtoul(value(), nullptr, 10);
    else if (a == "--seed")
      seed = std::strtoull(value(), nullptr, 10);
    else if (a == "--sample")
      how = seedrl::action_selection::sample;
    else
      usage(a == "--help" ? 0 : 2);
  }
  if (episodes <= 0 || envs == 0) {
    std::fprintf(stderr, "--episodes and --envs must be positive\n");
    return 2;
  }

  const auto c = std::filesystem::is_directory(from)
                     ? seedrl::read_latest_checkpoint(from)
                     : std::optional<seedrl::checkpoint>(seedrl::read_checkpoint(from));
  if (!c) {
    std::fprintf(stderr, "no valid checkpoint in %s\n", from.c_str());
    return 2;
  }
  const auto description = c->meta_value("network");
  if (!description) {
    std::fprintf(stderr, "%s does not say which network it holds (no \"network\" meta entry)\n",
                 c->source.c_str());
    return 2;
  }
  using net_t = seedrl::mlp_lstm_agent<float>;
  net_t net(seedrl::parse_mlp_lstm_agent_description(*description));
  seedrl::restore_parameters(*c, net);
  std::printf("%s: training step %lld, %s\n", c->source.c_str(), static_cast<long long>(c->step),
              description->c_str());

  seedrl::policy<net_t> policy(net, envs, seed);
  auto batch = seedrl::env_batch<seedrl::cartpole>::create(
      envs, [](std::size_t) { return seedrl::cartpole{}; }, seed);
  std::vector<std::uint8_t> dones(envs, 1);  // every first observation starts an episode
  int finished = 0;
  double total = 0.0, lowest = 1e300, highest = -1e300;
  while (finished < episodes) {
    const auto actions = policy.act(batch.observations(), batch.rewards(), dones, how);
    batch.step(actions);
    std::copy(batch.dones().begin(), batch.dones().end(), dones.begin());
    for (const auto& e : batch.finished_episodes()) {
      if (finished == episodes)
        break;
      ++finished;
      total += e.episode_return;
      lowest = std::min(lowest, e.episode_return);
      highest = std::max(highest, e.episode_return);
    }
  }
  std::printf("%s policy: mean return %.1f over %d episodes (min %.0f, max %.0f)\n",
              how == seedrl::action_selection::greedy ? "greedy" : "sampled", total / episodes,
              episodes, lowest, highest);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
