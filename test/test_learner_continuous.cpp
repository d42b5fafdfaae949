// Continuous actions through the learner and the actors: Pendulum actors over the in-process
// transport against a learner with a gaussian_sampler and a trainer that records its batches.
// Every env must have received exactly the squashed (or clipped) version of the raw sample the
// unroll holds, the recorded log-prob must be the Gaussian's at that sample under the
// network's outputs replayed independently (a float64 formula, not diag_gaussian.hpp), the
// previous actions must be what each env got one step before, zero at episode starts. Bad
// input: a continuous spec with a categorical sampler, an actor with another action size.
// Observation normalization and reward scaling: the unrolls hold what a float64 replay of the
// envs' records gives, and the statistics survive a checkpoint.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "recording_trainer.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/running_mean_std.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/env/pendulum.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/progress.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/transport/in_process.hpp"
#include "wait_for.hpp"

namespace {

using namespace std::chrono_literals;

/// An MLP+LSTM agent with a Gaussian policy head: rows of [mean, log_std] for Pendulum's
/// torque(s), the log-stds one vector or (state_dependent_log_std) policy outputs; its core
/// reads the previous torque as its value.
using cont_net = seedrl::mlp_lstm_agent<float>;

cont_net make_cont_net(std::uint64_t seed, bool state_dependent_log_std = false,
                       std::int32_t D = 1) {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 3;
  c.hidden_sizes = {8};
  c.lstm_size = 8;
  c.continuous_action_size = D;
  c.num_actions = 2 * D;
  if (!state_dependent_log_std)
    c.log_std_init = 0.0;
  c.seed = seed;
  return cont_net(c);
}

/// Moves the parameters away from the initial near-zero outputs, so that every input (the
/// previous torque too) moves the mean and log-std.
void randomize(cont_net& net, std::uint64_t seed) {
  seedrl::random_generator rng(seed);
  for (float& p : net.parameters())
    p = static_cast<float>(rng.uniform(-0.6, 0.6));
}

/// What one env saw and did, agent step by agent step: step j's observation, the reward and
/// done flag that came with it, and the torque it received for it.
struct env_log {
  std::vector<std::array<float, 3>> observations;
  std::vector<float> rewards;
  std::vector<std::uint8_t> dones;
  std::vector<float> actions;
};
struct pendulum_logs {
  std::mutex mutex;
  std::map<int, env_log> envs;
};

/// Pendulum that logs every step and ends its episodes (truncated) after `episode_length`
/// steps, so that unrolls cross episode starts often.
class logged_pendulum : public seedrl::pendulum {
 public:
  logged_pendulum(int id, int episode_length, std::shared_ptr<pendulum_logs> logs)
      : id_(id), length_(episode_length), logs_(std::move(logs)) {}

  void reset(std::span<float> observation) {
    seedrl::pendulum::reset(observation);
    steps_ = 0;
    std::lock_guard lock(logs_->mutex);
    auto& l = logs_->envs[id_];
    if (ended_) {  // env_batch resets after the step that ended the episode: the agent sees this
      std::copy_n(observation.begin(), 3, l.observations.back().begin());
    } else {
      l.observations.push_back({observation[0], observation[1], observation[2]});
      l.rewards.push_back(0.0f);
      l.dones.push_back(1);  // the actor marks its first observations as episode starts
    }
    ended_ = false;
  }

  seedrl::step_result step(action_type action, std::span<float> observation) {
    seedrl::step_result r = seedrl::pendulum::step(action, observation);
    if (++steps_ == length_)
      r.truncated = true;
    ended_ = r.done();
    std::lock_guard lock(logs_->mutex);
    auto& l = logs_->envs[id_];
    l.actions.push_back(action[0]);
    l.observations.push_back({observation[0], observation[1], observation[2]});
    l.rewards.push_back(static_cast<float>(r.reward));
    l.dones.push_back(r.done() ? 1 : 0);
    return r;
  }

 private:
  int id_;
  int length_;
  int steps_ = 0;
  bool ended_ = false;
  std::shared_ptr<pendulum_logs> logs_;
};

using seedrl_test::recorded_batch;
using seedrl_test::recording_trainer;

using cont_learner =
    seedrl::learner<cont_net, seedrl::adam<float>, seedrl::in_process_transport, recording_trainer,
                    seedrl::impala_loss<float>, seedrl::gaussian_sampler>;

// Independent float64 references (not diag_gaussian.hpp).
double clamped_log_std(double l) {
  return std::min(2.0, std::max(-20.0, l));
}
double gaussian_log_prob(double mean, double log_std, double u) {
  const double l = clamped_log_std(log_std);
  const double z = (u - mean) / std::exp(l);
  return -0.5 * z * z - l - 0.5 * std::log(2.0 * 3.14159265358979323846);
}
double squashed(double u, double low, double high) {
  return low + (std::tanh(u) + 1.0) / 2.0 * (high - low);
}
double squash_log_det(double u, double low, double high) {
  // log(1 - tanh(u)^2) = log(sech(u)^2) = log 4 - 2|u| - 2 log(1 + exp(-2|u|)), finite for
  // any u, where 1 - tanh(u)^2 itself rounds to 0 from |u| of about 19.
  const double a = std::abs(u);
  return std::log(4.0) - 2.0 * a - 2.0 * std::log1p(std::exp(-2.0 * a)) +
         std::log((high - low) / 2.0);
}

seedrl::learner_config small_config(std::size_t T, std::size_t B) {
  seedrl::learner_config lc;
  lc.unroll_length = T;
  lc.batch_size = B;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  lc.seed = 5;
  return lc;
}

}  // namespace

