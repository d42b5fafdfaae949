// The dynamic batcher's own cost per request, against the least any batcher must pay.
//
// Target (from the issue): at batch >= 32, at most 1 us of CPU per request, with at most one
// inference thread wake-up per batch.
//
// Requests are one row each (one actor with one env), and a row is a CartPole observation:
// `fill` copies 4 floats. The batcher is told that far more envs are connected than ever submit
// (add_connected), so the "every connected env is waiting" rule never fires, and its deadline
// is far away, so every batch is flushed by the size rule: exactly max_batch rows.
//
// BM_batcher_single/M: one thread submits M requests, takes the batch (next_batch) and gives it
// back (release); counters: cpu_ns_per_request (this thread's CPU time), wakeups_per_batch
// (notifies of the inference condition variable, from dynamic_batcher::inference_wakeups()),
// baseline_ns and ratio = cpu_ns_per_request / baseline_ns.
// BM_batcher_concurrent/M: 4 submitter threads submit in a loop while an inference thread
// takes and releases batches (inference itself costs nothing here, the worst case for the
// batcher's overhead); counters: cpu_ns_per_request (process CPU time, all threads),
// wall_ns_per_request, wakeups_per_batch, infer_blocks_per_batch (times the inference thread
// blocked, its voluntary context switches: the wake-ups it really took),
// submitter_blocks_per_batch, rows_per_batch, baseline_ns and ratio.
// BM_baseline_mutex_memcpy: the baseline alone: an uncontended std::mutex lock/unlock around a
// 16-byte memcpy, the least a thread-safe hand-over of one observation costs. Each batcher
// benchmark also measures it in its own run, for the ratio.
#include <sys/resource.h>
#include <time.h>

#include <benchmark/benchmark.h>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "seedrl/runtime/batcher.hpp"

namespace {

constexpr std::size_t obs_size = 4;  // CartPole
constexpr std::array<float, obs_size> observation{0.01f, -0.2f, 0.03f, 0.4f};

struct rows_payload {
  std::vector<float> observations;  // obs_size floats per row
};
using batcher = seedrl::dynamic_batcher<rows_payload>;

batcher make_batcher(std::size_t max_batch) {
  seedrl::batcher_config config;
  config.max_batch = max_batch;
  config.max_request_rows = 1;
  config.deadline = std::chrono::seconds(60);  // never reached: only the size rule flushes
  config.num_buffers = 2;                      // the learner's default
  return batcher(config, [](std::size_t capacity) {
    return rows_payload{std::vector<float>(capacity * obs_size)};
  });
}

// So many that the "every connected env is waiting" rule never fires.
constexpr std::ptrdiff_t many_envs = std::ptrdiff_t{1} << 30;

/// Submits one request holding `observation`.
bool submit_one(batcher& b, void* requester) {
  return b.submit(requester, 1, [](rows_payload& p, std::size_t first) {
    std::memcpy(p.observations.data() + first * obs_size, observation.data(), sizeof observation);
  });
}

double cpu_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// This thread's voluntary context switches so far: how often it blocked.
std::int64_t voluntary_switches() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

/// The baseline per request: lock, copy one observation, unlock.
struct baseline_sink {
  std::mutex mutex;
  std::array<float, 64 * obs_size> rows{};
  std::size_t next = 0;

  void put() {
    std::lock_guard lock(mutex);
    std::memcpy(rows.data() + next * obs_size, observation.data(), sizeof observation);
    next = (next + 1) % (rows.size() / obs_size);
  }
};

/// Thread CPU nanoseconds of one baseline request, measured now (in the caller's run).
double baseline_ns_per_request() {
  constexpr int n = 1 << 18;
  baseline_sink sink;
  const double t0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < n; ++i) {
    sink.put();
    benchmark::ClobberMemory();
  }
  const double t1 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  benchmark::DoNotOptimize(sink.rows.data());
  return (t1 - t0) * 1e9 / n;
}

