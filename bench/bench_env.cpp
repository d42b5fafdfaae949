// Environment-side throughput: CartPole steps/s for one environment and for an env batch of
// 64 (the actor's inner loop), each against a baseline measured in the same run: a loop that
// only draws the random actions, so the ratio isolates the environment's own cost.
#include <benchmark/benchmark.h>

#include <array>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/env_batch.hpp"

namespace {

void BM_random_actions_only(benchmark::State& state) {
  seedrl::random_generator rng(1);
  std::int32_t sink = 0;
  for (auto _ : state) {
    sink += static_cast<std::int32_t>(rng.below(2));
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_random_actions_only);

void BM_cartpole_single(benchmark::State& state) {
  seedrl::cartpole env(1);
  seedrl::random_generator rng(2);
  std::array<float, 4> obs{};
  env.reset(obs);
  for (auto _ : state) {
    if (env.step(static_cast<std::int32_t>(rng.below(2)), obs).done()) {
      env.reset(obs);
    }
    benchmark::DoNotOptimize(obs.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_cartpole_single);

void BM_cartpole_env_batch(benchmark::State& state) {
  const auto k = static_cast<std::size_t>(state.range(0));
  auto batch = seedrl::env_batch<seedrl::cartpole>::create(
      k, [](std::size_t) { return seedrl::cartpole{}; }, 3);
  seedrl::random_generator rng(4);
  std::vector<std::int32_t> actions(k);
  for (auto _ : state) {
    for (auto& a : actions)
      a = static_cast<std::int32_t>(rng.below(2));
    batch.step(actions);
    benchmark::DoNotOptimize(batch.observations().data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(k));
}
BENCHMARK(BM_cartpole_env_batch)->Arg(1)->Arg(64);

}  // namespace

BENCHMARK_MAIN();
