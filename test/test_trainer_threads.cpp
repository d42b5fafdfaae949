// host_trainer with W threads (learner_config::trainer_threads): each gradient step's unrolls
// split across W network copies must give the gradient, loss terms and parameters of one thread
// (up to float summation order), for the CartPole MLP+LSTM and a pixel conv+LSTM agent, under
// IMPALA's loss (one step per batch) and PPO's (epochs x minibatches, advantages normalised over
// each minibatch: a per-chunk loss would change them). The reference is the W = 1 trainer, whose
// step is the unsplit forward/loss/backward checked elsewhere against finite differences. Also
// the step protocol itself (train_on_batch) on a recording model.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/small_conv_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_step.hpp"

namespace {

/// A random batch of B unrolls of T + 1 steps that owns its arrays; observations in [lo, hi].
struct owned_batch {
  std::size_t T = 0, B = 0, A = 0;
  std::vector<float> obs, rewards, behaviour, start;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;

  owned_batch(std::size_t t, std::size_t b, std::size_t a, std::size_t obs_size,
              std::size_t state_width, double lo, double hi, std::uint64_t seed)
      : T(t), B(b), A(a) {
    seedrl::random_generator g(seed);
    const std::size_t rows = (T + 1) * B;
    for (std::size_t i = 0; i < rows * obs_size; ++i)
      obs.push_back(static_cast<float>(g.uniform(lo, hi)));
    for (std::size_t r = 0; r < rows; ++r) {
      rewards.push_back(static_cast<float>(g.uniform(-1.0, 1.0)));
      behaviour.push_back(static_cast<float>(std::log(g.uniform(0.05, 1.0))));
      dones.push_back(g.below(6) == 0 ? 1 : 0);
      truncated.push_back(dones.back() != 0 && g.below(2) == 0 ? 1 : 0);
      actions.push_back(static_cast<std::int32_t>(g.below(A)));
      prev_actions.push_back(static_cast<std::int32_t>(g.below(A)));
    }
    for (std::size_t i = 0; i < B * state_width; ++i)
      start.push_back(static_cast<float>(g.uniform(-0.5, 0.5)));
  }

