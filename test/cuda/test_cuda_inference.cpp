// cuda::inference_engine against cpu_inference_engine on the same parameters and inputs, for
// mlp_lstm_agent (one and two LSTM layers), frame_stacked<nature_cnn_lstm_agent> and
// frame_stacked<impala_resnet_lstm_agent>, in float: several batches of random slots with
// episode resets and run restarts (reset_state) in between, then a parameter update through a
// parameter_store reaching both engines. Logits, values and each row's state before the step;
// on every other batch the actions and log-probs sampled on the device, against the counter
// generator's CPU reference over the CPU engine's logits. Device-to-device publication: the
// channel alone, and the GPU trainer's step reaching the engine through the parameter_source
// plug point, against the CPU engine on the trainer's parameters brought to the host.
// Part of seedrl_cuda_tests (label gpu, skipped with 77 without a device); the engines are
// instantiated in mlp_lstm_trainer_instance.cu and pixel_lstm_trainer_instance.cu.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/core/counter_random.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/cuda/device_parameter_channel.cuh"
#include "seedrl/cuda/inference_engine.hpp"
#include "seedrl/cuda/mlp_lstm_trainer.hpp"
#include "seedrl/cuda/pixel_lstm_trainer.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace {

constexpr std::size_t max_envs = 40, max_batch = 33;

/// |got - want| <= 1e-4 + 1e-4 |want|: float sums in another order (cuBLAS, cuDNN, the fused
/// kernel's shuffles) against Eigen.
bool close(float got, float want) {
  return std::abs(got - want) <= 1e-4f + 1e-4f * std::abs(want);
}

