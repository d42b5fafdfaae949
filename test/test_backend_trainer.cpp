// backend_mlp_lstm_trainer on host_backend against the reference training step: mlp_lstm_agent +
// host_trainer (impala_loss, clip_by_global_norm) + adam / rmsprop, on random batches with
// episode resets at t = 0 and mid-unroll and non-zero start states.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend_trainer_support.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/algo/r2d2_loss.hpp"
#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/backend/detail/host_dense_primitives.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/train/actor_critic_recipe.hpp"
#include "seedrl/train/backend_trainer.hpp"
#include "seedrl/train/mlp_lstm_recipe.hpp"
#include "seedrl/train/mlp_lstm_trainer.hpp"
#include "softsign_torso.hpp"

namespace {

using seedrl_test::adam_lr;
using seedrl_test::append_uniform;
using seedrl_test::cpu_state;
using seedrl_test::loss_config;
using seedrl_test::max_difference;
using seedrl_test::parameters_of;
using seedrl_test::random_batch;
using seedrl_test::relative;
using seedrl_test::run_options;

template <class S>
using mlp_trainer_t = seedrl::backend_mlp_lstm_trainer<seedrl::host_backend, S>;

/// Random observations, rewards in [-2, 2] (so an input-reward clip of 1 bites), start states
/// in [-0.5, 0.5], then draw_steps' resets, actions and log mu.
template <class S>
random_batch<S> make_mlp_batch(const seedrl::mlp_lstm_agent_config& c, std::size_t state_size,
                               std::size_t T, std::size_t B, seedrl::random_generator& rng) {
  random_batch<S> d;
  d.T = T;
  d.B = B;
  d.A = static_cast<std::size_t>(c.num_actions);
  const std::size_t rows = (T + 1) * B;
  append_uniform(d.obs, rows * static_cast<std::size_t>(c.observation_size), -1.0, 1.0, rng);
  append_uniform(d.rewards, rows, -2.0, 2.0, rng);
  append_uniform(d.start, B * state_size, -0.5, 0.5, rng);
  seedrl_test::draw_steps(d, rng);
  return d;
}

/// Trains the reference and the backend trainer side by side (train_side_by_side) from the
/// agent's initial parameters; returns the reference's gradient norms.
template <class S, class Opt>
std::vector<double> compare_mlp_with_reference(const seedrl::mlp_lstm_agent_config& net_config,
                                               const typename Opt::config_type& opt_config,
                                               const seedrl::impala_loss_config<S>& loss_config,
                                               const run_options& o) {
  seedrl::mlp_lstm_agent<S> net(net_config);
  Opt opt(opt_config);
  seedrl::host_backend backend;
  mlp_trainer_t<S> trainer(backend, net_config);
  REQUIRE(trainer.num_parameters() == net.parameters().size());
  REQUIRE(trainer.state_size() == static_cast<std::size_t>(net.state_size()));
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(opt_config, 0);
  return seedrl_test::train_side_by_side(
      net, opt, trainer, loss_config, o,
      [&](std::size_t T, std::size_t B, seedrl::random_generator& rng) {
        return make_mlp_batch<S>(net_config, trainer.state_size(), T, B, rng);
      });
}

/// PPO with 2 epochs x 2 minibatches, value clipping and standardised advantages: every
/// branch of the update schedule and the loss runs.
template <class S>
seedrl::ppo_loss_config<S> ppo_schedule_config() {
  seedrl::ppo_loss_config<S> c;
  c.epochs = 2;
  c.minibatches = 2;
  c.value_clip = S(0.2);
  c.normalize_advantages = true;
  c.entropy_cost = S(0.01);
  return c;
}

seedrl::mlp_lstm_agent_config small_config() {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 4;
  c.num_actions = 3;
  c.hidden_sizes = {8};
  c.lstm_size = 6;
  c.lstm_layers = 1;
  c.seed = 3;
  return c;
}

}  // namespace

TEST_CASE("backend trainer matches the reference: one LSTM layer, Adam, no clipping",
          "[backend_trainer]") {
  run_options o;
  const auto norms = compare_mlp_with_reference<double, seedrl::adam<double>>(
      small_config(), adam_lr(1e-3), loss_config(), o);
  for (const double n : norms)
    CHECK(n < o.max_grad_norm);  // clipping never bit
}

TEST_CASE("backend trainer matches the reference: two LSTM layers, two torso layers, clipping",
          "[backend_trainer]") {
  auto c = small_config();
  c.hidden_sizes = {7, 5};
  c.lstm_size = 4;
  c.lstm_layers = 2;
  c.num_actions = 4;
  auto a = adam_lr(2e-3);
  a.lr_decay_steps = 5;  // the schedule moves between steps
  run_options o;
  o.max_grad_norm = 0.05;
  o.seed = 2;
  const auto norms =
      compare_mlp_with_reference<double, seedrl::adam<double>>(c, a, loss_config(), o);
  for (const double n : norms)
    CHECK(n > o.max_grad_norm);  // every step was clipped
}

TEST_CASE("backend trainer with a tanh MLP torso trains as host_trainer trains the tanh agent",
          "[backend_trainer]") {
  // The CPU agent: actor_critic_agent over the tanh torso, trained by host_trainer (its loss and
  // optimizer); the backend trainer: its own loss and optimizer on the same part. (The tanh
  // torso's forward and gradients against plain loops and central differences:
  // test_agent_parts.cpp.)
  using backend_torso =
      seedrl::backend_mlp_torso<seedrl::host_backend, double, seedrl::tanh_activation>;
  using net_t = seedrl::actor_critic_agent<double, backend_torso, seedrl::mlp_lstm_agent_config>;
  auto c = small_config();
  c.hidden_sizes = {7, 5};  // two layers: the backward passes through a hidden tanh
  c.observation_size = 3;
  net_t net({.seed = c.seed, .forget_bias = c.forget_bias},
            seedrl::mlp_torso_init<double, seedrl::tanh_activation>(), c);
  seedrl::host_backend backend;
  seedrl::backend_agent_trainer<seedrl::host_backend, double, backend_torso> trainer(backend, c);
  REQUIRE(trainer.num_parameters() == net.parameters().size());
  REQUIRE(trainer.state_size() == static_cast<std::size_t>(net.state_size()));
  trainer.set_parameters(net.parameters());
  const auto a = adam_lr(1e-3);
  seedrl::adam<double> opt(a);
  trainer.set_optimizer(a, 0);
  run_options o;
  o.seed = 4;
  seedrl_test::train_side_by_side(net, opt, trainer, loss_config(), o,
                                  [&](std::size_t T, std::size_t B, seedrl::random_generator& rng) {
                                    return make_mlp_batch<double>(c, trainer.state_size(), T, B,
                                                                  rng);
                                  });
  // Without Act the torso is the ReLU one mlp_lstm_agent's trainer (and its checkpoints) use.
  static_assert(std::is_same_v<
                seedrl::backend_mlp_torso<seedrl::host_backend, double>,
                seedrl::backend_mlp_torso<seedrl::host_backend, double, seedrl::relu_activation>>);
}

TEST_CASE("backend trainer matches the reference: no LSTM, RMSProp without momentum",
          "[backend_trainer]") {
  auto c = small_config();
  c.lstm_size = 0;
  c.hidden_sizes = {6, 9};
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  run_options o;
  o.seed = 3;
  o.max_grad_norm = 0.2;
  compare_mlp_with_reference<double, seedrl::rmsprop<double>>(c, r, loss_config(), o);
}

TEST_CASE("backend trainer matches the reference: no reward/action inputs, RMSProp momentum",
          "[backend_trainer]") {
  auto c = small_config();
  c.reward_and_action_inputs = false;
  c.lstm_layers = 2;
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  r.momentum = 0.9;
  r.lr_decay_steps = 10;
  run_options o;
  o.seed = 4;
  o.max_grad_norm = std::numeric_limits<double>::infinity();  // never clips
  compare_mlp_with_reference<double, seedrl::rmsprop<double>>(c, r, loss_config(), o);
}

