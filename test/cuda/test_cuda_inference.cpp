// cuda::inference_engine against cpu_inference_engine on the same parameters and inputs, for
// mlp_lstm_agent (one and two LSTM layers), frame_stacked<nature_cnn_lstm_agent> and
// frame_stacked<impala_resnet_lstm_agent>, in float: several batches of random slots with
// episode resets and run restarts (reset_state) in between, then a parameter update through a
// parameter_store reaching both engines. Logits, values and each row's state before the step;
// on every other batch the actions and log-probs sampled on the device, against the counter
// generator's CPU reference over the CPU engine's logits. Each network also with uint8 frames
// (widened on the device) and, on every third batch, only some rows' states brought back. The
// captured CUDA graphs of the Nature CNN step against plain launches, over every bucket.
// Pipelined (begin/finish, two batches in flight with disjoint slots, resets and a parameter
// update between the two begins) against the same CPU engine run one batch at a time, for the
// MLP recipe (CUDA graphs, one per input buffer) and the Nature CNN. Device-to-device
// publication: the channel alone, and the GPU trainer's step reaching the engine through the
// parameter_source plug point, against the CPU engine on the trainer's parameters brought to
// the host.
// Part of seedrl_cuda_tests (label gpu, skipped with 77 without a device); the engines are
// instantiated in mlp_lstm_trainer_instance.cu and pixel_lstm_trainer_instance.cu.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "../softsign_torso.hpp"
#include "../tiny_conv_stack.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/core/counter_random.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/cuda/device_parameter_channel.cuh"
#include "seedrl/cuda/inference_engine.hpp"
#include "seedrl/cuda/mlp_lstm_trainer.hpp"
#include "seedrl/cuda/pixel_lstm_trainer.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/net/small_conv_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/train/actor_critic_recipe.hpp"

namespace {

constexpr std::size_t max_envs = 40, max_batch = 33;

/// |got - want| <= 1e-4 + 1e-4 |want|: float sums in another order (cuBLAS, cuDNN, the fused
/// kernel's shuffles) against Eigen.
bool close(float got, float want) {
  return std::abs(got - want) <= 1e-4f + 1e-4f * std::abs(want);
}

/// `frames`: the GPU gets the observations as uint8 frames (agent_step_input::observations_u8,
/// whole numbers in [0, 255]), the CPU engine the same values as floats. On every third batch the
/// GPU is asked for a random subset of the rows' states (agent_step_input::keep_state): those
/// match the CPU engine's, the others are empty.
template <class Recipe, class Net>
void compare(Net& net, std::size_t A, double obs_lo, double obs_hi, std::uint64_t seed,
             bool frames = false) {
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
  std::size_t D = 0;  // continuous actions: their previous values go up too, no device sampling
  if constexpr (requires { net.config().continuous_action_size; })
    D = static_cast<std::size_t>(net.config().continuous_action_size);
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
    std::vector<std::uint8_t> resets(B), bytes(frames ? B * obs : 0), keep;
    std::vector<std::int32_t> prev(B);
    for (std::size_t i = 0; i < B * obs; ++i) {
      if (frames) {
        bytes[i] = static_cast<std::uint8_t>(rng.below(256));
        o[i] = static_cast<float>(bytes[i]);
      } else {
        o[i] = static_cast<float>(rng.uniform(obs_lo, obs_hi));
      }
    }
    if (k % 3 == 2) {
      for (std::size_t r = 0; r < B; ++r)
        keep.push_back(r == 0 || rng.uniform() < 0.5 ? 1 : 0);
    }
    for (std::size_t r = 0; r < B; ++r) {
      rewards[r] = static_cast<float>(rng.uniform(-2.0, 2.0));
      resets[r] = k == 0 || rng.uniform() < 0.2 ? 1 : 0;
      prev[r] = static_cast<std::int32_t>(rng.below(A));
    }
    std::vector<float> prev_continuous(B * D);
    for (auto& x : prev_continuous)
      x = static_cast<float>(rng.uniform(-1.5, 1.5));
    const seedrl::agent_step_input<float> in{o, rewards, resets, prev, prev_continuous};
    seedrl::agent_step_input<float> gpu_in = in;
    if (frames) {
      gpu_in.observations = {};
      gpu_in.observations_u8 = bytes;
    }
    gpu_in.keep_state = keep;
    // Every other batch samples on the device: actions as the CPU reference of the counter
    // generator draws them from the CPU engine's logits.
    const bool sample = k % 2 == 1 && D == 0;
    std::vector<std::int32_t> actions(B);
    std::vector<float> log_probs(B);
    const seedrl::agent_step_output<float> g_out{std::span(g_logits).first(B * A),
                                                 std::span(g_values).first(B)};
    if (sample)
      gpu.infer_and_sample(slots, gpu_in, g_out, 99, static_cast<std::uint64_t>(k), actions,
                           log_probs);
    else
      gpu.infer(slots, gpu_in, g_out);
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
      if (!keep.empty() && keep[r] == 0) {
        bad += gb.empty() ? 0 : 1;  // not asked for: not brought back
        continue;
      }
      REQUIRE(gb.size() == W);
      for (std::size_t i = 0; i < W; ++i)
        bad += close(gb[i], cb[i]) ? 0 : 1;
    }
    INFO("batch " << k << ", B = " << B);
    CHECK(bad == 0);
  }
}

