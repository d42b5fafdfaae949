// R2D2 in the training step (seedrl/runtime/training_step.hpp over host_trainer): the burn-in
// passes no gradient (the trainer's gradient against central differences of the loss from the
// warmed state held fixed, and apart from the differences with the burn-in recomputed), and
// the target network is a copy of the online one refreshed every update period; the actors'
// epsilon-greedy schedule and explorer indices.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "gradcheck.hpp"
#include "seedrl/algo/r2d2_loss.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/detail/explorer_registry.hpp"
#include "seedrl/runtime/trainer.hpp"

namespace {

/// An optimizer that records the gradient it is given and changes nothing.
struct recording_optimizer {
  using scalar_type = double;
  std::vector<double> gradient;
  std::int64_t steps = 0;
  void step(std::span<double>, std::span<const double> g) {
    gradient.assign(g.begin(), g.end());
    ++steps;
  }
  std::int64_t step_count() const { return steps; }
  std::vector<std::byte> save_state() const { return {}; }
  void load_state(std::span<const std::byte>) {}
};

struct sequences {
  std::size_t T, B, obs = 3, A = 3;
  std::vector<double> observations, rewards, behaviour, start;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;
  std::vector<double> weights;

  sequences(std::size_t t, std::size_t b, std::size_t state_width, seedrl::random_generator& rng)
      : T(t), B(b) {
    const std::size_t rows = (T + 1) * B;
    observations = seedrl_test::random_vector(rows * obs, rng);
    rewards = seedrl_test::random_vector(rows, rng, 2.0);
    behaviour.assign(rows, 0.0);
    start = seedrl_test::random_vector(B * state_width, rng, 0.5);
    for (std::size_t i = 0; i < rows; ++i) {
      dones.push_back(rng.uniform() < 0.12 ? 1 : 0);
      truncated.push_back(dones.back() != 0 && rng.uniform() < 0.5 ? 1 : 0);
      prev_actions.push_back(static_cast<std::int32_t>(rng.uniform() * 3.0) % 3);
      actions.push_back(static_cast<std::int32_t>(rng.uniform() * 3.0) % 3);
    }
    for (std::size_t i = 0; i < B; ++i)
      weights.push_back(0.3 + 0.7 * rng.uniform());
  }

  seedrl::training_batch<double> view() const {
    seedrl::training_batch<double> b{
        T, B, A, observations, rewards, dones, truncated, prev_actions, actions, behaviour, start};
    b.importance_weights = weights;
    return b;
  }
};

seedrl::mlp_lstm_agent_config small_agent() {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 3;
  c.num_actions = 3;
  c.hidden_sizes = {5};
  c.lstm_size = 4;
  c.seed = 7;
  return c;
}

/// The loss on steps [burn, T] from `start`, with `target` outputs held: what the trainer
/// differentiates once the burn-in has set the state.
double loss_from(seedrl::mlp_lstm_agent<double>& net, const sequences& s, std::size_t burn,
                 std::span<const double> start, const std::vector<double>& target_logits,
                 const std::vector<double>& target_values, const seedrl::r2d2_loss<double>& loss) {
  const std::size_t B = s.B, steps = s.T + 1 - burn, rows = steps * B;
  std::vector<double> logits(rows * s.A), values(rows);
  seedrl::agent_unroll_output<double> out{logits, values};
  const auto from = [&](const auto& v, std::size_t w) {
    return std::span(v).subspan(burn * B * w);
  };
  net.forward_unroll({steps, B, from(s.observations, s.obs), from(s.rewards, 1), from(s.dones, 1),
                      from(s.prev_actions, 1), start},
                     out);
  std::vector<double> gl(logits.size()), gv(values.size());
  seedrl::r2d2_gradients<double> g{gl, gv};
  return loss({s.T - burn, B, s.A, logits, values, target_logits, target_values, from(s.actions, 1),
               from(s.rewards, 1), from(s.dones, 1), from(s.truncated, 1), s.weights},
              g)
      .total;
}

/// The state after stepping `net` over the first `burn` steps from the batch's start state.
std::vector<double> warmed_state(seedrl::mlp_lstm_agent<double>& net, const sequences& s,
                                 std::size_t burn) {
  auto state = net.initial_state(s.B);
  std::copy(s.start.begin(), s.start.end(), state.data.begin());
  std::vector<double> logits(s.B * s.A), values(s.B);
  for (std::size_t t = 0; t < burn; ++t) {
    const auto rows = [&](const auto& v, std::size_t w) {
      return std::span(v).subspan(t * s.B * w, s.B * w);
    };
    seedrl::agent_step_output<double> out{logits, values};
    net.infer({rows(s.observations, s.obs), rows(s.rewards, 1), rows(s.dones, 1),
               rows(s.prev_actions, 1)},
              state, out);
  }
  return state.data;
}

/// The target network's outputs on the trained steps: `target` over the whole sequence from its
/// stored start state, the rows from step `burn` on (what the trainer's target_forward keeps).
struct target_outputs {
  std::vector<double> logits, values;
  target_outputs(seedrl::mlp_lstm_agent<double>& target, const sequences& s, std::size_t burn) {
    const std::size_t rows = (s.T + 1) * s.B;
    std::vector<double> l(rows * s.A), v(rows);
    seedrl::agent_unroll_output<double> out{l, v};
    target.forward_unroll(
        {s.T + 1, s.B, s.observations, s.rewards, s.dones, s.prev_actions, s.start}, out);
    const std::size_t from = burn * s.B;
    logits.assign(l.begin() + static_cast<std::ptrdiff_t>(from * s.A), l.end());
    values.assign(v.begin() + static_cast<std::ptrdiff_t>(from), v.end());
  }
};

}  // namespace