TEST_CASE("continuous actions: every env got the squashed or clipped sample its unroll records",
          "[learner][continuous]") {
  const auto bounds = GENERATE(seedrl::bounds_handling::squash, seedrl::bounds_handling::clip);
  const bool squash = bounds == seedrl::bounds_handling::squash;
  INFO((squash ? "squash" : "clip"));
  constexpr std::size_t T = 5, B = 3, num_actors = 2, envs_per_actor = 2, wanted_batches = 16;
  const double low = -2.0, high = 2.0;
  // Both log-std layouts of the head, one with each way of bounding.
  cont_net net = make_cont_net(11, squash);
  randomize(net, 12);
  recording_trainer trainer;
  const auto record = trainer.r;
  const auto logs = std::make_shared<pendulum_logs>();
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-continuous"};
  cont_learner learner(small_config(T, B), net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                       seedrl::pendulum::observation_spec(), seedrl::pendulum::action_spec(),
                       trainer, seedrl::gaussian_sampler{.bounds = bounds});
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::atomic<bool> stop{false};
  std::vector<std::thread> actors;
  for (std::size_t n = 0; n < num_actors; ++n) {
    actors.emplace_back([&, n] {
      seedrl::actor_config ac;
      ac.num_envs = envs_per_actor;
      ac.actor_id = n;
      ac.seed = 200 + n;
      seedrl::actor<logged_pendulum, std::function<seedrl::in_process_connection()>> a(
          ac,
          [&, n](std::size_t i) {
            const int id = static_cast<int>(n * envs_per_actor + i);
            return logged_pendulum(id, 4 + id, logs);  // episodes of 4..7 steps
          },
          [&] { return transport.connect(endpoint); });
      a.run(stop);
    });
  }
  const bool enough = seedrl_test::wait_for(
      [&] {
        std::lock_guard lock(record->mutex);
        return record->batches.size() >= wanted_batches;
      },
      20s);
  stop = true;  // actors first: the logs then hold every action any unroll contains
  for (auto& a : actors)
    a.join();
  learner.stop();
  REQUIRE(enough);

  std::lock_guard lock_logs(logs->mutex);
  std::lock_guard lock_record(record->mutex);
  // Where each observation was seen: (env, agent step). Pendulum's random starts make them
  // unique in practice; a repeat would make the lookup below ambiguous, so it is counted.
  std::map<std::array<float, 3>, std::pair<int, std::size_t>> seen_at;
  std::size_t repeats = 0;
  for (const auto& [id, l] : logs->envs)
    for (std::size_t j = 0; j < l.observations.size(); ++j)
      repeats += seen_at.emplace(l.observations[j], std::pair{id, j}).second ? 0 : 1;
  REQUIRE(repeats == 0);

  cont_net replay(net);  // the parameters inference used: the trainer changed none
  cont_net whole(net);
  std::size_t rows_checked = 0, starts = 0, clipped = 0;
  for (std::size_t n = 0; n < record->batches.size(); ++n) {
    const auto& b = record->batches[n];
    REQUIRE(b.T == T);
    REQUIRE(b.B == B);
    REQUIRE(b.D == 1);
    REQUIRE(b.num_actions == 2);  // the policy width: mean and log-std
    const std::size_t rows = (T + 1) * B;
    REQUIRE(b.raw_actions.size() == rows);
    REQUIRE(b.prev_env_actions.size() == rows);
    // The int32 arrays stay zero for continuous runs.
    for (std::size_t r = 0; r < rows; ++r) {
      CHECK(b.actions[r] == 0);
      CHECK(b.prev_actions[r] == 0);
    }
    // The whole batch forward, as a trainer would run it, gives the behaviour log-probs back.
    std::vector<float> outputs(rows * 2), values(rows);
    seedrl::agent_unroll_output<float> out{outputs, values};
    whole.forward_unroll({T + 1, B, b.observations, b.rewards, b.dones, b.prev_actions,
                          b.start_state, b.prev_env_actions},
                         out);
    for (std::size_t r = 0; r < rows; ++r) {
      const double u = b.raw_actions[r];
      double want = gaussian_log_prob(outputs[2 * r], outputs[2 * r + 1], u);
      if (squash)
        want -= squash_log_det(u, low, high);
      INFO("batch " << n << " row " << r);
      CHECK(static_cast<double>(b.behaviour_log_probs[r]) ==
            Approx(want).epsilon(1e-4).margin(1e-4));
    }
    for (std::size_t c = 0; c < B; ++c) {
      std::array<float, 3> first{};
      std::copy_n(b.observations.begin() + static_cast<std::ptrdiff_t>(c * 3), 3, first.begin());
      const auto where = seen_at.find(first);
      REQUIRE(where != seen_at.end());
      const auto [env, j0] = where->second;
      const auto& l = logs->envs.at(env);
      auto state = replay.initial_state(1);
      const std::size_t W = static_cast<std::size_t>(replay.state_size());
      std::copy_n(b.start_state.begin() + static_cast<std::ptrdiff_t>(c * W), W,
                  state.data.begin());
      for (std::size_t t = 0; t <= T; ++t) {
        const std::size_t r = t * B + c, j = j0 + t;
        INFO("batch " << n << " column " << c << " env " << env << " agent step " << j);
        REQUIRE(j < l.actions.size());  // the env was stepped with every action sent
        for (std::size_t i = 0; i < 3; ++i)
          CHECK(b.observations[r * 3 + i] == l.observations[j][i]);
        CHECK(b.rewards[r] == l.rewards[j]);
        CHECK(b.dones[r] == l.dones[j]);
        // The env got the squashed (or clipped) raw sample, as float32.
        const double u = b.raw_actions[r];
        const double a = squash ? squashed(u, low, high) : std::min(high, std::max(low, u));
        CHECK(static_cast<double>(l.actions[j]) == Approx(a).margin(4e-6));
        clipped += (!squash && (u < low || u > high)) ? 1 : 0;
        // The previous action is exactly what the env got one step before; zero at starts.
        const float prev = (l.dones[j] != 0) ? 0.0f : l.actions[j - 1];
        CHECK(b.prev_env_actions[r] == prev);
        starts += l.dones[j];
        // Replay inference alone, one step at a time from the unroll's start state and the
        // env's own record of its inputs.
        std::array<float, 2> step_out{};
        std::array<float, 1> value{};
        const std::array<float, 1> reward{l.rewards[j]};
        const std::array<std::uint8_t, 1> done{l.dones[j]};
        const std::array<std::int32_t, 1> no_discrete{0};
        const std::array<float, 1> prev_action{prev};
        seedrl::agent_step_output<float> so{step_out, value};
        replay.infer({l.observations[j], reward, done, no_discrete, prev_action}, state, so);
        double want = gaussian_log_prob(step_out[0], step_out[1], u);
        if (squash)
          want -= squash_log_det(u, low, high);
        CHECK(static_cast<double>(b.behaviour_log_probs[r]) ==
              Approx(want).epsilon(1e-4).margin(1e-4));
        ++rows_checked;
      }
    }
  }
  CHECK(rows_checked == record->batches.size() * (T + 1) * B);
  CHECK(starts > 0);  // episode starts inside the checked rows
  if (!squash)
    CHECK(clipped > 0);  // and samples beyond the bounds, clipped for the env
}