TEST_CASE("backend trainer matches the reference: clipped input reward, Adam beta1 = 0",
          "[backend_trainer]") {
  auto c = small_config();
  c.max_abs_input_reward = 0.5;
  c.hidden_sizes = {5, 8, 6};
  auto a = adam_lr(1e-3);
  a.beta1 = 0.0;
  auto l = loss_config();
  l.max_abs_reward.reset();
  l.lambda = 0.9;
  run_options o;
  o.seed = 5;
  o.B = 1;  // a single environment
  compare_mlp_with_reference<double, seedrl::adam<double>>(c, a, l, o);
}

TEST_CASE("backend trainer matches the reference in float", "[backend_trainer]") {
  auto c = small_config();
  c.lstm_layers = 2;
  c.hidden_sizes = {8, 6};
  seedrl::impala_loss_config<float> l;
  l.entropy_cost = 0.01f;
  run_options o;
  o.seed = 6;
  o.max_grad_norm = 0.1;
  o.tolerance = 1e-3;
  // RMSProp's eps = 0.01 keeps the update a smooth function of the gradient, so float rounding
  // differences stay small in the parameters too.
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  r.momentum = 0.5;
  compare_mlp_with_reference<float, seedrl::rmsprop<float>>(c, r, l, o);
  seedrl::adam_config a = adam_lr(1e-3);
  a.epsilon = 1e-2;
  compare_mlp_with_reference<float, seedrl::adam<float>>(c, a, l, o);
}

TEST_CASE("backend trainer feeds episode starts reward 0 and no previous action",
          "[backend_trainer]") {
  // The convention of docs/architecture.md, as the CPU agent applies it (test_agent_parts.cpp):
  // batches that differ only in the reward and previous action at rows with `done` give the
  // same forward pass; the same change at a row without `done` does not.
  auto c = small_config();
  c.hidden_sizes = {6};
  c.lstm_layers = 2;
  c.max_abs_input_reward = 1.0;
  seedrl::host_backend backend;
  mlp_trainer_t<double> trainer(backend, c);
  seedrl::random_generator rng(17);
  std::vector<double> p;  // wider than the initialisation, so every path carries signal
  append_uniform(p, trainer.num_parameters(), -0.5, 0.5, rng);
  trainer.set_parameters(p);
  auto d = make_mlp_batch<double>(c, trainer.state_size(), 5, 3, rng);
  auto other = d;
  std::size_t starts = 0;
  for (std::size_t r = 0; r < d.dones.size(); ++r) {
    if (d.dones[r] == 0)
      continue;
    ++starts;
    d.rewards[r] = 0.75;  // inside the clip, so that clipping cannot make them agree
    other.rewards[r] = -0.5;
    other.prev_actions[r] = (d.prev_actions[r] + 1) % 3;
  }
  REQUIRE(starts >= 2);
  const auto outputs = [&](const random_batch<double>& b) {
    const std::size_t rows = (b.T + 1) * b.B;
    std::vector<double> logits(rows * b.A), values(rows);
    trainer.evaluate(b.view(), logits, values);
    logits.insert(logits.end(), values.begin(), values.end());
    return logits;
  };
  const auto want = outputs(d);
  CHECK(outputs(other) == want);
  std::size_t live = 0;
  while (d.dones[live] != 0)
    ++live;
  auto changed = d;
  changed.rewards[live] = d.rewards[live] > 0.0 ? -0.5 : 0.5;
  changed.prev_actions[live] = (d.prev_actions[live] + 1) % 3;
  CHECK(outputs(changed) != want);
}

TEST_CASE("backend trainer comparison notices a wrong parameter in every block",
          "[backend_trainer]") {
  // Guards the tests above: a parameter off by 1e-6 anywhere (torso, LSTM input and recurrent
  // weights and biases of both layers, policy, value) shows in the gradients well above 1e-10.
  auto c = small_config();
  c.hidden_sizes = {5, 4};
  c.lstm_layers = 2;
  c.lstm_size = 3;
  seedrl::mlp_lstm_agent<double> net(c);
  seedrl::random_generator rng(9);
  const auto batch =
      make_mlp_batch<double>(c, static_cast<std::size_t>(net.state_size()), 4, 3, rng);
  const std::vector<double> p0(net.parameters().begin(), net.parameters().end());
  const auto want = seedrl_test::reference_gradients(net, batch);
  // Blocks of mlp_lstm_agent's layout; an LSTM weight is split into its input and recurrent
  // columns.
  const std::size_t I0 = 4 + 1 + 3, H = 3;
  const seedrl_test::param_block blocks[] = {{"torso 0 W", 5 * 4, 4, 0, 4},
                                             {"torso 0 b", 5, 5, 0, 5},
                                             {"torso 1 W", 4 * 5, 5, 0, 5},
                                             {"torso 1 b", 4, 4, 0, 4},
                                             {"LSTM 0 W_ih", 4 * H * (I0 + H), I0 + H, 0, I0},
                                             {"LSTM 0 W_hh", 0, I0 + H, I0, I0 + H},
                                             {"LSTM 0 b", 4 * H, 4 * H, 0, 4 * H},
                                             {"LSTM 1 W_ih", 4 * H * 2 * H, 2 * H, 0, H},
                                             {"LSTM 1 W_hh", 0, 2 * H, H, 2 * H},
                                             {"LSTM 1 b", 4 * H, 4 * H, 0, 4 * H},
                                             {"policy W", 3 * H, H, 0, H},
                                             {"policy b", 3, 3, 0, 3},
                                             {"value W", H, H, 0, H},
                                             {"value b", 1, 1, 0, 1}};
  seedrl::host_backend backend;
  seedrl_test::check_block_perturbations(blocks, p0, want, batch,
                                         [&] { return mlp_trainer_t<double>(backend, c); });
}

TEST_CASE("backend trainer skips a non-finite gradient as the reference does",
          "[backend_trainer]") {
  const auto c = small_config();
  seedrl::mlp_lstm_agent<double> net(c);
  seedrl::adam<double> opt(adam_lr(1e-3));
  seedrl::host_trainer reference;
  const seedrl::impala_loss<double> loss(loss_config());
  seedrl::host_backend backend;
  mlp_trainer_t<double> trainer(backend, c);
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(adam_lr(1e-3), 0);
  seedrl::random_generator rng(11);
  auto bad = make_mlp_batch<double>(c, trainer.state_size(), 4, 2, rng);
  bad.rewards[5] = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> before(net.parameters().begin(), net.parameters().end());
  const auto want = reference.train_step(bad.view(), net, opt, loss, 1.0);
  const auto got = trainer.train_step(bad.view(), loss_config(), 1.0);
  REQUIRE_FALSE(want.applied);
  CHECK_FALSE(got.applied);
  CHECK(got.skipped == want.skipped);
  CHECK(got.skipped.find("not finite") != std::string::npos);
  CHECK(got.grad_norm == want.grad_norm);
  CHECK(got.learning_rate == want.learning_rate);
  CHECK(std::vector<double>(net.parameters().begin(), net.parameters().end()) == before);
  CHECK(parameters_of(trainer) == before);
  CHECK(trainer.optimizer_step_count() == 0);
  CHECK(opt.step_count() == 0);
  for (const auto& a : trainer.optimizer_state())
    CHECK(a.empty());  // still a fresh optimizer, as the CPU one
  // A good batch afterwards trains both the same way: the skipped step left nothing behind.
  const auto good = make_mlp_batch<double>(c, trainer.state_size(), 4, 2, rng);
  const auto want2 = reference.train_step(good.view(), net, opt, loss, 1.0);
  const auto got2 = trainer.train_step(good.view(), loss_config(), 1.0);
  REQUIRE(got2.applied);
  CHECK(relative(got2.grad_norm, want2.grad_norm) < 1e-10);
  CHECK(max_difference<double>(parameters_of(trainer), net.parameters()) < 1e-10);
  CHECK(parameters_of(trainer) != before);
}

