#pragma once
/// \file
/// `input_normalizer<S>`: the learner's observation normalization and reward scaling
/// (learner_config::normalize_observations, ::scale_rewards), applied by the inference thread
/// to each batch before the network sees it, so that the unrolls hold what the network saw.
///
///   - Observations: the batch's rows update a running_mean_std, then are normalized in place
///     with the updated statistics.
///   - Rewards, as Stable-Baselines3's VecNormalize: each env slot keeps its discounted return
///     R = gamma R + r; the batch's R values update a one-element running_mean_std, the rewards
///     become clip(r / sqrt(var(R) + epsilon)), and R restarts at 0 after a step marked done.
///     The first step of a run (a new actor, or one that restarted its envs) carries a reward
///     that belongs to no episode: R restarts there and the step updates no statistics.
///
/// A frozen normalizer (an inference-only learner) normalizes with its (restored) statistics
/// and never updates them. Threads: the inference thread calls `apply`; the trainer thread
/// calls `store` for its checkpoints; one mutex makes each see the statistics of whole
/// batches. `read` / `load` restore them before the learner starts.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/algo/running_mean_std.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/runtime/learner_config.hpp"

namespace seedrl {

/// See the file comment.
template <std::floating_point S>
class input_normalizer {
 public:
  /// Checkpoint names of the statistics (tensors of float64, counters of double).
  static constexpr const char* obs_mean_name = "observation_normalization.mean";
  static constexpr const char* obs_var_name = "observation_normalization.var";
  static constexpr const char* obs_count_name = "observation_normalization.count";
  static constexpr const char* return_mean_name = "reward_scaling.return_mean";
  static constexpr const char* return_var_name = "reward_scaling.return_var";
  static constexpr const char* return_count_name = "reward_scaling.return_count";

  /// The statistics a checkpoint held: each present when the checkpoint has it.
  struct saved_state {
    std::optional<running_mean_std> observations, returns;
  };

  /// Throws std::invalid_argument for observation normalization of a non-float observation
  /// spec (pixels: their bytes are scaled by the network's preprocessing instead), or for a
  /// clip, epsilon or gamma out of range.
  input_normalizer(const observation_normalization_config& obs,
                   const reward_scaling_config& rewards, const observation_spec& obs_spec,
                   std::size_t max_envs, bool frozen)
      : obs_config_(obs),
        reward_config_(rewards),
        frozen_(frozen),
        obs_(obs.enabled ? static_cast<std::size_t>(obs_spec.num_elements()) : 0),
        returns_(1),
        discounted_(rewards.enabled ? max_envs : 0, 0.0) {
    batch_returns_.reserve(discounted_.size());
    if (obs.enabled && obs_spec.type != dtype::float32 && obs_spec.type != dtype::float64)
      throw std::invalid_argument(std::string("seedrl::learner: observation normalization needs "
                                              "float observations, the spec's are ") +
                                  to_string(obs_spec.type));
    if (obs.enabled && !(obs.clip > 0.0 && obs.epsilon > 0.0))
      throw std::invalid_argument(
          "seedrl::learner: observation normalization needs a positive clip and epsilon");
    if (rewards.enabled && !(rewards.clip > 0.0 && rewards.epsilon > 0.0 && rewards.gamma >= 0.0 &&
                             rewards.gamma <= 1.0))
      throw std::invalid_argument(
          "seedrl::learner: reward scaling needs a positive clip and epsilon and a gamma in [0, "
          "1]");
  }

  input_normalizer(const input_normalizer&) = delete;
  input_normalizer& operator=(const input_normalizer&) = delete;

  bool normalizes_observations() const noexcept { return obs_config_.enabled; }
  bool scales_rewards() const noexcept { return reward_config_.enabled; }

