#pragma once
// What the backend trainer tests share (test_backend_trainer.cpp: the MLP agent,
// test_backend_pixel_trainer.cpp: the pixel agents): owning random batches, the error measures,
// reading a trainer's arrays, and the side-by-side run against host_trainer with its per-step
// checks. Each file keeps what depends on its network: batches' observations and start states,
// shapes and parameter layouts.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/r2d2_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl_test {

/// A random training batch that owns its arrays.
template <class S>
struct random_batch {
  std::size_t T = 0, B = 0, A = 0;
  std::vector<S> obs, rewards, behaviour, start;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;
  std::size_t D = 0;                     ///< continuous actions: elements per action
  std::vector<S> prev_env_actions, raw;  ///< continuous actions: [(T+1)*B*D] each
  std::vector<S> weights;                ///< [B] importance weights (a replay's), or none

  seedrl::training_batch<S> view() const {
    return {T,       B,         A,     obs, rewards,          dones, truncated, prev_actions,
            actions, behaviour, start, D,   prev_env_actions, raw,   weights};
  }
};

/// Appends `n` draws from U(lo, hi) to `v`.
template <class S>
void append_uniform(std::vector<S>& v, std::size_t n, double lo, double hi,
                    seedrl::random_generator& rng) {
  for (std::size_t i = 0; i < n; ++i)
    v.push_back(static_cast<S>(rng.uniform(lo, hi)));
}

/// Fills the dones, previous actions, actions and log mu of `d`'s (T + 1) * B rows: about one
/// reset in five plus a forced one at t = 0 (environment 0) and one mid-unroll (the last
/// environment), environment 1 never reset at t = 0 (its start state matters), random actions
/// below A and log mu of probabilities in [0.05, 1]. About half the episode ends are time
/// limits (truncated), among them the mid-unroll one, so the loss's cut is exercised.
template <class S>
void draw_steps(random_batch<S>& d, seedrl::random_generator& rng) {
  const std::size_t rows = (d.T + 1) * d.B;
  for (std::size_t i = 0; i < rows; ++i) {
    d.dones.push_back(rng.below(5) == 0 ? 1 : 0);
    d.prev_actions.push_back(static_cast<std::int32_t>(rng.below(d.A)));
    d.actions.push_back(static_cast<std::int32_t>(rng.below(d.A)));
    d.behaviour.push_back(static_cast<S>(std::log(rng.uniform(0.05, 1.0))));
  }
  d.dones[0] = 1;
  if (d.B > 1)
    d.dones[1] = 0;
  d.dones[(d.T / 2 + 1) * d.B + (d.B - 1)] = 1;
  // Every other episode end, by row, without a draw: the other arrays and every later draw stay
  // what they were before truncation existed.
  d.truncated.assign(rows, 0);
  for (std::size_t i = 0; i < rows; ++i)
    d.truncated[i] = d.dones[i] != 0 && i % 2 == 1 ? 1 : 0;
  d.truncated[(d.T / 2 + 1) * d.B + (d.B - 1)] = 1;
}

/// max_i |got_i - want_i| / (max(|got_i|, |want_i|) + 1e-2 max_j |want_j|): relative error per
/// element, with elements far below the array's scale judged against 1% of that scale.
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

inline double relative(double got, double want) {
  const double d = std::abs(got - want) / std::max({std::abs(got), std::abs(want), 1e-300});
  return std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
}

template <class Trainer>
std::vector<typename Trainer::scalar_type> parameters_of(const Trainer& t) {
  std::vector<typename Trainer::scalar_type> p(t.num_parameters());
  t.get_parameters(p);
  return p;
}

template <class Trainer>
std::vector<typename Trainer::scalar_type> gradients_of(const Trainer& t) {
  std::vector<typename Trainer::scalar_type> g(t.num_parameters());
  t.get_gradients(g);
  return g;
}

/// A CPU optimizer's state arrays in the order a backend trainer's optimizer_state() gives them.
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

inline seedrl::impala_loss_config<double> loss_config() {
  seedrl::impala_loss_config<double> l;
  l.entropy_cost = 0.01;
  l.max_abs_reward = 1.5;
  return l;
}

inline seedrl::adam_config adam_lr(double lr) {
  seedrl::adam_config a;
  a.learning_rate = lr;
  return a;
}

struct run_options {
  std::size_t T = 5, B = 3;
  double max_grad_norm = 1e9;  ///< effectively no clipping
  int steps = 3;
  double tolerance = 1e-10;  ///< loss terms, norms, gradients, parameters, optimizer state
  std::uint64_t seed = 1;
};