/// The CPU engine's outputs for one batch, kept until the GPU engine finishes it.
struct reference {
  std::vector<std::uint32_t> slots;
  std::vector<float> logits, values, before;
  bool sample = false;
  std::vector<std::int32_t> actions;  // the GPU engine's, written at finish()
  std::vector<float> log_probs, g_logits, g_values;
};

/// Batch k + 1 begins while batch k is in flight, as the pipelined inference loop runs them:
/// its slots are disjoint from k's, reset_state calls for its slots and (at k = 5) a parameter
/// update come between the two begins, so batch k keeps the set it began with.
template <class Recipe, class Net>
void compare_pipelined(Net& net, std::size_t A, double obs_lo, double obs_hi, std::uint64_t seed) {
  static_assert(seedrl::PipelinedInferenceEngine<seedrl::cuda::inference_engine<float, Recipe>>);
  const seedrl::inference_engine_config config{max_envs, max_batch, A, 1};
  seedrl::cuda::inference_engine<float, Recipe> gpu(net, config);
  seedrl::cpu_inference_engine<Net> cpu(net, config);
  const std::size_t W = cpu.state_width(), obs = static_cast<std::size_t>(net.observation_size());
  seedrl::parameter_store<float> store;
  std::uint64_t gpu_version = 0, cpu_version = 0;
  seedrl::random_generator rng(seed);
  // Repeated sizes: each graph bucket is used (and captured) with both input buffers.
  const std::size_t sizes[] = {3, 5, 3, 5, 8, 8, 8, 8, 17, 17, 3, 33, 5, 1, 2, 2};
  constexpr std::size_t n = std::size(sizes);
  std::vector<reference> refs(n);
  std::vector<std::uint32_t> previous;  // the slots of the batch in flight
  std::size_t finished = 0;
  const auto check_finished = [&] {
    gpu.finish();
    const reference& r = refs[finished];
    const std::size_t B = r.slots.size();
    std::size_t bad = 0;
    for (std::size_t i = 0; !r.sample && i < B * A; ++i)
      bad += close(r.g_logits[i], r.logits[i]) ? 0 : 1;
    for (std::size_t row = 0; r.sample && row < B; ++row) {
      float want_lp = 0.0f;
      const int want = seedrl::counter_categorical(
          r.logits.data() + row * A, static_cast<int>(A),
          seedrl::counter_uniform(99, static_cast<std::uint64_t>(finished), row), &want_lp);
      bad += r.actions[row] == want ? 0 : 1;
      bad += close(r.log_probs[row], want_lp) ? 0 : 1;
    }
    for (std::size_t row = 0; row < B; ++row) {
      bad += close(r.g_values[row], r.values[row]) ? 0 : 1;
      const auto gb = gpu.state_before(row);
      REQUIRE(gb.size() == W);
      for (std::size_t i = 0; i < W; ++i)
        bad += close(gb[i], r.before[row * W + i]) ? 0 : 1;
    }
    INFO("pipelined batch " << finished << ", B = " << B);
    CHECK(bad == 0);
    ++finished;
  };
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t B = sizes[k];
    std::vector<std::uint32_t> free_slots;
    for (std::uint32_t s = 0; s < max_envs; ++s) {
      if (std::find(previous.begin(), previous.end(), s) == previous.end())
        free_slots.push_back(s);
    }
    for (std::size_t i = free_slots.size() - 1; i > 0; --i)
      std::swap(free_slots[i], free_slots[rng.below(i + 1)]);
    reference& r = refs[k];
    r.slots.assign(free_slots.begin(), free_slots.begin() + static_cast<std::ptrdiff_t>(B));
    for (const auto s : r.slots) {
      if (rng.uniform() < 0.15) {  // a run restart of a slot not in flight
        gpu.reset_state(s);
        cpu.reset_state(s);
      }
    }
    if (k == 5) {  // batch 4 is in flight with the old set
      std::vector<float> p(net.parameters().begin(), net.parameters().end());
      for (auto& x : p)
        x *= static_cast<float>(rng.uniform(0.8, 1.2));
      store.publish(p);
      CHECK(gpu.update_parameters(store, &gpu_version));
      CHECK(cpu.update_parameters(store, &cpu_version));
    }
    std::vector<float> o(B * obs), rewards(B);
    std::vector<std::uint8_t> resets(B);
    std::vector<std::int32_t> prev(B);
    for (auto& x : o)
      x = static_cast<float>(rng.uniform(obs_lo, obs_hi));
    for (std::size_t row = 0; row < B; ++row) {
      rewards[row] = static_cast<float>(rng.uniform(-2.0, 2.0));
      resets[row] = k == 0 || rng.uniform() < 0.2 ? 1 : 0;
      prev[row] = static_cast<std::int32_t>(rng.below(A));
    }
    const seedrl::agent_step_input<float> in{o, rewards, resets, prev};
    r.sample = k % 3 == 2;
    r.g_logits.assign(B * A, std::nanf(""));
    r.g_values.assign(B, std::nanf(""));
    r.actions.assign(B, -1);
    r.log_probs.assign(B, std::nanf(""));
    // The inputs are local to this iteration: the engine must have copied them at begin.
    if (r.sample)
      gpu.begin_and_sample(r.slots, in, {r.g_logits, r.g_values}, 99, k, r.actions, r.log_probs);
    else
      gpu.begin(r.slots, in, {r.g_logits, r.g_values});
    r.logits.resize(B * A);
    r.values.resize(B);
    cpu.infer(r.slots, in, {r.logits, r.values});
    for (std::size_t row = 0; row < B; ++row) {
      const auto cb = cpu.state_before(row);
      r.before.insert(r.before.end(), cb.begin(), cb.end());
    }
    previous = r.slots;
    if (k > 0)
      check_finished();  // batch k - 1, with batch k in flight behind it
  }
  check_finished();
  CHECK(finished == n);
  // Back to one batch at a time: infer() is begin() then finish().
  std::vector<float> gl(A), gv(1), cl(A), cv(1), x(obs, 0.5f), rw{0.0f};
  const std::vector<std::uint32_t> one{7};
  const std::vector<std::uint8_t> no{0};
  const std::vector<std::int32_t> pa{0};
  gpu.infer(one, {x, rw, no, pa}, {gl, gv});
  cpu.infer(one, {x, rw, no, pa}, {cl, cv});
  for (std::size_t a = 0; a < A; ++a)
    CHECK(close(gl[a], cl[a]));
  // Misuse is refused: finish with nothing in flight, infer with a batch in flight.
  CHECK_THROWS_AS(gpu.finish(), std::logic_error);
  gpu.begin(one, {x, rw, no, pa}, {gl, gv});
  CHECK_THROWS_AS(gpu.infer(one, {x, rw, no, pa}, {gl, gv}), std::logic_error);
  gpu.finish();
}

}  // namespace