TEST_CASE("continuous actions: the previous action enters the core as its values",
          "[learner][continuous]") {
  cont_net net = make_cont_net(3, true);
  randomize(net, 4);
  auto s0 = net.initial_state(1), s1 = net.initial_state(1), s2 = net.initial_state(1);
  const std::array<float, 3> obs{0.5f, -0.25f, 1.0f};
  const std::array<float, 1> reward{-1.0f};
  const std::array<std::int32_t, 1> none{0};
  const std::array<float, 1> a{1.5f}, b{-0.75f};
  std::array<float, 2> out_a{}, out_b{}, out_start{};
  std::array<float, 1> value{};
  const std::array<std::uint8_t, 1> mid{0}, start{1};
  seedrl::agent_step_output<float> oa{out_a, value}, ob{out_b, value}, os{out_start, value};
  net.infer({obs, reward, mid, none, a}, s0, oa);
  net.infer({obs, reward, mid, none, b}, s1, ob);
  CHECK(out_a[0] != out_b[0]);  // the previous torque is an input
  // At an episode start it is not: any previous action gives the zero-action outputs.
  std::array<float, 2> out_zero{};
  auto s3 = net.initial_state(1);
  seedrl::agent_step_output<float> oz{out_zero, value};
  const std::array<float, 1> zero{0.0f}, no_reward{0.0f};
  net.infer({obs, reward, start, none, a}, s2, os);
  net.infer({obs, no_reward, mid, none, zero}, s3, oz);
  CHECK(out_start[0] == out_zero[0]);
  CHECK(out_start[1] == out_zero[1]);
  // The wrong number of values is refused.
  const std::array<float, 2> two{0.0f, 0.0f};
  auto s4 = net.initial_state(1);
  CHECK_THROWS_AS(net.infer({obs, reward, mid, none, two}, s4, oa), std::invalid_argument);
}

TEST_CASE("gaussian_sampler squashes or clips its draws and takes the mean when greedy",
          "[learner][continuous]") {
  // Two rows of two dimensions: [mean0, mean1, log_std0, log_std1].
  const std::vector<float> outputs{0.3f, -1.0f, -0.5f, 0.2f, 2.5f, 0.0f, -1.0f, 0.7f};
  const std::vector<float> low{-1.0f, 0.0f}, high{1.0f, 3.0f};
  const auto spec = seedrl::action_spec::continuous({2}, -1.0, 1.0);
  for (const auto mode : {seedrl::bounds_handling::squash, seedrl::bounds_handling::clip}) {
    for (const auto sel : {seedrl::action_selection::sample, seedrl::action_selection::greedy}) {
      const bool squash = mode == seedrl::bounds_handling::squash;
      const bool greedy = sel == seedrl::action_selection::greedy;
      INFO("squash " << squash << " greedy " << greedy);
      const seedrl::gaussian_sampler sampler{mode, sel};
      REQUIRE(sampler.outputs_per_row(spec) == 4);
      std::vector<float> env(4), raw(4), logp(2);
      seedrl::random_generator rng(9), noise(9);
      sampler.sample<float>(outputs, 2, 4, rng, {{}, env, raw, low, high, 2}, logp);
      for (std::size_t r = 0; r < 2; ++r) {
        double lp = 0.0;
        for (std::size_t i = 0; i < 2; ++i) {
          const double mean = outputs[r * 4 + i], log_std = outputs[r * 4 + 2 + i];
          const double u = greedy ? mean : mean + std::exp(log_std) * noise.normal();
          CHECK(raw[r * 2 + i] == Approx(u).margin(1e-5));
          const double a = squash ? squashed(raw[r * 2 + i], low[i], high[i])
                                  : std::min<double>(high[i], std::max<double>(low[i], u));
          CHECK(env[r * 2 + i] == Approx(a).margin(1e-5));
          lp += gaussian_log_prob(mean, log_std, raw[r * 2 + i]);
          if (squash)
            lp -= squash_log_det(raw[r * 2 + i], low[i], high[i]);
        }
        CHECK(logp[r] == Approx(lp).epsilon(1e-5).margin(1e-5));
      }
    }
  }
  CHECK_THROWS_WITH(seedrl::gaussian_sampler{}.check(seedrl::action_spec::discrete(3)),
                    Catch::Contains("continuous action spaces only"));
  CHECK_THROWS_WITH(seedrl::gaussian_sampler{}.check(seedrl::action_spec::continuous(
                        {1}, -std::numeric_limits<double>::infinity(), 1.0)),
                    Catch::Contains("finite for tanh squashing"));
  CHECK_NOTHROW(seedrl::gaussian_sampler{seedrl::bounds_handling::clip}.check(
      seedrl::action_spec::continuous({1}, -std::numeric_limits<double>::infinity(), 1.0)));
}

