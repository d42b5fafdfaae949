// The CPU inference engine with 1 worker against 2 workers (cpu_inference_engine, the
// learner's learner_config::inference_workers), alternated inside every iteration so that a
// load change hits both: `w1_ms` and `w2_ms` per batch, `speedup` = w1 / w2. Networks: the
// Nature CNN + LSTM 512 (bare agent, 4-frame 84x84 stacks in, 6 actions) and the CartPole MLP
// 64-64 + LSTM 64. Each benchmark runs 3 repetitions: read the medians.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

template <class Net>
void run(benchmark::State& state, const Net& net, std::size_t obs_size) {
  const auto B = static_cast<std::size_t>(state.range(0));
  const auto P = static_cast<std::size_t>(net.policy_size());
  seedrl::cpu_inference_engine<Net> one(net, {B, B, P, 1}), two(net, {B, B, P, 2});
  seedrl::random_generator rng(1);
  std::vector<float> obs(B * obs_size), rewards(B, 0.0f), logits(B * P), values(B);
  for (auto& x : obs)
    x = static_cast<float>(rng.below(256));
  std::vector<std::uint8_t> dones(B, 0);
  std::vector<std::int32_t> prev(B, 0);
  std::vector<std::uint32_t> slots(B);
  std::iota(slots.begin(), slots.end(), 0u);
  const seedrl::agent_step_input<float> in{obs, rewards, dones, prev};
  const seedrl::agent_step_output<float> out{logits, values};
  one.infer(slots, in, out);  // warm up: grow every workspace once, as a running learner has
  two.infer(slots, in, out);
  double s1 = 0.0, s2 = 0.0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    one.infer(slots, in, out);
    benchmark::DoNotOptimize(logits.data());
    s1 += seconds_since(t0);
    t0 = clock_type::now();
    two.infer(slots, in, out);
    benchmark::DoNotOptimize(logits.data());
    s2 += seconds_since(t0);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["w1_ms"] = s1 / n * 1e3;
  state.counters["w2_ms"] = s2 / n * 1e3;
  state.counters["w1_frames_per_s"] = static_cast<double>(B) * n / s1;
  state.counters["w2_frames_per_s"] = static_cast<double>(B) * n / s2;
  state.counters["speedup"] = s1 / s2;
}

void BM_nature_lstm_engine(benchmark::State& state) {
  seedrl::nature_cnn_lstm_agent_config c;
  c.num_actions = 6;
  const seedrl::nature_cnn_lstm_agent<float> net(c);
  run(state, net, 84 * 84 * 4);
}

void BM_mlp_lstm_engine(benchmark::State& state) {
  const seedrl::mlp_lstm_agent<float> net(seedrl::mlp_lstm_agent_config{});
  run(state, net, 4);
}

}  // namespace

BENCHMARK(BM_nature_lstm_engine)
    ->ArgNames({"batch"})
    ->Arg(64)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_mlp_lstm_engine)
    ->ArgNames({"batch"})
    ->Arg(64)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

BENCHMARK_MAIN();