void BM_baseline_mutex_memcpy(benchmark::State& state) {
  baseline_sink sink;
  for (auto _ : state) {
    sink.put();
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(sink.rows.data());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_baseline_mutex_memcpy);

void BM_batcher_single(benchmark::State& state) {
  const auto max_batch = static_cast<std::size_t>(state.range(0));
  auto b = make_batcher(max_batch);
  b.add_connected(many_envs);
  int requester = 0;
  const std::uint64_t wakeups_before = b.inference_wakeups();
  const double t0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  for (auto _ : state) {
    for (std::size_t i = 0; i < max_batch; ++i)
      submit_one(b, &requester);
    auto* batch = b.next_batch();
    benchmark::DoNotOptimize(batch->payload.observations.data());
    b.release(batch);
  }
  const double cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
  const auto batches = static_cast<double>(state.iterations());
  const double requests = batches * static_cast<double>(max_batch);
  const double baseline = baseline_ns_per_request();
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["cpu_ns_per_request"] = cpu * 1e9 / requests;
  state.counters["wakeups_per_batch"] =
      static_cast<double>(b.inference_wakeups() - wakeups_before) / batches;
  state.counters["baseline_ns"] = baseline;
  state.counters["ratio"] = cpu * 1e9 / requests / baseline;
}
BENCHMARK(BM_batcher_single)->Arg(32)->Arg(64)->Arg(256);

void BM_batcher_concurrent(benchmark::State& state) {
  constexpr int submitters = 4;
  constexpr std::size_t per_submitter = 1 << 14;
  const auto max_batch = static_cast<std::size_t>(state.range(0));
  double cpu = 0, wall = 0;
  std::uint64_t wakeups = 0, batches = 0, rows = 0;
  std::int64_t infer_blocks = 0;
  std::atomic<std::int64_t> submitter_blocks{0};
  for (auto _ : state) {
    auto b = make_batcher(max_batch);
    b.add_connected(many_envs);
    const std::uint64_t wakeups_before = b.inference_wakeups();
    const double cpu0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    const auto wall0 = std::chrono::steady_clock::now();
    std::thread inference([&] {
      const std::int64_t blocks0 = voluntary_switches();
      while (auto* batch = b.next_batch()) {
        ++batches;
        rows += batch->rows;
        benchmark::DoNotOptimize(batch->payload.observations.data());
        b.release(batch);
      }
      infer_blocks += voluntary_switches() - blocks0;
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < submitters; ++t) {
      threads.emplace_back([&] {
        const std::int64_t blocks0 = voluntary_switches();
        int requester = 0;  // a distinct address per thread
        for (std::size_t i = 0; i < per_submitter; ++i)
          submit_one(b, &requester);
        submitter_blocks += voluntary_switches() - blocks0;
      });
    }
    for (auto& t : threads)
      t.join();
    b.shutdown();  // flushes nothing: every batch was full
    inference.join();
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    cpu += cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    wakeups += b.inference_wakeups() - wakeups_before - 1;  // not the shutdown's notify
  }
  const double baseline = baseline_ns_per_request();
  const double requests =
      static_cast<double>(state.iterations()) * submitters * static_cast<double>(per_submitter);
  const auto n_batches = static_cast<double>(batches);
  state.SetItemsProcessed(static_cast<std::int64_t>(requests));
  state.counters["cpu_ns_per_request"] = cpu * 1e9 / requests;
  state.counters["wall_ns_per_request"] = wall * 1e9 / requests;
  state.counters["wakeups_per_batch"] = static_cast<double>(wakeups) / n_batches;
  state.counters["infer_blocks_per_batch"] = static_cast<double>(infer_blocks) / n_batches;
  state.counters["submitter_blocks_per_batch"] =
      static_cast<double>(submitter_blocks.load()) / n_batches;
  state.counters["rows_per_batch"] = static_cast<double>(rows) / n_batches;
  state.counters["baseline_ns"] = baseline;
  state.counters["ratio"] = cpu * 1e9 / requests / baseline;
}
BENCHMARK(BM_batcher_concurrent)->Arg(32)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