TEST_CASE("R2D2's burn-in passes no gradient: finite differences from the warmed state",
          "[r2d2][trainer]") {
  seedrl::random_generator rng(41);
  seedrl::mlp_lstm_agent<double> net(small_agent());
  const auto W = static_cast<std::size_t>(net.state_size());
  const sequences s(7, 3, W, rng);
  seedrl::r2d2_loss_config<double> config;
  config.burn_in = 3;
  config.n_step = 2;
  config.discount = 0.9;
  config.target_update_period = 1000;
  const seedrl::r2d2_loss<double> loss(config);
  // The trainer's target network is a copy of the parameters at its first step: this one.
  seedrl::mlp_lstm_agent<double> target(net);
  seedrl::host_trainer trainer(3);
  recording_optimizer opt;
  const auto r = trainer.train_step(s.view(), net, opt, loss, 1e9);
  REQUIRE(r.applied);
  REQUIRE(r.priorities.size() == s.B);
  for (const double p : r.priorities)
    CHECK(p > 0.0);

  const target_outputs t(target, s, config.burn_in);
  const std::vector<double> warm = warmed_state(net, s, config.burn_in);
  CHECK(warm != s.start);  // the burn-in moved the state
  CHECK(r.terms.total ==
        Approx(loss_from(net, s, config.burn_in, warm, t.logits, t.values, loss)).epsilon(1e-12));
  const auto params = net.parameters();
  // With the warmed state held, differences match the trainer's gradient ...
  const auto held = seedrl_test::gradcheck(params, opt.gradient, [&] {
    return loss_from(net, s, config.burn_in, warm, t.logits, t.values, loss);
  });
  CHECK(held.norm_relative_error < 1e-6);
  // ... and with the burn-in recomputed at each perturbation (gradient through the burn-in)
  // they do not: the check above would see a gradient leaking into the burn-in.
  const auto leaking = seedrl_test::gradcheck(params, opt.gradient, [&] {
    const auto w = warmed_state(net, s, config.burn_in);
    return loss_from(net, s, config.burn_in, w, t.logits, t.values, loss);
  });
  CHECK(leaking.norm_relative_error > 1e-3);
}

TEST_CASE("R2D2's target network is the online one, copied every update period",
          "[r2d2][trainer]") {
  seedrl::random_generator rng(42);
  seedrl::mlp_lstm_agent<double> net(small_agent());
  const auto W = static_cast<std::size_t>(net.state_size());
  const sequences s(4, 2, W, rng);
  seedrl::r2d2_loss_config<double> config;
  config.burn_in = 1;
  config.n_step = 3;
  config.target_update_period = 2;
  const seedrl::r2d2_loss<double> loss(config);
  seedrl::host_trainer trainer(5);
  recording_optimizer opt;
  // The loss depends on the parameters through the online outputs and, via the target copy,
  // through the targets. Changing the parameters between steps shows which copy the targets
  // come from: the loss of step k matches the loss computed with the target = the
  // parameters at the last copy (steps 0, 2, 4 copy).
  std::vector<std::vector<double>> copied;
  for (int step = 0; step < 5; ++step) {
    if (step % 2 == 0)
      copied.emplace_back(net.parameters().begin(), net.parameters().end());
    const auto r = trainer.train_step(s.view(), net, opt, loss, 1e9);
    seedrl::mlp_lstm_agent<double> target(net);
    std::copy(copied.back().begin(), copied.back().end(), target.parameters().begin());
    const target_outputs t(target, s, config.burn_in);
    const auto warm = warmed_state(net, s, config.burn_in);
    CAPTURE(step);
    CHECK(r.terms.total ==
          Approx(loss_from(net, s, config.burn_in, warm, t.logits, t.values, loss)).epsilon(1e-12));
    for (double& p : net.parameters())  // a change the recording optimizer does not make
      p += 0.01 * rng.uniform(-1.0, 1.0);
  }
}