TEST_CASE("backend trainer continues from a CPU optimizer's state", "[backend_trainer]") {
  auto c = small_config();
  c.lstm_layers = 2;
  seedrl::random_generator rng(13);
  const seedrl::impala_loss<double> loss(loss_config());
  seedrl::host_trainer reference;
  seedrl::host_backend backend;
  SECTION("adam") {
    auto a = adam_lr(1e-3);
    a.lr_decay_steps = 4;
    seedrl::mlp_lstm_agent<double> net(c);
    seedrl::adam<double> opt(a);
    for (int i = 0; i < 2; ++i) {
      const auto b =
          make_mlp_batch<double>(c, static_cast<std::size_t>(net.state_size()), 3, 2, rng);
      reference.train_step(b.view(), net, opt, loss, 1.0);
    }
    mlp_trainer_t<double> trainer(backend, c);
    trainer.set_parameters(net.parameters());
    const auto cpu = cpu_state(opt);
    trainer.set_optimizer(a, opt.step_count(), cpu);
    CHECK(trainer.optimizer_step_count() == 2);
    CHECK(trainer.learning_rate() == opt.learning_rate());
    const auto b = make_mlp_batch<double>(c, trainer.state_size(), 3, 2, rng);
    const auto want = reference.train_step(b.view(), net, opt, loss, 1.0);
    const auto got = trainer.train_step(b.view(), loss_config(), 1.0);
    CHECK(got.learning_rate == want.learning_rate);
    CHECK(max_difference<double>(parameters_of(trainer), net.parameters()) < 1e-10);
    const auto state = trainer.optimizer_state();
    REQUIRE(state.size() == 2);
    CHECK(max_difference<double>(state[0], opt.first_moment()) < 1e-10);
    CHECK(max_difference<double>(state[1], opt.second_moment()) < 1e-10);
    // Without the state (zeros) the same step lands elsewhere: the state was used.
    mlp_trainer_t<double> fresh(backend, c);
    std::vector<double> p(fresh.num_parameters());
    fresh.set_parameters(std::vector<double>(p.size(), 0.25));
    fresh.set_optimizer(a, 2);
    trainer.set_parameters(std::vector<double>(p.size(), 0.25));
    trainer.set_optimizer(a, 2, cpu);
    fresh.train_step(b.view(), loss_config(), 1.0);
    trainer.train_step(b.view(), loss_config(), 1.0);
    CHECK(max_difference<double>(parameters_of(trainer), parameters_of(fresh)) > 1e-6);
  }
  SECTION("rmsprop with momentum") {
    seedrl::rmsprop_config r;
    r.learning_rate = 1e-3;
    r.momentum = 0.8;
    seedrl::mlp_lstm_agent<double> net(c);
    seedrl::rmsprop<double> opt(r);
    const auto b0 =
        make_mlp_batch<double>(c, static_cast<std::size_t>(net.state_size()), 3, 2, rng);
    reference.train_step(b0.view(), net, opt, loss, 1.0);
    mlp_trainer_t<double> trainer(backend, c);
    trainer.set_parameters(net.parameters());
    trainer.set_optimizer(r, opt.step_count(), cpu_state(opt));
    const auto b = make_mlp_batch<double>(c, trainer.state_size(), 3, 2, rng);
    reference.train_step(b.view(), net, opt, loss, 1.0);
    trainer.train_step(b.view(), loss_config(), 1.0);
    CHECK(max_difference<double>(parameters_of(trainer), net.parameters()) < 1e-10);
    const auto state = trainer.optimizer_state();
    REQUIRE(state.size() == 2);
    CHECK(max_difference<double>(state[0], opt.mean_square()) < 1e-10);
    CHECK(max_difference<double>(state[1], opt.momentum_buffer()) < 1e-10);
  }
}

