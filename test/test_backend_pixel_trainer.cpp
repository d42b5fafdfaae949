// backend_pixel_lstm_trainer on host_backend against the reference training step:
// frame_stacked<nature_cnn_lstm_agent> + host_trainer (impala_loss, clip_by_global_norm) + adam /
// rmsprop, on small non-square frames with narrow convolutions, random batches with episode
// resets at t = 0 and mid-unroll and random start states (frame history and LSTM state).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/train/pixel_lstm_trainer.hpp"

namespace {

template <class S>
using trainer_t = seedrl::backend_pixel_lstm_trainer<seedrl::host_backend, S>;
template <class S>
using net_t = seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<S>>;

/// The network's shape: frames and stacking, and the agent over the stacks.
struct shape {
  seedrl::frame_stack_config stack;
  seedrl::nature_cnn_lstm_agent_config agent;
};

/// 44x52 frames (every convolution's output non-square: 10x12, 4x5, 2x3) of `channels`
/// channels, stacks of 3, convolutions of 4, 5 and 3 channels, dense 7, LSTM 6, 4 actions.
shape small_shape(std::ptrdiff_t channels = 1, bool stack_last = false, bool agent_last = false) {
  shape s;
  s.stack = {
      .height = 44, .width = 52, .channels = channels, .depth = 3, .channels_last = stack_last};
  s.agent.height = 44;
  s.agent.width = 52;
  s.agent.channels = 3 * channels;
  s.agent.channels_last = agent_last;
  s.agent.num_actions = 4;
  s.agent.torso.channels = {4, 5, 3};
  s.agent.dense_size = 7;
  s.agent.lstm_size = 6;
  s.agent.seed = 3;
  return s;
}

/// A random training batch that owns its arrays.
template <class S>
struct random_batch {
  std::size_t T = 0, B = 0, A = 0;
  std::vector<S> obs, rewards, behaviour, start;
  std::vector<std::uint8_t> dones;
  std::vector<std::int32_t> prev_actions, actions;

  seedrl::training_batch<S> view() const {
    return {T, B, A, obs, rewards, dones, prev_actions, actions, behaviour, start};
  }
};

/// Random pixels in [0, 255] (frames and the start state's history), LSTM state in
/// [-0.5, 0.5], rewards in [-2, 2] (so the input-reward clip of 1 bites), about one reset in
/// five plus a forced one at t = 0 (environment 0) and one mid-unroll (the last environment),
/// environment 1 never reset at t = 0 (its start state matters), random actions and log mu.
template <class S>
random_batch<S> make_batch(const shape& sh, std::size_t T, std::size_t B,
                           seedrl::random_generator& rng) {
  random_batch<S> d;
  d.T = T;
  d.B = B;
  d.A = static_cast<std::size_t>(sh.agent.num_actions);
  const auto frame = static_cast<std::size_t>(sh.stack.height * sh.stack.width * sh.stack.channels);
  const std::size_t history = static_cast<std::size_t>(sh.stack.depth - 1) * frame;
  const std::size_t state = history + 2 * static_cast<std::size_t>(sh.agent.lstm_size);
  const std::size_t rows = (T + 1) * B;
  const auto uniform = [&](std::vector<S>& v, std::size_t n, double lo, double hi) {
    for (std::size_t i = 0; i < n; ++i)
      v.push_back(static_cast<S>(rng.uniform(lo, hi)));
  };
  uniform(d.obs, rows * frame, 0.0, 255.0);
  uniform(d.rewards, rows, -2.0, 2.0);
  for (std::size_t b = 0; b < B; ++b) {
    uniform(d.start, history, 0.0, 255.0);
    uniform(d.start, state - history, -0.5, 0.5);
  }
  for (std::size_t i = 0; i < rows; ++i) {
    d.dones.push_back(rng.below(5) == 0 ? 1 : 0);
    d.prev_actions.push_back(static_cast<std::int32_t>(rng.below(d.A)));
    d.actions.push_back(static_cast<std::int32_t>(rng.below(d.A)));
    d.behaviour.push_back(static_cast<S>(std::log(rng.uniform(0.05, 1.0))));
  }
  d.dones[0] = 1;
  if (B > 1)
    d.dones[1] = 0;
  d.dones[(T / 2 + 1) * B + (B - 1)] = 1;
  return d;
}

/// max_i |got_i - want_i| / (max(|got_i|, |want_i|) + 1e-2 max_j |want_j|), as in
/// test_backend_trainer.cpp.
template <class S>
double max_difference(std::span<const S> got, std::span<const S> want) {
  REQUIRE(got.size() == want.size());
  double scale = 0.0;
  for (const S w : want)
    scale = std::max(scale, std::abs(static_cast<double>(w)));
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    const double e = std::abs(g - w) / (std::max(std::abs(g), std::abs(w)) + 1e-2 * scale + 1e-300);
    worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(worst, e);
  }
  return worst;
}

