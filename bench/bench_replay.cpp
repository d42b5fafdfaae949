// R2D2's replay (issue 31's "Numbers"), each against its baseline in the same run:
//   - the sum tree's priority updates and draws against a plain array of priorities, whose
//     update is a store and whose draw scans the prefix sums (what the tree replaces), at 1k,
//     10k and 100k items (SEED's Atari replay holds 100,000 sequences);
//   - the replay's insert of a whole sequence (narrowing frames from float to uint8, flags,
//     actions, start state) against memcpy of the bytes it stores, for a CartPole-sized
//     sequence (31 steps of 4 floats) and an Atari-sized one (121 steps of 84x84 frames, a
//     frame stack's 3 frames and a 512-unit LSTM's state).
// Run with --benchmark_repetitions and read the medians.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/replay/sequence_replay.hpp"
#include "seedrl/replay/sum_tree.hpp"

namespace {

void BM_sum_tree_update(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  seedrl::replay::sum_tree tree(n);
  seedrl::random_generator rng(1);
  std::size_t i = 0;
  for (auto _ : state) {
    tree.set(i, 0.5 + rng.uniform());
    i = (i + 7919) % n;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_array_update(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<double> priorities(n, 1.0);
  seedrl::random_generator rng(1);
  std::size_t i = 0;
  for (auto _ : state) {
    priorities[i] = 0.5 + rng.uniform();
    benchmark::DoNotOptimize(priorities.data());
    i = (i + 7919) % n;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_sum_tree_sample(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  seedrl::replay::sum_tree tree(n);
  seedrl::random_generator rng(1);
  for (std::size_t i = 0; i < n; ++i)
    tree.set(i, 0.5 + rng.uniform());
  for (auto _ : state)
    benchmark::DoNotOptimize(tree.find(rng.uniform() * tree.total()));
  state.SetItemsProcessed(state.iterations());
}

void BM_array_scan_sample(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<double> priorities(n);
  seedrl::random_generator rng(1);
  double total = 0.0;
  for (double& p : priorities)
    total += p = 0.5 + rng.uniform();
  for (auto _ : state) {
    double u = rng.uniform() * total;
    std::size_t i = 0;
    while (i + 1 < n && u >= priorities[i])
      u -= priorities[i++];
    benchmark::DoNotOptimize(i);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_sum_tree_update)->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK(BM_array_update)->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK(BM_sum_tree_sample)->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK(BM_array_scan_sample)->Arg(1000)->Arg(10000)->Arg(100000);

/// A sequence of `shape` with uint8-valued frames, as the learner's unrolls hold it (floats).
struct sequence_data {
  std::vector<float> observations, rewards, start_state;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;

  explicit sequence_data(const seedrl::replay::sequence_shape& s) {
    seedrl::random_generator rng(2);
    observations.resize(s.steps * s.observation_size);
    for (float& x : observations)
      x = static_cast<float>(static_cast<int>(rng.uniform() * 256.0) % 256);
    rewards.assign(s.steps, 1.0f);
    dones.assign(s.steps, 0);
    truncated.assign(s.steps, 0);
    prev_actions.assign(s.steps, 1);
    actions.assign(s.steps, 2);
    start_state.assign(s.state_width, 0.0f);
    for (std::size_t i = 0; i < s.state_frame_values; ++i)
      start_state[i] = static_cast<float>(i % 256);
  }

  seedrl::replay::sequence_view<float> view() const {
    return {observations, rewards, dones, truncated, prev_actions, actions, start_state};
  }
};

seedrl::replay::sequence_shape shape_of(int which) {
  if (which == 0)  // CartPole: burn-in 10 + 20 trained + 1, 4 floats, MLP-LSTM 64 state
    return {31, 4, 128, 0};
  return {121, 84 * 84, 3 * 84 * 84 + 2 * 512, 3 * 84 * 84};  // Atari: SEED's R2D2
}

void BM_replay_insert(benchmark::State& state) {
  const auto shape = shape_of(static_cast<int>(state.range(0)));
  seedrl::replay::sequence_replay_config config;
  config.max_sequences = 256;
  const bool frames = state.range(0) == 1;
  const sequence_data data(shape);
  const auto run = [&](auto& replay) {
    for (int i = 0; i < 256; ++i)  // every slot written once: no first-touch page faults timed
      replay.insert(data.view());
    for (auto _ : state)
      benchmark::DoNotOptimize(replay.insert(data.view()));
    state.SetBytesProcessed(
        static_cast<std::int64_t>(state.iterations() * replay.bytes_per_sequence()));
  };
  if (frames) {
    seedrl::replay::sequence_replay<std::uint8_t, float> replay(config, shape, 1);
    run(replay);
  } else {
    seedrl::replay::sequence_replay<float, float> replay(config, shape, 1);
    run(replay);
  }
}

/// memcpy of the bytes one insert stores, into a ring of as many slots as the replay's.
void BM_memcpy_of_insert(benchmark::State& state) {
  const auto shape = shape_of(static_cast<int>(state.range(0)));
  seedrl::replay::sequence_replay_config config;
  config.max_sequences = 256;
  std::size_t bytes = 0;
  if (state.range(0) == 1)
    bytes =
        seedrl::replay::sequence_replay<std::uint8_t, float>(config, shape, 1).bytes_per_sequence();
  else
    bytes = seedrl::replay::sequence_replay<float, float>(config, shape, 1).bytes_per_sequence();
  const std::vector<std::uint8_t> from(bytes, 7);
  std::vector<std::uint8_t> ring(256 * bytes);
  std::size_t slot = 0;
  for (auto _ : state) {
    std::memcpy(ring.data() + slot * bytes, from.data(), bytes);
    benchmark::DoNotOptimize(ring.data());
    slot = (slot + 1) % 256;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

BENCHMARK(BM_replay_insert)->Arg(0)->Arg(1)->ArgName("atari");
BENCHMARK(BM_memcpy_of_insert)->Arg(0)->Arg(1)->ArgName("atari");

}  // namespace

BENCHMARK_MAIN();