TEST_CASE("a continuous action spec with the categorical sampler is refused at construction",
          "[learner][continuous]") {
  using categorical_learner = seedrl::learner<cont_net, seedrl::adam<float>,
                                              seedrl::in_process_transport, recording_trainer>;
  CHECK_THROWS_WITH(
      categorical_learner(small_config(4, 2), make_cont_net(1), seedrl::adam<float>(),
                          seedrl::impala_loss<float>(), seedrl::pendulum::observation_spec(),
                          seedrl::pendulum::action_spec()),
      Catch::Contains("categorical_sampler") && Catch::Contains("continuous") &&
          Catch::Contains("gaussian_sampler"));
  // A network whose policy width is not the sampler's (2D = 2 for one torque) is refused too.
  CHECK_THROWS_WITH(
      cont_learner(small_config(4, 2), make_cont_net(1, false, 2), seedrl::adam<float>(),
                   seedrl::impala_loss<float>(), seedrl::pendulum::observation_spec(),
                   seedrl::pendulum::action_spec()),
      Catch::Contains("4 policy outputs per row") && Catch::Contains("reads 2"));
}

TEST_CASE("an actor whose action size differs from the learner's is refused at hello",
          "[learner][continuous]") {
  // The learner serves two torques; the Pendulum actor has one.
  const auto two = seedrl::action_spec::continuous({2}, -2.0, 2.0);
  const cont_net net = make_cont_net(1, false, 2);
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-continuous-mismatch"};
  cont_learner learner(small_config(4, 2), net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                       seedrl::pendulum::observation_spec(), two);
  learner.start();
  learner.serve(transport.listen(endpoint));
  seedrl::actor_config ac;
  ac.num_envs = 1;
  ac.max_steps = 10;
  seedrl::actor<seedrl::pendulum, std::function<seedrl::in_process_connection()>> a(
      ac, [](std::size_t) { return seedrl::pendulum(); },
      [&] { return transport.connect(endpoint); });
  std::atomic<bool> stop{false};
  CHECK_THROWS_WITH(a.run(stop), Catch::Contains("spec_mismatch") &&
                                     Catch::Contains("action shape: actor has [1]"));
  learner.stop();
}

namespace {
/// Pendulum with bounds that float32 cannot hold exactly (0.1f > 0.1).
struct narrow_pendulum : seedrl::pendulum {
  static seedrl::action_spec action_spec() {
    return seedrl::action_spec::continuous({1}, -0.1, 0.3);
  }
};
}  // namespace

TEST_CASE("actions at bounds that float32 cannot hold stay within them on the wire",
          "[learner][continuous]") {
  const auto bounds = GENERATE(seedrl::bounds_handling::squash, seedrl::bounds_handling::clip);
  cont_net net = make_cont_net(7);
  randomize(net, 8);  // wide Gaussians: most draws land on or beyond the bounds
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-continuous-narrow"};
  cont_learner learner(small_config(4, 2), net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                       narrow_pendulum::observation_spec(), narrow_pendulum::action_spec(),
                       recording_trainer{}, seedrl::gaussian_sampler{.bounds = bounds});
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::mutex m;
  std::vector<std::string> lines;
  seedrl::actor_config ac;
  ac.num_envs = 2;
  ac.max_steps = 300;
  ac.log = [&](const std::string& line) {
    std::lock_guard lock(m);
    lines.push_back(line);
  };
  seedrl::actor<narrow_pendulum, std::function<seedrl::in_process_connection()>> a(
      ac, [](std::size_t) { return narrow_pendulum(); },
      [&] { return transport.connect(endpoint); });
  std::atomic<bool> stop{false};
  CHECK(a.run(stop) == 300);
  learner.stop();
  std::lock_guard lock(m);
  // No broken link: every action passed the actor's bounds check.
  CHECK(lines.empty());
  if (!lines.empty())
    FAIL_CHECK(lines.front());
}

TEST_CASE(
    "impala_loss over a diagonal Gaussian: V-trace terms and gradients against float64 "
    "references",
    "[loss][continuous][gradcheck]") {
  const bool squash = GENERATE(false, true);
  INFO("squash " << squash);
  constexpr std::size_t T = 3, B = 2, D = 2, rows = (T + 1) * B, n = T * B;
  seedrl::random_generator rng(21);
  std::vector<double> outputs(rows * 2 * D), values(rows), u(rows * D), rewards(rows),
      behaviour(rows);
  for (auto& x : outputs)
    x = rng.uniform(-1.0, 1.0);
  for (auto& x : u)
    x = rng.uniform(-2.0, 2.0);
  for (auto& x : values)
    x = rng.uniform(-1.0, 1.0);
  for (auto& x : rewards)
    x = rng.uniform(-1.0, 1.0);
  std::vector<std::uint8_t> dones(rows, 0), truncated(rows, 0);
  dones[2 * B + 1] = 1;  // an episode end inside the unroll
  const std::vector<std::int32_t> actions(rows, 0);
  const std::vector<double> low{-1.0, 0.0}, high{1.0, 2.0};
  // Independent log pi(u) per row.
  const auto ref_log_prob = [&](std::size_t i) {
    double lp = 0.0;
    for (std::size_t k = 0; k < D; ++k) {
      const double x = u[i * D + k];
      lp += gaussian_log_prob(outputs[i * 2 * D + k], outputs[i * 2 * D + D + k], x);
      if (squash)
        lp -= squash_log_det(x, low[k], high[k]);
    }
    return lp;
  };
  // log mu far below log pi: every rho is clipped to 1 (both thresholds), so V-trace's targets
  // do not move with the policy outputs: on-policy n-step returns, and the loss is smooth in
  // the outputs.
  for (std::size_t i = 0; i < rows; ++i)
    behaviour[i] = ref_log_prob(i) - 5.0;
  seedrl::impala_loss_config<double> config;
  config.entropy_cost = 0.05;
  const seedrl::impala_loss<double, seedrl::diag_gaussian_distribution<double>> loss(
      config, {squash, low, high});
  std::vector<double> g_outputs(outputs.size()), g_values(rows);
  seedrl::impala_gradients<double> grad{g_outputs, g_values};
  const auto batch = [&] {
    return seedrl::impala_batch<double>{T,         B,       2 * D, outputs,   values, actions,
                                        behaviour, rewards, dones, truncated, u,      D};
  };
  const seedrl::loss_terms terms = loss(batch(), grad);

  // V-trace with rho = c = 1: vs_t = r_t + gamma_t vs_{t+1}, vs_T = V_T;
  // pg_adv_t = r_t + gamma_t vs_{t+1} - V_t.
  double policy = 0.0, entropy = 0.0;
  for (std::size_t b = 0; b < B; ++b) {
    double next_vs = values[T * B + b];
    for (std::size_t t = T; t-- > 0;) {
      const std::size_t i = t * B + b;
      const double gamma = dones[i + B] ? 0.0 : config.discount;
      const double target = rewards[i + B] + gamma * next_vs;
      policy += ref_log_prob(i) * (target - values[i]);
      next_vs = target;
      for (std::size_t k = 0; k < D; ++k) {
        entropy += 0.5 + 0.5 * std::log(2.0 * 3.14159265358979323846) +
                   clamped_log_std(outputs[i * 2 * D + D + k]);
      }
    }
  }
  CHECK(terms.policy == Approx(-policy / n).epsilon(1e-12).margin(1e-12));
  CHECK(terms.entropy == Approx(-config.entropy_cost * entropy / n).epsilon(1e-12));

  // The gradient w.r.t. the means and log-stds of steps 0..T-1 against central differences of
  // the total; step T's rows are zero.
  const std::vector<double> analytic(g_outputs.begin(), g_outputs.begin() + n * 2 * D);
  const auto total = [&] {
    std::vector<double> go(outputs.size()), gv(rows);
    seedrl::impala_gradients<double> g{go, gv};
    return loss(batch(), g).total;
  };
  double worst = 0.0;
  for (std::size_t j = 0; j < n * 2 * D; ++j) {
    const double saved = outputs[j], h = 1e-6;
    outputs[j] = saved + h;
    const double up = total();
    outputs[j] = saved - h;
    const double down = total();
    outputs[j] = saved;
    const double numeric = (up - down) / (2 * h);
    INFO("output " << j);
    CHECK(analytic[j] == Approx(numeric).epsilon(1e-6).margin(1e-8));
    worst = std::max(worst, std::abs(analytic[j]));
  }
  CHECK(worst > 1e-3);  // the check saw real gradients
  for (std::size_t j = n * 2 * D; j < g_outputs.size(); ++j)
    CHECK(g_outputs[j] == 0.0);
  // A batch without the raw samples is refused, saying what is missing.
  std::vector<double> go(outputs.size()), gv(rows);
  seedrl::impala_gradients<double> g{go, gv};
  auto missing = batch();
  missing.raw_actions = {};
  CHECK_THROWS_WITH(loss(missing, g), Catch::Contains("raw_actions"));
}