double relative(double got, double want) {
  const double d = std::abs(got - want) / std::max({std::abs(got), std::abs(want), 1e-300});
  return std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
}

template <class S>
std::vector<S> parameters_of(const trainer_t<S>& t) {
  std::vector<S> p(t.num_parameters());
  t.get_parameters(p);
  return p;
}

template <class S>
std::vector<S> gradients_of(const trainer_t<S>& t) {
  std::vector<S> g(t.num_parameters());
  t.get_gradients(g);
  return g;
}

template <class S>
std::vector<std::span<const S>> cpu_state(const seedrl::adam<S>& o) {
  return {o.first_moment(), o.second_moment()};
}

template <class S>
std::vector<std::span<const S>> cpu_state(const seedrl::rmsprop<S>& o) {
  if (o.momentum_buffer().empty())
    return {o.mean_square()};
  return {o.mean_square(), o.momentum_buffer()};
}

struct run_options {
  std::size_t T = 5, B = 3;
  double max_grad_norm = 1e9;  ///< effectively no clipping
  int steps = 3;
  double tolerance = 1e-10;  ///< loss terms, norms, gradients, parameters, optimizer state
  std::uint64_t seed = 1;
};

/// Trains the reference and the backend trainer side by side on the same batches and checks
/// they agree after every step; returns the reference's gradient norms. The second step has a
/// larger T and B (the trainer's buffers grow) and the third the first's again (reuse).
template <class S, class Opt>
std::vector<double> compare_with_reference(const shape& sh,
                                           const typename Opt::config_type& opt_config,
                                           const seedrl::impala_loss_config<S>& loss_config,
                                           const run_options& o) {
  net_t<S> net(sh.stack, sh.agent);
  Opt opt(opt_config);
  seedrl::host_trainer reference;
  const seedrl::impala_loss<S> loss(loss_config);
  seedrl::host_backend backend;
  trainer_t<S> trainer(backend, sh.stack, sh.agent);
  REQUIRE(trainer.num_parameters() == net.parameters().size());
  REQUIRE(trainer.state_size() == static_cast<std::size_t>(net.state_size()));
  REQUIRE(trainer.observation_size() == static_cast<std::size_t>(net.observation_size()));
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(opt_config, 0);
  CHECK(parameters_of(trainer) == std::vector<S>(net.parameters().begin(), net.parameters().end()));
  const std::vector<S> initial(net.parameters().begin(), net.parameters().end());
  seedrl::random_generator rng(o.seed);
  std::vector<double> norms;
  for (int step = 0; step < o.steps; ++step) {
    INFO("step " << step);
    const std::size_t T = o.T + (step == 1 ? 3 : 0), B = o.B + (step == 1 ? 2 : 0);
    const auto batch = make_batch<S>(sh, T, B, rng);
    const auto want = reference.train_step(batch.view(), net, opt, loss, o.max_grad_norm);
    const auto got = trainer.train_step(batch.view(), loss_config, o.max_grad_norm);
    REQUIRE(want.applied);
    REQUIRE(got.applied);
    CHECK(got.skipped.empty());
    CHECK(relative(got.terms.total, want.terms.total) < o.tolerance);
    CHECK(relative(got.terms.policy, want.terms.policy) < o.tolerance);
    CHECK(relative(got.terms.baseline, want.terms.baseline) < o.tolerance);
    CHECK(relative(got.terms.entropy, want.terms.entropy) < o.tolerance);
    CHECK(relative(got.grad_norm, want.grad_norm) < o.tolerance);
    CHECK(got.learning_rate == want.learning_rate);
    CHECK(max_difference<S>(gradients_of(trainer), net.gradients()) < o.tolerance);
    CHECK(max_difference<S>(parameters_of(trainer), net.parameters()) < o.tolerance);
    CHECK(trainer.optimizer_step_count() == opt.step_count());
    CHECK(trainer.learning_rate() == opt.learning_rate());
    const auto state = trainer.optimizer_state();
    const auto cpu = cpu_state(opt);
    REQUIRE(state.size() == cpu.size());
    for (std::size_t k = 0; k < cpu.size(); ++k) {
      INFO("optimizer array " << k);
      CHECK(max_difference<S>(state[k], cpu[k]) < o.tolerance);
    }
    norms.push_back(want.grad_norm);
  }
  double moved = 0.0;
  for (std::size_t i = 0; i < initial.size(); ++i)
    moved = std::max(moved, std::abs(static_cast<double>(net.parameters()[i] - initial[i])));
  CHECK(moved > 1e-5);
  return norms;
}

