// The learner's plug points of its own: which networks it takes (LearnerNetwork, checked at
// compile time with a type that misses one piece each), and that the loss and the action
// sampler given as type parameters are the ones that run (a sampler that always picks the last
// action, a loss that counts its calls), end to end over the in-process transport; and that
// host_trainer follows a loss's update schedule (epochs, minibatches of whole unrolls, the
// values from before the batch's first step), checked against steps taken by hand.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/learner_network.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/transport/in_process.hpp"

namespace {

using namespace std::chrono_literals;

// --- LearnerNetwork ----------------------------------------------------------------------
static_assert(seedrl::LearnerNetwork<seedrl::mlp_lstm_agent<float>>);
static_assert(seedrl::LearnerNetwork<seedrl::mlp_lstm_agent<double>>);
static_assert(seedrl::LearnerNetwork<seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>>);

/// Forwards everything to an mlp_lstm_agent; the types below hide one piece each.
struct agent_ok {
  using inner = seedrl::mlp_lstm_agent<float>;
  using scalar_type = float;
  using state_type = inner::state_type;
  using inference_input = inner::inference_input;
  using inference_output = inner::inference_output;
  using unroll_input = inner::unroll_input;
  using unroll_output = inner::unroll_output;
  using output_gradient = inner::output_gradient;
  std::ptrdiff_t state_size() const;
  state_type initial_state(std::size_t) const;
  void infer(const inference_input&, state_type&, inference_output&);
  void forward_unroll(const unroll_input&, unroll_output&);
  void zero_gradients();
  void backward_unroll(const output_gradient&);
  std::span<float> parameters();
  std::span<float> gradients();
};
struct agent_no_state_size : agent_ok {
  void state_size() = delete;
};
struct agent_no_zero_gradients : agent_ok {
  void zero_gradients(int) = delete;  // hides agent_ok::zero_gradients()
};
struct agent_foreign_state : agent_ok {
  struct state_type {};
  state_type initial_state(std::size_t) const;
  void infer(const inference_input&, state_type&, inference_output&);
};
struct agent_foreign_inputs : agent_ok {
  struct inference_input {};
  void infer(const inference_input&, state_type&, inference_output&);
};
struct agent_not_copyable : agent_ok {
  agent_not_copyable() = default;
  agent_not_copyable(const agent_not_copyable&) = delete;
};
static_assert(seedrl::LearnerNetwork<agent_ok>);
static_assert(!seedrl::LearnerNetwork<agent_no_state_size>);
static_assert(!seedrl::LearnerNetwork<agent_no_zero_gradients>);
static_assert(!seedrl::LearnerNetwork<agent_foreign_state>);
static_assert(!seedrl::LearnerNetwork<agent_foreign_inputs>);
static_assert(!seedrl::LearnerNetwork<agent_not_copyable>);
static_assert(!seedrl::LearnerNetwork<int>);

// --- ActionSampler ------------------------------------------------------------------------
/// Always the last action, with its log-probability under the policy (what V-trace needs).
struct last_action_sampler {
  void check(const seedrl::action_spec& spec) const {
    if (!spec.is_discrete())
      throw std::invalid_argument("last_action_sampler: discrete actions only");
  }
  std::size_t outputs_per_row(const seedrl::action_spec& spec) const {
    return static_cast<std::size_t>(spec.num_actions);
  }
  template <class S>
  void sample(std::span<const S> logits, std::size_t rows, std::size_t width,
              seedrl::random_generator&, seedrl::action_buffers<S> out,
              std::span<S> log_probs) const {
    const std::span<std::int32_t> actions = out.discrete;
    for (std::size_t r = 0; r < rows; ++r)
      actions[r] = static_cast<std::int32_t>(width - 1);
    seedrl::categorical_log_probs<S>(logits, rows, width,
                                     std::span<const std::int32_t>(actions).first(rows),
                                     log_probs.first(rows));
  }
};
struct sampler_no_check {
  std::size_t outputs_per_row(const seedrl::action_spec&) const;
  void sample(std::span<const float>, std::size_t, std::size_t, seedrl::random_generator&,
              seedrl::action_buffers<float>, std::span<float>) const;
};
/// The concept before continuous actions: int32 actions only.
struct sampler_int32_only {
  void check(const seedrl::action_spec&) const;
  std::size_t outputs_per_row(const seedrl::action_spec&) const;
  void sample(std::span<const float>, std::size_t, std::size_t, seedrl::random_generator&,
              std::span<std::int32_t>, std::span<float>) const;
};
static_assert(seedrl::ActionSampler<seedrl::categorical_sampler, float>);
static_assert(seedrl::ActionSampler<last_action_sampler, float>);
static_assert(!seedrl::ActionSampler<sampler_no_check, float>);
static_assert(!seedrl::ActionSampler<sampler_int32_only, float>);
static_assert(seedrl::ActionSampler<seedrl::gaussian_sampler, float>);
static_assert(!seedrl::ActionSampler<last_action_sampler, int>);

// --- Loss as a type parameter --------------------------------------------------------------
/// The IMPALA loss, counting its calls.
struct counting_loss {
  using scalar_type = float;
  using batch_type = seedrl::impala_batch<float>;
  using gradient_type = seedrl::impala_gradients<float>;
  seedrl::loss_terms operator()(const batch_type& batch, gradient_type& grad) const {
    ++*calls;
    return inner(batch, grad);
  }
  seedrl::impala_loss<float> inner;
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
};
static_assert(seedrl::Loss<counting_loss>);
static_assert(seedrl::Trainer<seedrl::host_trainer, seedrl::mlp_lstm_agent<float>,
                              seedrl::adam<float>, counting_loss>);
static_assert(seedrl::Trainer<seedrl::host_trainer, seedrl::mlp_lstm_agent<float>,
                              seedrl::adam<float>>);  // the IMPALA loss unless told

/// CartPole that counts the actions it was sent.
struct counting_cartpole : seedrl::cartpole {
  std::shared_ptr<std::atomic<int>[]> counts;
  explicit counting_cartpole(std::shared_ptr<std::atomic<int>[]> c) : counts(std::move(c)) {}
  seedrl::step_result step(action_type action, std::span<float> observation) {
    ++counts[static_cast<std::size_t>(action)];
    return seedrl::cartpole::step(action, observation);
  }
};

}  // namespace