TEST_CASE("backend trainer refuses bad configurations, sizes and calls", "[backend_trainer]") {
  seedrl::host_backend backend;
  auto c = small_config();
  {
    auto bad = c;
    bad.hidden_sizes.clear();
    CHECK_THROWS_AS(mlp_trainer_t<double>(backend, bad), std::invalid_argument);
    bad = c;
    bad.num_actions = 0;
    CHECK_THROWS_AS(mlp_trainer_t<double>(backend, bad), std::invalid_argument);
    bad = c;
    bad.lstm_size = -1;
    CHECK_THROWS_AS(mlp_trainer_t<double>(backend, bad), std::invalid_argument);
  }
  mlp_trainer_t<double> trainer(backend, c);
  const seedrl::mlp_lstm_agent<double> net(c);
  const std::size_t P = trainer.num_parameters();
  seedrl::random_generator rng(17);
  auto batch = make_mlp_batch<double>(c, trainer.state_size(), 3, 2, rng);
  const auto l = loss_config();

  // No optimizer yet.
  CHECK_THROWS_AS(trainer.train_step(batch.view(), l, 1.0), std::logic_error);
  CHECK_THROWS_AS(trainer.learning_rate(), std::logic_error);
  CHECK(trainer.optimizer_state().empty());

  CHECK_THROWS_AS(trainer.set_parameters(std::vector<double>(P + 1)), std::invalid_argument);
  std::vector<double> short_host(P - 1);
  CHECK_THROWS_AS(trainer.get_parameters(short_host), std::invalid_argument);
  CHECK_THROWS_AS(trainer.get_gradients(short_host), std::invalid_argument);
  trainer.set_parameters(net.parameters());

  // Optimizer configs and states.
  auto bad_adam = adam_lr(1e-3);
  bad_adam.beta2 = 1.0;
  CHECK_THROWS_AS(trainer.set_optimizer(bad_adam, 0), std::invalid_argument);
  CHECK_THROWS_AS(trainer.set_optimizer(adam_lr(1e-3), -1), std::invalid_argument);
  const std::vector<double> full(P, 0.1), wrong(P + 1, 0.1);
  const std::span<const double> one[] = {full};
  const std::span<const double> two[] = {full, full};
  const std::span<const double> mismatched[] = {full, wrong};
  CHECK_THROWS_AS(trainer.set_optimizer(adam_lr(1e-3), 3, one), std::invalid_argument);
  CHECK_THROWS_AS(trainer.set_optimizer(adam_lr(1e-3), 3, mismatched), std::invalid_argument);
  CHECK_THROWS_AS(trainer.set_optimizer(adam_lr(1e-3), 0, two), std::invalid_argument);
  seedrl::rmsprop_config no_momentum;
  CHECK_THROWS_AS(trainer.set_optimizer(no_momentum, 3, two), std::invalid_argument);
  CHECK_THROWS_AS(trainer.learning_rate(), std::logic_error);  // failed calls set nothing
  trainer.set_optimizer(no_momentum, 3, one);
  CHECK(trainer.optimizer_state().size() == 1);
  trainer.set_optimizer(adam_lr(1e-3), 0);
  REQUIRE(trainer.optimizer_state().size() == 2);
  CHECK(trainer.optimizer_state()[0].empty());  // as a fresh seedrl::adam holds

  CHECK_THROWS_AS(trainer.train_step(batch.view(), l, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(trainer.train_step(batch.view(), l, std::nan("")), std::invalid_argument);

  const auto throws_on = [&](auto mutate) {
    auto b = batch;
    mutate(b);
    CHECK_THROWS_AS(trainer.train_step(b.view(), l, 1.0), std::invalid_argument);
  };
  throws_on([](random_batch<double>& b) { b.obs.pop_back(); });
  throws_on([](random_batch<double>& b) { b.start.pop_back(); });
  throws_on([](random_batch<double>& b) { b.rewards.pop_back(); });
  throws_on([](random_batch<double>& b) { b.dones.push_back(0); });
  throws_on([](random_batch<double>& b) { b.truncated.pop_back(); });
  throws_on([](random_batch<double>& b) {  // a time limit that does not end the episode
    b.dones[b.B + 1] = 0;
    b.truncated[b.B + 1] = 1;
  });
  throws_on([](random_batch<double>& b) { b.actions.pop_back(); });
  throws_on([](random_batch<double>& b) { b.behaviour.pop_back(); });
  throws_on([](random_batch<double>& b) { b.prev_actions.pop_back(); });
  throws_on([](random_batch<double>& b) { b.A = 2; });
  throws_on([](random_batch<double>& b) { b.T = 0; });
  throws_on([](random_batch<double>& b) { b.prev_actions[4] = 3; });
  throws_on([](random_batch<double>& b) { b.prev_actions[0] = -1; });
  throws_on([](random_batch<double>& b) { b.actions[1] = 3; });
  // Nothing above changed the parameters or the optimizer.
  CHECK(parameters_of(trainer) ==
        std::vector<double>(net.parameters().begin(), net.parameters().end()));
  CHECK(trainer.optimizer_step_count() == 0);

  // Without reward/action inputs the previous actions are not read, as in the agent.
  auto c2 = c;
  c2.reward_and_action_inputs = false;
  mlp_trainer_t<double> plain(backend, c2);
  plain.set_optimizer(adam_lr(1e-3), 0);
  auto b2 = make_mlp_batch<double>(c2, plain.state_size(), 3, 2, rng);
  b2.prev_actions[0] = 7;
  CHECK(plain.train_step(b2.view(), l, 1.0).applied);
  // The step of the last action (t = T) is never used, as in the loss.
  b2.actions.back() = -5;
  CHECK(plain.train_step(b2.view(), l, 1.0).applied);
}

TEST_CASE("host_backend gemm matches a float64 loop for every transpose and stride",
          "[backend_trainer]") {
  const seedrl::host_backend b;
  seedrl::random_generator rng(11);
  const int m = 5, n = 4, k = 3, pad = 2;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      // (alpha 1, beta 0) is the forward pass's own path: one product, C never read.
      for (const auto& [alpha, beta] : {std::pair{0.75, 0.0}, std::pair{0.75, 1.0},
                                        std::pair{0.75, 0.5}, std::pair{1.0, 0.0}}) {
        // Stored A is [m, k] or [k, m], B [k, n] or [n, k]; each row padded by `pad`.
        const int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
        std::vector<double> a(static_cast<std::size_t>((ta ? k : m) * lda)),
            bm(static_cast<std::size_t>((tb ? n : k) * ldb)), c(static_cast<std::size_t>(m * ldc));
        for (auto* v : {&a, &bm, &c})
          for (double& x : *v)
            x = rng.uniform(-1.0, 1.0);
        auto want = c;
        if (beta == 0.0)
          c[0] = std::numeric_limits<double>::quiet_NaN();  // beta = 0 must ignore it
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < n; ++j) {
            double sum = 0.0;
            for (int p = 0; p < k; ++p) {
              const double x = ta ? a[static_cast<std::size_t>(p * lda + i)]
                                  : a[static_cast<std::size_t>(i * lda + p)];
              const double y = tb ? bm[static_cast<std::size_t>(j * ldb + p)]
                                  : bm[static_cast<std::size_t>(p * ldb + j)];
              sum += x * y;
            }
            auto& w = want[static_cast<std::size_t>(i * ldc + j)];
            w = alpha * sum + (beta == 0.0 ? 0.0 : beta * w);
          }
        }
        b.gemm(ta, tb, m, n, k, alpha, a.data(), lda, bm.data(), ldb, beta, c.data(), ldc);
        INFO("trans_a " << ta << " trans_b " << tb << " alpha " << alpha << " beta " << beta);
        for (std::size_t i = 0; i < c.size(); ++i)
          REQUIRE(c[i] == Approx(want[i]).margin(1e-14));
      }
    }
  }
  // What cuBLAS would refuse, refused here too.
  std::vector<double> x(64);
  CHECK_THROWS_AS(b.gemm(false, false, 2, 3, 4, 1.0, x.data(), 3, x.data(), 3, 0.0, x.data(), 3),
                  std::invalid_argument);  // lda 3 < k 4
  CHECK_THROWS_AS(b.gemm(false, true, 2, 3, 4, 1.0, x.data(), 4, x.data(), 3, 0.0, x.data(), 3),
                  std::invalid_argument);  // ldb 3 < k 4 (B stored [n, k])
  CHECK_THROWS_AS(b.gemm(false, false, 2, 3, 4, 1.0, x.data(), 4, x.data(), 3, 0.0, x.data(), 2),
                  std::invalid_argument);  // ldc 2 < n 3
}

namespace {
/// The host's primitives without for_each_2d, so that seedrl::for_each_2d takes the path every
/// backend without the member (CUDA's) takes: for_each over rows x cols, indices divided.
struct for_each_only_backend {
  template <class F>
  void for_each(std::size_t n, const F& f) const {
    seedrl::detail::host_primitives{}.for_each(n, f);
  }
};

struct record_cell {
  std::size_t cols;
  int* visits;
  SEEDRL_HOST_DEVICE void operator()(std::size_t r, std::size_t j) const {
    visits[r * cols + j] += static_cast<int>(1 + r * 100 + j);
  }
};
}  // namespace

TEST_CASE("for_each_2d visits every cell once, with and without the backend's member",
          "[backend]") {
  const std::size_t rows = 7, cols = 5;
  std::vector<int> host(rows * cols, 0), fallback(rows * cols, 0);
  seedrl::for_each_2d(seedrl::host_backend{}, rows, cols, record_cell{cols, host.data()});
  seedrl::for_each_2d(for_each_only_backend{}, rows, cols, record_cell{cols, fallback.data()});
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < cols; ++j) {
      CHECK(host[r * cols + j] == static_cast<int>(1 + r * 100 + j));
      CHECK(fallback[r * cols + j] == static_cast<int>(1 + r * 100 + j));
    }
  }
  std::vector<int> none(1, 0);
  seedrl::for_each_2d(seedrl::host_backend{}, 0, cols, record_cell{cols, none.data()});
  seedrl::for_each_2d(for_each_only_backend{}, rows, 0, record_cell{0, none.data()});
  CHECK(none[0] == 0);
}

namespace {
/// The host's Eigen path for a dense layer's kernels against the element functions every other
/// backend runs (host_primitives' loop), for one activation.
template <class S, class Act>
void check_host_activation_kernels(double tolerance) {
  const std::size_t rows = 5, cols = 7, ld = 9;
  seedrl::random_generator rng(3);
  std::vector<S> y(rows * ld), bias(cols), dy(rows * ld);
  for (auto* v : {&y, &bias, &dy})
    for (S& x : *v)
      x = static_cast<S>(rng.uniform(-3.0, 3.0));
  y[2] = std::numeric_limits<S>::quiet_NaN();  // a NaN stays NaN through either path
  // Element by element: NaN where the loop has NaN, else within `tolerance`.
  const auto expect_close = [&](const std::vector<S>& fast, const std::vector<S>& loop,
                                const char* what) {
    for (std::size_t i = 0; i < loop.size(); ++i) {
      INFO(Act::name << " " << what << ", element " << i);
      if (std::isnan(loop[i]))
        CHECK(std::isnan(fast[i]));
      else
        CHECK(static_cast<double>(fast[i]) ==
              Approx(static_cast<double>(loop[i])).margin(tolerance));
    }
  };
  auto fast = y, loop = y;
  const seedrl::detail::host_dense_primitives host;
  const seedrl::detail::host_primitives elements;
  using forward = seedrl::detail::bias_activation_kernel<S, Act>;
  host.for_each_2d(rows, cols, forward{fast.data(), ld, bias.data()});
  elements.for_each_2d(rows, cols, forward{loop.data(), ld, bias.data()});
  expect_close(fast, loop, "forward");
  // The activation alone (after a convolution), in place on a strided matrix; the padding
  // between rows stays as it was.
  auto alone_fast = y, alone_loop = y;
  using alone = seedrl::detail::activation_kernel<S, Act>;
  host.for_each_2d(rows, cols, alone{alone_fast.data(), ld});
  elements.for_each_2d(rows, cols, alone{alone_loop.data(), ld});
  expect_close(alone_fast, alone_loop, "activation alone");
  for (std::size_t i = 0; i < y.size(); ++i)
    if (i % ld >= cols)
      CHECK((alone_fast[i] == y[i] || std::isnan(y[i])));
  std::vector<S> dx_fast(rows * cols, S(-7)), dx_loop(rows * cols, S(-7));
  using backward = seedrl::detail::activation_backward_kernel<S, Act>;
  host.for_each_2d(rows, cols, backward{dy.data(), ld, loop.data(), ld, dx_fast.data(), cols});
  elements.for_each_2d(rows, cols, backward{dy.data(), ld, loop.data(), ld, dx_loop.data(), cols});
  expect_close(dx_fast, dx_loop, "backward");
}
}  // namespace

