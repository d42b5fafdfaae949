// backend_agent_step (the accelerator inference engine's network step) on host_backend against
// cpu_inference_engine over the CPU networks: mlp_lstm_agent (one and two LSTM layers, and no
// LSTM), frame_stacked<nature_cnn_lstm_agent> and frame_stacked<impala_resnet_lstm_agent>, in
// double, over several batches of random slots with episode resets and run restarts (a table
// row zeroed) in between: logits, values, each row's state before the step and the state table.
// And the step on uint8 frames against the step on the same frames as floats.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/backend/detail/state_table_kernels.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/train/agent_step.hpp"
#include "seedrl/train/mlp_torso.hpp"
#include "seedrl/train/pixel_torso.hpp"

namespace {

constexpr std::size_t max_envs = 11, max_batch = 6;

/// Runs `batches` random batches through `step` (its table, its buffers) and through
/// cpu_inference_engine<Net> on the same parameters, comparing everything a step writes.
template <class Net, class Step>
void compare(Net& net, Step& step, double obs_lo, double obs_hi, std::uint64_t seed, int batches) {
  using S = double;
  const std::size_t A = step.num_actions(), D = step.continuous_action_size();
  const std::size_t W = step.state_size(), obs = step.observation_size();
  REQUIRE(W == static_cast<std::size_t>(net.state_size()));
  REQUIRE(obs == static_cast<std::size_t>(net.observation_size()));
  REQUIRE(step.num_parameters() == net.parameters().size());
  seedrl::cpu_inference_engine<Net> engine(net, {max_envs, max_batch, A, 1});
  std::vector<S> params(net.parameters().begin(), net.parameters().end());
  std::vector<S> table(max_envs * W, S(0)), before(max_batch * W);
  std::vector<S> logits(max_batch * A), values(max_batch);
  std::vector<S> want_logits(max_batch * A), want_values(max_batch);
  step.reserve(max_batch);
  seedrl::random_generator rng(seed);
  for (int k = 0; k < batches; ++k) {
    for (std::size_t s = 0; s < max_envs; ++s) {
      if (rng.uniform() < 0.1) {  // a run restart: the engine's reset_state
        engine.reset_state(s);
        std::fill_n(table.begin() + static_cast<std::ptrdiff_t>(s * W), W, S(0));
      }
    }
    const std::size_t B = 1 + rng.below(max_batch);
    std::vector<std::uint32_t> all(max_envs);
    std::iota(all.begin(), all.end(), 0u);
    for (std::size_t i = max_envs - 1; i > 0; --i)
      std::swap(all[i], all[rng.below(i + 1)]);
    const std::vector<std::uint32_t> slots(all.begin(),
                                           all.begin() + static_cast<std::ptrdiff_t>(B));
    std::vector<S> o(B * obs), rewards(B);
    std::vector<std::uint8_t> resets(B);
    std::vector<std::int32_t> prev(B);
    std::vector<S> prev_continuous(B * D);
    for (auto& x : o)
      x = rng.uniform(obs_lo, obs_hi);
    for (auto& x : prev_continuous)
      x = rng.uniform(-1.5, 1.5);
    for (std::size_t r = 0; r < B; ++r) {
      rewards[r] = rng.uniform(-2.0, 2.0);
      resets[r] = k == 0 || rng.uniform() < 0.2 ? 1 : 0;
      prev[r] = static_cast<std::int32_t>(rng.below(A));
    }
    seedrl::agent_step_operands<S> op;
    op.B = B;
    op.slots = slots.data();
    op.observations = o.data();
    op.rewards = rewards.data();
    op.resets = resets.data();
    op.prev_actions = prev.data();
    op.prev_continuous_actions = D > 0 ? prev_continuous.data() : nullptr;
    op.params = params.data();
    op.table = table.data();
    op.before = before.data();
    op.logits = logits.data();
    op.values = values.data();
    step.step(op);
    engine.infer(slots, {o, rewards, resets, prev, prev_continuous},
                 {std::span(want_logits).first(B * A), std::span(want_values).first(B)});
    for (std::size_t i = 0; i < B * A; ++i)
      CHECK(logits[i] == Approx(want_logits[i]).margin(1e-9));
    for (std::size_t r = 0; r < B; ++r) {
      CHECK(values[r] == Approx(want_values[r]).margin(1e-9));
      const auto want_before = engine.state_before(r);
      for (std::size_t i = 0; i < W; ++i)
        CHECK(before[r * W + i] == Approx(want_before[i]).margin(1e-9));
    }
  }
  // The whole table after the last batch: each slot's next step starts from the same state.
  std::vector<S> zeros_out(max_envs * A), zero_values(max_envs);
  std::vector<std::uint32_t> every(max_envs);
  std::iota(every.begin(), every.end(), 0u);
  for (std::size_t s = 0; s < max_envs; s += max_batch) {
    const std::size_t n = std::min(max_batch, max_envs - s);
    std::vector<S> o(n * obs, S(1)), rw(n, S(0));
    std::vector<std::uint8_t> no_reset(n, 0);
    std::vector<std::int32_t> pv(n, 0);
    std::vector<S> pc(n * D, S(0));
    engine.infer(std::span(every).subspan(s, n), {o, rw, no_reset, pv, pc},
                 {std::span(zeros_out).first(n * A), std::span(zero_values).first(n)});
    for (std::size_t r = 0; r < n; ++r) {
      const auto want = engine.state_before(r);
      for (std::size_t i = 0; i < W; ++i)
        CHECK(table[(s + r) * W + i] == Approx(want[i]).margin(1e-9));
    }
  }
}

seedrl::mlp_lstm_agent_config mlp_config(std::ptrdiff_t lstm, std::ptrdiff_t layers) {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 5;
  c.num_actions = 3;
  c.hidden_sizes = {8, 7};
  c.lstm_size = lstm;
  c.lstm_layers = layers;
  c.seed = 11;
  return c;
}

}  // namespace