template <class Recipe, class Net>
void compare(Net& net, std::size_t A, double obs_lo, double obs_hi, std::uint64_t seed) {
  const seedrl::inference_engine_config config{max_envs, max_batch, A, 1};
  seedrl::cuda::inference_engine<float, Recipe> gpu(net, config);
  seedrl::cpu_inference_engine<Net> cpu(net, config);
  const std::size_t W = cpu.state_width(), obs = static_cast<std::size_t>(net.observation_size());
  REQUIRE(gpu.state_width() == W);
  seedrl::parameter_store<float> store;
  std::uint64_t gpu_version = 0, cpu_version = 0;
  seedrl::random_generator rng(seed);
  std::vector<float> g_logits(max_batch * A), g_values(max_batch);
  std::vector<float> c_logits(max_batch * A), c_values(max_batch);
  for (int k = 0; k < 8; ++k) {
    if (k == 4) {  // new parameters, published as the trainer does
      std::vector<float> p(net.parameters().begin(), net.parameters().end());
      for (auto& x : p)
        x *= static_cast<float>(rng.uniform(0.8, 1.2));
      store.publish(p);
      CHECK(gpu.update_parameters(store, &gpu_version));
      CHECK(cpu.update_parameters(store, &cpu_version));
      CHECK_FALSE(gpu.update_parameters(store, &gpu_version));  // nothing newer
    }
    for (std::size_t s = 0; s < max_envs; ++s) {
      if (rng.uniform() < 0.1) {
        gpu.reset_state(s);
        cpu.reset_state(s);
      }
    }
    // Batch sizes on both sides of the fused kernel's tiles (1, 2, 4, 8 rows).
    const std::size_t sizes[] = {1, 2, 3, 33, 8, 17, 33, 5};
    const std::size_t B = sizes[k];
    std::vector<std::uint32_t> all(max_envs);
    std::iota(all.begin(), all.end(), 0u);
    for (std::size_t i = max_envs - 1; i > 0; --i)
      std::swap(all[i], all[rng.below(i + 1)]);
    const std::vector<std::uint32_t> slots(all.begin(),
                                           all.begin() + static_cast<std::ptrdiff_t>(B));
    std::vector<float> o(B * obs), rewards(B);
    std::vector<std::uint8_t> resets(B);
    std::vector<std::int32_t> prev(B);
    for (auto& x : o)
      x = static_cast<float>(rng.uniform(obs_lo, obs_hi));
    for (std::size_t r = 0; r < B; ++r) {
      rewards[r] = static_cast<float>(rng.uniform(-2.0, 2.0));
      resets[r] = k == 0 || rng.uniform() < 0.2 ? 1 : 0;
      prev[r] = static_cast<std::int32_t>(rng.below(A));
    }
    const seedrl::agent_step_input<float> in{o, rewards, resets, prev};
    // Every other batch samples on the device: actions as the CPU reference of the counter
    // generator draws them from the CPU engine's logits.
    const bool sample = k % 2 == 1;
    std::vector<std::int32_t> actions(B);
    std::vector<float> log_probs(B);
    const seedrl::agent_step_output<float> g_out{std::span(g_logits).first(B * A),
                                                 std::span(g_values).first(B)};
    if (sample)
      gpu.infer_and_sample(slots, in, g_out, 99, static_cast<std::uint64_t>(k), actions, log_probs);
    else
      gpu.infer(slots, in, g_out);
    cpu.infer(slots, in, {std::span(c_logits).first(B * A), std::span(c_values).first(B)});
    std::size_t bad = 0;
    for (std::size_t r = 0; sample && r < B; ++r) {
      float want_lp = 0.0f;
      const int want = seedrl::counter_categorical(
          c_logits.data() + r * A, static_cast<int>(A),
          seedrl::counter_uniform(99, static_cast<std::uint64_t>(k), r), &want_lp);
      bad += actions[r] == want ? 0 : 1;
      bad += close(log_probs[r], want_lp) ? 0 : 1;
    }
    for (std::size_t i = 0; !sample && i < B * A; ++i)
      bad += close(g_logits[i], c_logits[i]) ? 0 : 1;
    for (std::size_t r = 0; r < B; ++r) {
      bad += close(g_values[r], c_values[r]) ? 0 : 1;
      const auto gb = gpu.state_before(r), cb = cpu.state_before(r);
      REQUIRE(gb.size() == W);
      for (std::size_t i = 0; i < W; ++i)
        bad += close(gb[i], cb[i]) ? 0 : 1;
    }
    INFO("batch " << k << ", B = " << B);
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("cuda inference_engine matches the CPU engine: MLP + 1- and 2-layer LSTM",
          "[cuda][inference]") {
  for (const auto layers : {1, 2}) {
    seedrl::mlp_lstm_agent_config c;
    c.observation_size = 6;
    c.num_actions = 4;
    c.hidden_sizes = {64, 32};
    c.lstm_size = 48;
    c.lstm_layers = layers;
    c.seed = 5;
    seedrl::mlp_lstm_agent<float> net(c);
    compare<seedrl::cuda::mlp_lstm_recipe>(net, 4, -1.0, 1.0, 7);
  }
}

TEST_CASE("cuda inference_engine matches the CPU engine: frame-stacked Nature CNN + LSTM",
          "[cuda][inference]") {
  seedrl::frame_stack_config stack{.height = 44, .width = 52, .channels = 2, .depth = 3};
  seedrl::pixel_lstm_agent_config<seedrl::nature_cnn_config> agent;
  agent.height = 44;
  agent.width = 52;
  agent.channels = 6;
  agent.num_actions = 5;
  agent.torso.channels = {8, 16, 8};
  agent.dense_size = 32;
  agent.lstm_size = 24;
  agent.seed = 3;
  seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>> net(stack, agent);
  compare<seedrl::cuda::pixel_lstm_recipe<seedrl::nature_cnn_config>>(net, 5, 0.0, 255.0, 8);
}

TEST_CASE("cuda inference_engine matches the CPU engine: frame-stacked IMPALA ResNet + LSTM",
          "[cuda][inference]") {
  using cfg = seedrl::impala_resnet_config;
  seedrl::frame_stack_config stack{.height = 22, .width = 18, .channels = 1, .depth = 4};
  seedrl::pixel_lstm_agent_config<cfg> agent;
  agent.height = 22;
  agent.width = 18;
  agent.channels = 4;
  agent.num_actions = 3;
  agent.torso.channels = {6, 8, 4};
  agent.torso.blocks_per_stack = 1;
  agent.dense_size = 16;
  agent.lstm_size = 12;
  agent.seed = 4;
  seedrl::frame_stacked<seedrl::impala_resnet_lstm_agent<float>> net(stack, agent);
  compare<seedrl::cuda::pixel_lstm_recipe<cfg>>(net, 3, 0.0, 255.0, 9);
}

TEST_CASE("cuda inference_engine refuses what it cannot serve", "[cuda][inference]") {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 4;
  c.num_actions = 2;
  c.lstm_size = 8;
  seedrl::mlp_lstm_agent<float> net(c);
  using engine = seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe>;
  CHECK_THROWS_AS(engine(net, {4, 4, 3, 1}), std::invalid_argument);  // policy width
  // A state table far beyond any device's memory: refused with the figures.
  c.lstm_size = 4096;
  seedrl::mlp_lstm_agent<float> big(c);
  CHECK_THROWS_WITH(engine(big, {std::size_t{1} << 26, 4, 2, 1}),
                    Catch::Contains("bytes of GPU memory") && Catch::Contains("free"));
  engine ok(net, {4, 4, 2, 1});
  CHECK_THROWS_AS(ok.reset_state(4), std::out_of_range);
}

TEST_CASE("cuda inference_engine takes the GPU trainer's parameters device to device",
          "[cuda][inference]") {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 5;
  c.num_actions = 3;
  c.hidden_sizes = {16};
  c.lstm_size = 8;
  c.seed = 2;
  seedrl::mlp_lstm_agent<float> net(c);
  const seedrl::inference_engine_config config{4, 4, 3, 1};
  seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe> gpu(net, config);
  seedrl::cpu_inference_engine<seedrl::mlp_lstm_agent<float>> cpu(net, config);
  std::vector<float> p(net.parameters().begin(), net.parameters().end());
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i] = p[i] * 1.5f + (i % 3 == 0 ? 0.01f : -0.01f);
  seedrl::cuda::device_parameter_channel<float> channel(p.size());
  std::uint64_t version = 0;
  CHECK_FALSE(gpu.update_parameters(channel, &version));  // nothing published yet
  // The trainer's side: write on its stream (here the legacy one), then publish.
  float* w = channel.begin_write(nullptr);
  REQUIRE(cudaMemcpy(w, p.data(), p.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(channel.publish(nullptr) == 1);
  CHECK(gpu.update_parameters(channel, &version));
  CHECK(version == 1);
  CHECK_FALSE(gpu.update_parameters(channel, &version));
  seedrl::parameter_store<float> store;
  store.publish(p);
  std::uint64_t cpu_version = 0;
  REQUIRE(cpu.update_parameters(store, &cpu_version));
  const std::vector<std::uint32_t> slots{2, 0};
  const std::vector<float> obs{0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 1.0f, 0.0f, -1.0f, 0.5f, 0.25f};
  const std::vector<float> rewards{0.5f, -1.0f};
  const std::vector<std::uint8_t> resets{1, 1};
  const std::vector<std::int32_t> prev{0, 2};
  std::vector<float> gl(6), gv(2), cl(6), cv(2);
  gpu.infer(slots, {obs, rewards, resets, prev}, {gl, gv});
  cpu.infer(slots, {obs, rewards, resets, prev}, {cl, cv});
  for (std::size_t i = 0; i < 6; ++i)
    CHECK(close(gl[i], cl[i]));
  for (std::size_t i = 0; i < 2; ++i)
    CHECK(close(gv[i], cv[i]));
}

TEST_CASE("the GPU trainer's step reaches the GPU engine device to device", "[cuda][inference]") {
  // The learner's wiring with both on the GPU: publish_on_device, a training step that
  // publishes into the channel (and leaves the host network alone), the engine taking the set
  // through the parameter_source plug point; then the engine's outputs against the CPU engine
  // built from the trainer's parameters brought to the host.
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 3;
  c.num_actions = 2;
  c.hidden_sizes = {8};
  c.lstm_size = 4;
  c.seed = 11;
  using net_t = seedrl::mlp_lstm_agent<float>;
  using engine_t = seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe>;
  net_t net(c);
  seedrl::adam<float> opt;
  const seedrl::impala_loss<float> loss;
  const seedrl::inference_engine_config config{4, 4, 2, 1};
  engine_t gpu(net, config);
  seedrl::cuda::mlp_lstm_trainer<float> trainer;
  static_assert(seedrl::DevicePublishingTrainer<seedrl::cuda::mlp_lstm_trainer<float>, net_t,
                                                seedrl::adam<float>>);
  static_assert(seedrl::DeviceParameterEngine<engine_t>);
  const auto source = trainer.publish_on_device(net, opt);
  CHECK(source->version() == 1);  // the uploaded parameters
  seedrl::detail::engine_parameter_target<engine_t> target(gpu);
  std::uint64_t version = 0;
  CHECK(source->update(target, &version));
  CHECK(version == 1);
  CHECK_FALSE(source->update(target, &version));

  // One training step on a random batch of B = 3 unrolls of T + 1 = 5 steps.
  const std::size_t T = 4, B = 3, rows = (T + 1) * B;
  seedrl::random_generator rng(3);
  std::vector<float> obs(rows * 3), rewards(rows), behaviour(rows),
      start(B * static_cast<std::size_t>(net.state_size()));
  std::vector<std::uint8_t> dones(rows), truncated(rows);
  std::vector<std::int32_t> prev(rows), actions(rows);
  for (auto& x : obs)
    x = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (std::size_t i = 0; i < rows; ++i) {
    rewards[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
    behaviour[i] = static_cast<float>(rng.uniform(-2.0, -0.1));
    dones[i] = rng.uniform() < 0.15 ? 1 : 0;
    prev[i] = static_cast<std::int32_t>(rng.below(2));
    actions[i] = static_cast<std::int32_t>(rng.below(2));
  }
  const seedrl::training_batch<float> batch{T,         B,    2,       obs,       rewards, dones,
                                            truncated, prev, actions, behaviour, start};
  const std::vector<float> before(net.parameters().begin(), net.parameters().end());
  const auto r = trainer.train_step(batch, net, opt, loss, 40.0);
  REQUIRE(r.applied);
  // Published on the device, not downloaded: the host network is untouched until a sync.
  CHECK(std::equal(before.begin(), before.end(), net.parameters().begin()));
  CHECK(source->version() == 2);
  CHECK(source->update(target, &version));
  CHECK(version == 2);

  trainer.sync_to_host(net, opt);
  CHECK_FALSE(std::equal(before.begin(), before.end(), net.parameters().begin()));
  seedrl::cpu_inference_engine<net_t> cpu(net, config);         // the trained set
  seedrl::cpu_inference_engine<net_t> stale(net_t(c), config);  // the set before the step
  const std::vector<std::uint32_t> slots{3, 1};
  const std::vector<float> x{0.2f, -0.7f, 0.4f, 1.0f, 0.5f, -0.25f};
  const std::vector<float> rw{1.0f, 0.0f};
  const std::vector<std::uint8_t> resets{1, 1};
  const std::vector<std::int32_t> pa{1, 0};
  std::vector<float> gl(4), gv(2), cl(4), cv(2), sl(4), sv(2);
  gpu.infer(slots, {x, rw, resets, pa}, {gl, gv});
  cpu.infer(slots, {x, rw, resets, pa}, {cl, cv});
  stale.infer(slots, {x, rw, resets, pa}, {sl, sv});
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(close(gl[i], cl[i]));
  for (std::size_t i = 0; i < 2; ++i)
    CHECK(close(gv[i], cv[i]));
  // The step moved the outputs by more than the tolerance: the check above saw the new set.
  bool moved = false;
  for (std::size_t i = 0; i < 4; ++i)
    moved = moved || !close(sl[i], cl[i]);
  CHECK(moved);
}