TEST_CASE("the host's dense-layer kernels match the element functions", "[backend]") {
  {  // the bias gradient: column sums added to what is there
    const std::size_t rows = 6, cols = 5, ld = 8;
    seedrl::random_generator rng(4);
    std::vector<float> x(rows * ld);
    for (float& v : x)
      v = static_cast<float>(rng.uniform(-2.0, 2.0));
    std::vector<float> fast(cols, 0.5f), loop(cols, 0.5f);
    seedrl::detail::host_dense_primitives{}.for_each(
        cols, seedrl::detail::column_sum_add_kernel<float>{x.data(), rows, ld, fast.data()});
    seedrl::detail::host_primitives{}.for_each(
        cols, seedrl::detail::column_sum_add_kernel<float>{x.data(), rows, ld, loop.data()});
    for (std::size_t j = 0; j < cols; ++j) {
      double want = 0.5;
      for (std::size_t r = 0; r < rows; ++r)
        want += static_cast<double>(x[r * ld + j]);
      CHECK(static_cast<double>(fast[j]) == Approx(want).margin(1e-5));
      CHECK(static_cast<double>(loop[j]) == Approx(want).margin(1e-5));
    }
  }
  {  // a residual block's ReLU into a copy and its skip addition: the same values
    const std::size_t n = 37;  // not a multiple of any vector width
    seedrl::random_generator rng(5);
    std::vector<float> src(n), dst(n);
    for (std::size_t i = 0; i < n; ++i) {
      src[i] = static_cast<float>(rng.uniform(-2.0, 2.0));
      dst[i] = static_cast<float>(rng.uniform(-2.0, 2.0));
    }
    src[3] = std::numeric_limits<float>::quiet_NaN();
    src[4] = -0.0f;
    auto relu_fast = dst, relu_loop = dst, add_fast = dst, add_loop = dst;
    using relu_copy = seedrl::detail::relu_copy_kernel<float>;
    using add = seedrl::detail::add_kernel<float>;
    seedrl::detail::host_dense_primitives{}.for_each(n, relu_copy{src.data(), relu_fast.data()});
    seedrl::detail::host_primitives{}.for_each(n, relu_copy{src.data(), relu_loop.data()});
    seedrl::detail::host_dense_primitives{}.for_each(n, add{src.data(), add_fast.data()});
    seedrl::detail::host_primitives{}.for_each(n, add{src.data(), add_loop.data()});
    for (std::size_t i = 0; i < n; ++i) {
      INFO("element " << i);
      CHECK(
          (relu_fast[i] == relu_loop[i] || (std::isnan(relu_fast[i]) && std::isnan(relu_loop[i]))));
      CHECK((add_fast[i] == add_loop[i] || (std::isnan(add_fast[i]) && std::isnan(add_loop[i]))));
    }
    CHECK(std::isnan(relu_fast[3]));
    CHECK(relu_fast[0] == std::max(src[0], 0.0f));
  }
  check_host_activation_kernels<float, seedrl::relu_activation>(0.0);
  check_host_activation_kernels<double, seedrl::relu_activation>(0.0);
  check_host_activation_kernels<float, seedrl::tanh_activation>(1e-6);
  check_host_activation_kernels<double, seedrl::tanh_activation>(1e-14);
  check_host_activation_kernels<float, seedrl::identity_activation>(0.0);
}

TEST_CASE("backend trainer runs PPO's update schedule as host_trainer does", "[backend]") {
  // 2 epochs x 2 minibatches on 4 unrolls, both trainers' generators seeded alike: the same
  // minibatches, the same proximal outputs, ppo_loss::compute on the backend against the loss
  // on the CPU network. Value clipping and standardised advantages on, so every branch runs.
  using S = double;
  const auto net_config = small_config();
  seedrl::mlp_lstm_agent<S> net(net_config);
  seedrl::adam<S> opt(adam_lr(3e-3));
  seedrl::host_backend backend;
  mlp_trainer_t<S> trainer(backend, net_config);
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(adam_lr(3e-3), 0);
  trainer.seed_schedule(11);
  seedrl::host_trainer reference(11);
  const auto config = ppo_schedule_config<S>();
  const seedrl::ppo_loss<S> loss(config);
  seedrl::random_generator rng(5);
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    const auto batch = make_mlp_batch<S>(net_config, trainer.state_size(), 5, 4, rng);
    const auto want = reference.train_step(batch.view(), net, opt, loss, 0.5);
    const auto got = trainer.train_step(batch.view(), loss, 0.5);
    CHECK(got.applied == want.applied);
    CHECK(relative(got.terms.total, want.terms.total) < 1e-9);
    CHECK(relative(got.terms.approx_kl + 1.0, want.terms.approx_kl + 1.0) < 1e-9);
    CHECK(got.terms.clip_fraction == want.terms.clip_fraction);
    CHECK(relative(got.grad_norm, want.grad_norm) < 1e-9);
    const auto params = parameters_of(trainer);
    CHECK(max_difference<S>(params, net.parameters()) < 1e-9);
  }
  // The loss a learner picks at run time takes the same path.
  const seedrl::loss_choice<S> choice(loss);
  const auto batch = make_mlp_batch<S>(net_config, trainer.state_size(), 5, 4, rng);
  const auto want = reference.train_step(batch.view(), net, opt, choice, 0.5);
  const auto got = trainer.train_step(batch.view(), choice, 0.5);
  CHECK(relative(got.terms.total, want.terms.total) < 1e-9);
  CHECK(max_difference<S>(parameters_of(trainer), net.parameters()) < 1e-9);
  // A schedule the batch cannot split is refused before any work.
  seedrl::ppo_loss_config<S> three = config;
  three.minibatches = 3;
  CHECK_THROWS_AS(trainer.train_step(batch.view(), seedrl::ppo_loss<S>(three), 0.5),
                  std::invalid_argument);
}

namespace {

/// make_mlp_batch's batch with continuous actions of D elements: the previous actions the envs got
/// and the pre-squash samples, each uniform in [-1.5, 1.5].
template <class S>
random_batch<S> make_continuous_batch(const seedrl::mlp_lstm_agent_config& c,
                                      std::size_t state_size, std::size_t T, std::size_t B,
                                      seedrl::random_generator& rng) {
  random_batch<S> d = make_mlp_batch<S>(c, state_size, T, B, rng);
  d.D = static_cast<std::size_t>(c.continuous_action_size);
  const std::size_t n = (T + 1) * B * d.D;
  append_uniform(d.prev_env_actions, n, -1.5, 1.5, rng);
  append_uniform(d.raw, n, -1.5, 1.5, rng);
  return d;
}

}  // namespace