TEST_CASE(
    "cuda inference_engine pipelined (two batches in flight) matches the CPU engine: "
    "MLP + LSTM with CUDA graphs, Nature CNN + LSTM",
    "[cuda][inference]") {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 6;
  c.num_actions = 4;
  c.hidden_sizes = {64, 32};
  c.lstm_size = 48;
  c.seed = 6;
  seedrl::mlp_lstm_agent<float> mlp(c);
  compare_pipelined<seedrl::cuda::mlp_lstm_recipe>(mlp, 4, -1.0, 1.0, 17);
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
  seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>> cnn(stack, agent);
  compare_pipelined<seedrl::cuda::pixel_lstm_recipe<seedrl::nature_cnn_config>>(cnn, 5, 0.0, 255.0,
                                                                                18);
}

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
    // uint8 frames through the graph-captured step (a graph per observation type).
    compare<seedrl::cuda::mlp_lstm_recipe>(net, 4, 0.0, 255.0, 10, true);
  }
}

TEST_CASE("cuda inference_engine matches the CPU engine: Gaussian heads, separate networks",
          "[cuda][inference]") {
  // Continuous actions (their previous values uploaded with the batch) on separate policy and
  // value networks with a state-independent log-std, and behind an LSTM with a state-dependent
  // one; infer_and_sample refuses them (the host samples Gaussians).
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 6;
  c.continuous_action_size = 3;
  c.num_actions = 6;
  c.hidden_sizes = {64, 64};
  c.lstm_size = 0;
  c.separate_value_network = true;
  c.log_std_init = -0.5;
  c.seed = 8;
  seedrl::mlp_lstm_agent<float> separate(c);
  compare<seedrl::cuda::mlp_lstm_recipe>(separate, 6, -1.0, 1.0, 13);
  c.lstm_size = 32;
  c.separate_value_network = false;
  c.log_std_init.reset();
  seedrl::mlp_lstm_agent<float> recurrent(c);
  compare<seedrl::cuda::mlp_lstm_recipe>(recurrent, 6, -1.0, 1.0, 14);
  seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe> gpu(
      recurrent, seedrl::inference_engine_config{4, 4, 6, 1});
  const std::vector<std::uint32_t> slots{0};
  const std::vector<float> o(6, 0.5f), r(1, 0.0f), pc(3, 0.1f);
  const std::vector<std::uint8_t> resets(1, 1);
  const std::vector<std::int32_t> prev(1, 0);
  std::vector<float> logits(6), values(1), lp(1);
  std::vector<std::int32_t> actions(1);
  CHECK_THROWS_AS(
      gpu.infer_and_sample(slots, {o, r, resets, prev, pc}, {logits, values}, 1, 0, actions, lp),
      std::logic_error);
}