TEST_CASE("epsilon-greedy: the Ape-X schedule, its draws and exact behaviour log-probs",
          "[r2d2][sampler]") {
  seedrl::epsilon_greedy_sampler s{0.4, 7.0, 8};
  CHECK(s.epsilon(0) == Approx(0.4));
  CHECK(s.epsilon(7) == Approx(std::pow(0.4, 8.0)));
  CHECK(s.epsilon(3) == Approx(std::pow(0.4, 1.0 + 7.0 * 3.0 / 7.0)));
  CHECK(s.epsilon(8) == s.epsilon(0));  // i mod N
  CHECK(seedrl::epsilon_greedy_sampler{0.3, 7.0, 1}.epsilon(5) == Approx(0.3));
  // Three actions, greedy action 1; explorer 0 (eps 0.4) and explorer 7 (eps 0.4^8).
  const std::vector<float> q = {0.1f, 0.9f, 0.2f, 0.1f, 0.9f, 0.2f};
  const std::uint32_t explorers[] = {0, 7};
  seedrl::random_generator rng(9);
  std::vector<std::int32_t> actions(2);
  std::vector<float> logp(2);
  const seedrl::action_buffers<float> out{actions, {}, {}, {}, {}, 0};
  std::array<int, 3> counts{};
  int off_greedy_7 = 0;
  const int draws = 30000;
  for (int i = 0; i < draws; ++i) {
    s.sample(std::span<const float>(q), 2, 3, rng, out, std::span<float>(logp),
             std::span<const std::uint32_t>(explorers));
    ++counts[static_cast<std::size_t>(actions[0])];
    off_greedy_7 += actions[1] != 1;
    for (int r = 0; r < 2; ++r) {
      const double eps = s.epsilon(explorers[r]);
      const double p = eps / 3.0 + (actions[static_cast<std::size_t>(r)] == 1 ? 1.0 - eps : 0.0);
      REQUIRE(logp[static_cast<std::size_t>(r)] == Approx(std::log(p)).epsilon(1e-6));
    }
  }
  // explorer 0: P(1) = 0.6 + 0.4/3, P(0) = P(2) = 0.4/3; 4 sigma of a binomial
  CHECK(std::abs(counts[0] - draws * 0.4 / 3.0) < 4.0 * std::sqrt(draws * 0.133 * 0.867));
  CHECK(std::abs(counts[1] - draws * (0.6 + 0.4 / 3.0)) < 4.0 * std::sqrt(draws * 0.733 * 0.267));
  CHECK(off_greedy_7 < 40);  // expected 0.4^8 * 2/3 * 30000 = 13
  // Greedy selection (evaluation) never explores.
  s.selection = seedrl::action_selection::greedy;
  for (int i = 0; i < 100; ++i) {
    s.sample(std::span<const float>(q), 2, 3, rng, out, std::span<float>(logp),
             std::span<const std::uint32_t>(explorers));
    REQUIRE(actions[0] == 1);
  }
  CHECK_THROWS_AS(
      seedrl::epsilon_greedy_sampler{}.check(seedrl::action_spec::continuous({1}, -1.0, 1.0)),
      std::invalid_argument);
}

TEST_CASE("explorer indices follow an actor's name across reconnects", "[r2d2][sampler]") {
  seedrl::detail::explorer_registry r;
  CHECK(r.attach("a", 4, 0) == 0);
  CHECK(r.attach("b", 2, 4) == 4);
  r.detach(0);
  CHECK(r.attach("c", 3, 6) == 6);
  CHECK(r.attach("a", 4, 9) == 0);   // back, at other slots: its indices again
  CHECK(r.attach("a", 4, 13) == 9);  // a second "a" while the first is connected: its own
  r.detach(4);
  CHECK(r.attach("b", 5, 17) == 13);  // more envs than before: fresh indices
  r.detach(9);
  r.detach(13);
  CHECK(r.attach("a", 2, 22) == 0);  // fewer envs: a prefix of its indices
}
