// Learner inference with the Nature CNN + LSTM agent on the CPU: one `infer` call per batch of
// environments, as the learner's inference thread makes it, against plain Eigen SGEMMs of the
// same shapes and FLOPs measured in the same run.
//
// The agent is `frame_stacked<nature_cnn_lstm_agent<float>>` fed single 84x84 frames (raw
// pixel values as float, as the learner converts uint8 observations), 4-frame stacks, dense
// 512, LSTM 512, 6 actions (Pong). `frames_per_s` counts environment steps answered per second.
// The baseline runs every product one step costs on ready-made matrices: each convolution as
// W [O, C*KH*KW] x patches [C*KH*KW, B*OH*OW], the dense layer, the LSTM's [x, h] x W^T and
// the two heads; `ratio` (baseline time over agent time) is what im2col, the layouts, the
// pointwise work (scaling, ReLU, LSTM gates), frame stacking and state copies cost. Agent and
// baseline alternate inside every iteration, so a load change hits both. `stacked` = 0 runs
// the bare agent on ready 4-frame stacks, to show what the adapter costs. Each benchmark
// runs 5 repetitions: read the medians. `BM_impala_lstm_infer` runs the IMPALA ResNet + LSTM
// agent (stacks of 16, 32, 32 channels, two residual blocks each, dense 256, LSTM 256) the same
// way, without a GEMM baseline: its frames per second only.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/net/tensor.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::int32_t num_actions = 6;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// The plain products of one inference step for a batch of B.
struct gemm_baseline {
  struct product {
    seedrl::row_matrix<float> a, b, c;
  };
  std::vector<product> products;
  double flops = 0.0;

  void add(std::ptrdiff_t m, std::ptrdiff_t k, std::ptrdiff_t n) {
    products.push_back({seedrl::row_matrix<float>::Random(m, k),
                        seedrl::row_matrix<float>::Random(k, n),
                        seedrl::row_matrix<float>::Zero(m, n)});
    flops += 2.0 * static_cast<double>(m * k * n);
  }

  explicit gemm_baseline(std::ptrdiff_t B, const seedrl::nature_cnn_lstm_agent_config& c) {
    // Convolutions 8x8/4, 4x4/2, 3x3/1 on 84x84: 20x20, 9x9, 7x7 outputs.
    add(c.torso.channels[0], c.channels * 8 * 8, B * 20 * 20);
    add(c.torso.channels[1], c.torso.channels[0] * 4 * 4, B * 9 * 9);
    add(c.torso.channels[2], c.torso.channels[1] * 3 * 3, B * 7 * 7);
    add(B, c.torso.channels[2] * 7 * 7, c.dense_size);                        // dense
    add(B, c.dense_size + 1 + c.num_actions + c.lstm_size, 4 * c.lstm_size);  // LSTM gates
    add(B, c.lstm_size, c.num_actions + 1);                                   // heads
  }

  void run() {
    for (auto& p : products)
      p.c.noalias() = p.a * p.b;
    benchmark::DoNotOptimize(products.back().c.data());
  }
};

/// Uniform random pixel values 0..255 as float.
std::vector<float> pixels(std::size_t n, seedrl::random_generator& rng) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(rng.below(256));
  return v;
}

void BM_nature_lstm_infer(benchmark::State& state) {
  const auto B = static_cast<std::size_t>(state.range(0));
  const bool stacked = state.range(1) != 0;
  seedrl::nature_cnn_lstm_agent_config c;
  c.num_actions = num_actions;
  using agent_t = seedrl::nature_cnn_lstm_agent<float>;
  seedrl::frame_stacked<agent_t> net(
      seedrl::frame_stack_config{.height = 84, .width = 84, .channels = 1, .depth = 4}, c);
  agent_t& bare = net.inner();
  seedrl::random_generator rng(1);
  const std::size_t frame = 84 * 84;
  const auto obs = pixels(B * frame * (stacked ? 1 : 4), rng);
  std::vector<float> rewards(B, 0.0f), logits(B * num_actions), values(B);
  std::vector<std::uint8_t> dones(B, 0);
  std::vector<std::int32_t> prev(B, 0);
  auto stacked_state = net.initial_state(B);
  auto bare_state = bare.initial_state(B);
  seedrl::agent_step_output<float> out{logits, values};
  const seedrl::agent_step_input<float> in{obs, rewards, dones, prev};
  gemm_baseline gemm(static_cast<std::ptrdiff_t>(B), c);
  // Warm up: grow every workspace once, as a running learner has.
  const auto step = [&] {
    if (stacked)
      net.infer(in, stacked_state, out);
    else
      bare.infer(in, bare_state, out);
  };
  step();
  double agent_s = 0.0, gemm_s = 0.0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    step();
    benchmark::DoNotOptimize(logits.data());
    const double a = seconds_since(t0);
    t0 = clock_type::now();
    gemm.run();
    gemm_s += seconds_since(t0);
    agent_s += a;
    state.SetIterationTime(a);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["frames_per_s"] = static_cast<double>(B) * n / agent_s;
  state.counters["gemm_frames_per_s"] = static_cast<double>(B) * n / gemm_s;
  state.counters["GFLOPS"] = gemm.flops * n / agent_s * 1e-9;
  state.counters["gemm_GFLOPS"] = gemm.flops * n / gemm_s * 1e-9;
  state.counters["ratio"] = gemm_s / agent_s;
}

void BM_impala_lstm_infer(benchmark::State& state) {
  const auto B = static_cast<std::size_t>(state.range(0));
  seedrl::impala_resnet_lstm_agent_config c;
  c.num_actions = num_actions;
  c.dense_size = 256;
  c.lstm_size = 256;
  using agent_t = seedrl::impala_resnet_lstm_agent<float>;
  seedrl::frame_stacked<agent_t> net(
      seedrl::frame_stack_config{.height = 84, .width = 84, .channels = 1, .depth = 4}, c);
  seedrl::random_generator rng(1);
  const auto obs = pixels(B * 84 * 84, rng);
  std::vector<float> rewards(B, 0.0f), logits(B * num_actions), values(B);
  std::vector<std::uint8_t> dones(B, 0);
  std::vector<std::int32_t> prev(B, 0);
  auto net_state = net.initial_state(B);
  seedrl::agent_step_output<float> out{logits, values};
  const seedrl::agent_step_input<float> in{obs, rewards, dones, prev};
  net.infer(in, net_state, out);  // warm up: grow every workspace once
  double agent_s = 0.0;
  for (auto _ : state) {
    const auto t0 = clock_type::now();
    net.infer(in, net_state, out);
    benchmark::DoNotOptimize(logits.data());
    const double a = seconds_since(t0);
    agent_s += a;
    state.SetIterationTime(a);
  }
  state.counters["frames_per_s"] =
      static_cast<double>(B) * static_cast<double>(state.iterations()) / agent_s;
}

}  // namespace

BENCHMARK(BM_impala_lstm_infer)
    ->ArgName("batch")
    ->Arg(32)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

BENCHMARK(BM_nature_lstm_infer)
    ->ArgNames({"batch", "stacked"})
    ->Args({32, 1})
    ->Args({64, 1})
    ->Args({32, 0})
    ->Args({64, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

BENCHMARK_MAIN();