  /// Normalizes one inference batch of `rows` rows in place (the inference thread): row r is
  /// env slot `slots[r]`, its observation `observations[r * size, (r + 1) * size)`, its reward,
  /// whether it ends an episode (`dones`) and whether it is the first step of a run
  /// (`run_starts`). Each slot appears at most once in a batch.
  void apply(std::size_t rows, std::span<const std::uint32_t> slots, std::span<S> observations,
             std::span<S> rewards, std::span<const std::uint8_t> dones,
             std::span<const std::uint8_t> run_starts) {
    if (!obs_config_.enabled && !reward_config_.enabled)
      return;
    std::lock_guard lock(mutex_);
    if (obs_config_.enabled) {
      const auto x = observations.first(rows * obs_.size());
      if (!frozen_) {
        update_observation_statistics(obs_, x, rows);
        if (sharing_)
          update_observation_statistics(new_obs_, x, rows);
      }
      obs_.normalize(x, rows, obs_config_.clip, obs_config_.epsilon);
    }
    if (reward_config_.enabled) {
      // The discounted returns of the rows that continue an episode update the statistics
      // first, as VecNormalize does, then every reward is scaled by them.
      batch_returns_.clear();
      for (std::size_t r = 0; r < rows; ++r) {
        double& R = discounted_.at(slots[r]);
        if (run_starts[r] != 0) {
          R = 0.0;
          continue;
        }
        R = reward_config_.gamma * R + static_cast<double>(rewards[r]);
        batch_returns_.push_back(R);
        if (dones[r] != 0)
          R = 0.0;
      }
      if (!frozen_) {
        returns_.update(std::span<const double>(batch_returns_), batch_returns_.size());
        if (sharing_)
          new_returns_.update(std::span<const double>(batch_returns_), batch_returns_.size());
      }
      const double scale = 1.0 / std::sqrt(returns_.var()[0] + reward_config_.epsilon);
      for (std::size_t r = 0; r < rows; ++r)
        rewards[r] = static_cast<S>(std::clamp(static_cast<double>(rewards[r]) * scale,
                                               -reward_config_.clip, reward_config_.clip));
    }
  }

  /// Writes the enabled statistics into `c` (the trainer thread, while inference runs).
  void store(checkpoint& c) const {
    std::lock_guard lock(mutex_);
    if (obs_config_.enabled) {
      store_tensor(c, obs_mean_name, obs_.mean());
      store_tensor(c, obs_var_name, obs_.var());
      c.counters[obs_count_name] = obs_.count();
    }
    if (reward_config_.enabled) {
      c.counters[return_mean_name] = returns_.mean()[0];
      c.counters[return_var_name] = returns_.var()[0];
      c.counters[return_count_name] = returns_.count();
    }
  }

  /// The enabled statistics `c` holds, checked against this learner's observation size; a
  /// checkpoint without them (saved without normalization, or before it existed) gives none.
  /// Throws checkpoint_error on statistics that do not fit.
  saved_state read(const checkpoint& c) const {
    saved_state s;
    try {
      if (obs_config_.enabled && c.tensors.contains(obs_mean_name)) {
        std::vector<double> mean(obs_.size()), var(obs_.size());
        restore_tensor(c, obs_mean_name, std::span<double>(mean));
        restore_tensor(c, obs_var_name, std::span<double>(var));
        s.observations.emplace(obs_.size());
        s.observations->assign(c.double_counter(obs_count_name), mean, var);
      }
      if (reward_config_.enabled && c.counters.contains(return_var_name)) {
        const double mean = c.double_counter(return_mean_name);
        const double var = c.double_counter(return_var_name);
        s.returns.emplace(1);
        s.returns->assign(c.double_counter(return_count_name), std::span(&mean, 1),
                          std::span(&var, 1));
      }
    } catch (const std::invalid_argument& e) {
      throw checkpoint_error(c.source, e.what());
    }
    return s;
  }

  /// Replaces the statistics with those `read` found; call before the learner starts.
  void load(const saved_state& s) {
    std::lock_guard lock(mutex_);
    if (s.observations)
      obs_ = *s.observations;
    if (s.returns)
      returns_ = *s.returns;
    shared_obs_ = obs_;
    shared_returns_ = returns_;
  }

  /// Several learner ranks: from now on the statistics are shared. Each rank keeps the rows it
  /// saw since the last `share_with_ranks`, which merges every rank's into the statistics all
  /// of them last agreed on, in rank order: the same statistics on every rank afterwards (plus,
  /// on each, what it saw meanwhile, until the next call shares it). Call before start().
  void share_between_ranks() {
    std::lock_guard lock(mutex_);
    sharing_ = !frozen_ && (obs_config_.enabled || reward_config_.enabled);
    shared_obs_ = obs_;
    shared_returns_ = returns_;
    new_obs_ = running_mean_std(obs_.size());
    new_returns_ = running_mean_std(1);
  }