TEST_CASE("backend_agent_step matches the CPU engine: Gaussian heads, separate networks",
          "[agent_step]") {
  // Continuous actions (D = 2) with a state-independent log-std behind an LSTM, and a
  // state-dependent one on separate policy and value networks; a discrete policy on separate
  // networks; D = 3 without reward/action inputs.
  using torso = seedrl::backend_mlp_torso<seedrl::host_backend, double>;
  struct shape {
    std::int32_t D;
    bool independent, separate, inputs;
    std::ptrdiff_t lstm;
  };
  for (const shape& k : {shape{2, true, false, true, 6}, shape{2, false, true, true, 0},
                         shape{0, false, true, true, 0}, shape{3, true, true, false, 0}}) {
    CAPTURE(k.D, k.independent, k.separate, k.inputs, k.lstm);
    auto c = mlp_config(k.lstm, 1);
    if (k.D > 0) {
      c.continuous_action_size = k.D;
      c.num_actions = 2 * k.D;
      if (k.independent)
        c.log_std_init = -0.3;
    }
    c.separate_value_network = k.separate;
    c.reward_and_action_inputs = k.inputs;
    seedrl::mlp_lstm_agent<double> net(c);
    seedrl::host_backend backend;
    seedrl::backend_agent_step<seedrl::host_backend, double, torso> step(backend, c);
    REQUIRE(step.continuous_action_size() == static_cast<std::size_t>(k.D));
    compare(net, step, -1.0, 1.0, 21 + static_cast<std::uint64_t>(k.D), 6);
  }
}

TEST_CASE("backend_agent_step matches the CPU engine: MLP with 0, 1 and 2 LSTM layers",
          "[agent_step]") {
  using torso = seedrl::backend_mlp_torso<seedrl::host_backend, double>;
  for (const auto& [lstm, layers] : {std::pair{6, 1}, std::pair{5, 2}, std::pair{0, 1}}) {
    const auto c = mlp_config(lstm, layers);
    seedrl::mlp_lstm_agent<double> net(c);
    seedrl::host_backend backend;
    seedrl::backend_agent_step<seedrl::host_backend, double, torso> step(backend, c);
    compare(net, step, -1.0, 1.0, 3 + static_cast<std::uint64_t>(lstm), 8);
  }
}