TEST_CASE("backend trainer trains Gaussian heads and separate networks as host_trainer does",
          "[backend_trainer]") {
  // The heads of continuous control and of SB3's layout on the backend: a diagonal Gaussian
  // with a state-independent log-std (its clamped vector) or a state-dependent one, tanh
  // squashing, separate policy and value networks, the previous continuous action fed to the
  // core; IMPALA and PPO's schedule over spec_distribution, and a discrete policy on separate
  // networks. Each against host_trainer + mlp_lstm_agent for three steps.
  using S = double;
  struct shape {
    std::int32_t D;
    bool independent, separate, inputs, squash, ppo;
    std::ptrdiff_t lstm;
  };
  for (const shape& k :
       {shape{2, true, true, true, false, true, 0}, shape{2, false, false, true, true, false, 6},
        shape{3, true, false, false, false, false, 5}, shape{2, true, true, true, true, false, 0},
        shape{0, false, true, true, false, true, 0},
        shape{1, false, true, false, false, true, 0}}) {
    CAPTURE(k.D, k.independent, k.separate, k.inputs, k.squash, k.ppo, k.lstm);
    auto c = small_config();
    c.lstm_size = k.lstm;
    c.separate_value_network = k.separate;
    c.reward_and_action_inputs = k.inputs;
    if (k.D > 0) {
      c.continuous_action_size = k.D;
      c.num_actions = 2 * k.D;
      if (k.independent)
        c.log_std_init = -0.4;
    }
    seedrl::mlp_lstm_agent<S> net(c);
    seedrl::adam<S> opt(adam_lr(3e-3));
    seedrl::host_backend backend;
    mlp_trainer_t<S> trainer(backend, c);
    REQUIRE(trainer.num_parameters() == net.parameters().size());
    trainer.set_parameters(net.parameters());
    trainer.set_optimizer(adam_lr(3e-3), 0);
    trainer.seed_schedule(7);
    seedrl::host_trainer reference(7);
    seedrl::spec_distribution<S> dist;
    dist.gaussian.squash = k.squash;
    for (std::int32_t i = 0; k.squash && i < k.D; ++i) {
      dist.gaussian.low.push_back(S(-1) - S(i));
      dist.gaussian.high.push_back(S(2) + S(i));
    }
    using choice = seedrl::loss_choice<S, seedrl::spec_distribution<S>>;
    const auto ppo_config = ppo_schedule_config<S>();
    const choice loss = k.ppo ? choice(choice::ppo_type(ppo_config, dist))
                              : choice(choice::impala_type(loss_config(), dist));
    seedrl::random_generator rng(9);
    const std::vector<S> initial(net.parameters().begin(), net.parameters().end());
    for (int step = 0; step < 3; ++step) {
      CAPTURE(step);
      const auto batch = make_continuous_batch<S>(c, trainer.state_size(), 4, 4, rng);
      const auto want = reference.train_step(batch.view(), net, opt, loss, 0.5);
      const auto got = trainer.train_step(batch.view(), loss, 0.5);
      REQUIRE(want.applied);
      CHECK(got.applied);
      CHECK(relative(got.terms.total, want.terms.total) < 1e-9);
      CHECK(relative(got.terms.entropy, want.terms.entropy) < 1e-9);
      CHECK(relative(got.grad_norm, want.grad_norm) < 1e-9);
      CHECK(max_difference<S>(parameters_of(trainer), net.parameters()) < 1e-9);
    }
    double moved = 0.0;  // the steps trained every block, the log-std vector included
    for (std::size_t i = 0; i < initial.size(); ++i)
      moved = std::max(moved, std::abs(net.parameters()[i] - initial[i]));
    CHECK(moved > 1e-4);
    if (k.independent) {  // the log-std vector: the D parameters before the value head's
      const std::size_t D = static_cast<std::size_t>(k.D), h = 8;  // small_config's width
      const std::size_t core_in = h * (k.separate ? 2 : 1) + (k.inputs ? 1 + D : 0);
      const std::size_t value_in = k.separate ? h : (k.lstm > 0 ? std::size_t(k.lstm) : core_in);
      const std::size_t end = initial.size() - (value_in + 1);
      for (std::size_t i = end - D; i < end; ++i) {
        CAPTURE(i);
        CHECK(std::abs(net.parameters()[i] - initial[i]) > 1e-4);
        CHECK(initial[i] == S(-0.4));
      }
    }
  }
}

TEST_CASE("backend trainer trains R2D2 as host_trainer does: target network, burn-in, priorities",
          "[backend_trainer][r2d2]") {
  // What the GPU trainer runs for --algo r2d2, on host_backend: the target network's forward
  // pass, the burn-in's forward pass to the state it reaches, the loss's compute and the
  // priorities, against host_trainer + mlp_lstm_agent (whose burn-in steps `infer`).
  using S = double;
  for (const auto& [lstm, layers, inputs] :
       {std::tuple{std::ptrdiff_t{6}, 2, true}, std::tuple{std::ptrdiff_t{5}, 1, false},
        std::tuple{std::ptrdiff_t{0}, 1, true}}) {
    CAPTURE(lstm, layers, inputs);
    auto c = small_config();
    c.lstm_size = lstm;
    c.lstm_layers = layers;
    c.reward_and_action_inputs = inputs;
    seedrl::mlp_lstm_agent<S> net(c);
    seedrl::adam<S> opt(adam_lr(3e-3));
    seedrl::host_backend backend;
    mlp_trainer_t<S> trainer(backend, c);
    trainer.set_parameters(net.parameters());
    trainer.set_optimizer(adam_lr(3e-3), 0);
    seedrl_test::train_r2d2_side_by_side<S>(
        net, opt, trainer,
        [&](std::size_t T, std::size_t B, seedrl::random_generator& rng) {
          return make_mlp_batch<S>(c, trainer.state_size(), T, B, rng);
        },
        1e-9);
  }
}

TEST_CASE("backend trainer refuses R2D2 on continuous actions and bad importance weights",
          "[backend_trainer][r2d2]") {
  using S = double;
  seedrl::host_backend backend;
  const seedrl::r2d2_loss<S> loss{seedrl::r2d2_loss_config<S>{}};
  seedrl::random_generator rng(2);
  auto c = small_config();
  mlp_trainer_t<S> trainer(backend, c);
  trainer.set_optimizer(adam_lr(1e-3), 0);
  random_batch<S> batch = make_mlp_batch<S>(c, trainer.state_size(), 12, 2, rng);
  batch.weights = {S(1), std::numeric_limits<S>::quiet_NaN()};
  CHECK_THROWS_WITH(trainer.train_step(batch.view(), loss, 1.0),
                    Catch::Contains("importance weight 1 is nan"));
  batch.weights = {S(1)};
  CHECK_THROWS_WITH(trainer.train_step(batch.view(), loss, 1.0),
                    Catch::Contains("importance_weights holds 1 values, expected B = 2"));
  batch.weights.clear();
  CHECK_THROWS_WITH(trainer.train_step(batch.view(), loss, 1.0),
                    Catch::Contains("leaves nothing to train"));  // default burn-in 40 >= T
  c.continuous_action_size = 2;
  c.num_actions = 4;
  mlp_trainer_t<S> gaussian(backend, c);
  gaussian.set_optimizer(adam_lr(1e-3), 0);
  CHECK_THROWS_WITH(gaussian.train_step(batch.view(), loss, 1.0),
                    Catch::Contains("R2D2 learns Q-values of discrete actions"));
}