seedrl::impala_loss_config<double> loss_config() {
  seedrl::impala_loss_config<double> l;
  l.entropy_cost = 0.01;
  l.max_abs_reward = 1.5;
  return l;
}

seedrl::adam_config adam_lr(double lr) {
  seedrl::adam_config a;
  a.learning_rate = lr;
  return a;
}

}  // namespace

TEST_CASE("pixel backend trainer matches the reference: grayscale, Adam, no clipping",
          "[backend_trainer]") {
  run_options o;
  const auto norms = compare_with_reference<double, seedrl::adam<double>>(
      small_shape(), adam_lr(1e-3), loss_config(), o);
  for (const double n : norms)
    CHECK(n < o.max_grad_norm);  // clipping never bit
}

TEST_CASE("pixel backend trainer matches the reference: two-channel frames, every layout",
          "[backend_trainer]") {
  // Frames of 2 channels stacked channels-first (CHW, concatenated) or channels-last
  // (interleaved HWC), read by the agent as CHW or HWC: the four ways the two flags combine.
  auto a = adam_lr(2e-3);
  a.lr_decay_steps = 5;  // the schedule moves between steps
  run_options o;
  o.max_grad_norm = 0.05;
  for (const bool stack_last : {false, true}) {
    for (const bool agent_last : {false, true}) {
      INFO("stack channels_last " << stack_last << ", agent channels_last " << agent_last);
      o.seed = 2 + (stack_last ? 2 : 0) + (agent_last ? 1 : 0);
      const auto norms = compare_with_reference<double, seedrl::adam<double>>(
          small_shape(2, stack_last, agent_last), a, loss_config(), o);
      for (const double n : norms)
        CHECK(n > o.max_grad_norm);  // every step was clipped
    }
  }
}

TEST_CASE("pixel backend trainer matches the reference: RMSProp, raw input reward, depth 1",
          "[backend_trainer]") {
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  run_options o;
  o.seed = 7;
  o.max_grad_norm = 0.2;
  SECTION("rmsprop without momentum, unclipped input reward, one environment") {
    auto sh = small_shape();
    sh.agent.max_abs_input_reward.reset();
    o.B = 1;
    compare_with_reference<double, seedrl::rmsprop<double>>(sh, r, loss_config(), o);
  }
  SECTION("rmsprop with momentum, no stacking (depth 1: no history in the state)") {
    auto sh = small_shape(2, true, true);
    sh.stack.depth = 1;
    sh.agent.channels = 2;
    sh.agent.observation_scale = 0.5;
    r.momentum = 0.9;
    compare_with_reference<double, seedrl::rmsprop<double>>(sh, r, loss_config(), o);
  }
  SECTION("deep stack: depth 5, longer than half the unroll") {
    auto sh = small_shape();
    sh.stack.depth = 5;
    sh.agent.channels = 5;
    o.T = 3;
    compare_with_reference<double, seedrl::rmsprop<double>>(sh, r, loss_config(), o);
  }
}

