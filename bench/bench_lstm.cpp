// LSTM one-step inference against the machine's own GEMM rate.
//
// BM_sgemm_1024 measures Eigen's SGEMM on 1024^3 in the same process: the LSTM step's
// GFLOP/s divided by it says how close the fused [x, h] GEMM plus pointwise work comes to
// what Eigen can do at all. At B = 1 the step is a matrix-vector product bound by streaming
// the weights, so BM_memcpy_lstm_weights copies the same number of bytes as the baseline.
// tools/bench_report.py turns the JSON output into the ratio table of docs/performance.md.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/net/tensor.hpp"

namespace {

void BM_sgemm_1024(benchmark::State& state) {
  const std::ptrdiff_t n = 1024;
  seedrl::row_matrix<float> a = seedrl::row_matrix<float>::Random(n, n);
  seedrl::row_matrix<float> b = seedrl::row_matrix<float>::Random(n, n);
  seedrl::row_matrix<float> c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOPS"] = benchmark::Counter(
      2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_sgemm_1024)->Unit(benchmark::kMillisecond);

/// One inference step of a 1-layer LSTM with input size = hidden size = H, batch B.
void BM_lstm_step(benchmark::State& state) {
  const std::ptrdiff_t B = state.range(0), H = state.range(1);
  seedrl::lstm<float> net(seedrl::lstm_config{H, H, 1, 1.0});
  std::vector<float> params(net.num_parameters()), grads(net.num_parameters());
  net.bind(params.data(), grads.data());
  seedrl::random_generator rng(1);
  net.init(rng);
  std::vector<float> x(static_cast<std::size_t>(B * H)),
      st(static_cast<std::size_t>(B * net.state_size())), y(static_cast<std::size_t>(B * H));
  for (auto& v : x)
    v = static_cast<float>(rng.uniform(-1, 1));
  std::vector<std::uint8_t> dones(static_cast<std::size_t>(B), 0);
  for (auto _ : state) {
    net.step(seedrl::cview(x.data(), B, H), dones, seedrl::view(st.data(), B, net.state_size()),
             seedrl::view(y.data(), B, H));
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * static_cast<double>(B) * (2.0 * H) * (4.0 * H);
  state.counters["GFLOPS"] = benchmark::Counter(
      flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["weight_GBps"] = benchmark::Counter(
      static_cast<double>(params.size() * sizeof(float)),
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_lstm_step)->ArgsProduct({{1, 32, 256}, {64, 256, 512}})->ArgNames({"B", "H"});

/// Copies as many bytes as the LSTM of hidden size H holds in weights (the B = 1 baseline).
void BM_memcpy_lstm_weights(benchmark::State& state) {
  const std::ptrdiff_t H = state.range(0);
  const std::size_t bytes = static_cast<std::size_t>(4 * H * (2 * H + 1)) * sizeof(float);
  std::vector<char> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.counters["weight_GBps"] =
      benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
BENCHMARK(BM_memcpy_lstm_weights)->Arg(64)->Arg(256)->Arg(512)->ArgName("H");

}  // namespace

BENCHMARK_MAIN();