TEST_CASE("the learner trains a Gaussian policy with the IMPALA loss on Pendulum actors",
          "[learner][continuous]") {
  using gaussian_impala = seedrl::impala_loss<float, seedrl::diag_gaussian_distribution<float>>;
  using learner_t =
      seedrl::learner<cont_net, seedrl::adam<float>, seedrl::in_process_transport,
                      seedrl::host_trainer, gaussian_impala, seedrl::gaussian_sampler>;
  const cont_net net = make_cont_net(31);
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-continuous-train"};
  // The loss squashes into the bounds the sampler squashed into: log pi and log mu agree.
  learner_t learner(small_config(4, 2), net, seedrl::adam<float>(),
                    gaussian_impala({}, {true, {-2.0f}, {2.0f}}),
                    seedrl::pendulum::observation_spec(), seedrl::pendulum::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  seedrl::actor_config ac;
  ac.num_envs = 2;
  ac.max_steps = 200;
  seedrl::actor<seedrl::pendulum, std::function<seedrl::in_process_connection()>> a(
      ac, [](std::size_t i) { return seedrl::pendulum(i); },
      [&] { return transport.connect(endpoint); });
  std::atomic<bool> stop{false};
  CHECK(a.run(stop) == 200);
  REQUIRE(seedrl_test::wait_for([&] { return learner.stats().train_steps >= 5; }, 10s));
  learner.stop();
  const auto s = learner.stats();
  CHECK(s.trainer_error.empty());
  CHECK(std::isfinite(s.last_grad_norm));
  CHECK(s.last_grad_norm > 0.0);
  cont_net trained(net);
  learner.copy_parameters(trained);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < net.parameters().size(); ++i)
    changed += trained.parameters()[i] != net.parameters()[i] ? 1 : 0;
  CHECK(changed > net.parameters().size() / 2);
}

namespace {
/// A custom sampler that draws as gaussian_sampler does, then breaks the rules: from its
/// `from_call`-th batch on, it writes `value` into every env action (beyond the bounds, or NaN).
struct rule_breaking_sampler {
  float value = 0.0f;
  int from_call = 0;
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);

  void check(const seedrl::action_spec& spec) const { seedrl::gaussian_sampler().check(spec); }
  std::size_t outputs_per_row(const seedrl::action_spec& spec) const {
    return seedrl::gaussian_sampler().outputs_per_row(spec);
  }
  template <class S>
  void sample(std::span<const S> outputs, std::size_t rows, std::size_t width,
              seedrl::random_generator& rng, seedrl::action_buffers<S> out,
              std::span<S> log_probs) const {
    seedrl::gaussian_sampler().sample(outputs, rows, width, rng, out, log_probs);
    if (calls->fetch_add(1) >= from_call)
      std::fill(out.env_actions.begin(), out.env_actions.end(), static_cast<S>(value));
  }
};

using rule_breaking_learner =
    seedrl::learner<cont_net, seedrl::adam<float>, seedrl::in_process_transport, recording_trainer,
                    seedrl::impala_loss<float>, rule_breaking_sampler>;
}  // namespace