TEST_CASE("pixel backend trainer matches the reference in float", "[backend_trainer]") {
  seedrl::impala_loss_config<float> l;
  l.entropy_cost = 0.01f;
  run_options o;
  o.seed = 6;
  o.max_grad_norm = 0.1;
  o.tolerance = 1e-3;
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  r.momentum = 0.5;
  compare_with_reference<float, seedrl::rmsprop<float>>(small_shape(2, true, true), r, l, o);
  seedrl::adam_config a = adam_lr(1e-3);
  a.epsilon = 1e-2;
  compare_with_reference<float, seedrl::adam<float>>(small_shape(), a, l, o);
}

TEST_CASE("pixel backend trainer comparison notices a wrong parameter in every block",
          "[backend_trainer]") {
  // Guards the tests above: a parameter off by 1e-6 in any block (each convolution's weights
  // and biases, dense, LSTM input and recurrent weights and biases, policy, value) shows in the
  // gradients well above 1e-10; so does a changed frame in a start state's history.
  const auto sh = small_shape(2, true, true);
  net_t<double> net(sh.stack, sh.agent);
  seedrl::host_trainer reference;
  seedrl::adam<double> opt(adam_lr(1e-3));
  const seedrl::impala_loss<double> loss(loss_config());
  seedrl::random_generator rng(9);
  const auto batch = make_batch<double>(sh, 4, 3, rng);
  const std::vector<double> p0(net.parameters().begin(), net.parameters().end());
  reference.train_step(batch.view(), net, opt, loss, 1e9);
  const std::vector<double> want(net.gradients().begin(), net.gradients().end());
  const std::size_t P = p0.size();
  struct block {
    const char* name;
    std::size_t size, cols, col_lo, col_hi;  ///< elements; columns of a row; probed columns
  };
  // Convolutions: 6 -> 4 (8x8), 4 -> 5 (4x4), 5 -> 3 (3x3); features 3 * 2 * 3 = 18.
  const std::size_t I = 7 + 1 + 4, H = 6;
  const block blocks[] = {{"conv 0 W", 4 * 6 * 64, 6 * 64, 0, 6 * 64},
                          {"conv 0 b", 4, 4, 0, 4},
                          {"conv 1 W", 5 * 4 * 16, 4 * 16, 0, 4 * 16},
                          {"conv 1 b", 5, 5, 0, 5},
                          {"conv 2 W", 3 * 5 * 9, 5 * 9, 0, 5 * 9},
                          {"conv 2 b", 3, 3, 0, 3},
                          {"dense W", 7 * 18, 18, 0, 18},
                          {"dense b", 7, 7, 0, 7},
                          {"LSTM W_ih", 4 * H * (I + H), I + H, 0, I},
                          {"LSTM W_hh", 0, I + H, I, I + H},
                          {"LSTM b", 4 * H, 4 * H, 0, 4 * H},
                          {"policy W", 4 * H, H, 0, H},
                          {"policy b", 4, 4, 0, 4},
                          {"value W", H, H, 0, H},
                          {"value b", 1, 1, 0, 1}};
  std::vector<std::pair<std::string, std::size_t>> probes;
  std::size_t at = 0, begin = 0;
  for (const block& b : blocks) {
    if (b.size != 0) {  // size 0: other columns of the block before
      begin = at;
      at += b.size;
    }
    std::size_t best = begin + b.col_lo;
    for (std::size_t i = begin; i < at; ++i) {
      const std::size_t col = (i - begin) % b.cols;
      if (col >= b.col_lo && col < b.col_hi && std::abs(want[i]) > std::abs(want[best]))
        best = i;
    }
    probes.emplace_back(b.name, best);
  }
  REQUIRE(at == P);
  seedrl::host_backend backend;
  for (const auto& [name, probe] : probes) {
    INFO(name << ": parameter " << probe);
    CHECK(want[probe] != 0.0);
    trainer_t<double> trainer(backend, sh.stack, sh.agent);
    trainer.set_optimizer(adam_lr(1e-3), 0);
    auto p = p0;
    trainer.set_parameters(p);
    trainer.train_step(batch.view(), loss_config(), 1e9);
    CHECK(max_difference<double>(gradients_of(trainer), want) < 1e-10);
    p[probe] += 1e-6;
    trainer.set_parameters(p);
    trainer.train_step(batch.view(), loss_config(), 1e9);
    CHECK(max_difference<double>(gradients_of(trainer), want) > 1e-9);
  }
  // Environment 1 does not start an episode at t = 0, so its history frames are read: every
  // slot of the history, and (channel 1 of) a pixel in the middle of the frame.
  const std::size_t frame = 44 * 52 * 2;
  const std::size_t state = 2 * frame + 2 * H;
  for (std::size_t slot = 0; slot < 2; ++slot) {
    INFO("history slot " << slot);
    trainer_t<double> trainer(backend, sh.stack, sh.agent);
    trainer.set_optimizer(adam_lr(1e-3), 0);
    trainer.set_parameters(p0);
    auto changed = batch;
    changed.start[state + slot * frame + (22 * 52 + 26) * 2 + 1] += 50.0;
    trainer.train_step(changed.view(), loss_config(), 1e9);
    CHECK(max_difference<double>(gradients_of(trainer), want) > 1e-9);
  }
}