TEST_CASE("backend trainer refuses a loss or batch of the other action kind", "[backend_trainer]") {
  using S = double;
  auto c = small_config();
  c.continuous_action_size = 2;
  c.num_actions = 4;
  c.log_std_init = 0.0;
  seedrl::host_backend backend;
  mlp_trainer_t<S> trainer(backend, c);
  const seedrl::mlp_lstm_agent<S> net(c);
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(adam_lr(1e-3), 0);
  seedrl::random_generator rng(3);
  auto batch = make_continuous_batch<S>(c, trainer.state_size(), 3, 2, rng);
  const seedrl::impala_loss<S, seedrl::spec_distribution<S>> gaussian(loss_config());
  // A categorical loss cannot read Gaussian rows.
  CHECK_THROWS_AS(trainer.train_step(batch.view(), loss_config(), 1.0), std::invalid_argument);
  // A discrete batch, a missing sample, a missing previous action, squashing without bounds.
  auto discrete = batch;
  discrete.D = 0;
  discrete.raw.clear();
  discrete.prev_env_actions.clear();
  CHECK_THROWS_AS(trainer.train_step(discrete.view(), gaussian, 1.0), std::invalid_argument);
  auto no_raw = batch;
  no_raw.raw.pop_back();
  CHECK_THROWS_AS(trainer.train_step(no_raw.view(), gaussian, 1.0), std::invalid_argument);
  auto no_prev = batch;
  no_prev.prev_env_actions.clear();
  CHECK_THROWS_AS(trainer.train_step(no_prev.view(), gaussian, 1.0), std::invalid_argument);
  seedrl::spec_distribution<S> squash;
  squash.gaussian.squash = true;
  const seedrl::impala_loss<S, seedrl::spec_distribution<S>> unbounded(loss_config(), squash);
  CHECK_THROWS_AS(trainer.train_step(batch.view(), unbounded, 1.0), std::invalid_argument);
  // Nothing moved; the right batch then trains.
  CHECK(parameters_of(trainer) == std::vector<S>(net.parameters().begin(), net.parameters().end()));
  CHECK(trainer.train_step(batch.view(), gaussian, 1.0).applied);
  // Shapes the layout refuses: Gaussian outputs that are not 2D, separate networks with an LSTM.
  auto odd = c;
  odd.num_actions = 3;
  CHECK_THROWS_AS(mlp_trainer_t<S>(backend, odd), std::invalid_argument);
  auto lstm_separate = small_config();
  lstm_separate.separate_value_network = true;
  CHECK_THROWS_AS(mlp_trainer_t<S>(backend, lstm_separate), std::invalid_argument);
}

/// A user's torso part (test/softsign_torso.hpp) as a whole CPU agent.
template <class S>
using softsign_agent =
    seedrl::actor_critic_agent<S, seedrl_test::softsign_torso<seedrl::host_backend, S>,
                               seedrl_test::softsign_config>;

TEST_CASE(
    "a user's torso written once over the backend is a CPU agent that trains as the backend "
    "trainer does",
    "[backend_trainer][actor_critic_agent]") {
  // The CPU agent: actor_critic_agent over the part (host_backend) with an LSTM or none,
  // categorical and value heads, trained by host_trainer; the backend trainer: the same part type
  // on host_backend, as a CUDA trainer would take it on cuda_backend.
  using S = double;
  using seedrl_test::softsign_config;
  using seedrl_test::softsign_torso;
  using agent = softsign_agent<S>;
  static_assert(seedrl::Network<agent>);
  const softsign_config part{4, 6};
  for (const std::ptrdiff_t lstm : {std::ptrdiff_t{5}, std::ptrdiff_t{0}}) {
    CAPTURE(lstm);
    seedrl::backend_core_config core;
    core.num_actions = 3;
    core.lstm_size = lstm;
    agent net({.name = "softsign_agent", .seed = 4}, core, part);
    REQUIRE(std::get<0>(net.configs()).outputs == part.outputs);
    // The draws are the part's own: its init wrote the torso's block.
    bool drawn = false;
    for (std::size_t i = 0; i < part.outputs * (part.inputs + 1); ++i)
      drawn = drawn || net.parameters()[i] != S(0);
    CHECK(drawn);
    seedrl::host_backend backend;
    seedrl::backend_agent_trainer<seedrl::host_backend, S, softsign_torso<seedrl::host_backend, S>>
        trainer(backend, softsign_torso<seedrl::host_backend, S>(backend, part), core);
    REQUIRE(trainer.num_parameters() == net.parameters().size());
    trainer.set_parameters(net.parameters());
    trainer.set_optimizer(adam_lr(3e-3), 0);
    seedrl::adam<S> opt(adam_lr(3e-3));
    run_options o;
    seedrl_test::train_side_by_side(
        net, opt, trainer, loss_config(), o,
        [&](std::size_t T, std::size_t B, seedrl::random_generator& rng) {
          random_batch<S> d;
          d.T = T;
          d.B = B;
          d.A = 3;
          const std::size_t rows = (T + 1) * B;
          append_uniform(d.obs, rows * part.inputs, -2.0, 2.0, rng);
          append_uniform(d.rewards, rows, -2.0, 2.0, rng);
          append_uniform(d.start, B * trainer.state_size(), -0.5, 0.5, rng);
          seedrl_test::draw_steps(d, rng);
          return d;
        });
    // A copy of the agent has its own parts and infers as the original.
    agent copy(net);
    std::vector<S> x(2 * part.inputs, S(0.3)), r(2, S(0));
    std::vector<std::uint8_t> dones(2, 1);
    std::vector<std::int32_t> prev(2, 0);
    auto s1 = net.initial_state(2), s2 = copy.initial_state(2);
    std::vector<S> l1(6), v1(2), l2(6), v2(2);
    seedrl::agent_step_output<S> o1{l1, v1}, o2{l2, v2};
    net.infer({x, r, dones, prev}, s1, o1);
    copy.infer({x, r, dones, prev}, s2, o2);
    CHECK(l1 == l2);
    CHECK(v1 == v2);
    // Its messages carry its name.
    std::vector<std::int32_t> bad{7, 0};
    CHECK_THROWS_WITH(net.infer({x, r, dones, bad}, s1, o1),
                      Catch::Contains("seedrl::softsign_agent: previous action 7"));
  }
}

TEST_CASE(
    "actor_critic_recipe: a user's part trains through the recipe trainer (what the GPU runs) "
    "as host_trainer trains the agent",
    "[backend_trainer][actor_critic_agent]") {
  using S = double;
  using seedrl_test::softsign_config;
  using seedrl_test::softsign_torso;
  using agent = softsign_agent<S>;
  using recipe = seedrl::actor_critic_recipe<softsign_torso, softsign_config>;
  static_assert(seedrl::Trainer<seedrl::backend_trainer<S, recipe>, agent, seedrl::adam<S>,
                                seedrl::impala_loss<S>>);
  const softsign_config part{4, 6};
  const auto c = small_config();  // 4 observations, 3 actions: the part's shape
  seedrl::backend_core_config core;
  core.num_actions = 3;
  core.lstm_size = 5;
  agent ref({.seed = 4}, core, part), net(ref);
  seedrl::host_trainer reference;
  seedrl::backend_trainer<S, recipe> trainer;
  seedrl::adam<S> opt_a(adam_lr(3e-3)), opt_b(adam_lr(3e-3));
  const seedrl::impala_loss<S> loss(loss_config());
  seedrl::random_generator rng(5);
  for (int step = 0; step < 3; ++step) {
    const auto batch = make_mlp_batch<S>(c, static_cast<std::size_t>(net.state_size()), 4, 3, rng);
    const auto want = reference.train_step(batch.view(), ref, opt_a, loss, 0.5);
    const auto got = trainer.train_step(batch.view(), net, opt_b, loss, 0.5);
    REQUIRE(got.applied);
    CHECK(relative(got.grad_norm, want.grad_norm) < 1e-9);
    CHECK(max_difference<S>(net.parameters(), ref.parameters()) < 1e-9);
  }
  // Another shape (no LSTM, a wider part) is another network: taken as the new truth
  // (load_from_host, as after a restore), the trainer rebuilds for it.
  CHECK(recipe::describe({std::tuple{part}, core}) !=
        recipe::describe({std::tuple{softsign_config{4, 7}}, core}));
  core.lstm_size = 0;
  CHECK(recipe::describe({std::tuple{part}, core}) != recipe::describe({std::tuple{part}, {}}));
  agent other({.seed = 9}, core, softsign_config{4, 7}), other_ref(other);
  const auto batch = make_mlp_batch<S>(c, 0, 4, 3, rng);
  seedrl::adam<S> opt_c(adam_lr(3e-3)), opt_d(adam_lr(3e-3));
  seedrl::backend_trainer<S, recipe> fresh;
  trainer.load_from_host(other, opt_d);
  REQUIRE(trainer.num_parameters() == other.parameters().size());
  (void)fresh.train_step(batch.view(), other_ref, opt_c, loss, 0.5);
  (void)trainer.train_step(batch.view(), other, opt_d, loss, 0.5);
  CHECK(max_difference<S>(other.parameters(), other_ref.parameters()) < 1e-12);
}