TEST_CASE("a custom sampler's actions beyond the bounds are clipped on the learner and counted",
          "[learner][continuous][bad-input]") {
  auto logs = std::make_shared<pendulum_logs>();
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-continuous-clip"};
  rule_breaking_learner learner(small_config(4, 2), make_cont_net(3), seedrl::adam<float>(),
                                seedrl::impala_loss<float>(), seedrl::pendulum::observation_spec(),
                                seedrl::pendulum::action_spec(), recording_trainer{},
                                rule_breaking_sampler{5.0f});  // Pendulum's torque: [-2, 2]
  learner.start();
  learner.serve(transport.listen(endpoint));
  seedrl::actor_config ac;
  ac.num_envs = 2;
  ac.max_steps = 60;
  seedrl::actor<logged_pendulum, std::function<seedrl::in_process_connection()>> a(
      ac, [&](std::size_t i) { return logged_pendulum(static_cast<int>(i), 1000, logs); },
      [&] { return transport.connect(endpoint); });
  std::atomic<bool> stop{false};
  CHECK(a.run(stop) == 60);  // the actor's bounds check never saw 5
  learner.stop();
  const auto s = learner.stats();
  CHECK(s.trainer_error.empty());
  CHECK(s.frames >= 120);
  CHECK(s.clipped_actions == s.frames);  // one element per answered step, every one clipped
  std::size_t received = 0;
  for (const auto& [id, l] : logs->envs) {
    for (const float x : l.actions) {
      CHECK(x == 2.0f);
      ++received;
    }
  }
  CHECK(received == 120);
  seedrl::progress_report p;
  p.stats = s;
  CHECK_THAT(seedrl::progress_line(p),
             Catch::Contains("clipped actions " + std::to_string(s.frames)));
}

TEST_CASE("a NaN action never leaves the learner: training stops with an error naming the step",
          "[learner][continuous][bad-input]") {
  auto logs = std::make_shared<pendulum_logs>();
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-continuous-nan"};
  rule_breaking_learner learner(small_config(4, 2), make_cont_net(3), seedrl::adam<float>(),
                                seedrl::impala_loss<float>(), seedrl::pendulum::observation_spec(),
                                seedrl::pendulum::action_spec(), recording_trainer{},
                                rule_breaking_sampler{std::numeric_limits<float>::quiet_NaN(), 10});
  learner.start();
  learner.serve(transport.listen(endpoint));
  seedrl::actor_config ac;
  ac.num_envs = 2;
  ac.max_steps = 1000;
  ac.log = [](const std::string&) {};
  seedrl::actor<logged_pendulum, std::function<seedrl::in_process_connection()>> a(
      ac, [&](std::size_t i) { return logged_pendulum(static_cast<int>(i), 1000, logs); },
      [&] { return transport.connect(endpoint); });
  std::atomic<bool> stop{false};
  std::thread actor_thread([&] {
    try {
      a.run(stop);
    } catch (const std::exception&) {  // the learner going away may end the actor either way
    }
  });
  REQUIRE(seedrl_test::wait_for([&] { return !learner.stats().trainer_error.empty(); }, 10s));
  const auto s = learner.stats();
  CHECK_THAT(s.trainer_error, Catch::Contains("NaN") && Catch::Contains("at frame") &&
                                  Catch::Contains("training step") && Catch::Contains("env slot"));
  learner.stop();  // must not hang on the unanswered batch
  stop = true;
  actor_thread.join();
  // Every action an env received was a real torque: the NaN batch was never answered.
  std::size_t received = 0;
  for (const auto& [id, l] : logs->envs) {
    for (const float x : l.actions) {
      CHECK(std::isfinite(x));
      ++received;
    }
  }
  CHECK(received == 20);  // the 10 batches before it, of 2 envs each
}