TEST_CASE("pixel backend trainer zeroes the frame history where an episode starts",
          "[backend_trainer]") {
  // Environment 0 starts an episode at t = 0: its history frames are never read, whatever they
  // hold; the same for the frames before a mid-unroll reset, which only earlier steps read.
  const auto sh = small_shape();
  net_t<double> net(sh.stack, sh.agent);
  seedrl::host_backend backend;
  seedrl::random_generator rng(21);
  auto batch = make_batch<double>(sh, 4, 2, rng);
  std::fill(batch.dones.begin(), batch.dones.end(), std::uint8_t{0});
  batch.dones[0] = 1;
  const auto run = [&](const random_batch<double>& b) {
    trainer_t<double> trainer(backend, sh.stack, sh.agent);
    trainer.set_parameters(net.parameters());
    trainer.set_optimizer(adam_lr(1e-3), 0);
    const auto r = trainer.train_step(b.view(), loss_config(), 1e9);
    return std::make_pair(r.terms.total, gradients_of(trainer));
  };
  const auto base = run(batch);
  const std::size_t frame = 44 * 52, state = 2 * frame + 12;
  auto unread = batch;
  for (std::size_t i = 0; i < 2 * frame; ++i)
    unread.start[i] = 255.0 - unread.start[i];  // environment 0's history
  CHECK(run(unread) == base);
  auto read = batch;
  read.start[state + 100] += 30.0;  // environment 1's history: read
  CHECK(run(read).second != base.second);
}

