// V-trace (seedrl::vtrace, float) against a memcpy of the same bytes, timed in the same run.
//
// BM_vtrace/T/B/truncation: one call on time-major [T][B] inputs; with truncation, one step in
// 50 carries a time-limit flag. Each benchmark then times, for as many iterations, a memcpy of
// the bytes V-trace reads and writes (4 inputs and 2 outputs of T*B floats, plus B bootstraps)
// and reports, both from this thread's CPU time (the machine may be shared):
//   memcpy_us     the copy's time per iteration;
//   x_memcpy      memcpy time / V-trace time: V-trace's speed as a fraction of memcpy's (1 = as
//                 fast as copying its bytes once).
// With --benchmark_repetitions=N the medians of both counters come out with the time's.
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "seedrl/algo/vtrace.hpp"
#include "seedrl/core/random.hpp"

namespace {

std::vector<float> random_floats(std::size_t n, seedrl::random_generator& rng, double lo,
                                 double hi) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

/// This thread's CPU time in seconds: on a shared machine, time spent descheduled would blur
/// the ratio if wall time were used.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// CPU seconds per iteration of a memcpy of `bytes`, over `iterations` iterations.
double memcpy_seconds(std::size_t bytes, std::int64_t iterations) {
  std::vector<char> src(bytes, 1), dst(bytes);
  std::memcpy(dst.data(), src.data(), bytes);  // fault the pages in before timing
  const double start = thread_seconds();
  for (std::int64_t i = 0; i < iterations; ++i) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  return (thread_seconds() - start) / static_cast<double>(iterations);
}

void BM_vtrace(benchmark::State& state) {
  const auto T = static_cast<std::size_t>(state.range(0));
  const auto B = static_cast<std::size_t>(state.range(1));
  const bool with_truncation = state.range(2) != 0;
  const std::size_t n = T * B;
  seedrl::random_generator rng(2);
  const auto log_rhos = random_floats(n, rng, -1, 1);
  const auto discounts = random_floats(n, rng, 0.9, 0.99);
  const auto rewards = random_floats(n, rng, -1, 1);
  const auto values = random_floats(n, rng, -1, 1);
  const auto bootstrap = random_floats(B, rng, -1, 1);
  std::vector<std::uint8_t> truncated(n);
  for (std::size_t i = 0; i < n; i += 50)
    truncated[i] = 1;
  std::vector<float> vs(n), pg(n);
  const double start = thread_seconds();
  for (auto _ : state) {
    if (with_truncation) {
      seedrl::vtrace<float>(T, B, log_rhos, discounts, rewards, values, bootstrap, truncated, {},
                            vs, pg);
    } else {
      seedrl::vtrace<float>(T, B, log_rhos, discounts, rewards, values, bootstrap, {}, vs, pg);
    }
    benchmark::DoNotOptimize(vs.data());
    benchmark::DoNotOptimize(pg.data());
    benchmark::ClobberMemory();
  }
  const std::size_t bytes = (6 * n + B) * sizeof(float);
  const double vtrace_s = (thread_seconds() - start) / static_cast<double>(state.iterations());
  const double copy_s = memcpy_seconds(bytes, state.iterations());
  state.counters["memcpy_us"] = copy_s * 1e6;
  state.counters["x_memcpy"] = copy_s / vtrace_s;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_vtrace)
    ->ArgNames({"T", "B", "truncation"})
    ->ArgsProduct({{20}, {32}, {0, 1}})
    ->ArgsProduct({{80}, {256}, {0, 1}})
    ->ArgsProduct({{100}, {256}, {0, 1}})
    ->ArgsProduct({{20}, {1024}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