TEST_CASE("cuda inference_engine matches the CPU engine: a user's torso part, no recipe of its own",
          "[cuda][inference]") {
  // test/softsign_torso.hpp as actor_critic_agent, on the GPU through actor_critic_recipe.
  using part = seedrl_test::softsign_config;
  seedrl::backend_core_config core;
  core.num_actions = 4;
  for (const std::ptrdiff_t lstm : {std::ptrdiff_t{24}, std::ptrdiff_t{0}}) {
    core.lstm_size = lstm;
    seedrl::actor_critic_agent<float, seedrl_test::softsign_torso<seedrl::host_backend, float>,
                               part>
        net({.seed = 7}, core, part{6, 16});
    compare<seedrl::actor_critic_recipe<seedrl_test::softsign_torso, part>>(net, 4, -1.0, 1.0, 15);
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
  // The frames as uint8, widened on the device.
  compare<seedrl::cuda::pixel_lstm_recipe<seedrl::nature_cnn_config>>(net, 5, 0.0, 255.0, 11, true);
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
  compare<seedrl::cuda::pixel_lstm_recipe<cfg>>(net, 3, 0.0, 255.0, 12, true);
}

TEST_CASE(
    "cuda inference_engine matches the CPU engine: frame-stacked small conv stack, and a user's "
    "own conv stack",
    "[cuda][inference]") {
  // 10x10 frames of 2 channels stacked 2 deep, HWC (as seedrl_gym --torso small feeds them).
  const seedrl::frame_stack_config stack{
      .height = 10, .width = 10, .channels = 2, .depth = 2, .channels_last = true};
  seedrl::small_conv_lstm_agent_config small;
  small.height = small.width = 10;
  small.channels = 4;
  small.channels_last = true;
  small.num_actions = 4;
  small.torso.channels = {6, 8};
  small.dense_size = 24;
  small.lstm_size = 12;
  small.seed = 5;
  seedrl::frame_stacked<seedrl::small_conv_lstm_agent<float>> small_net(stack, small);
  compare<seedrl::cuda::pixel_lstm_recipe<seedrl::small_conv_torso_config>>(small_net, 4, 0.0,
                                                                            255.0, 16);
  // test/tiny_conv_stack.hpp, named to the library only through backend_conv_stack.
  seedrl::pixel_lstm_agent_config<seedrl_test::tiny_conv_config> tiny;
  tiny.height = tiny.width = 10;
  tiny.channels = 4;
  tiny.channels_last = true;
  tiny.num_actions = 4;
  tiny.torso.out_channels = 5;
  tiny.dense_size = 24;
  tiny.lstm_size = 12;
  tiny.seed = 6;
  seedrl::frame_stacked<seedrl::pixel_lstm_agent<float, seedrl_test::tiny_conv<float>>> tiny_net(
      stack, tiny);
  compare<seedrl::cuda::pixel_lstm_recipe<seedrl_test::tiny_conv_config>>(tiny_net, 4, 0.0, 255.0,
                                                                          17, true);
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

namespace {

/// Sets an environment variable for a scope (the engine reads SEEDRL_CUDA_GRAPHS when built).
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    ::setenv(name, value, 1);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("cuda inference_engine: captured graphs of the Nature CNN step match plain launches",
          "[cuda][inference][graphs]") {
  // Every bucket (1 .. 256 rows) is used at least three times (warm-up, capture, replays), with
  // batches above 256 in between, each a new set of convolution shapes (more than the backend's
  // 32 unpinned ones): they push every unpinned cuDNN object out of the cache, so a graph that
  // replayed a dropped workspace would read freed memory. The state table carries from batch to
  // batch, so the padded rows' scratch slot and the slots' states are checked along the way.
  seedrl::frame_stack_config stack{.height = 36, .width = 36, .channels = 1, .depth = 2};
  seedrl::pixel_lstm_agent_config<seedrl::nature_cnn_config> agent;
  agent.height = 36;
  agent.width = 36;
  agent.channels = 2;
  agent.num_actions = 4;
  agent.torso.channels = {4, 8, 8};
  agent.dense_size = 16;
  agent.lstm_size = 8;
  agent.seed = 6;
  using net_t = seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>;
  using engine_t =
      seedrl::cuda::inference_engine<float,
                                     seedrl::cuda::pixel_lstm_recipe<seedrl::nature_cnn_config>>;
  net_t net(stack, agent);
  constexpr std::size_t envs = 320, batch = 320, A = 4;
  const seedrl::inference_engine_config config{envs, batch, A, 1};
  std::optional<engine_t> plain;
  {
    const scoped_env off("SEEDRL_CUDA_GRAPHS", "0");
    plain.emplace(net, config);
  }
  std::optional<engine_t> graphs;
  {
    const scoped_env on("SEEDRL_CUDA_GRAPHS", "1");
    graphs.emplace(net, config);
  }
  const std::size_t W = graphs->state_width(), obs = 36 * 36;
  seedrl::random_generator rng(12);
  std::vector<std::size_t> sizes;
  std::size_t update_at = 0;  // new parameters before the third round: the other buffer's graphs
  for (std::size_t rep = 0; rep < 3; ++rep) {
    if (rep == 2)
      update_at = sizes.size();
    for (const std::size_t B : {1, 2, 3, 4, 7, 8, 13, 16, 17, 32, 33, 64, 100, 128, 129, 256})
      sizes.push_back(B);
    for (std::size_t B = 257 + 15 * rep; B < 257 + 15 * (rep + 1); ++B)
      sizes.push_back(B);  // plain: 45 sizes of 3 new shapes each
  }
  std::vector<float> gl(batch * A), gv(batch), pl(batch * A), pv(batch);
  std::size_t bad = 0, rows = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t B = sizes[k];
    std::vector<std::uint32_t> all(envs);
    std::iota(all.begin(), all.end(), 0u);
    for (std::size_t i = envs - 1; i > 0; --i)
      std::swap(all[i], all[rng.below(i + 1)]);
    const std::vector<std::uint32_t> slots(all.begin(),
                                           all.begin() + static_cast<std::ptrdiff_t>(B));
    if (k == update_at) {
      std::vector<float> p(net.parameters().begin(), net.parameters().end());
      for (auto& x : p)
        x *= static_cast<float>(rng.uniform(0.8, 1.2));
      graphs->set_parameters(p);
      plain->set_parameters(p);
    }
    if (k % 7 == 3) {
      graphs->reset_state(slots[0]);
      plain->reset_state(slots[0]);
    }
    std::vector<float> o(B * obs), rewards(B);
    std::vector<std::uint8_t> resets(B);
    std::vector<std::int32_t> prev(B);
    for (auto& x : o)
      x = static_cast<float>(rng.below(256));
    for (std::size_t r = 0; r < B; ++r) {
      rewards[r] = static_cast<float>(rng.uniform(-1.0, 1.0));
      resets[r] = rng.uniform() < 0.1 ? 1 : 0;
      prev[r] = static_cast<std::int32_t>(rng.below(A));
    }
    const seedrl::agent_step_input<float> in{o, rewards, resets, prev};
    graphs->infer(slots, in, {std::span(gl).first(B * A), std::span(gv).first(B)});
    plain->infer(slots, in, {std::span(pl).first(B * A), std::span(pv).first(B)});
    for (std::size_t i = 0; i < B * A; ++i)
      bad += close(gl[i], pl[i]) ? 0 : 1;
    for (std::size_t r = 0; r < B; ++r) {
      bad += close(gv[r], pv[r]) ? 0 : 1;
      const auto g = graphs->state_before(r), p = plain->state_before(r);
      REQUIRE(g.size() == W);
      for (std::size_t i = 0; i < W; ++i)
        bad += close(g[i], p[i]) ? 0 : 1;
    }
    rows += B;
    INFO("batch " << k << ", B = " << B);
    REQUIRE(bad == 0);
  }
  CHECK(rows > 3 * 256);
  // Nine buckets (1, 2, 4, ..., 256), on both parameter buffers; none without graphs.
  CHECK(graphs->captured_graphs() == 18);
  CHECK(plain->captured_graphs() == 0);
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