TEST_CASE("pixel backend trainer continues from a CPU optimizer's state", "[backend_trainer]") {
  const auto sh = small_shape();
  seedrl::random_generator rng(13);
  const seedrl::impala_loss<double> loss(loss_config());
  seedrl::host_trainer reference;
  seedrl::host_backend backend;
  auto a = adam_lr(1e-3);
  a.lr_decay_steps = 4;
  net_t<double> net(sh.stack, sh.agent);
  seedrl::adam<double> opt(a);
  for (int i = 0; i < 2; ++i) {
    const auto b = make_batch<double>(sh, 3, 2, rng);
    reference.train_step(b.view(), net, opt, loss, 1.0);
  }
  trainer_t<double> trainer(backend, sh.stack, sh.agent);
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(a, opt.step_count(), cpu_state(opt));
  CHECK(trainer.optimizer_step_count() == 2);
  CHECK(trainer.learning_rate() == opt.learning_rate());
  const auto b = make_batch<double>(sh, 3, 2, rng);
  const auto want = reference.train_step(b.view(), net, opt, loss, 1.0);
  const auto got = trainer.train_step(b.view(), loss_config(), 1.0);
  CHECK(got.learning_rate == want.learning_rate);
  CHECK(max_difference<double>(parameters_of(trainer), net.parameters()) < 1e-10);
  const auto state = trainer.optimizer_state();
  REQUIRE(state.size() == 2);
  CHECK(max_difference<double>(state[0], opt.first_moment()) < 1e-10);
  CHECK(max_difference<double>(state[1], opt.second_moment()) < 1e-10);
}

TEST_CASE("pixel backend trainer skips a non-finite gradient as the reference does",
          "[backend_trainer]") {
  const auto sh = small_shape();
  net_t<double> net(sh.stack, sh.agent);
  seedrl::adam<double> opt(adam_lr(1e-3));
  seedrl::host_trainer reference;
  const seedrl::impala_loss<double> loss(loss_config());
  seedrl::host_backend backend;
  trainer_t<double> trainer(backend, sh.stack, sh.agent);
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(adam_lr(1e-3), 0);
  seedrl::random_generator rng(11);
  auto bad = make_batch<double>(sh, 4, 2, rng);
  bad.rewards[5] = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> before(net.parameters().begin(), net.parameters().end());
  const auto want = reference.train_step(bad.view(), net, opt, loss, 1.0);
  const auto got = trainer.train_step(bad.view(), loss_config(), 1.0);
  REQUIRE_FALSE(want.applied);
  CHECK_FALSE(got.applied);
  CHECK(got.skipped == want.skipped);
  CHECK(got.grad_norm == want.grad_norm);
  CHECK(parameters_of(trainer) == before);
  CHECK(trainer.optimizer_step_count() == 0);
  const auto good = make_batch<double>(sh, 4, 2, rng);
  const auto want2 = reference.train_step(good.view(), net, opt, loss, 1.0);
  const auto got2 = trainer.train_step(good.view(), loss_config(), 1.0);
  REQUIRE(got2.applied);
  CHECK(relative(got2.grad_norm, want2.grad_norm) < 1e-10);
  CHECK(max_difference<double>(parameters_of(trainer), net.parameters()) < 1e-10);
}