  seedrl::training_batch<float> view() const {
    return {T, B, A, obs, rewards, dones, truncated, prev_actions, actions, behaviour, start};
  }
};

/// max_i |a_i - b_i| / (max_j |b_j| + tiny): the difference against the array's scale.
double scaled_difference(std::span<const float> a, std::span<const float> b) {
  REQUIRE(a.size() == b.size());
  double diff = 0.0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

seedrl::mlp_lstm_agent<float> cartpole_net() {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 4;
  c.num_actions = 2;
  c.hidden_sizes = {64, 64};
  c.lstm_size = 64;
  c.seed = 5;
  return seedrl::mlp_lstm_agent<float>(c);
}

seedrl::small_conv_lstm_agent<float> pixel_net() {
  seedrl::small_conv_lstm_agent_config c;
  c.height = 10;
  c.width = 10;
  c.channels = 2;
  c.num_actions = 4;
  c.torso.channels = {4, 5};
  c.torso.padding = 1;
  c.dense_size = 16;
  c.lstm_size = 8;
  c.seed = 6;
  return seedrl::small_conv_lstm_agent<float>(c);
}

seedrl::ppo_loss<float> ppo_two_by_two() {
  seedrl::ppo_loss_config<float> c;
  c.epochs = 2;
  c.minibatches = 2;
  return seedrl::ppo_loss<float>(c);
}

/// Two train_steps with W threads and with one, from the same network and seed: the gradients
/// left in the network (unclipped: the norm limit is huge), the parameters, the loss terms and
/// the gradient norms agree to float rounding.
template <class Net, class L>
void check_threads_match_one(const Net& net0, const L& loss, const owned_batch& batch,
                             std::size_t W) {
  Net one = net0, many = net0;
  seedrl::adam<float> opt_one, opt_many;
  seedrl::host_trainer t_one(9, 1), t_many(9, W);
  REQUIRE(t_many.threads() == W);
  for (int step = 0; step < 2; ++step) {
    const auto r1 = t_one.train_step(batch.view(), one, opt_one, loss, 1e9);
    const auto rw = t_many.train_step(batch.view(), many, opt_many, loss, 1e9);
    INFO("W = " << W << ", step " << step);
    REQUIRE(r1.applied);
    REQUIRE(rw.applied);
    CHECK(rw.grad_norm == Approx(r1.grad_norm).epsilon(1e-4));
    CHECK(rw.terms.total == Approx(r1.terms.total).epsilon(1e-4).margin(1e-6));
    CHECK(rw.terms.policy == Approx(r1.terms.policy).epsilon(1e-4).margin(1e-6));
    CHECK(rw.terms.baseline == Approx(r1.terms.baseline).epsilon(1e-4).margin(1e-6));
    CHECK(scaled_difference(many.gradients(), one.gradients()) < 1e-4);
    CHECK(scaled_difference(many.parameters(), one.parameters()) < 1e-5);
  }
  // Not vacuous: the steps moved the parameters.
  CHECK(scaled_difference(many.parameters(), Net(net0).parameters()) > 1e-5);
}

}  // namespace

TEST_CASE("host_trainer with W threads matches one thread: CartPole MLP+LSTM",
          "[trainer][threads]") {
  const auto net = cartpole_net();
  const owned_batch batch(20, 12, 2, 4, static_cast<std::size_t>(net.state_size()), -1.0, 1.0, 1);
  const seedrl::impala_loss<float> impala;
  const auto ppo = ppo_two_by_two();
  for (const std::size_t W : {2u, 3u, 5u}) {
    check_threads_match_one(net, impala, batch, W);
    check_threads_match_one(net, ppo, batch, W);  // 6 unrolls a minibatch; W = 5: 2,1,1,1,1
  }
  // More threads than unrolls: the extra lanes hold empty chunks.
  const owned_batch tiny(5, 2, 2, 4, static_cast<std::size_t>(net.state_size()), -1.0, 1.0, 2);
  check_threads_match_one(net, impala, tiny, 4);
}

TEST_CASE("host_trainer with W threads matches one thread: a pixel conv+LSTM agent",
          "[trainer][threads]") {
  const auto net = pixel_net();
  const owned_batch batch(6, 8, 4, 2 * 10 * 10, static_cast<std::size_t>(net.state_size()), 0.0,
                          255.0, 3);
  const seedrl::impala_loss<float> impala;
  const auto ppo = ppo_two_by_two();
  for (const std::size_t W : {2u, 3u}) {
    check_threads_match_one(net, impala, batch, W);
    check_threads_match_one(net, ppo, batch, W);
  }
}

TEST_CASE("host_trainer with W threads is deterministic for a given W", "[trainer][threads]") {
  const auto net0 = cartpole_net();
  const owned_batch batch(10, 10, 2, 4, static_cast<std::size_t>(net0.state_size()), -1.0, 1.0, 4);
  const auto ppo = ppo_two_by_two();
  auto a = net0, b = net0;
  seedrl::adam<float> oa, ob;
  seedrl::host_trainer ta(3, 3);
  seedrl::host_trainer tb(ta);  // a copy: the same seed state and count, threads of its own
  REQUIRE(tb.threads() == 3);
  for (int step = 0; step < 3; ++step) {
    (void)ta.train_step(batch.view(), a, oa, ppo, 40.0);
    (void)tb.train_step(batch.view(), b, ob, ppo, 40.0);
  }
  const auto pa = a.parameters(), pb = b.parameters();
  CHECK(std::equal(pa.begin(), pa.end(), pb.begin(), pb.end()));
}

TEST_CASE("host_trainer refuses 0 threads and can change its count between steps",
          "[trainer][threads]") {
  CHECK_THROWS_AS(seedrl::host_trainer(0, 0), std::invalid_argument);
  seedrl::host_trainer t(1, 2);
  CHECK_THROWS_AS(t.set_threads(0), std::invalid_argument);
  auto net = cartpole_net();
  auto ref = net;
  const owned_batch batch(5, 4, 2, 4, static_cast<std::size_t>(net.state_size()), -1.0, 1.0, 5);
  seedrl::adam<float> o1, o2;
  seedrl::host_trainer one(1, 1);
  const seedrl::impala_loss<float> impala;
  (void)t.train_step(batch.view(), net, o1, impala, 1e9);
  (void)one.train_step(batch.view(), ref, o2, impala, 1e9);
  t.set_threads(1);
  CHECK(t.threads() == 1);
  (void)t.train_step(batch.view(), net, o1, impala, 1e9);
  (void)one.train_step(batch.view(), ref, o2, impala, 1e9);
  CHECK(scaled_difference(net.parameters(), ref.parameters()) < 1e-5);
}

namespace {

/// A TrainingModel that records what train_on_batch asks of it. Every row's output value is
/// its first observation element, so the proximal values a minibatch step receives show which
/// rows were gathered.
struct recording_model {
  std::vector<std::string> calls;
  std::vector<float> values;  ///< the last forward's, one per row
  std::size_t minibatch_rows_checked = 0;

