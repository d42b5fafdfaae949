// See bench_inference.hpp. Each engine gets the same freshly initialised network and the same
// pre-generated inputs (random frames, all slots distinct, no resets), a few warm-up calls, then
// timed calls by wall clock until `calls` are done or about a second has passed. The CPU engine
// stops at B = 256 for the Atari net (a 1024-row CPU batch takes seconds).

#include "bench_inference.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/cuda/inference_engine.hpp"
#include "seedrl/cuda/mlp_lstm_trainer.hpp"
#include "seedrl/cuda/pixel_lstm_trainer.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"

namespace seedrl::bench_gpu {

namespace {

constexpr std::size_t max_rows = 1024;

void row(const std::string& name, double value, const char* unit, const std::string& note) {
  std::printf("| %-44s | %12.3f | %-6s | %s\n", name.c_str(), value, unit, note.c_str());
  std::fflush(stdout);
}

/// Times `engine.infer` at batch size B; prints latency (us per call) and rows/s.
template <class Engine>
void time_engine(Engine& engine, const std::string& name, std::size_t B, std::size_t obs,
                 std::size_t A, const std::vector<float>& frames, int calls) {
  std::vector<std::uint32_t> slots(B);
  std::iota(slots.begin(), slots.end(), 0u);
  const std::vector<float> rewards(B, 0.0f);
  const std::vector<std::uint8_t> resets(B, 0);
  const std::vector<std::int32_t> prev(B, 0);
  std::vector<float> logits(B * A), values(B);
  const agent_step_input<float> in{std::span(frames).first(B * obs), rewards, resets, prev};
  const agent_step_output<float> out{logits, values};
  for (int i = 0; i < 3; ++i)
    engine.infer(slots, in, out);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  int done = 0;
  while (done < calls && clock::now() - t0 < std::chrono::seconds(1)) {
    engine.infer(slots, in, out);
    ++done;
  }
  const double s = std::chrono::duration<double>(clock::now() - t0).count();
  const std::string tag = name + " B=" + std::to_string(B);
  row("infer " + tag + " latency", 1e6 * s / done, "us", std::to_string(done) + " calls");
  row("infer " + tag + " throughput", static_cast<double>(B) * done / s, "rows/s", "");
}

template <class Recipe, class Net>
void bench_net(const Net& net, const std::string& name, std::size_t obs, std::size_t A,
               std::size_t cpu_max_batch, int calls) {
  seedrl::random_generator rng(1);
  std::vector<float> frames(max_rows * obs);
  for (auto& x : frames)
    x = static_cast<float>(rng.below(256));
  const std::size_t workers = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t sizes[] = {1, 8, 32, 128, 256, 1024};
  try {
    cuda::inference_engine<float, Recipe> gpu(net, {max_rows, max_rows, A, 1});
    for (const std::size_t B : sizes)
      time_engine(gpu, name + " cuda", B, obs, A, frames, calls);
  } catch (const std::exception& e) {
    row("infer " + name + " cuda", 0, "error", e.what());
  }
  cpu_inference_engine<Net> cpu(net, {max_rows, max_rows, A, workers});
  for (const std::size_t B : sizes) {
    if (B <= cpu_max_batch)
      time_engine(cpu, name + " cpu" + std::to_string(workers), B, obs, A, frames, calls);
  }
}

}  // namespace

void bench_inference(bool quick) {
  const int calls = quick ? 10 : 200;
  {
    mlp_lstm_agent_config c;
    c.observation_size = 4;
    c.num_actions = 2;
    c.hidden_sizes = {64, 64};
    c.lstm_size = 64;
    const mlp_lstm_agent<float> net(c);
    bench_net<cuda::mlp_lstm_recipe>(net, "mlp64-lstm64", 4, 2, max_rows, calls);
  }
  {
    const frame_stack_config stack{.height = 84, .width = 84, .channels = 1, .depth = 4};
    pixel_lstm_agent_config<nature_cnn_config> agent;  // 84x84x4, convs 32/64/64, 512, 512
    agent.num_actions = 6;
    const frame_stacked<nature_cnn_lstm_agent<float>> net(stack, agent);
    bench_net<cuda::pixel_lstm_recipe<nature_cnn_config>>(net, "nature-lstm512", 84 * 84, 6,
                                                          quick ? 32 : 256, calls);
  }
}

}  // namespace seedrl::bench_gpu
