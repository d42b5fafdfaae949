#pragma once
/// \file
/// Eval mode: loads the newest good checkpoint of --checkpoint-dir (or --init-checkpoint, a
/// file or directory), checks that it holds this program's network, and plays --episodes
/// episodes on `--envs-per-actor` environments with greedy actions (--sample: sampled), through
/// `seedrl::policy`, which keeps each environment's recurrent state as the learner did. Prints
/// "greedy policy: mean return M over N episodes (min A, max B)"; exit 2 without a usable
/// checkpoint.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/app/run_options.hpp"
#include "seedrl/env/env_batch.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/runtime/policy.hpp"

namespace seedrl::app {

/// See the file comment. `net` has this run's architecture; `description` is its checkpoint
/// description.
template <class Env, class Net>
int run_eval(const run_options& o, const Net& architecture, const std::string& description,
             std::function<Env(std::size_t)> make_env) {
  using scalar = typename Net::scalar_type;
  const std::filesystem::path from =
      o.init_checkpoint.empty() ? o.checkpoint_dir : o.init_checkpoint;
  if (from.empty()) {
    std::fprintf(stderr, "eval needs --checkpoint-dir DIR or --init-checkpoint PATH\n");
    return 2;
  }
  const auto c = std::filesystem::is_directory(from)
                     ? read_latest_checkpoint(from)
                     : std::optional<checkpoint>(read_checkpoint(from));
  if (!c) {
    std::fprintf(stderr, "no valid checkpoint in %s\n", from.c_str());
    return 2;
  }
  const auto held = c->meta_value("network");
  if (held && *held != description) {
    std::fprintf(stderr, "%s holds a different network:\n  checkpoint: %s\n  this run:   %s\n",
                 c->source.c_str(), held->c_str(), description.c_str());
    return 2;
  }
  Net net(architecture);
  restore_parameters(*c, net);
  std::printf("%s: training step %lld, %s\n", c->source.c_str(), static_cast<long long>(c->step),
              description.c_str());

  const std::size_t envs = o.envs_per_actor;
  const auto how = o.eval_sample ? action_selection::sample : action_selection::greedy;
  policy<Net> pol(net, envs, o.seed);
  auto batch = env_batch<Env>::create(envs, make_env, o.seed);
  std::vector<std::uint8_t> dones(envs, 1);  // every first observation starts an episode
  std::vector<scalar> converted, rewards(envs);
  int finished = 0;
  double total = 0.0, lowest = 1e300, highest = -1e300;
  while (finished < o.eval_episodes) {
    const auto obs = batch.observations();
    std::span<const scalar> input;
    if constexpr (std::is_same_v<std::remove_cv_t<typename decltype(obs)::element_type>, scalar>) {
      input = obs;
    } else {
      converted.assign(obs.begin(), obs.end());
      input = converted;
    }
    std::copy(batch.rewards().begin(), batch.rewards().end(), rewards.begin());
    batch.step(pol.act(input, rewards, dones, how));
    std::copy(batch.dones().begin(), batch.dones().end(), dones.begin());
    for (const auto& e : batch.finished_episodes()) {
      if (finished == o.eval_episodes)
        break;
      ++finished;
      total += e.episode_return;
      lowest = std::min(lowest, e.episode_return);
      highest = std::max(highest, e.episode_return);
    }
  }
  std::printf("%s policy: mean return %.1f over %d episodes (min %.0f, max %.0f)\n",
              o.eval_sample ? "sampled" : "greedy", total / o.eval_episodes, o.eval_episodes,
              lowest, highest);
  return 0;
}

}  // namespace seedrl::app