TEST_CASE("backend_agent_step matches the CPU engine: frame-stacked Nature CNN + LSTM",
          "[agent_step]") {
  using torso = seedrl::backend_pixel_torso<seedrl::host_backend, double>;
  seedrl::frame_stack_config stack{.height = 44, .width = 52, .channels = 1, .depth = 3};
  seedrl::pixel_lstm_agent_config<seedrl::nature_cnn_config> agent;
  agent.height = 44;
  agent.width = 52;
  agent.channels = 3;
  agent.num_actions = 4;
  agent.torso.channels = {4, 5, 3};
  agent.dense_size = 7;
  agent.lstm_size = 6;
  agent.max_abs_input_reward = 1.0;
  agent.seed = 3;
  seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<double>> net(stack, agent);
  seedrl::host_backend backend;
  seedrl::backend_agent_step<seedrl::host_backend, double, torso> step(backend, stack, agent);
  compare(net, step, 0.0, 255.0, 5, 6);
}

TEST_CASE(
    "backend_agent_step matches the CPU engine: frame-stacked IMPALA ResNet + LSTM, "
    "two-channel frames stacked 4 deep",
    "[agent_step]") {
  using cfg = seedrl::impala_resnet_config;
  using torso = seedrl::backend_pixel_torso<seedrl::host_backend, double, cfg>;
  seedrl::frame_stack_config stack{.height = 12, .width = 10, .channels = 2, .depth = 4};
  seedrl::pixel_lstm_agent_config<cfg> agent;
  agent.height = 12;
  agent.width = 10;
  agent.channels = 8;
  agent.num_actions = 4;
  agent.torso.channels = {4, 6};
  agent.torso.blocks_per_stack = 1;
  agent.dense_size = 7;
  agent.lstm_size = 6;
  agent.seed = 4;
  seedrl::frame_stacked<seedrl::impala_resnet_lstm_agent<double>> net(stack, agent);
  seedrl::host_backend backend;
  seedrl::backend_agent_step<seedrl::host_backend, double, torso> step(backend, stack, agent);
  compare(net, step, 0.0, 255.0, 6, 6);
}

TEST_CASE("backend_agent_step on uint8 frames equals the step on the same frames as S, bit for bit",
          "[agent_step]") {
  // Frame-stacked Nature CNN: the widened frames feed both the torso and the frame history.
  using torso = seedrl::backend_pixel_torso<seedrl::host_backend, float>;
  seedrl::frame_stack_config stack{.height = 44, .width = 52, .channels = 1, .depth = 3};
  seedrl::pixel_lstm_agent_config<seedrl::nature_cnn_config> agent;
  agent.height = 44;
  agent.width = 52;
  agent.channels = 3;
  agent.num_actions = 4;
  agent.torso.channels = {4, 5, 3};
  agent.dense_size = 7;
  agent.lstm_size = 6;
  agent.seed = 9;
  seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>> net(stack, agent);
  seedrl::host_backend backend;
  seedrl::backend_agent_step<seedrl::host_backend, float, torso> step(backend, stack, agent);
  const std::size_t A = step.num_actions(), W = step.state_size(), obs = step.observation_size();
  step.reserve(max_batch);
  std::vector<float> params(net.parameters().begin(), net.parameters().end());
  // Two tables: the float path's and the uint8 path's, stepped side by side.
  std::vector<float> table_f(max_envs * W, 0.0f), table_u(max_envs * W, 0.0f);
  std::vector<float> before_f(max_batch * W), before_u(max_batch * W);
  std::vector<float> logits_f(max_batch * A), logits_u(max_batch * A);
  std::vector<float> values_f(max_batch), values_u(max_batch);
  seedrl::random_generator rng(21);
  for (int k = 0; k < 6; ++k) {
    const std::size_t B = 1 + rng.below(max_batch);
    std::vector<std::uint32_t> all(max_envs);
    std::iota(all.begin(), all.end(), 0u);
    for (std::size_t i = max_envs - 1; i > 0; --i)
      std::swap(all[i], all[rng.below(i + 1)]);
    const std::vector<std::uint32_t> slots(all.begin(),
                                           all.begin() + static_cast<std::ptrdiff_t>(B));
    std::vector<std::uint8_t> frames(B * obs), resets(B);
    std::vector<float> wide(B * obs), rewards(B);
    std::vector<std::int32_t> prev(B);
    for (std::size_t i = 0; i < B * obs; ++i) {
      frames[i] = static_cast<std::uint8_t>(rng.below(256));
      wide[i] = static_cast<float>(frames[i]);
    }
    for (std::size_t r = 0; r < B; ++r) {
      rewards[r] = static_cast<float>(rng.uniform(-1.0, 1.0));
      resets[r] = k == 0 || rng.uniform() < 0.2 ? 1 : 0;
      prev[r] = static_cast<std::int32_t>(rng.below(A));
    }
    const auto run = [&](const float* o, const std::uint8_t* u, std::vector<float>& table,
                         std::vector<float>& before, std::vector<float>& logits,
                         std::vector<float>& values) {
      seedrl::agent_step_operands<float> op;
      op.B = B;
      op.slots = slots.data();
      op.observations = o;
      op.observations_u8 = u;
      op.rewards = rewards.data();
      op.resets = resets.data();
      op.prev_actions = prev.data();
      op.params = params.data();
      op.table = table.data();
      op.before = before.data();
      op.logits = logits.data();
      op.values = values.data();
      step.step(op);
    };
    run(wide.data(), nullptr, table_f, before_f, logits_f, values_f);
    // The uint8 path must not read `observations`: a poisoned pointer's values would show.
    std::vector<float> poison(B * obs, std::nanf(""));
    run(poison.data(), frames.data(), table_u, before_u, logits_u, values_u);
    INFO("batch " << k << ", B = " << B);
    CHECK(std::equal(logits_f.begin(), logits_f.begin() + static_cast<std::ptrdiff_t>(B * A),
                     logits_u.begin()));
    CHECK(std::equal(values_f.begin(), values_f.begin() + static_cast<std::ptrdiff_t>(B),
                     values_u.begin()));
    CHECK(std::equal(before_f.begin(), before_f.begin() + static_cast<std::ptrdiff_t>(B * W),
                     before_u.begin()));
    CHECK(table_f == table_u);
    CHECK(std::all_of(logits_u.begin(), logits_u.begin() + static_cast<std::ptrdiff_t>(B * A),
                      [](float x) { return std::isfinite(x); }));
  }
}

