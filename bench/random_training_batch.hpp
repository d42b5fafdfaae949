#pragma once
// A random training batch shaped like the one the learner hands its trainer, for the training
// benchmarks (bench_algorithms.cpp, bench_e2e.cpp). A step's cost depends on the shapes and on
// the kind of data (episode ends, actions in range), not on the values, so random ones do.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl_bench {

struct batch_shape {
  std::size_t T = 20;                 ///< unroll length (T + 1 steps are stored)
  std::size_t B = 32;                 ///< unrolls
  std::size_t observation_size = 4;   ///< floats per observation
  std::size_t num_actions = 2;        ///< policy outputs per row (2D for a diagonal Gaussian)
  std::size_t action_dim = 0;         ///< D > 0: continuous actions of D elements
  std::size_t state_width = 0;        ///< recurrent state per unroll (0: feed-forward)
  float action_bound = 2.0f;          ///< continuous: the env got bound * tanh(u)
  std::uint64_t episode_length = 20;  ///< an episode ends at each step with 1 / this chance
  /// Every episode end is a time limit (Pendulum's 200 steps); otherwise every other one is
  /// (CartPole fails mostly, and sometimes reaches its limit).
  bool ends_are_time_limits = false;
};

/// The arrays of one training batch, owned; view() is what a trainer takes.
struct random_training_batch {
  batch_shape shape;
  std::vector<float> observations, rewards, behaviour, start, prev_env_actions, raw_actions;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;

  random_training_batch(const batch_shape& s, std::uint64_t seed) : shape(s) {
    seedrl::random_generator rng(seed);
    const std::size_t rows = (s.T + 1) * s.B, D = s.action_dim;
    const auto uniform = [&](std::vector<float>& v, std::size_t n, double lo, double hi) {
      v.resize(n);
      for (auto& x : v)
        x = static_cast<float>(rng.uniform(lo, hi));
    };
    uniform(observations, rows * s.observation_size, -1, 1);
    uniform(behaviour, rows, -1.5, -0.1);
    // CartPole: up to 1 a step; Pendulum: minus a cost of up to 16.3.
    uniform(rewards, rows, D == 0 ? 0.0 : -16.3, D == 0 ? 1.0 : 0.0);
    start.assign(s.B * s.state_width, 0.0f);
    dones.resize(rows);
    truncated.resize(rows);
    prev_actions.assign(rows, 0);
    actions.assign(rows, 0);
    raw_actions.resize(rows * D);
    prev_env_actions.assign(rows * D, 0.0f);
    for (std::size_t i = 0; i < rows; ++i) {
      dones[i] = rng.below(s.episode_length) == 0;
      truncated[i] = dones[i] != 0 && (s.ends_are_time_limits || i % 2 == 0);
      if (D == 0) {
        actions[i] = static_cast<std::int32_t>(rng.below(s.num_actions));
        prev_actions[i] = i >= s.B ? actions[i - s.B] : 0;
      }
      for (std::size_t d = 0; d < D; ++d) {
        raw_actions[i * D + d] = static_cast<float>(rng.normal());
        if (i >= s.B)
          prev_env_actions[i * D + d] = s.action_bound * std::tanh(raw_actions[(i - s.B) * D + d]);
      }
    }
  }

  random_training_batch(const random_training_batch&) = delete;  // view() points into it

  seedrl::training_batch<float> view() const {
    return {shape.T, shape.B,          shape.num_actions, observations, rewards,
            dones,   truncated,        prev_actions,      actions,      behaviour,
            start,   shape.action_dim, prev_env_actions,  raw_actions};
  }
};

}  // namespace seedrl_bench
