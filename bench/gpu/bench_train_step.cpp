// See bench_train_step.hpp. Each trainer trains its own copy of the same freshly initialised
// network with Adam on the same pre-generated batches (random observations, rewards, actions and
// episode ends; generated before timing), for a few warm-up steps and then a timed run, by wall
// clock: a GPU step ends when its new parameters are back on the host, as in the learner. The
// CPU trainers run on one thread, as the learner's trainer thread does.

#include "bench_train_step.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/cuda/mlp_lstm_trainer.hpp"
#include "seedrl/cuda/pixel_lstm_trainer.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/train/mlp_lstm_trainer.hpp"

namespace seedrl::bench_gpu {

namespace {

void row(const std::string& name, double value, const char* unit, const std::string& note) {
  std::printf("| %-44s | %12.3f | %-6s | %s\n", name.c_str(), value, unit, note.c_str());
  std::fflush(stdout);
}

struct owned_batch {
  std::vector<float> observations, rewards, behaviour_log_probs, start_state;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;

  training_batch<float> view(std::size_t T, std::size_t B, std::size_t A) const {
    training_batch<float> b;
    b.T = T;
    b.B = B;
    b.num_actions = A;
    b.observations = observations;
    b.rewards = rewards;
    b.dones = dones;
    b.truncated = truncated;
    b.prev_actions = prev_actions;
    b.actions = actions;
    b.behaviour_log_probs = behaviour_log_probs;
    b.start_state = start_state;
    return b;
  }
};

owned_batch make_batch(const mlp_lstm_agent<float>& net, std::size_t T, std::size_t B,
                       std::uint64_t seed) {
  random_generator rng(seed);
  const std::size_t rows = (T + 1) * B;
  const auto A = static_cast<std::uint64_t>(net.num_actions());
  const auto obs = static_cast<std::size_t>(net.config().observation_size);
  const auto uniform = [&](std::size_t n, double lo, double hi) {
    std::vector<float> v(n);
    for (float& x : v)
      x = static_cast<float>(rng.uniform(lo, hi));
    return v;
  };
  owned_batch b;
  b.observations = uniform(rows * obs, -1, 1);
  b.rewards = uniform(rows, -1, 1);
  b.behaviour_log_probs = uniform(rows, -2, -0.1);
  b.start_state = uniform(B * static_cast<std::size_t>(net.state_size()), -0.5, 0.5);
  b.dones.resize(rows);
  b.truncated.resize(rows);  // no time limits
  b.prev_actions.resize(rows);
  b.actions.resize(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    b.dones[i] = rng.uniform() < 0.02 ? 1 : 0;
    b.prev_actions[i] = static_cast<std::int32_t>(rng() % A);
    b.actions[i] = static_cast<std::int32_t>(rng() % A);
  }
  return b;
}

/// Samples per second of `step(batch)` over `timed` steps after `warmup` steps.
double samples_per_s(const std::vector<training_batch<float>>& batches, int warmup, int timed,
                     const std::function<void(const training_batch<float>&)>& step) {
  for (int i = 0; i < warmup; ++i)
    step(batches[static_cast<std::size_t>(i) % batches.size()]);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < timed; ++i)
    step(batches[static_cast<std::size_t>(i) % batches.size()]);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto& b = batches.front();
  return static_cast<double>(timed) * static_cast<double>(b.T * b.B) / s;
}

std::string format(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, x);
  return buf;
}

struct train_case {
  const char* name;
  mlp_lstm_agent_config config;
  std::size_t T, B;
  int cpu_steps, gpu_steps;  // timed steps (full run)
};

