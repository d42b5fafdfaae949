// See bench_e2e.hpp. Each run builds a fresh learner on its own in-process endpoint, starts the
// actor threads, and measures frames (env steps answered, learner_stats::frames) per second of
// wall clock over a window that opens once the first training step has finished (so that
// start-up, cuDNN's first calls and the first unrolls' fill are left out; if no step finishes
// by half the run, the window opens there and the row says so) and closes at the run's end. In
// steady state the actors wait for actions and the inference loop for room in the training
// queue, so the figure is the slowest stage's rate: what a user of seedrl_catch sees.

#include "bench_e2e.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/cuda/inference_engine.hpp"
#include "seedrl/cuda/pixel_lstm_trainer.hpp"
#include "seedrl/env/catch.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/any_inference_engine.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/transport/in_process.hpp"

namespace seedrl::bench_gpu {

namespace {

using net_type = frame_stacked<nature_cnn_lstm_agent<float>>;
using gpu_engine = cuda::inference_engine<float, cuda::pixel_lstm_recipe<nature_cnn_config>>;
using engine_type = any_inference_engine<net_type, gpu_engine>;
using clock_type = std::chrono::steady_clock;

constexpr std::size_t envs_per_actor = 8;

void row(const std::string& name, double value, const char* unit, const std::string& note) {
  std::printf("| %-44s | %12.3f | %-6s | %s\n", name.c_str(), value, unit, note.c_str());
  std::fflush(stdout);
}

/// The Atari network seedrl_catch trains by default: 84x84 frames stacked 4 deep.
net_type atari_network() {
  frame_stack_config stack;
  stack.height = catch_game::screen_size;
  stack.width = catch_game::screen_size;
  stack.channels = 1;
  stack.depth = 4;
  nature_cnn_lstm_agent_config c;
  c.height = stack.height;
  c.width = stack.width;
  c.channels = stack.depth;
  c.num_actions = static_cast<std::ptrdiff_t>(catch_game::action_spec().num_actions);
  c.seed = 1;
  return net_type(stack, c);
}

struct run_result {
  double frames_per_second = 0.0;
  double window_seconds = 0.0;
  learner_stats stats;
  bool trained = false;  ///< a training step finished before the window opened
};

/// One run: a learner with `trainer` and inference on `device`, `actors` Catch actor threads,
/// about `seconds` of wall clock.
template <class Trainer>
run_result run(const std::string& name, Trainer trainer, compute_device device, double seconds,
               int actors) {
  using learner_type = learner<net_type, adam<float>, in_process_transport, Trainer,
                               impala_loss<float>, categorical_sampler, engine_type>;
  const std::size_t envs = static_cast<std::size_t>(actors) * envs_per_actor;
  learner_config lc;
  lc.max_envs = std::max<std::size_t>(256, envs);
  lc.unroll_length = 20;
  lc.batch_size = 32;
  lc.batching.max_batch = 32;
  lc.batching.max_request_rows = 256;
  // Every env of an actor finishes an unroll on the same step: room for one such burst.
  lc.queue_batches = std::max<std::size_t>(2, envs / lc.batch_size);
  const auto cores = std::thread::hardware_concurrency();
  const stage_threads threads = default_stage_threads(cores, device == compute_device::cpu,
                                                      std::is_same_v<Trainer, host_trainer>);
  lc.inference_workers = threads.inference;
  lc.trainer_threads = threads.trainer;
  lc.inference_device = device;
  lc.seed = 7;
  lc.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  adam_config adam_c;
  adam_c.learning_rate = 4.8e-4;
  impala_loss_config<float> loss_c;
  loss_c.entropy_cost = 0.01f;
  loss_c.max_abs_reward = 1.0f;
  learner_type l(lc, atari_network(), adam<float>(adam_c), impala_loss<float>(loss_c),
                 catch_game::observation_spec(), catch_game::action_spec(), std::move(trainer));
  in_process_transport transport;
  const in_process_endpoint endpoint{"bench-e2e-" + name};
  const auto t0 = clock_type::now();
  l.start();
  l.serve(transport.listen(endpoint));
  std::atomic<bool> stop{false};
  std::vector<std::thread> actor_threads;
  for (int i = 0; i < actors; ++i) {
    actor_threads.emplace_back([&, i] {
      actor_config ac;
      ac.num_envs = envs_per_actor;
      ac.actor_id = static_cast<std::uint64_t>(i);
      ac.seed = 1000 + static_cast<std::uint64_t>(i);
      actor<catch_game, std::function<in_process_connection()>> a(
          ac,
          [i](std::size_t k) {
            return catch_game({}, static_cast<std::uint64_t>(i) * 7919 + k + 1);
          },
          [&] { return transport.connect(endpoint); });
      try {
        a.run(stop);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "e2e %s actor %d: %s\n", name.c_str(), i, e.what());
      }
    });
  }
  const auto end =
      t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  const auto half = t0 + (end - t0) / 2;
  std::optional<std::pair<clock_type::time_point, std::int64_t>> window;
  run_result r;
  while (clock_type::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto s = l.stats();
    if (!s.trainer_error.empty())
      break;
    if (!window && (s.train_steps > 0 || clock_type::now() >= half)) {
      window.emplace(clock_type::now(), s.frames);
      r.trained = s.train_steps > 0;
    }
  }
  const auto t1 = clock_type::now();
  r.stats = l.stats();
  // The learner first: it closes the links, so an actor waiting for actions sees the stop.
  stop = true;
  l.stop();
  for (auto& t : actor_threads)
    t.join();
  if (window) {
    r.window_seconds = std::chrono::duration<double>(t1 - window->first).count();
    if (r.window_seconds > 0)
      r.frames_per_second = static_cast<double>(r.stats.frames - window->second) / r.window_seconds;
  }
  return r;
}

void report(const std::string& name, const run_result& r, int actors) {
  const auto& s = r.stats;
  const double fill = s.batches > 0 ? static_cast<double>(s.batch_rows) / s.batches : 0.0;
  std::string note = std::to_string(actors) + " actors x " + std::to_string(envs_per_actor) +
                     " envs, " + std::to_string(s.train_steps) + " train steps, " +
                     std::to_string(static_cast<int>(r.window_seconds)) + " s window, " +
                     "mean batch " + std::to_string(static_cast<int>(fill + 0.5));
  if (!r.trained)
    note += "; no training step finished in the first half: window from half time";
  if (!s.trainer_error.empty())
    note += "; trainer error: " + s.trainer_error;
  row("e2e " + name + " frames/s", r.frames_per_second, "fps", note);
}

}  // namespace