TEST_CASE("the learner runs the loss and the action sampler it is given", "[learner][parts]") {
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport,
                                    seedrl::host_trainer, counting_loss, last_action_sampler>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 0;
  seedrl::learner_config lc;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  counting_loss loss;
  const auto calls = loss.calls;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-parts"};
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), loss,
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::shared_ptr<std::atomic<int>[]> counts(new std::atomic<int>[2] {});
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = 2;
    seedrl::actor<counting_cartpole, std::function<seedrl::in_process_connection()>> a(
        ac, [&](std::size_t) { return counting_cartpole(counts); },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (learner.stats().train_steps < 3 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  stop = true;
  actor.join();
  learner.stop();
  const auto s = learner.stats();
  CHECK(s.train_steps >= 3);
  CHECK(*calls == s.train_steps);  // every training step ran the given loss, once
  CHECK(counts[1] > 0);
  CHECK(counts[0] == 0);  // categorical sampling would have sent action 0 about half the time
}

TEST_CASE("the learner refuses a network whose action count differs from the spec",
          "[learner][parts]") {
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 0;
  nc.num_actions = 3;
  CHECK_THROWS_WITH(learner_t(seedrl::learner_config{}, net_t(nc), seedrl::adam<float>(),
                              seedrl::impala_loss<float>(), seedrl::cartpole::observation_spec(),
                              seedrl::cartpole::action_spec()),
                    Catch::Contains("the network has 3 actions, the action spec 2"));
  CHECK_THROWS_WITH(learner_t(seedrl::learner_config{}, net_t(nc), seedrl::adam<float>(),
                              seedrl::impala_loss<float>(), seedrl::cartpole::observation_spec(),
                              seedrl::action_spec::continuous({1}, -1.0f, 1.0f)),
                    Catch::Contains("serves discrete action spaces only"));
}

// --- update_schedule: host_trainer's epochs and minibatches ---------------------------------

namespace {

using dnet_t = seedrl::mlp_lstm_agent<double>;

/// IMPALA's loss with a schedule of its own (what PPO-style algorithms declare).
struct scheduled_impala : seedrl::impala_loss<double> {
  seedrl::update_schedule plan;
  seedrl::update_schedule schedule() const { return plan; }
};

/// A batch of B random unrolls of T + 1 steps, owning its arrays.
struct random_batch {
  std::size_t T = 3, B = 4, obs = 4, A = 3, W = 0;
  std::vector<double> observations, rewards, behaviour, start;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;

  random_batch(std::size_t state_width, std::uint64_t seed) : W(state_width) {
    seedrl::random_generator g(seed);
    const std::size_t rows = (T + 1) * B;
    for (std::size_t i = 0; i < rows * obs; ++i)
      observations.push_back(g.uniform(-1.0, 1.0));
    for (std::size_t r = 0; r < rows; ++r) {
      rewards.push_back(g.uniform(-1.0, 1.0));
      behaviour.push_back(-0.2 - g.uniform());
      dones.push_back(g.below(5) == 0 ? 1 : 0);
      truncated.push_back(dones.back() != 0 && g.below(2) == 0 ? 1 : 0);
      actions.push_back(static_cast<std::int32_t>(g.below(A)));
      prev_actions.push_back(static_cast<std::int32_t>(g.below(A)));
    }
    for (std::size_t i = 0; i < B * W; ++i)
      start.push_back(g.uniform(-0.5, 0.5));
  }

  seedrl::training_batch<double> view() const {
    return {T,       B,         A,    observations, rewards, dones, truncated, prev_actions,
            actions, behaviour, start};
  }

  /// Unrolls `columns` alone, gathered here independently of the trainer's own gathering.
  random_batch columns(const std::vector<std::size_t>& cols) const {
    random_batch c = *this;
    c.B = cols.size();
    const std::size_t rows = (T + 1) * c.B;
    c.observations.assign(rows * obs, 0.0);
    for (auto* v : {&c.rewards, &c.behaviour})
      v->assign(rows, 0.0);
    for (auto* v : {&c.dones, &c.truncated})
      v->assign(rows, 0);
    for (auto* v : {&c.prev_actions, &c.actions})
      v->assign(rows, 0);
    c.start.assign(c.B * W, 0.0);
    for (std::size_t j = 0; j < cols.size(); ++j) {
      for (std::size_t w = 0; w < W; ++w)
        c.start[j * W + w] = start[cols[j] * W + w];
      for (std::size_t t = 0; t <= T; ++t) {
        const std::size_t from = t * B + cols[j], to = t * c.B + j;
        for (std::size_t k = 0; k < obs; ++k)
          c.observations[to * obs + k] = observations[from * obs + k];
        c.rewards[to] = rewards[from];
        c.behaviour[to] = behaviour[from];
        c.dones[to] = dones[from];
        c.truncated[to] = truncated[from];
        c.prev_actions[to] = prev_actions[from];
        c.actions[to] = actions[from];
      }
    }
    return c;
  }
};

dnet_t small_double_net() {
  seedrl::mlp_lstm_agent_config nc;
  nc.observation_size = 4;
  nc.num_actions = 3;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  nc.seed = 11;
  return dnet_t(nc);
}

double largest_difference(std::span<const double> a, std::span<const double> b) {
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

}  // namespace

TEST_CASE("host_trainer runs a loss's epochs as whole-batch steps, one after another",
          "[trainer][schedule]") {
  const dnet_t net0 = small_double_net();
  const random_batch batch(static_cast<std::size_t>(net0.state_size()), 3);
  scheduled_impala loss;
  loss.plan = {3, 1};
  dnet_t scheduled = net0;
  seedrl::adam<double> opt_s;
  seedrl::host_trainer trainer(5);
  const auto r = trainer.train_step(batch.view(), scheduled, opt_s, loss, 40.0);
  CHECK(r.applied);
  // The same three steps by hand, on the batch as given (columns in their own order).
  dnet_t by_hand = net0;
  seedrl::adam<double> opt_h;
  seedrl::host_trainer plain;
  double total = 0.0;
  for (int e = 0; e < 3; ++e)
    total += plain.train_step(batch.view(), by_hand, opt_h, seedrl::impala_loss<double>(), 40.0)
                 .terms.total;
  // Only the order of the columns differs: sums in another order, so equal to rounding.
  CHECK(largest_difference(scheduled.parameters(), by_hand.parameters()) < 1e-12);
  CHECK(r.terms.total == Approx(total / 3).epsilon(1e-12));
  // Three steps moved the parameters further than one.
  dnet_t one = net0;
  seedrl::adam<double> opt_1;
  plain.train_step(batch.view(), one, opt_1, seedrl::impala_loss<double>(), 40.0);
  CHECK(largest_difference(scheduled.parameters(), one.parameters()) > 1e-4);
}

TEST_CASE("host_trainer splits each epoch into minibatches of whole unrolls in a random order",
          "[trainer][schedule]") {
  const dnet_t net0 = small_double_net();
  const random_batch batch(static_cast<std::size_t>(net0.state_size()), 4);
  scheduled_impala loss;
  loss.plan = {1, 2};
  // Every way of taking the 4 unrolls as two minibatches of 2, one after the other.
  std::vector<std::vector<std::size_t>> firsts = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
  std::vector<std::vector<double>> candidates;
  std::vector<double> candidate_losses;
  for (const auto& first : firsts) {
    std::vector<std::size_t> second;
    for (std::size_t c = 0; c < 4; ++c)
      if (std::find(first.begin(), first.end(), c) == first.end())
        second.push_back(c);
    dnet_t n = net0;
    seedrl::adam<double> o;
    seedrl::host_trainer plain;
    const auto a = batch.columns(first), b = batch.columns(second);
    const double l1 =
        plain.train_step(a.view(), n, o, seedrl::impala_loss<double>(), 40.0).terms.total;
    const double l2 =
        plain.train_step(b.view(), n, o, seedrl::impala_loss<double>(), 40.0).terms.total;
    candidates.emplace_back(n.parameters().begin(), n.parameters().end());
    candidate_losses.push_back((l1 + l2) / 2);
  }
  // The candidates differ from each other: the test can tell them apart.
  for (std::size_t i = 0; i < candidates.size(); ++i)
    for (std::size_t j = i + 1; j < candidates.size(); ++j)
      REQUIRE(largest_difference(candidates[i], candidates[j]) > 1e-6);
  seedrl::host_trainer trainer(9);
  std::set<std::size_t> seen;
  for (int call = 0; call < 8; ++call) {
    dnet_t n = net0;
    seedrl::adam<double> o;
    const auto r = trainer.train_step(batch.view(), n, o, loss, 40.0);
    std::size_t matches = 0, which = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (largest_difference(n.parameters(), candidates[i]) < 1e-12) {
        ++matches;
        which = i;
      }
    }
    INFO("call " << call);
    REQUIRE(matches == 1);  // exactly one split into whole unrolls, each step on its own
    CHECK(r.terms.total == Approx(candidate_losses[which]).epsilon(1e-12));
    seen.insert(which);
  }
  CHECK(seen.size() > 1);  // the order is drawn afresh for each batch
}

namespace {

/// impala_batch's fields, then the proximal outputs host_trainer fills for losses that ask.
struct batch_with_old_values {
  std::size_t T = 0, B = 0, num_actions = 0;
  std::span<const double> logits, values;
  std::span<const std::int32_t> actions;
  std::span<const double> behaviour_log_probs, rewards;
  std::span<const std::uint8_t> dones, truncated;
  std::span<const double> old_values;
  std::span<const double> proximal_logits;
};

/// IMPALA's loss, recording the old and current values of every step it is called for, and the
/// proximal logits.
struct old_value_probe {
  using scalar_type = double;
  using batch_type = batch_with_old_values;
  using gradient_type = seedrl::impala_gradients<double>;
  seedrl::update_schedule plan;
  bool reads_old_values = true;
  std::shared_ptr<std::vector<std::pair<std::vector<double>, std::vector<double>>>> seen =
      std::make_shared<std::vector<std::pair<std::vector<double>, std::vector<double>>>>();
  seedrl::update_schedule schedule() const { return plan; }
  std::shared_ptr<std::vector<std::vector<double>>> seen_logits =
      std::make_shared<std::vector<std::vector<double>>>();
  bool needs_proximal_outputs() const { return reads_old_values; }
  seedrl::loss_terms operator()(const batch_type& b, gradient_type& g) const {
    seen->emplace_back(std::vector<double>(b.old_values.begin(), b.old_values.end()),
                       std::vector<double>(b.values.begin(), b.values.end()));
    seen_logits->emplace_back(b.proximal_logits.begin(), b.proximal_logits.end());
    return seedrl::impala_loss<double>()({b.T, b.B, b.num_actions, b.logits, b.values, b.actions,
                                          b.behaviour_log_probs, b.rewards, b.dones, b.truncated},
                                         g);
  }
};
static_assert(seedrl::Loss<old_value_probe>);

}  // namespace

TEST_CASE(
    "host_trainer gives a loss that asks the values and logits from before the batch's first "
    "step",
    "[trainer][schedule]") {
  const dnet_t net0 = small_double_net();
  const random_batch batch(static_cast<std::size_t>(net0.state_size()), 6);
  // The values of the parameters the batch arrived to, on the whole batch.
  std::vector<double> logits((batch.T + 1) * batch.B * batch.A), values((batch.T + 1) * batch.B);
  seedrl::agent_unroll_output<double> out{logits, values};
  dnet_t probe_net = net0;
  probe_net.forward_unroll({batch.T + 1, batch.B, batch.observations, batch.rewards, batch.dones,
                            batch.prev_actions, batch.start},
                           out);
  old_value_probe loss;
  loss.plan = {2, 1};
  dnet_t n = net0;
  seedrl::adam<double> o;
  seedrl::host_trainer trainer(1);
  trainer.train_step(batch.view(), n, o, loss, 40.0);
  REQUIRE(loss.seen->size() == 2);
  // With one minibatch the columns are only permuted: compare them as sorted multisets.
  for (std::size_t step = 0; step < 2; ++step) {
    INFO("step " << step);
    auto old_values = (*loss.seen)[step].first, current = (*loss.seen)[step].second;
    auto want = values;
    std::sort(old_values.begin(), old_values.end());
    std::sort(current.begin(), current.end());
    std::sort(want.begin(), want.end());
    REQUIRE(old_values.size() == want.size());
    CHECK(largest_difference(old_values, want) < 1e-12);
    if (step == 1)  // the first step moved the values; the old ones stay
      CHECK(largest_difference(current, want) > 1e-6);
    auto proximal = (*loss.seen_logits)[step];
    auto want_logits = logits;
    std::sort(proximal.begin(), proximal.end());
    std::sort(want_logits.begin(), want_logits.end());
    REQUIRE(proximal.size() == want_logits.size());
    CHECK(largest_difference(proximal, want_logits) < 1e-12);
  }
  // One step per batch: the old values are that step's own.
  old_value_probe single;
  dnet_t m = net0;
  seedrl::adam<double> o2;
  trainer.train_step(batch.view(), m, o2, single, 40.0);
  REQUIRE(single.seen->size() == 1);
  CHECK((*single.seen)[0].first == (*single.seen)[0].second);
  CHECK((*single.seen_logits)[0].empty());  // the loss's own logits stand in
  // A loss that does not read them costs no forward pass: each
  // step gets its own values there, and the second step's are no longer the batch's.
  old_value_probe unread;
  unread.plan = {2, 1};
  unread.reads_old_values = false;
  dnet_t k = net0;
  seedrl::adam<double> o3;
  trainer.train_step(batch.view(), k, o3, unread, 40.0);
  REQUIRE(unread.seen->size() == 2);
  for (const auto& [old_values, current] : *unread.seen)
    CHECK(old_values == current);
  auto second = (*unread.seen)[1].second, want = values;
  std::sort(second.begin(), second.end());
  std::sort(want.begin(), want.end());
  CHECK(largest_difference(second, want) > 1e-6);
}

TEST_CASE("a schedule that cannot split the batch is refused with a message",
          "[trainer][schedule]") {
  const dnet_t net0 = small_double_net();
  const random_batch batch(static_cast<std::size_t>(net0.state_size()), 7);
  scheduled_impala loss;
  loss.plan = {1, 3};  // 4 unrolls do not split into 3 minibatches
  dnet_t n = net0;
  seedrl::adam<double> o;
  seedrl::host_trainer trainer;
  CHECK_THROWS_WITH(trainer.train_step(batch.view(), n, o, loss, 40.0),
                    Catch::Contains("multiple of the minibatch count"));
  loss.plan = {0, 1};
  CHECK_THROWS_WITH(trainer.train_step(batch.view(), n, o, loss, 40.0),
                    Catch::Contains("at least one of each"));
  // The learner says so at construction, before any actor connects.
  using learner_t = seedrl::learner<dnet_t, seedrl::adam<double>, seedrl::in_process_transport,
                                    seedrl::host_trainer, scheduled_impala>;
  seedrl::learner_config lc;
  lc.batch_size = 4;
  scheduled_impala three;
  three.plan = {2, 3};
  const auto obs = seedrl::observation_spec{seedrl::dtype::float32, {4}};
  CHECK_THROWS_WITH(
      learner_t(lc, net0, seedrl::adam<double>(), three, obs, seedrl::action_spec::discrete(3)),
      Catch::Contains("batch_size (4) must be a multiple of the minibatch count"));
}