TEST_CASE(
    "spec_sampler and spec_distribution act as the sampler and distribution the spec calls "
    "for",
    "[continuous][sampler]") {
  constexpr std::size_t rows = 5, A = 3, D = 2;
  seedrl::random_generator init(4);
  std::vector<float> logits(rows * A), outputs(rows * 2 * D);
  for (auto& x : logits)
    x = static_cast<float>(init.uniform(-2.0, 2.0));
  for (auto& x : outputs)
    x = static_cast<float>(init.uniform(-1.0, 1.0));
  const std::vector<float> low{-2.0f, -1.0f}, high{2.0f, 3.0f};
  const auto discrete = seedrl::action_spec::discrete(3);
  const std::vector<double> lows{-2.0, -1.0}, highs{2.0, 3.0};
  const auto continuous = seedrl::action_spec::continuous({2}, lows, highs);
  for (const auto bounds : {seedrl::bounds_handling::squash, seedrl::bounds_handling::clip}) {
    const seedrl::spec_sampler any{seedrl::action_selection::sample, bounds};
    CHECK(any.outputs_per_row(discrete) == 3);
    CHECK(any.outputs_per_row(continuous) == 4);
    CHECK_NOTHROW(any.check(discrete));
    // Discrete: the categorical sampler's draws and log-probs from the same generator state.
    std::vector<std::int32_t> a1(rows), a2(rows);
    std::vector<float> lp1(rows), lp2(rows);
    seedrl::random_generator r1(9), r2(9);
    any.sample<float>(logits, rows, A, r1, {a1, {}, {}, {}, {}, 0}, lp1);
    seedrl::categorical_sampler{}.sample<float>(logits, rows, A, r2, {a2, {}, {}, {}, {}, 0}, lp2);
    CHECK(a1 == a2);
    CHECK(lp1 == lp2);
    // Continuous: the Gaussian sampler's, with the bounds handling given.
    std::vector<float> env1(rows * D), raw1(rows * D), env2(rows * D), raw2(rows * D);
    any.sample<float>(outputs, rows, 2 * D, r1, {{}, env1, raw1, low, high, D}, lp1);
    seedrl::gaussian_sampler{bounds}.sample<float>(outputs, rows, 2 * D, r2,
                                                   {{}, env2, raw2, low, high, D}, lp2);
    CHECK(env1 == env2);
    CHECK(raw1 == raw2);
    CHECK(lp1 == lp2);
  }
  // Infinite bounds cannot be squashed: refused as gaussian_sampler refuses them.
  const auto unbounded = seedrl::action_spec::continuous(
      {1}, -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
  CHECK_THROWS_WITH(seedrl::spec_sampler{}.check(unbounded), Catch::Contains("finite"));
  CHECK_NOTHROW(seedrl::spec_sampler{.bounds = seedrl::bounds_handling::clip}.check(unbounded));

  // spec_distribution: categorical rows for action_dim 0, the Gaussian's otherwise.
  const std::vector<std::int32_t> acts{0, 2, 1, 1, 0};
  seedrl::impala_batch<float> db{};
  db.num_actions = A;
  db.logits = logits;
  db.actions = acts;
  const std::vector<float> u{0.3f, -0.2f, 1.5f, 0.1f, -0.7f, 2.0f, 0.0f, 0.4f, -1.1f, 0.9f};
  const std::vector<std::int32_t> zeros(rows, 0);
  seedrl::impala_batch<float> cb{};
  cb.num_actions = 2 * D;
  cb.logits = outputs;
  cb.actions = zeros;
  cb.raw_actions = u;
  cb.action_dim = D;
  const seedrl::diag_gaussian_distribution<float> gauss{true, low, high};
  const seedrl::spec_distribution<float> any_dist{gauss};
  std::vector<float> g1(2 * D), g2(2 * D);
  for (std::size_t i = 0; i < rows; ++i) {
    CHECK(any_dist.log_prob(db, i) == seedrl::categorical_distribution().log_prob(db, i));
    CHECK(any_dist.log_prob(cb, i) == gauss.log_prob(cb, i));
    CHECK(any_dist.log_prob_entropy_gradient(cb, i, 0.5f, 0.1f, g1.data()) ==
          gauss.log_prob_entropy_gradient(cb, i, 0.5f, 0.1f, g2.data()));
    CHECK(g1 == g2);
  }
}

TEST_CASE(
    "observation normalization and reward scaling: the unrolls hold a float64 replay of the "
    "envs, episode returns stay raw and checkpoints carry the statistics",
    "[learner][continuous][normalization]") {
  constexpr std::size_t T = 5, B = 2, envs = 2;
  const double gamma = 0.9, obs_clip = 5.0, reward_clip = 5.0, eps = 1e-8;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("seedrl-normalization-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const cont_net net = make_cont_net(41);
  recording_trainer trainer;
  const auto record = trainer.r;
  const auto logs = std::make_shared<pendulum_logs>();
  std::mutex returns_mutex;
  std::vector<double> reported_returns;
  seedrl::learner_config lc = small_config(T, B);
  lc.normalize_observations = {.enabled = true, .clip = obs_clip};
  lc.scale_rewards = {.enabled = true, .gamma = gamma, .clip = reward_clip};
  lc.checkpoint_dir = dir;
  // Every 2 steps while inference updates the statistics (TSan checks the snapshot), and at
  // exit, the newest.
  lc.checkpointing = {2, std::nullopt, true};
  lc.on_episode = [&](double r, std::int64_t) {
    std::lock_guard lock(returns_mutex);
    reported_returns.push_back(r);
  };
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-normalization"};
  {
    cont_learner learner(lc, net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                         seedrl::pendulum::observation_spec(), seedrl::pendulum::action_spec(),
                         trainer, seedrl::gaussian_sampler{});
    learner.start();
    learner.serve(transport.listen(endpoint));
    // One actor: each inference batch is its one request, both envs' step j, so the
    // statistics after step j are those of every observation up to step j.
    seedrl::actor_config ac;
    ac.num_envs = envs;
    ac.seed = 9;
    ac.max_steps = 90;
    seedrl::actor<logged_pendulum, std::function<seedrl::in_process_connection()>> a(
        ac,
        [&](std::size_t i) {
          return logged_pendulum(static_cast<int>(i), 4 + 3 * static_cast<int>(i), logs);
        },
        [&] { return transport.connect(endpoint); });
    std::atomic<bool> stop{false};
    REQUIRE(a.run(stop) == 90);
    learner.stop();  // every step the actor sent was answered, so normalized, before run returned
    CHECK(learner.stats().checkpoints_saved >= 3);  // while inference ran, and at exit

    std::lock_guard lock_logs(logs->mutex);
    std::lock_guard lock_record(record->mutex);
    const seedrl::running_mean_std stats = learner.observation_statistics();
    const auto S = static_cast<std::size_t>(stats.count()) / envs;  // agent steps normalized
    REQUIRE(stats.count() == static_cast<double>(S * envs));
    REQUIRE(S == 90);
    // The replay, in float64 from the envs' own records.
    std::vector<std::vector<std::array<double, 3>>> want_obs(envs);
    std::vector<std::vector<double>> want_reward(envs);
    std::vector<double> seen, returns, R(envs, 0.0);
    for (std::size_t j = 0; j < S; ++j) {
      for (std::size_t e = 0; e < envs; ++e) {
        const auto& l = logs->envs.at(static_cast<int>(e));
        REQUIRE(j < l.observations.size());
        for (std::size_t i = 0; i < 3; ++i)
          seen.push_back(l.observations[j][i]);
        if (j == 0) {  // the run's first step: no return
          R[e] = 0.0;
          continue;
        }
        R[e] = gamma * R[e] + l.rewards[j];
        returns.push_back(R[e]);
        if (l.dones[j] != 0)
          R[e] = 0.0;
      }
      const std::size_t rows = seen.size() / 3;
      std::array<double, 3> mean{}, var{};
      for (std::size_t i = 0; i < 3; ++i) {
        for (std::size_t r = 0; r < rows; ++r)
          mean[i] += seen[r * 3 + i];
        mean[i] /= static_cast<double>(rows);
        for (std::size_t r = 0; r < rows; ++r)
          var[i] += (seen[r * 3 + i] - mean[i]) * (seen[r * 3 + i] - mean[i]);
        var[i] /= static_cast<double>(rows);
      }
      double var_R = 1.0;  // before any return
      if (!returns.empty()) {
        double m = 0.0, v = 0.0;
        for (double x : returns)
          m += x;
        m /= static_cast<double>(returns.size());
        for (double x : returns)
          v += (x - m) * (x - m);
        var_R = v / static_cast<double>(returns.size());
      }
      for (std::size_t e = 0; e < envs; ++e) {
        const auto& l = logs->envs.at(static_cast<int>(e));
        std::array<double, 3> o{};
        for (std::size_t i = 0; i < 3; ++i)
          o[i] = std::clamp((l.observations[j][i] - mean[i]) / std::sqrt(var[i] + eps), -obs_clip,
                            obs_clip);
        want_obs[e].push_back(o);
        want_reward[e].push_back(
            std::clamp(l.rewards[j] / std::sqrt(var_R + eps), -reward_clip, reward_clip));
      }
      if (j + 1 == S) {  // the learner's statistics are the replay's
        for (std::size_t i = 0; i < 3; ++i) {
          CHECK(stats.mean()[i] == Approx(mean[i]).epsilon(1e-10).margin(1e-12));
          CHECK(stats.var()[i] == Approx(var[i]).epsilon(1e-9));
        }
        CHECK(learner.return_statistics().var()[0] == Approx(var_R).epsilon(1e-9));
      }
    }
    // Every unroll column: find its first step by the normalized observation, then every step.
    REQUIRE(record->batches.size() >= 5);
    std::size_t rows_checked = 0, large = 0;
    for (std::size_t n = 0; n < record->batches.size(); ++n) {
      const auto& b = record->batches[n];
      for (std::size_t c = 0; c < B; ++c) {
        std::optional<std::pair<std::size_t, std::size_t>> at;
        std::size_t matches = 0;
        for (std::size_t e = 0; e < envs; ++e)
          for (std::size_t j = 0; j < S; ++j) {
            double d = 0.0;
            for (std::size_t i = 0; i < 3; ++i)
              d = std::max(d, std::abs(b.observations[c * 3 + i] - want_obs[e][j][i]));
            if (d < 1e-4) {
              at = std::pair{e, j};
              ++matches;
            }
          }
        INFO("batch " << n << " column " << c);
        REQUIRE(matches == 1);
        const auto [e, j0] = *at;
        const auto& l = logs->envs.at(static_cast<int>(e));
        for (std::size_t t = 0; t <= T; ++t) {
          const std::size_t r = t * B + c, j = j0 + t;
          INFO("env " << e << " agent step " << j);
          REQUIRE(j < S);
          for (std::size_t i = 0; i < 3; ++i) {
            CHECK(b.observations[r * 3 + i] == Approx(want_obs[e][j][i]).margin(2e-6));
            large += std::abs(want_obs[e][j][i]) > 1.5 ? 1 : 0;
          }
          CHECK(b.rewards[r] == Approx(want_reward[e][j]).epsilon(1e-5).margin(1e-6));
          CHECK(b.dones[r] == l.dones[j]);
          ++rows_checked;
        }
      }
    }
    CHECK(rows_checked == record->batches.size() * (T + 1) * B);
    CHECK(large > 0);  // normalized values away from the raw ones' range
    // Episode returns are the raw rewards' sums.
    std::vector<double> want_returns;
    for (std::size_t e = 0; e < envs; ++e) {
      const auto& l = logs->envs.at(static_cast<int>(e));
      double sum = 0.0;
      for (std::size_t j = 1; j < S; ++j) {
        sum += l.rewards[j];
        if (l.dones[j] != 0) {
          want_returns.push_back(sum);
          sum = 0.0;
        }
      }
    }
    std::lock_guard lock_returns(returns_mutex);
    REQUIRE(reported_returns.size() == want_returns.size());
    REQUIRE(!want_returns.empty());
    std::sort(reported_returns.begin(), reported_returns.end());
    std::sort(want_returns.begin(), want_returns.end());
    for (std::size_t k = 0; k < want_returns.size(); ++k)
      CHECK(reported_returns[k] == Approx(want_returns[k]).epsilon(1e-6));
  }

  // The checkpoint saved at exit holds the statistics; an inference-only learner restored from
  // it (weights only) uses them without updating them.
  const auto saved = seedrl::read_latest_checkpoint(dir);
  REQUIRE(saved.has_value());
  seedrl::learner_config eval_lc = small_config(T, B);
  eval_lc.normalize_observations = lc.normalize_observations;
  eval_lc.scale_rewards = lc.scale_rewards;
  eval_lc.inference_only = true;
  cont_learner eval(eval_lc, net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::pendulum::observation_spec(), seedrl::pendulum::action_spec(),
                    recording_trainer{}, seedrl::gaussian_sampler{});
  CHECK(eval.observation_statistics().count() == 0.0);
  eval.restore(*saved, true);
  const seedrl::running_mean_std restored = eval.observation_statistics();
  CHECK(restored.count() == 90.0 * envs);
  std::vector<double> mean(3), var(3);
  saved->tensor("observation_normalization.mean").copy_to(std::span<double>(mean));
  saved->tensor("observation_normalization.var").copy_to(std::span<double>(var));
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(restored.mean()[i] == mean[i]);
    CHECK(restored.var()[i] == var[i]);
  }
  const double return_var = eval.return_statistics().var()[0];
  CHECK(return_var == saved->double_counter("reward_scaling.return_var"));
  CHECK(return_var != 1.0);
  eval.start();
  const seedrl::in_process_endpoint eval_endpoint{"learner-normalization-eval"};
  eval.serve(transport.listen(eval_endpoint));
  seedrl::actor_config ac;
  ac.num_envs = envs;
  ac.max_steps = 10;
  seedrl::actor<seedrl::pendulum, std::function<seedrl::in_process_connection()>> a(
      ac, [](std::size_t i) { return seedrl::pendulum(i); },
      [&] { return transport.connect(eval_endpoint); });
  std::atomic<bool> stop{false};
  CHECK(a.run(stop) == 10);
  eval.stop();
  CHECK(eval.stats().frames == 10 * static_cast<std::int64_t>(envs));
  const seedrl::running_mean_std after = eval.observation_statistics();
  CHECK(after.count() == restored.count());
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(after.mean()[i] == restored.mean()[i]);
  CHECK(eval.return_statistics().var()[0] == return_var);
  std::filesystem::remove_all(dir);
}