  /// Several learner ranks: one exchange over `ranks` (the trainer thread; every rank calls it
  /// at the same point, with the same settings). Does nothing unless share_between_ranks().
  void share_with_ranks(distributed::gradient_reducer& ranks) {
    if (!sharing_)
      return;
    std::vector<double> mine;
    const auto pack = [&mine](const running_mean_std& r) {
      mine.push_back(r.count());
      mine.insert(mine.end(), r.mean().begin(), r.mean().end());
      mine.insert(mine.end(), r.var().begin(), r.var().end());
    };
    running_mean_std obs_shared, returns_shared;
    {
      std::lock_guard lock(mutex_);
      pack(new_obs_);
      pack(new_returns_);
      new_obs_ = running_mean_std(obs_.size());
      new_returns_ = running_mean_std(1);
      obs_shared = shared_obs_;
      returns_shared = shared_returns_;
    }
    const std::vector<double> all = ranks.gather(std::span<const double>(mine));
    if (all.size() != mine.size() * static_cast<std::size_t>(ranks.ranks()))
      throw std::runtime_error(
          "seedrl::learner: the ranks' normalization statistics differ in "
          "size (another observation size or setting on some rank)");
    const auto unpack = [](const double* v, std::size_t n) {
      running_mean_std r(n);
      r.assign(v[0], std::span<const double>(v + 1, n), std::span<const double>(v + 1 + n, n));
      return r;
    };
    const std::size_t n = obs_shared.size();
    for (int k = 0; k < ranks.ranks(); ++k) {
      const double* v = all.data() + static_cast<std::size_t>(k) * mine.size();
      obs_shared.merge(unpack(v, n));
      returns_shared.merge(unpack(v + 1 + 2 * n, 1));
    }
    std::lock_guard lock(mutex_);
    shared_obs_ = obs_shared;
    shared_returns_ = returns_shared;
    // What this rank saw since the exchange began stays in its own view until the next one.
    obs_ = obs_shared;
    obs_.merge(new_obs_);
    returns_ = returns_shared;
    returns_.merge(new_returns_);
  }

  /// Copies of the statistics, for tests and reports.
  running_mean_std observation_statistics() const {
    std::lock_guard lock(mutex_);
    return obs_;
  }
  running_mean_std return_statistics() const {
    std::lock_guard lock(mutex_);
    return returns_;
  }

 private:
  /// Updates the observation statistics with the batch's rows that are finite. The wire
  /// refuses non-finite observations (non_finite_observation), so this skips nothing unless
  /// a caller bypasses it; but one such row would make the statistics NaN for good.
  void update_observation_statistics(running_mean_std& stats, std::span<const S> x,
                                     std::size_t rows) {
    const auto finite = [](S v) { return std::isfinite(v); };
    if (std::all_of(x.begin(), x.end(), finite)) {
      stats.update(std::span<const S>(x), rows);
      return;
    }
    const std::size_t n = obs_.size();
    finite_rows_.clear();
    for (std::size_t r = 0; r < rows; ++r) {
      const auto row = x.subspan(r * n, n);
      if (std::all_of(row.begin(), row.end(), finite))
        finite_rows_.insert(finite_rows_.end(), row.begin(), row.end());
    }
    if (!finite_rows_.empty())
      stats.update(std::span<const S>(finite_rows_), finite_rows_.size() / n);
  }

  observation_normalization_config obs_config_;
  reward_scaling_config reward_config_;
  bool frozen_;
  mutable std::mutex mutex_;  // the statistics: inference updates, the trainer saves
  running_mean_std obs_;
  running_mean_std returns_;
  // Several ranks (share_between_ranks): what all ranks agreed on at the last exchange, and
  // what this rank saw since.
  bool sharing_ = false;
  running_mean_std shared_obs_, shared_returns_, new_obs_, new_returns_;
  std::vector<double> discounted_;     // [max_envs] R per env slot; inference thread only
  std::vector<double> batch_returns_;  // reused: no allocation per batch once grown
  std::vector<S> finite_rows_;         // the finite rows of a batch that has others
};

}  // namespace seedrl