// --- backend_trainer: the recipe trainer (what the CUDA trainers run) on host_backend ----------

using recipe_trainer_t = seedrl::backend_trainer<double, seedrl::mlp_lstm_recipe>;
static_assert(
    seedrl::Trainer<recipe_trainer_t, seedrl::mlp_lstm_agent<double>, seedrl::adam<double>,
                    seedrl::loss_choice<double, seedrl::spec_distribution<double>>>);
static_assert(seedrl::Trainer<recipe_trainer_t, seedrl::mlp_lstm_agent<double>,
                              seedrl::rmsprop<double>, seedrl::impala_loss<double>>);
// Only a device trainer publishes on its device.
static_assert(!seedrl::DevicePublishingTrainer<recipe_trainer_t, seedrl::mlp_lstm_agent<double>,
                                               seedrl::adam<double>>);

TEST_CASE("backend_trainer trains through the Trainer members as host_trainer does",
          "[backend_trainer]") {
  // The learner's view of the trainer the GPU runs: the first step uploads the network and the
  // optimizer, each step writes the new parameters into the network, sync_to_host brings the
  // optimizer state back, load_from_host takes a restored network and optimizer as the truth.
  using S = double;
  const auto c = small_config();
  seedrl::mlp_lstm_agent<S> ref_net(c), net(c);
  seedrl::adam<S> ref_opt(adam_lr(3e-3)), opt(adam_lr(3e-3));
  seedrl::host_trainer reference;
  recipe_trainer_t trainer;
  CHECK(trainer.num_parameters() == 0);
  const seedrl::ppo_loss<S> ppo(ppo_schedule_config<S>());
  const seedrl::loss_choice<S> impala{seedrl::impala_loss<S>(loss_config())};
  seedrl::random_generator rng(21);
  const auto step_both = [&](const auto& loss) {
    const auto batch = make_mlp_batch<S>(c, static_cast<std::size_t>(net.state_size()), 5, 4, rng);
    const auto want = reference.train_step(batch.view(), ref_net, ref_opt, loss, 0.5);
    const auto got = trainer.train_step(batch.view(), net, opt, loss, 0.5);
    CHECK(got.applied == want.applied);
    CHECK(relative(got.terms.total, want.terms.total) < 1e-9);
    CHECK(relative(got.grad_norm, want.grad_norm) < 1e-9);
    CHECK(max_difference<S>(net.parameters(), ref_net.parameters()) < 1e-9);
  };
  for (int step = 0; step < 2; ++step) {
    CAPTURE(step);
    step_both(ppo);  // the schedule's minibatches drawn as host_trainer draws them (seed 0)
    step_both(impala);
  }
  CHECK(trainer.num_parameters() == net.parameters().size());
  CHECK(opt.step_count() == 0);  // the backend holds the optimizer's truth until sync_to_host
  trainer.sync_to_host(net, opt);
  CHECK(opt.step_count() == ref_opt.step_count());
  CHECK(max_difference<S>(opt.first_moment(), ref_opt.first_moment()) < 1e-9);
  CHECK(max_difference<S>(opt.second_moment(), ref_opt.second_moment()) < 1e-9);

  SECTION("a restored network and optimizer become the truth") {
    seedrl::mlp_lstm_agent<S> restored(c);  // fresh parameters, a fresh optimizer
    seedrl::adam<S> fresh(adam_lr(3e-3));
    trainer.load_from_host(restored, fresh);
    seedrl::mlp_lstm_agent<S> ref2(c);
    seedrl::adam<S> ref2_opt(adam_lr(3e-3));
    const auto batch = make_mlp_batch<S>(c, static_cast<std::size_t>(net.state_size()), 5, 4, rng);
    const auto want = reference.train_step(batch.view(), ref2, ref2_opt, impala, 0.5);
    const auto got = trainer.train_step(batch.view(), restored, fresh, impala, 0.5);
    CHECK(relative(got.grad_norm, want.grad_norm) < 1e-9);
    CHECK(max_difference<S>(restored.parameters(), ref2.parameters()) < 1e-9);
  }
  SECTION("another network's shape rebuilds the backend network") {
    auto wide = c;
    wide.lstm_size = 9;
    seedrl::mlp_lstm_agent<S> other(wide);
    seedrl::adam<S> other_opt(adam_lr(1e-3));
    trainer.load_from_host(other, other_opt);
    CHECK(trainer.num_parameters() == other.parameters().size());
    CHECK(trainer.num_parameters() != net.parameters().size());
    const auto batch =
        make_mlp_batch<S>(wide, static_cast<std::size_t>(other.state_size()), 3, 2, rng);
    CHECK(trainer.train_step(batch.view(), other, other_opt, impala, 0.5).applied);
  }
  SECTION("another optimizer's state is refused until load_from_host") {
    seedrl::rmsprop<S> rms(seedrl::rmsprop_config{});
    const auto batch = make_mlp_batch<S>(c, static_cast<std::size_t>(net.state_size()), 3, 2, rng);
    CHECK_THROWS_AS(trainer.train_step(batch.view(), net, rms, impala, 0.5), std::logic_error);
    CHECK_THROWS_AS(trainer.sync_to_host(net, rms), std::logic_error);
    trainer.load_from_host(net, rms);
    CHECK(trainer.train_step(batch.view(), net, rms, impala, 0.5).applied);
  }
  SECTION("a trainer with no network yet says so, with its name") {
    recipe_trainer_t unused;
    CHECK_THROWS_WITH(unused.optimizer_steps(),
                      Catch::Contains("seedrl::mlp_lstm_trainer on host_backend") &&
                          Catch::Contains("no network on the backend yet"));
    recipe_trainer_t moved = std::move(unused);
    CHECK_THROWS_WITH(unused.optimizer_steps(), Catch::Contains("moved from"));
    CHECK_THROWS_AS(moved.optimizer_steps(), std::logic_error);  // still no network
  }
}

TEST_CASE("backend_trainer keeps RMSProp's momentum across sync_to_host and load_from_host",
          "[backend_trainer]") {
  using S = double;
  auto c = small_config();
  c.lstm_size = 0;
  seedrl::rmsprop_config r;
  r.learning_rate = 2e-3;
  r.momentum = 0.9;
  seedrl::mlp_lstm_agent<S> ref_net(c), net(c);
  seedrl::rmsprop<S> ref_opt(r), opt(r);
  seedrl::host_trainer reference;
  recipe_trainer_t trainer;
  const seedrl::impala_loss<S> loss(loss_config());
  seedrl::random_generator rng(23);
  for (int step = 0; step < 4; ++step) {
    CAPTURE(step);
    const auto batch = make_mlp_batch<S>(c, 0, 4, 3, rng);
    reference.train_step(batch.view(), ref_net, ref_opt, loss, 0.5);
    trainer.train_step(batch.view(), net, opt, loss, 0.5);
    if (step == 1) {  // a checkpoint: the state comes back, then goes up again
      trainer.sync_to_host(net, opt);
      CHECK(max_difference<S>(opt.momentum_buffer(), ref_opt.momentum_buffer()) < 1e-9);
      trainer.load_from_host(net, opt);
    }
  }
  CHECK(max_difference<S>(net.parameters(), ref_net.parameters()) < 1e-9);
  CHECK(trainer.optimizer_steps() == 4);
  CHECK(trainer.learning_rate() == ref_opt.learning_rate());
}
