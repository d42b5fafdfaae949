// CartPole with a random policy through seedrl's env batch runner: the actor's inner loop.
// Learning comes with the learner runtime; until then this shows the environment side.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/env_batch.hpp"

int main(int argc, char** argv) {
  std::size_t envs = 4;
  int episodes = 20;
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--envs") {
      envs = std::strtoul(value(), nullptr, 10);
    } else if (arg == "--episodes") {
      episodes = std::atoi(value());
    } else if (arg == "--seed") {
      seed = std::strtoull(value(), nullptr, 10);
    } else {
      std::printf("usage: seedrl_cartpole [--envs N] [--episodes N] [--seed S]\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  if (envs == 0 || episodes <= 0) {
    std::fprintf(stderr, "--envs and --episodes must be positive\n");
    return 2;
  }

  auto batch = seedrl::env_batch<seedrl::cartpole>::create(
      envs, [](std::size_t) { return seedrl::cartpole{}; }, seed);
  seedrl::random_generator policy(seed + 1);
  std::vector<std::int32_t> actions(envs);
  int finished = 0;
  double total = 0.0;
  while (finished < episodes) {
    for (auto& a : actions)
      a = static_cast<std::int32_t>(policy.below(2));
    batch.step(actions);
    for (const auto& e : batch.finished_episodes()) {
      if (finished == episodes)
        break;
      ++finished;
      total += e.episode_return;
      std::printf("episode %3d  env %zu  return %5.1f  length %3lld%s\n", finished, e.env_index,
                  e.episode_return, static_cast<long long>(e.length),
                  e.truncated ? "  (truncated)" : "");
    }
  }
  std::printf("random policy: mean return %.1f over %d episodes (a trained agent reaches 500)\n",
              total / episodes, episodes);
  return 0;
}