  void forward(const seedrl::training_batch<float>& batch) {
    calls.push_back("forward B=" + std::to_string(batch.B));
    const std::size_t rows = (batch.T + 1) * batch.B, obs = batch.observations.size() / rows;
    values.resize(rows);
    for (std::size_t r = 0; r < rows; ++r)
      values[r] = batch.observations[r * obs];
  }
  void copy_outputs(std::vector<float>& logits, std::vector<float>& out) const {
    logits.assign(values.size() * 2, 0.0f);
    out = values;
  }
  template <class L>
  seedrl::loss_terms loss(const seedrl::training_batch<float>& batch, const L&,
                          seedrl::proximal_outputs<float> proximal) {
    calls.push_back("loss");
    if (!proximal.values.empty()) {  // the whole batch's outputs, at this minibatch's rows
      REQUIRE(proximal.values.size() == values.size());
      for (std::size_t r = 0; r < values.size(); ++r)
        CHECK(proximal.values[r] == values[r]);
      minibatch_rows_checked += values.size();
    }
    seedrl::loss_terms t{};
    t.total = static_cast<double>(batch.B);
    return t;
  }
  void backward(const seedrl::training_batch<float>&) { calls.push_back("backward"); }
  void reduce(seedrl::distributed::gradient_reducer& r) {
    calls.push_back("reduce");
    float g[] = {1.0f};
    r.mean(std::span<float>(g));
  }
  void apply(double max_grad_norm, seedrl::train_step_result& r) {
    calls.push_back("apply");
    r.grad_norm = max_grad_norm;
  }
};

/// A reducer of two ranks whose other rank always holds zeros: a mean halves every value.
struct halving_reducer final : seedrl::distributed::gradient_reducer {
  std::vector<std::string>* calls;
  explicit halving_reducer(std::vector<std::string>* c) : calls(c) {}
  int rank() const override { return 0; }
  int ranks() const override { return 2; }
  void mean(std::span<float> v) override {
    calls->push_back("mean of " + std::to_string(v.size()));
    for (float& x : v)
      x *= 0.5f;
  }
  void mean(std::span<double> v) override {
    calls->push_back("mean of " + std::to_string(v.size()) + " doubles");
    for (double& x : v)
      x *= 0.5;
  }
  std::vector<std::uint64_t> gather(std::uint64_t h) override { return {h, h}; }
  std::vector<double> gather(std::span<const double> v) override {
    std::vector<double> all(v.begin(), v.end());
    all.resize(2 * v.size(), 0.0);
    return all;
  }
  [[noreturn]] void abort_all(int code) noexcept override { std::_Exit(code); }
  std::string describe() const override { return "halving"; }
};

}  // namespace

// The one step protocol (runtime/training_step.hpp) that host_trainer and backend_agent_trainer
// both run, on a model that only records: the order of the passes, the proximal pass, the
// minibatches' rows of the proximal outputs, and the refusals before any work.
TEST_CASE("train_on_batch: passes in order, the proximal pass once, minibatches' proximal rows",
          "[trainer]") {
  const owned_batch batch(3, 4, 2, 5, 0, -1.0, 1.0, 8);
  seedrl::random_generator rng(1);
  seedrl::minibatch_scratch<float> mb;
  static_assert(seedrl::TrainingModel<recording_model, float, seedrl::ppo_loss<float>>);

  SECTION("IMPALA: one step, no proximal pass") {
    recording_model m;
    const auto r =
        seedrl::train_on_batch(m, batch.view(), seedrl::impala_loss<float>(), 7.0, rng, mb, "test");
    CHECK(m.calls == std::vector<std::string>{"forward B=4", "loss", "backward", "apply"});
    CHECK(r.applied);
    CHECK(r.grad_norm == 7.0);
  }
  SECTION("PPO, 2 epochs x 2 minibatches: one whole forward, then four steps of 2 unrolls") {
    recording_model m;
    const auto r = seedrl::train_on_batch(m, batch.view(), ppo_two_by_two(), 7.0, rng, mb, "test");
    std::vector<std::string> want{"forward B=4"};
    for (int i = 0; i < 4; ++i)
      want.insert(want.end(), {"forward B=2", "loss", "backward", "apply"});
    CHECK(m.calls == want);
    CHECK(m.minibatch_rows_checked == 4 * (3 + 1) * 2);
    CHECK(r.terms.total == Approx(2.0));  // the steps' mean
  }
  SECTION("with a reducer: each step's gradient between backward and apply, the terms once") {
    recording_model m;
    halving_reducer reducer(&m.calls);
    const auto r =
        seedrl::train_on_batch(m, batch.view(), ppo_two_by_two(), 7.0, rng, mb, "test", &reducer);
    std::vector<std::string> want{"forward B=4"};
    for (int i = 0; i < 4; ++i)
      want.insert(want.end(), {"forward B=2", "loss", "backward", "reduce", "mean of 1", "apply"});
    want.push_back("mean of 9 doubles");
    CHECK(m.calls == want);
    CHECK(r.terms.total == Approx(1.0));  // the steps' mean, then the ranks' (the other: 0)
  }
  SECTION("bad max_grad_norm or schedule: refused before any pass") {
    recording_model m;
    for (const double bad : {0.0, -1.0, std::nan("")})
      CHECK_THROWS_AS(seedrl::train_on_batch(m, batch.view(), seedrl::impala_loss<float>(), bad,
                                             rng, mb, "test"),
                      std::invalid_argument);
    seedrl::ppo_loss_config<float> c;
    c.minibatches = 3;  // 4 unrolls do not split in 3
    CHECK_THROWS_AS(
        seedrl::train_on_batch(m, batch.view(), seedrl::ppo_loss<float>(c), 1.0, rng, mb, "test"),
        std::invalid_argument);
    CHECK(m.calls.empty());
  }
}

TEST_CASE("host_trainer refuses max_grad_norm <= 0 before any work", "[trainer]") {
  auto net = cartpole_net();
  const auto before = std::vector<float>(net.parameters().begin(), net.parameters().end());
  const owned_batch batch(5, 4, 2, 4, static_cast<std::size_t>(net.state_size()), -1.0, 1.0, 5);
  seedrl::adam<float> opt;
  seedrl::host_trainer t(1, 2);
  CHECK_THROWS_WITH(t.train_step(batch.view(), net, opt, ppo_two_by_two(), 0.0),
                    Catch::Contains("seedrl::host_trainer::train_step needs max_grad_norm > 0"));
  CHECK(opt.step_count() == 0);
  CHECK(std::equal(before.begin(), before.end(), net.parameters().begin()));
}