void run_case(const train_case& c, bool quick) {
  const impala_loss<float> loss;
  adam_config opt_config;
  opt_config.learning_rate = 1e-4;
  const double max_grad_norm = 40.0;
  const std::size_t A = static_cast<std::size_t>(c.config.num_actions);
  const mlp_lstm_agent<float> init(c.config);
  std::vector<owned_batch> owned;
  std::vector<training_batch<float>> batches;
  for (std::uint64_t i = 0; i < 4; ++i)
    owned.push_back(make_batch(init, c.T, c.B, 100 + i));
  for (const auto& b : owned)
    batches.push_back(b.view(c.T, c.B, A));
  const int cpu_steps = quick ? 2 : c.cpu_steps;
  const int gpu_steps = quick ? 5 : c.gpu_steps;
  const std::string shape =
      std::string(c.name) + " T=" + std::to_string(c.T) + " B=" + std::to_string(c.B);

  double gpu = 0.0;
  try {
    mlp_lstm_agent<float> net(init);
    adam<float> opt(opt_config);
    cuda::mlp_lstm_trainer<float> trainer;
    gpu = samples_per_s(batches, 3, gpu_steps, [&](const training_batch<float>& b) {
      trainer.train_step(b, net, opt, loss, max_grad_norm);
    });
  } catch (const std::exception& e) {
    row("train " + shape + " gpu", 0, "error", e.what());
  }

  mlp_lstm_agent<float> cpu_net(init);
  adam<float> cpu_opt(opt_config);
  host_trainer cpu_trainer;
  const double cpu = samples_per_s(batches, 1, cpu_steps, [&](const training_batch<float>& b) {
    cpu_trainer.train_step(b, cpu_net, cpu_opt, loss, max_grad_norm);
  });

  host_backend host;
  backend_mlp_lstm_trainer<host_backend, float> generic(host, c.config);
  generic.set_parameters(init.parameters());
  generic.set_optimizer(opt_config, 0);
  const double cpu_generic = samples_per_s(
      batches, 1, cpu_steps,
      [&](const training_batch<float>& b) { generic.train_step(b, loss.config(), max_grad_norm); });

  const double samples = static_cast<double>(c.T * c.B);
  if (gpu > 0) {
    row("train " + shape + " gpu", gpu, "smp/s",
        format("%.3f ms/step; ", 1e3 * samples / gpu) + format("%.1fx host_trainer, ", gpu / cpu) +
            format("%.1fx host_backend", gpu / cpu_generic));
  }
  row("train " + shape + " cpu host_trainer", cpu, "smp/s",
      format("%.3f ms/step, 1 thread (learner --device cpu)", 1e3 * samples / cpu));
  row("train " + shape + " cpu host_backend", cpu_generic, "smp/s",
      format("%.3f ms/step, 1 thread (the GPU trainer's code on the CPU)",
             1e3 * samples / cpu_generic));
}

/// A frame-stacked pixel agent's batch: single 84x84 frames of pixel values (as the learner
/// converts uint8 frames), frame history and LSTM state in the start state.
template <class Net>
owned_batch make_pixel_batch(const Net& net, std::size_t T, std::size_t B, std::uint64_t seed) {
  random_generator rng(seed);
  const std::size_t rows = (T + 1) * B;
  const auto A = static_cast<std::uint64_t>(net.inner().num_actions());
  const auto frame = static_cast<std::size_t>(net.frame_size());
  const auto state = static_cast<std::size_t>(net.state_size());
  const auto history = static_cast<std::size_t>(net.history_size());
  owned_batch b;
  b.observations.resize(rows * frame);
  for (float& x : b.observations)
    x = static_cast<float>(rng() % 256);
  b.start_state.resize(B * state);
  for (std::size_t i = 0; i < b.start_state.size(); ++i) {
    b.start_state[i] = i % state < history ? static_cast<float>(rng() % 256)
                                           : static_cast<float>(rng.uniform(-0.5, 0.5));
  }
  b.rewards.resize(rows);
  b.behaviour_log_probs.resize(rows);
  b.dones.resize(rows);
  b.truncated.resize(rows);  // no time limits
  b.prev_actions.resize(rows);
  b.actions.resize(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    b.rewards[i] = static_cast<float>(rng.uniform(-1, 1));
    b.behaviour_log_probs[i] = static_cast<float>(rng.uniform(-2, -0.1));
    b.dones[i] = rng.uniform() < 0.02 ? 1 : 0;
    b.prev_actions[i] = static_cast<std::int32_t>(rng() % A);
    b.actions[i] = static_cast<std::int32_t>(rng() % A);
  }
  return b;
}