TEST_CASE("pixel backend trainer refuses bad configurations, sizes and calls",
          "[backend_trainer]") {
  seedrl::host_backend backend;
  const auto sh = small_shape();
  const auto refused = [&](auto mutate) {
    auto bad = sh;
    mutate(bad);
    CHECK_THROWS_AS(trainer_t<double>(backend, bad.stack, bad.agent), std::invalid_argument);
  };
  refused([](shape& s) { s.stack.depth = 0; });
  refused([](shape& s) { s.stack.height = -1; });
  refused([](shape& s) { s.agent.channels = 4; });  // a stack of 3 frames is 3 channels
  refused([](shape& s) { s.agent.num_actions = 0; });
  refused([](shape& s) { s.agent.dense_size = 0; });
  refused([](shape& s) { s.agent.lstm_size = 0; });
  refused([](shape& s) { s.agent.torso.channels[1] = 0; });
  refused([](shape& s) {  // 35x35: too small for the three convolutions
    s.stack.height = s.stack.width = s.agent.height = s.agent.width = 35;
  });

  trainer_t<double> trainer(backend, sh.stack, sh.agent);
  net_t<double> net(sh.stack, sh.agent);
  const std::size_t P = trainer.num_parameters();
  seedrl::random_generator rng(17);
  const auto batch = make_batch<double>(sh, 3, 2, rng);
  const auto l = loss_config();
  CHECK_THROWS_AS(trainer.train_step(batch.view(), l, 1.0), std::logic_error);
  CHECK_THROWS_AS(trainer.learning_rate(), std::logic_error);
  CHECK(trainer.optimizer_state().empty());
  CHECK_THROWS_AS(trainer.set_parameters(std::vector<double>(P + 1)), std::invalid_argument);
  std::vector<double> short_host(P - 1);
  CHECK_THROWS_AS(trainer.get_parameters(short_host), std::invalid_argument);
  CHECK_THROWS_AS(trainer.get_gradients(short_host), std::invalid_argument);
  trainer.set_parameters(std::vector<double>(net.parameters().begin(), net.parameters().end()));
  auto bad_adam = adam_lr(1e-3);
  bad_adam.beta2 = 1.0;
  CHECK_THROWS_AS(trainer.set_optimizer(bad_adam, 0), std::invalid_argument);
  const std::vector<double> full(P, 0.1), wrong(P + 1, 0.1);
  const std::span<const double> mismatched[] = {full, wrong};
  CHECK_THROWS_AS(trainer.set_optimizer(adam_lr(1e-3), 3, mismatched), std::invalid_argument);
  trainer.set_optimizer(adam_lr(1e-3), 0);
  CHECK_THROWS_AS(trainer.train_step(batch.view(), l, 0.0), std::invalid_argument);

  const auto throws_on = [&](auto mutate) {
    auto b = batch;
    mutate(b);
    CHECK_THROWS_AS(trainer.train_step(b.view(), l, 1.0), std::invalid_argument);
  };
  throws_on([](random_batch<double>& b) { b.obs.pop_back(); });
  throws_on([&](random_batch<double>& b) {  // a stack of 3 frames per step instead of one
    b.obs.resize(b.obs.size() * 3);
  });
  throws_on([](random_batch<double>& b) { b.start.pop_back(); });
  throws_on([](random_batch<double>& b) { b.start.resize(b.start.size() - 12); });  // no LSTM
  throws_on([](random_batch<double>& b) { b.rewards.pop_back(); });
  throws_on([](random_batch<double>& b) { b.dones.push_back(0); });
  throws_on([](random_batch<double>& b) { b.actions.pop_back(); });
  throws_on([](random_batch<double>& b) { b.behaviour.pop_back(); });
  throws_on([](random_batch<double>& b) { b.prev_actions.pop_back(); });
  throws_on([](random_batch<double>& b) { b.A = 3; });
  throws_on([](random_batch<double>& b) { b.T = 0; });
  throws_on([](random_batch<double>& b) { b.prev_actions[4] = 4; });
  throws_on([](random_batch<double>& b) { b.actions[1] = -1; });
  CHECK(parameters_of(trainer) ==
        std::vector<double>(net.parameters().begin(), net.parameters().end()));
  CHECK(trainer.optimizer_step_count() == 0);
  CHECK(trainer.train_step(batch.view(), l, 1.0).applied);
}

TEST_CASE("pixel backend trainer runs a full-size Atari step", "[backend_trainer]") {
  // The example's shape (84x84 grayscale, 4-stacks, 32/64/64 convolutions, dense 512, LSTM 512)
  // on a short batch: the geometry holds at full size and the step stays finite.
  seedrl::frame_stack_config stack;
  seedrl::nature_cnn_lstm_agent_config agent;
  agent.num_actions = 6;
  net_t<float> net(stack, agent);
  seedrl::host_backend backend;
  trainer_t<float> trainer(backend, stack, agent);
  REQUIRE(trainer.num_parameters() == net.parameters().size());
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(adam_lr(1e-4), 0);
  shape sh{stack, agent};
  seedrl::random_generator rng(23);
  const auto batch = make_batch<float>(sh, 2, 2, rng);
  seedrl::impala_loss_config<float> l;
  const auto r = trainer.train_step(batch.view(), l, 40.0);
  CHECK(r.applied);
  CHECK(std::isfinite(r.grad_norm));
  CHECK(r.grad_norm > 0.0);
}
