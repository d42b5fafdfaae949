#pragma once
/// \file
/// Eval mode: loads the newest good checkpoint of --checkpoint-dir (or --init-checkpoint, a
/// file or directory), checks that it holds this program's network, and plays --episodes
/// episodes on `--envs-per-actor` environments with greedy actions (--sample: sampled), through
/// `seedrl::policy`, which keeps each environment's recurrent state as the learner did and
/// normalizes inputs with the checkpoint's statistics when it holds them. Prints
/// "greedy policy: mean return M over N episodes (min A, max B)"; exit 2 without a usable
/// checkpoint. `play_episodes` and `print_eval_result` are the parts an evaluation program of
/// its own (examples/cartpole_eval) uses.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/app/checkpoint_network.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/env/any_env_batch.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/runtime/input_normalizer.hpp"
#include "seedrl/runtime/policy.hpp"

namespace seedrl::app {

/// Returns over the episodes played.
struct eval_result {
  int episodes = 0;
  double mean = 0.0, lowest = 0.0, highest = 0.0;
};

/// Makes `pol` normalize its inputs as the learner that saved `c` did: with the observation
/// statistics and return variance `c` holds (input_normalizer's names), frozen. Nothing for a
/// checkpoint without them. Throws checkpoint_error for statistics that are not of
/// `observation_size` elements (the environments' observations).
template <class Net>
void load_input_normalization(const checkpoint& c, std::size_t observation_size, policy<Net>& pol) {
  using names = input_normalizer<float>;  // the names do not depend on the scalar
  if (c.tensors.contains(names::obs_mean_name)) {
    const std::size_t n = c.tensor(names::obs_mean_name).count;
    if (n != observation_size) {
      throw checkpoint_error(c.source, "its observation statistics have " + std::to_string(n) +
                                           " elements, the environment's observations " +
                                           std::to_string(observation_size));
    }
    std::vector<double> mean(n), var(n);
    restore_tensor(c, names::obs_mean_name, std::span<double>(mean));
    restore_tensor(c, names::obs_var_name, std::span<double>(var));
    running_mean_std stats(n);
    try {
      stats.assign(c.double_counter(names::obs_count_name), mean, var);
    } catch (const std::invalid_argument& e) {
      throw checkpoint_error(c.source, e.what());
    }
    pol.normalize_observations(std::move(stats));
  }
  if (c.counters.contains(names::return_var_name))
    pol.scale_rewards(c.double_counter(names::return_var_name));
}

/// Plays `episodes` episodes with `net`'s policy on `envs` environments at once (a batch from
/// `make_batch`, seeded from `seed`), choosing actions `how`. With `normalization_from`, the
/// policy normalizes its inputs with that checkpoint's statistics (load_input_normalization).
template <class Net>
eval_result play_episodes(const Net& net, const env_batch_factory& make_batch, std::size_t envs,
                          std::uint64_t seed, int episodes, action_selection how,
                          const checkpoint* normalization_from = nullptr) {
  using scalar = typename Net::scalar_type;
  policy<Net> pol(net, envs, seed);
  const std::unique_ptr<any_env_batch> batch = make_batch(envs, seed);
  const auto observation_size = static_cast<std::size_t>(batch->observation_spec().num_elements());
  std::vector<scalar> input(envs * observation_size);
  if (normalization_from != nullptr)
    load_input_normalization(*normalization_from, observation_size, pol);
  std::vector<std::uint8_t> dones(envs, 1);  // every first observation starts an episode
  std::vector<scalar> rewards(envs);
  eval_result r{0, 0.0, 1e300, -1e300};
  double total = 0.0;
  while (r.episodes < episodes) {
    batch->observations(std::span<scalar>(input));
    std::copy(batch->rewards().begin(), batch->rewards().end(), rewards.begin());
    batch->step(pol.act(input, rewards, dones, how));
    std::copy(batch->dones().begin(), batch->dones().end(), dones.begin());
    for (const auto& e : batch->finished_episodes()) {
      if (r.episodes == episodes)
        break;
      ++r.episodes;
      total += e.episode_return;
      r.lowest = std::min(r.lowest, e.episode_return);
      r.highest = std::max(r.highest, e.episode_return);
    }
  }
  r.mean = total / episodes;
  return r;
}

/// The same on environments of type `Env`, environment i built by `make_env(i)`.
template <class Env, class Net>
eval_result play_episodes(const Net& net, std::function<Env(std::size_t)> make_env,
                          std::size_t envs, std::uint64_t seed, int episodes, action_selection how,
                          const checkpoint* normalization_from = nullptr) {
  return play_episodes(net, make_env_batch_factory<Env>(std::move(make_env)), envs, seed, episodes,
                       how, normalization_from);
}

/// "greedy policy: mean return M over N episodes (min A, max B)" ("sampled" for sampling).
inline void print_eval_result(const eval_result& r, action_selection how) {
  std::printf("%s policy: mean return %.1f over %d episodes (min %.0f, max %.0f)\n",
              how == action_selection::greedy ? "greedy" : "sampled", r.mean, r.episodes, r.lowest,
              r.highest);
}

/// The checkpoint at `from`: a file, or a directory's newest good one; nullopt when there is
/// none (said on stderr).
inline std::optional<checkpoint> read_eval_checkpoint(const std::filesystem::path& from) {
  auto c = std::filesystem::is_directory(from) ? read_latest_checkpoint(from)
                                               : std::optional<checkpoint>(read_checkpoint(from));
  if (!c)
    std::fprintf(stderr, "no valid checkpoint in %s\n", from.c_str());
  return c;
}

/// The network description (meta "network") of the checkpoint eval mode would play; nullopt
/// when there is none or it cannot be read (run_eval then says why).
inline std::optional<std::string> eval_checkpoint_network(const run_options& o) {
  const std::filesystem::path from =
      o.init_checkpoint.empty() ? o.checkpoint_dir : o.init_checkpoint;
  if (from.empty())
    return std::nullopt;
  try {
    const auto c = std::filesystem::is_directory(from)
                       ? read_latest_checkpoint(from)
                       : std::optional<checkpoint>(read_checkpoint(from));
    if (c)
      return c->meta_value("network");
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

/// The checkpoint eval mode plays (--init-checkpoint, else --checkpoint-dir's newest good one)
/// when it holds the network `description`; otherwise nullopt, having said why on stderr
/// (no flag, no valid checkpoint, or another network, with `hint`).
inline std::optional<checkpoint> load_eval_checkpoint(const run_options& o,
                                                      const std::string& description,
                                                      const std::string& hint) {
  const std::filesystem::path from =
      o.init_checkpoint.empty() ? o.checkpoint_dir : o.init_checkpoint;
  if (from.empty()) {
    std::fprintf(stderr, "eval needs --checkpoint-dir DIR or --init-checkpoint PATH\n");
    return std::nullopt;
  }
  auto c = read_eval_checkpoint(from);
  if (c && !holds_network(*c, description, hint))
    return std::nullopt;
  return c;
}

/// See the file comment. `architecture` is this run's network; `description` its checkpoint
/// description; `hint` is printed when a checkpoint holds another network.
template <class Net>
int run_eval(const run_options& o, const Net& architecture, const std::string& description,
             const env_batch_factory& make_batch, const std::string& hint = {}) {
  const auto c = load_eval_checkpoint(o, description, hint);
  if (!c)
    return 2;
  Net net(architecture);
  restore_parameters(*c, net);
  std::printf("%s: training step %lld, %s\n", c->source.c_str(), static_cast<long long>(c->step),
              description.c_str());
  const auto how = o.eval_sample ? action_selection::sample : action_selection::greedy;
  eval_result r;
  try {
    r = play_episodes(net, make_batch, o.envs_per_actor, o.seed, o.eval_episodes, how, &*c);
  } catch (const checkpoint_error& e) {  // statistics that do not fit the network
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  print_eval_result(r, how);
  return 0;
}

/// The same on environments of type `Env`, environment i built by `make_env(i)`.
template <class Env, class Net>
int run_eval(const run_options& o, const Net& architecture, const std::string& description,
             std::function<Env(std::size_t)> make_env, const std::string& hint = {}) {
  return run_eval(o, architecture, description, make_env_batch_factory<Env>(std::move(make_env)),
                  hint);
}

}  // namespace seedrl::app