/// The Atari networks' training step at the Atari example's sizes (84x84, 4 frames, T = 20,
/// B = 32): cuda::pixel_lstm_trainer (cuDNN convolutions) against host_trainer on one thread.
template <class Agent, class TorsoConfig>
void run_pixel_case(const char* name, const pixel_lstm_agent_config<TorsoConfig>& config,
                    bool quick) {
  using net_t = frame_stacked<Agent>;
  const std::size_t T = 20, B = 32;
  const impala_loss<float> loss;
  adam_config opt_config;
  opt_config.learning_rate = 1e-4;
  const double max_grad_norm = 40.0;
  frame_stack_config stack;
  stack.depth = 4;
  const net_t init(stack, config);
  std::vector<owned_batch> owned;
  std::vector<training_batch<float>> batches;
  for (std::uint64_t i = 0; i < 2; ++i)
    owned.push_back(make_pixel_batch(init, T, B, 200 + i));
  for (const auto& b : owned)
    batches.push_back(b.view(T, B, static_cast<std::size_t>(config.num_actions)));
  const std::string shape = std::string(name) + " T=20 B=32";
  const double samples = static_cast<double>(T * B);

  double gpu = 0.0;
  try {
    net_t net(init);
    adam<float> opt(opt_config);
    cuda::pixel_lstm_trainer<float, TorsoConfig> trainer;
    gpu = samples_per_s(batches, 2, quick ? 3 : 10, [&](const training_batch<float>& b) {
      trainer.train_step(b, net, opt, loss, max_grad_norm);
    });
  } catch (const std::exception& e) {
    row("train " + shape + " gpu", 0, "error", e.what());
  }
  net_t cpu_net(init);
  adam<float> cpu_opt(opt_config);
  host_trainer cpu_trainer;
  // One timed CPU step: a ResNet step takes seconds on one thread, and check.sh has 180 s.
  const double cpu = samples_per_s(batches, 1, 1, [&](const training_batch<float>& b) {
    cpu_trainer.train_step(b, cpu_net, cpu_opt, loss, max_grad_norm);
  });
  if (gpu > 0) {
    row("train " + shape + " gpu", gpu, "smp/s",
        format("%.3f ms/step; ", 1e3 * samples / gpu) + format("%.1fx host_trainer", gpu / cpu));
  }
  row("train " + shape + " cpu host_trainer", cpu, "smp/s",
      format("%.3f ms/step, 1 thread (learner --device cpu)", 1e3 * samples / cpu));
}

}  // namespace

void bench_train_step(bool quick) {
  train_case cartpole{"cartpole", {}, 20, 64, 20, 100};
  cartpole.config.observation_size = 4;
  cartpole.config.num_actions = 2;
  cartpole.config.hidden_sizes = {64, 64};
  cartpole.config.lstm_size = 64;
  train_case atari{"atari-core", {}, 20, 32, 5, 50};
  atari.config.observation_size = 512;
  atari.config.num_actions = 6;
  atari.config.hidden_sizes = {512};
  atari.config.lstm_size = 256;
  for (const train_case* c : {&cartpole, &atari}) {
    try {
      run_case(*c, quick);
    } catch (const std::exception& e) {
      row(std::string("train ") + c->name, 0, "error", e.what());
    }
  }
  try {
    nature_cnn_lstm_agent_config nature;  // 84x84x4, convs 32,64,64, dense 512, LSTM 512
    run_pixel_case<nature_cnn_lstm_agent<float>>("atari nature", nature, quick);
    auto resnet = impala_resnet_lstm_agent_defaults();  // stacks 16,32,32, dense 256, LSTM 256
    run_pixel_case<impala_resnet_lstm_agent<float>>("atari resnet", resnet, quick);
  } catch (const std::exception& e) {
    row("train atari pixels", 0, "error", e.what());
  }
}

}  // namespace seedrl::bench_gpu