int bench_e2e(double seconds, int actors) {
  if (actors <= 0)
    actors = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("| %-44s | %12s | %-6s | %s\n", "benchmark", "value", "unit", "note");
  int rc = 0;
  std::optional<run_result> cpu;
  try {
    cpu = run("cpu", host_trainer{}, compute_device::cpu, seconds, actors);
    report("cpu (infer + train on CPU)", *cpu, actors);
    rc = cpu->stats.trainer_error.empty() ? rc : 1;
  } catch (const std::exception& e) {
    row("e2e cpu frames/s", 0, "error", e.what());
    rc = 1;
  }
  std::optional<cuda::pixel_lstm_trainer<float>> trainer;
  try {
    trainer.emplace(0);
  } catch (const std::exception& e) {
    // No usable device: the CPU row stands alone.
    row("e2e cuda frames/s", 0, "skip", std::string("no usable GPU: ") + e.what());
    return rc;
  }
  try {
    const run_result gpu = run("cuda", std::move(*trainer), compute_device::cuda, seconds, actors);
    report("cuda (infer + train on GPU)", gpu, actors);
    rc = gpu.stats.trainer_error.empty() ? rc : 1;
    if (cpu && cpu->frames_per_second > 0 && gpu.frames_per_second > 0)
      row("e2e cuda/cpu frames/s ratio", gpu.frames_per_second / cpu->frames_per_second, "x",
          "target >= 10x (issue 16)");
  } catch (const std::exception& e) {
    row("e2e cuda frames/s", 0, "error", e.what());
    rc = 1;
  }
  return rc;
}

}  // namespace seedrl::bench_gpu