/// Trains `net` with `opt` on host_trainer (the reference) and `trainer` side by side on the
/// same batches, make_batch(T, B, rng), and checks they agree after every step; returns the
/// reference's gradient norms. The second step has a larger T and B (the trainer's buffers
/// grow) and the third the first's again (reuse). `trainer` must hold net's parameters and an
/// optimizer configured as `opt`.
template <class S, class Net, class Opt, class Trainer, class MakeBatch>
std::vector<double> train_side_by_side(Net& net, Opt& opt, Trainer& trainer,
                                       const seedrl::impala_loss_config<S>& loss_config,
                                       const run_options& o, MakeBatch make_batch) {
  seedrl::host_trainer reference;
  const seedrl::impala_loss<S> loss(loss_config);
  const std::vector<S> initial(net.parameters().begin(), net.parameters().end());
  CHECK(parameters_of(trainer) == initial);
  seedrl::random_generator rng(o.seed);
  std::vector<double> norms;
  for (int step = 0; step < o.steps; ++step) {
    INFO("step " << step);
    const std::size_t T = o.T + (step == 1 ? 3 : 0), B = o.B + (step == 1 ? 2 : 0);
    const random_batch<S> batch = make_batch(T, B, rng);
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
  // The steps moved every parameter block (so the comparisons compared trained values).
  double moved = 0.0;
  for (std::size_t i = 0; i < initial.size(); ++i)
    moved = std::max(moved, std::abs(static_cast<double>(net.parameters()[i] - initial[i])));
  CHECK(moved > 1e-5);
  return norms;
}

/// R2D2 on host_trainer (the reference) and on `trainer` side by side for five steps from the
/// same parameters: a burn-in of 2 steps, 2-step double-Q targets with value rescaling, the
/// target network refreshed every 2 steps, importance weights in [0.3, 1] (make_batch(T, B,
/// rng) draws the rest, resets and truncations included). Checks after every step that the
/// loss, the mean Q, the gradient norm, the priorities and the parameters agree within
/// `tolerance`, and that the target network shaped the loss (the same step with the online
/// network as its own target differs).
template <class S, class Net, class Opt, class Trainer, class MakeBatch>
void train_r2d2_side_by_side(Net& net, Opt& opt, Trainer& trainer, MakeBatch make_batch,
                             double tolerance) {
  seedrl::r2d2_loss_config<S> c;
  c.burn_in = 2;
  c.n_step = 2;
  c.discount = S(0.9);
  c.target_update_period = 2;
  const seedrl::r2d2_loss<S> loss(c);
  seedrl::host_trainer reference;
  seedrl::random_generator rng(3);
  for (int step = 0; step < 5; ++step) {
    INFO("step " << step);
    const std::size_t T = step % 2 == 0 ? 6 : 8, B = step % 2 == 0 ? 3 : 4;
    random_batch<S> batch = make_batch(T, B, rng);
    append_uniform(batch.weights, B, 0.3, 1.0, rng);
    const auto want = reference.train_step(batch.view(), net, opt, loss, 1.0);
    const auto got = trainer.train_step(batch.view(), loss, 1.0);
    REQUIRE(want.applied);
    REQUIRE(got.applied);
    CHECK(relative(got.terms.total, want.terms.total) < tolerance);
    CHECK(relative(got.terms.q_value, want.terms.q_value) < tolerance);
    CHECK(relative(got.grad_norm, want.grad_norm) < tolerance);
    REQUIRE(got.priorities.size() == B);
    REQUIRE(want.priorities.size() == B);
    for (std::size_t b = 0; b < B; ++b)
      CHECK(relative(got.priorities[b], want.priorities[b]) < tolerance);
    CHECK(max_difference<S>(parameters_of(trainer), net.parameters()) < tolerance);
  }
  // The target network is not the online one: the trainer's is the copy made before the last
  // step's update; a period of 1 (the target copied at every step) gives another loss on the
  // next batch, from the same parameters.
  seedrl::r2d2_loss_config<S> every = c;
  every.target_update_period = 1;
  random_batch<S> batch = make_batch(6, 3, rng);
  Net copy = net;
  Opt opt_copy = opt;
  seedrl::host_trainer fresh;
  const auto own = fresh.train_step(batch.view(), copy, opt_copy, seedrl::r2d2_loss<S>(every), 1.0);
  const auto got = trainer.train_step(batch.view(), loss, 1.0);
  CHECK(relative(got.terms.total, own.terms.total) > 1e-6);
}

/// The reference's gradients for `batch` at `net`'s parameters: one host_trainer step with
/// Adam, loss_config() and no clipping (which moves net's parameters too).
template <class Net>
std::vector<double> reference_gradients(Net& net, const random_batch<double>& batch) {
  seedrl::host_trainer reference;
  seedrl::adam<double> opt(adam_lr(1e-3));
  const seedrl::impala_loss<double> loss(loss_config());
  reference.train_step(batch.view(), net, opt, loss, 1e9);
  return {net.gradients().begin(), net.gradients().end()};
}

/// A block of the flat parameter array: `size` elements (0: more columns of the block before) in
/// rows of `cols` columns, probed in columns [col_lo, col_hi) by check_block_perturbations.
struct param_block {
  std::string name;
  std::size_t size, cols, col_lo, col_hi;
};

/// Guards the comparisons: from parameters `p0`, where the reference's gradients for `batch`
/// are `want`, a fresh trainer from make_trainer() gives `want` to 1e-10, and one parameter off
/// by 1e-6 in any of `blocks` (which must cover the parameters exactly) moves its gradients by
/// more than 1e-9. Each block's probe is its element of largest gradient: one that reaches the
/// loss (a ReLU unit that is off for the whole batch would hide a perturbation).
template <class MakeTrainer>
void check_block_perturbations(std::span<const param_block> blocks, std::span<const double> p0,
                               std::span<const double> want, const random_batch<double>& batch,
                               MakeTrainer make_trainer) {
  std::vector<std::pair<std::string, std::size_t>> probes;
  std::size_t at = 0, begin = 0;
  for (const param_block& b : blocks) {
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
  REQUIRE(at == p0.size());
  for (const auto& [name, probe] : probes) {
    INFO(name << ": parameter " << probe);
    CHECK(want[probe] != 0.0);
    auto t = make_trainer();
    t.set_optimizer(adam_lr(1e-3), 0);
    std::vector<double> p(p0.begin(), p0.end());
    t.set_parameters(p);
    t.train_step(batch.view(), loss_config(), 1e9);
    CHECK(max_difference<double>(gradients_of(t), want) < 1e-10);
    p[probe] += 1e-6;
    t.set_parameters(p);
    t.train_step(batch.view(), loss_config(), 1e9);
    CHECK(max_difference<double>(gradients_of(t), want) > 1e-9);
  }
}

}  // namespace seedrl_test
