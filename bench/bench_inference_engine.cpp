// The CPU inference engine with 1 worker against 2 workers (cpu_inference_engine, the
// learner's learner_config::inference_workers), alternated inside every iteration so that a
// load change hits both: `w1_ms` and `w2_ms` per batch, `speedup` = w1 / w2. Networks: the
// Nature CNN + LSTM 512 (bare agent, 4-frame 84x84 stacks in, 6 actions) and the CartPole MLP
// 64-64 + LSTM 64. Each benchmark runs 3 repetitions: read the medians.
//
// BM_one_step_<net>: the same engine with 1 worker (the CPU agent's infer over the engine's
// state table) against the GPU engine's step, backend_agent_step, on host_backend over a state
// table of its own, on the same batch, alternated: `engine_ms`, `backend_ms`, ratio = backend /
// engine. Networks: the CartPole MLP 64-64 without and with the LSTM 64, and the Atari
// example's frame-stacked Nature CNN + LSTM 512 (single 84x84 frames in).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/train/agent_step.hpp"
#include "seedrl/train/mlp_torso.hpp"
#include "seedrl/train/pixel_torso.hpp"

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

/// See BM_one_step in the file comment; `step` is the backend step of `net`'s recipe.
template <class Net, class Step>
void one_step(benchmark::State& state, const Net& net, Step& step, std::size_t obs_size) {
  const auto B = static_cast<std::size_t>(state.range(0));
  const std::size_t P = step.num_actions(), W = step.state_size();
  seedrl::cpu_inference_engine<Net> engine(net, {B, B, P, 1});
  seedrl::random_generator rng(1);
  std::vector<float> obs(B * obs_size), rewards(B, 0.5f), logits(B * P), values(B);
  for (auto& x : obs)
    x = static_cast<float>(rng.below(256));
  std::vector<std::uint8_t> dones(B, 0);
  std::vector<std::int32_t> prev(B, 1);
  std::vector<std::uint32_t> slots(B);
  std::iota(slots.begin(), slots.end(), 0u);
  const seedrl::agent_step_input<float> in{obs, rewards, dones, prev};
  const seedrl::agent_step_output<float> out{logits, values};
  Net copy(net);  // frame_stacked has no const parameters()
  const auto params = copy.parameters();
  std::vector<float> table(B * W), before(B * W);
  step.reserve(B);
  seedrl::agent_step_operands<float> op;
  op.B = B;
  op.slots = slots.data();
  op.observations = obs.data();
  op.rewards = rewards.data();
  op.resets = dones.data();
  op.prev_actions = prev.data();
  op.params = params.data();
  op.table = table.data();
  op.before = before.data();
  op.logits = logits.data();
  op.values = values.data();
  engine.infer(slots, in, out);  // warm up
  step.step(op);
  double e = 0.0, b = 0.0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    engine.infer(slots, in, out);
    benchmark::DoNotOptimize(logits.data());
    e += seconds_since(t0);
    t0 = clock_type::now();
    step.step(op);
    benchmark::DoNotOptimize(logits.data());
    b += seconds_since(t0);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["engine_ms"] = e / n * 1e3;
  state.counters["backend_ms"] = b / n * 1e3;
  state.counters["ratio"] = b / e;
}

template <class Torso>
using host_step = seedrl::backend_agent_step<seedrl::host_backend, float, Torso>;

void BM_one_step_mlp(benchmark::State& state) {
  seedrl::mlp_lstm_agent_config c;
  c.lstm_size = 0;
  const seedrl::mlp_lstm_agent<float> net(c);
  seedrl::host_backend backend;
  host_step<seedrl::backend_mlp_torso<seedrl::host_backend, float>> step(backend, c);
  one_step(state, net, step, 4);
}

void BM_one_step_mlp_lstm(benchmark::State& state) {
  const seedrl::mlp_lstm_agent_config c;
  const seedrl::mlp_lstm_agent<float> net(c);
  seedrl::host_backend backend;
  host_step<seedrl::backend_mlp_torso<seedrl::host_backend, float>> step(backend, c);
  one_step(state, net, step, 4);
}

void BM_one_step_nature_stacked(benchmark::State& state) {
  const seedrl::frame_stack_config stack;
  seedrl::nature_cnn_lstm_agent_config c;
  c.num_actions = 6;
  const seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>> net(stack, c);
  seedrl::host_backend backend;
  host_step<seedrl::backend_pixel_torso<seedrl::host_backend, float, seedrl::nature_cnn_config>>
      step(backend, stack, c);
  one_step(state, net, step, 84 * 84);
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

BENCHMARK(BM_one_step_mlp)
    ->ArgNames({"batch"})
    ->Arg(32)
    ->Arg(256)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_one_step_mlp_lstm)
    ->ArgNames({"batch"})
    ->Arg(32)
    ->Arg(256)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_one_step_nature_stacked)
    ->ArgNames({"batch"})
    ->Arg(32)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

BENCHMARK_MAIN();