TEST_CASE("the state table's host row copies match the gather and scatter element bodies",
          "[agent_step]") {
  // detail::host_primitives copies whole rows; the kernels' element bodies (what a GPU runs)
  // divide every index. Slots out of order and sparse, widths from 1 up.
  seedrl::random_generator rng(13);
  for (const std::size_t width : {std::size_t{1}, std::size_t{3}, std::size_t{70}}) {
    CAPTURE(width);
    const std::size_t table_rows = 9, B = 5;
    const std::vector<std::uint32_t> slots{7, 2, 8, 0, 5};
    std::vector<float> table(table_rows * width), rows(B * width);
    for (auto& x : table)
      x = static_cast<float>(rng.uniform(-1, 1));
    for (auto& x : rows)
      x = static_cast<float>(rng.uniform(-1, 1));
    // Gather.
    std::vector<float> by_rows(B * width, -9.0f), by_elements(B * width, -9.0f);
    seedrl::detail::host_primitives{}.for_each(
        B * width, seedrl::detail::gather_rows_kernel<float>{table.data(), slots.data(), width,
                                                             by_rows.data()});
    const seedrl::detail::gather_rows_kernel<float> gather{table.data(), slots.data(), width,
                                                           by_elements.data()};
    for (std::size_t i = 0; i < B * width; ++i)
      gather(i);
    CHECK(by_rows == by_elements);
    CHECK(by_rows[width] == table[2 * width]);  // row 1 is slot 2's
    // Scatter: the other table rows untouched.
    std::vector<float> t_rows = table, t_elements = table;
    seedrl::detail::host_primitives{}.for_each(
        B * width, seedrl::detail::scatter_rows_kernel<float>{rows.data(), slots.data(), width,
                                                              t_rows.data()});
    const seedrl::detail::scatter_rows_kernel<float> scatter{rows.data(), slots.data(), width,
                                                             t_elements.data()};
    for (std::size_t i = 0; i < B * width; ++i)
      scatter(i);
    CHECK(t_rows == t_elements);
    CHECK(std::equal(t_rows.begin() + 1 * static_cast<std::ptrdiff_t>(width),
                     t_rows.begin() + 2 * static_cast<std::ptrdiff_t>(width),
                     table.begin() + 1 * static_cast<std::ptrdiff_t>(width)));
    CHECK(t_rows[7 * width] == rows[0]);
  }
}
