// Pendulum against gymnasium's own trajectories (test/fixtures/pendulum, made by
// tools/gen_pendulum_fixture.py), plus the behaviour gymnasium leaves to wrappers.
#include "seedrl/env/pendulum.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "seedrl/env/env_batch.hpp"

namespace {

nlohmann::json load_pendulum_fixture() {
  std::ifstream in(SEEDRL_TEST_FIXTURES "/pendulum/gymnasium_pendulum_v1.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

seedrl::pendulum::state to_pendulum_state(const nlohmann::json& j) {
  return {j.at(0).get<double>(), j.at(1).get<double>()};
}

/// A one-element action span over `torque`.
std::span<const float> act(const float& torque) {
  return {&torque, 1};
}

}  // namespace

static_assert(seedrl::check_environment<seedrl::pendulum>());
static_assert(!seedrl::has_discrete_actions<seedrl::pendulum>);

// Tolerances. Every operation follows gymnasium's order and precision (float64 state, float32
// torque terms), so where std::sin/std::cos are NumPy's (both call glibc on Linux) the state,
// observation and reward are bit-identical: all 888 fixture steps are, with GCC 12 and Clang 14.
// The margins leave room for a libm whose sin or cos is off by an ulp: replaying the fixture in
// float64 with sin perturbed by a random -1/0/+1 ulp at every step moves theta by at most 1.5e-14
// relative, theta_dot by 1.5e-13 (of at most 8) and the reward by 5.8e-14 relative, so 1e-12
// (theta, reward) and 8e-12 (theta_dot) hold with a 50x margin. GCC with -march=native fuses
// products into sums (FMA) and stays inside the same envelope: 2.1e-15, 1.4e-13 and 5.2e-14 on this
// fixture. The margins are still tight enough to catch the float32 torque terms computed in float64
// instead (3 * u then differs by up to 2e-7, which moves theta_dot by 1e-8; 0.001 * u^2 moves the
// reward by up to 4e-10). Observations are float32 roundings of the same doubles: equal, or one
// float32 ulp apart where a double lies next to a rounding boundary.
TEST_CASE("pendulum reproduces gymnasium Pendulum-v1 step by step", "[pendulum]") {
  const auto fixture = load_pendulum_fixture();
  const auto& episodes = fixture.at("episodes");
  REQUIRE(episodes.size() >= 10);
  int truncated_episodes = 0;
  int clipped_torques = 0;
  int clipped_speeds = 0;
  int wrapped_angles = 0;
  bool other_gravity = false;
  for (const auto& episode : episodes) {
    INFO("episode seed " << episode.at("seed").get<int>());
    const double g = episode.at("g").get<double>();
    other_gravity = other_gravity || g != seedrl::pendulum::default_gravity;
    seedrl::pendulum env(0, g);
    std::array<float, 3> obs{};
    env.reset_to(to_pendulum_state(episode.at("initial_state")), obs);
    const auto& actions = episode.at("actions");
    const auto& states = episode.at("states");
    const auto& observations = episode.at("observations");
    const auto& rewards = episode.at("rewards");
    REQUIRE(states.size() == actions.size());
    for (std::size_t t = 0; t < actions.size(); ++t) {
      INFO("step " << t);
      const float torque = static_cast<float>(actions[t].get<double>());
      clipped_torques += std::abs(torque) > seedrl::pendulum::max_torque;
      wrapped_angles += std::abs(env.physics_state().theta) > seedrl::pendulum::pi;
      const auto r = env.step(act(torque), obs);
      const auto want = to_pendulum_state(states[t]);
      const auto& got = env.physics_state();
      CHECK(std::abs(got.theta - want.theta) <= 1e-12 * std::max(1.0, std::abs(want.theta)));
      CHECK(std::abs(got.theta_dot - want.theta_dot) <= 1e-12 * 8.0);
      clipped_speeds += std::abs(want.theta_dot) == seedrl::pendulum::max_speed;
      for (std::size_t i = 0; i < 3; ++i) {
        const float expected = static_cast<float>(observations[t].at(i).get<double>());
        CHECK(std::abs(obs[i] - expected) <= std::abs(expected) * 1.2e-7f + 1e-30f);
      }
      const double reward = rewards[t].get<double>();
      CHECK(std::abs(r.reward - reward) <= 1e-12 * std::max(1.0, std::abs(reward)));
      REQUIRE(r.terminated == episode.at("terminated").at(t).get<bool>());
      REQUIRE(r.truncated == episode.at("truncated").at(t).get<bool>());
    }
    REQUIRE(env.elapsed_steps() == static_cast<std::int32_t>(actions.size()));
    truncated_episodes += episode.at("truncated").back().get<bool>();
  }
  // The fixture must exercise the time limit, both clips, the angle wrap and another g.
  CHECK(truncated_episodes >= 1);
  CHECK(clipped_torques >= 50);
  CHECK(clipped_speeds >= 10);
  CHECK(wrapped_angles >= 10);
  CHECK(other_gravity);
}

TEST_CASE("pendulum truncates at 200 steps and never terminates", "[pendulum]") {
  seedrl::pendulum env(3);
  std::array<float, 3> obs{};
  env.reset(obs);
  seedrl::step_result r;
  const float torque = 2.0f;
  for (int t = 0; t < seedrl::pendulum::max_episode_steps; ++t) {
    r = env.step(act(torque), obs);
    CHECK_FALSE(r.terminated);
    if (t + 1 < seedrl::pendulum::max_episode_steps) {
      REQUIRE_FALSE(r.truncated);
    }
  }
  CHECK(r.truncated);
  CHECK_FALSE(r.terminated);
  CHECK(env.elapsed_steps() == 200);
  CHECK_THROWS_AS(env.step(act(torque), obs), std::logic_error);
  env.reset(obs);  // a new episode counts from zero again
  CHECK(env.elapsed_steps() == 0);
  CHECK_FALSE(env.step(act(torque), obs).done());
}

TEST_CASE("pendulum follows its equations from a chosen state", "[pendulum]") {
  // Hand-derived values, independent of the fixture: upright, at rest, no torque stays put
  // with reward 0; hanging at rest (theta = pi) with torque 1: theta_dot = 3 * 1 * 0.05 (sin pi
  // contributes 15 * sin(pi) * 0.05 ~ 9e-16), reward -(pi^2 + 0.001).
  seedrl::pendulum env;
  std::array<float, 3> obs{};
  env.reset_to({0.0, 0.0}, obs);
  CHECK(obs == std::array<float, 3>{1.0f, 0.0f, 0.0f});
  const float zero = 0.0f;
  auto r = env.step(act(zero), obs);
  CHECK(r.reward == 0.0);
  CHECK(env.physics_state().theta == 0.0);
  CHECK(env.physics_state().theta_dot == 0.0);

  env.reset_to({seedrl::pendulum::pi, 0.0}, obs);
  const float one = 1.0f;
  r = env.step(act(one), obs);
  CHECK(env.physics_state().theta_dot == Approx(0.15).margin(1e-14));
  CHECK(env.physics_state().theta == Approx(seedrl::pendulum::pi + 0.15 * 0.05).margin(1e-14));
  CHECK(r.reward == Approx(-(seedrl::pendulum::pi * seedrl::pendulum::pi + 0.001)).epsilon(1e-7));

  // Torque beyond the bounds acts as the bound, in the reward too.
  seedrl::pendulum a, b;
  a.reset_to({1.0, 0.5}, obs);
  b.reset_to({1.0, 0.5}, obs);
  const float big = 50.0f, bound = 2.0f, low = -7.0f, low_bound = -2.0f;
  CHECK(a.step(act(big), obs).reward == b.step(act(bound), obs).reward);
  CHECK(a.physics_state().theta_dot == b.physics_state().theta_dot);
  CHECK(a.step(act(low), obs).reward == b.step(act(low_bound), obs).reward);
  CHECK(a.physics_state().theta == b.physics_state().theta);

  // The speed clip: already at +8 rad/s and pushed further, it stays at 8.
  env.reset_to({0.5, 8.0}, obs);
  env.step(act(bound), obs);
  CHECK(env.physics_state().theta_dot == 8.0);
  CHECK(obs[2] == 8.0f);
  CHECK(env.physics_state().theta == Approx(0.5 + 8.0 * 0.05).margin(1e-15));
}

TEST_CASE("pendulum wraps the reward's angle into -pi..pi like Python's floored modulo",
          "[pendulum]") {
  constexpr double pi = seedrl::pendulum::pi;
  for (double x = -40.0; x <= 40.0; x += 0.37) {
    const double y = seedrl::pendulum::angle_normalize(x);
    REQUIRE(y >= -pi);
    REQUIRE(y <= pi);
    const double turns = (x - y) / (2.0 * pi);
    REQUIRE(std::abs(turns - std::round(turns)) < 1e-12);
  }
  CHECK(seedrl::pendulum::angle_normalize(0.0) == 0.0);
  CHECK(seedrl::pendulum::angle_normalize(-pi) == -pi);  // (-pi + pi) % 2 pi = 0
  CHECK(seedrl::pendulum::angle_normalize(-1.0) == Approx(-1.0).margin(1e-15));
  CHECK(seedrl::pendulum::angle_normalize(-2.0 * pi - 1.0) == Approx(-1.0).margin(1e-14));
}

TEST_CASE("pendulum reset is seeded and uniform over angles -pi..pi and speeds -1..1",
          "[pendulum]") {
  std::array<float, 3> a{}, b{}, c{};
  seedrl::pendulum env1(7), env2(7), env3(8);
  env1.reset(a);
  env2.reset(b);
  env3.reset(c);
  CHECK(a == b);
  CHECK(a != c);
  env3.seed(7);  // seed() restarts the stream
  env3.reset(c);
  CHECK(a == c);

  constexpr double pi = seedrl::pendulum::pi;
  double lo_th = 10.0, hi_th = -10.0, lo_v = 10.0, hi_v = -10.0, sum_th = 0.0, sum_v = 0.0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    env1.reset(a);
    const auto& s = env1.physics_state();
    REQUIRE(s.theta >= -pi);
    REQUIRE(s.theta < pi);
    REQUIRE(s.theta_dot >= -1.0);
    REQUIRE(s.theta_dot < 1.0);
    REQUIRE(a[0] == static_cast<float>(std::cos(s.theta)));
    REQUIRE(a[1] == static_cast<float>(std::sin(s.theta)));
    REQUIRE(a[2] == static_cast<float>(s.theta_dot));
    lo_th = std::min(lo_th, s.theta);
    hi_th = std::max(hi_th, s.theta);
    lo_v = std::min(lo_v, s.theta_dot);
    hi_v = std::max(hi_v, s.theta_dot);
    sum_th += s.theta;
    sum_v += s.theta_dot;
  }
  CHECK(lo_th < -pi + 0.01);
  CHECK(hi_th > pi - 0.01);
  CHECK(lo_v < -0.99);
  CHECK(hi_v > 0.99);
  // Means of U(-pi, pi) and U(-1, 1) are 0; the sds of the sample means are ~0.029 and ~0.009.
  CHECK(std::abs(sum_th / n) < 0.12);
  CHECK(std::abs(sum_v / n) < 0.04);
}

TEST_CASE("pendulum specs: three float32 observations, one torque within -2..2", "[pendulum]") {
  seedrl::pendulum env;
  CHECK(env.observation_spec() == seedrl::observation_spec{seedrl::dtype::float32, {3}});
  const auto spec = env.action_spec();
  CHECK_FALSE(spec.is_discrete());
  CHECK(spec.shape == seedrl::tensor_shape{1});
  CHECK(spec.low_at(0) == -2.0);
  CHECK(spec.high_at(0) == 2.0);
  CHECK(seedrl::pendulum(0, 9.81).gravity() == 9.81);
}

TEST_CASE("pendulum rejects bad use with clear errors", "[pendulum]") {
  seedrl::pendulum env(1);
  std::array<float, 3> obs{};
  const float ok = 0.5f;
  CHECK_THROWS_AS(env.step(act(ok), obs), std::logic_error);  // before the first reset
  env.reset(obs);
  const auto before = env.physics_state();
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    CHECK_THROWS_AS(env.step(act(bad), obs), std::invalid_argument);
    CHECK_THROWS_WITH(env.step(act(bad), obs), Catch::Contains("not a finite number"));
  }
  const std::array<float, 2> two{0.5f, 0.5f};
  CHECK_THROWS_AS(env.step(two, obs), std::invalid_argument);
  CHECK_THROWS_WITH(env.step(two, obs), Catch::Contains("has 2 elements, needs 1"));
  CHECK_THROWS_AS(env.step(std::span<const float>{}, obs), std::invalid_argument);
  std::array<float, 4> wide{};
  CHECK_THROWS_AS(env.step(act(ok), wide), std::invalid_argument);
  // A rejected step leaves the episode where it was.
  CHECK(env.elapsed_steps() == 0);
  CHECK(env.physics_state().theta == before.theta);
  CHECK(env.physics_state().theta_dot == before.theta_dot);
  CHECK_NOTHROW(env.step(act(ok), obs));

  CHECK_THROWS_AS(env.reset_to({std::nan(""), 0.0}, obs), std::invalid_argument);
  CHECK_THROWS_AS(seedrl::pendulum(0, std::numeric_limits<double>::infinity()),
                  std::invalid_argument);
}

TEST_CASE("env_batch steps pendulums with float actions and resets them after 200 steps",
          "[pendulum][env_batch]") {
  constexpr std::size_t k = 3;
  constexpr std::uint64_t seed = 11;
  auto batch = seedrl::env_batch<seedrl::pendulum>::create(
      k, [](std::size_t) { return seedrl::pendulum{}; }, seed);
  REQUIRE(batch.action_size() == 1);

  // Reference: the same environments stepped by hand, seeded as env_batch documents.
  std::vector<seedrl::pendulum> ref(k);
  std::vector<std::array<float, 3>> ref_obs(k);
  std::vector<double> ref_return(k, 0.0);
  for (std::size_t i = 0; i < k; ++i) {
    ref[i].seed(seedrl::random_generator::derive(seed, i));
    ref[i].reset(ref_obs[i]);
  }
  seedrl::random_generator policy(5);
  std::vector<float> actions(k);
  int finished = 0;
  for (int t = 0; t < 2 * seedrl::pendulum::max_episode_steps + 5; ++t) {
    INFO("step " << t);
    for (auto& a : actions) {
      a = static_cast<float>(policy.uniform(-2.0, 2.0));
    }
    batch.step(actions);
    for (std::size_t i = 0; i < k; ++i) {
      const auto r = ref[i].step(act(actions[i]), ref_obs[i]);
      REQUIRE(batch.rewards()[i] == static_cast<float>(r.reward));
      REQUIRE(batch.dones()[i] == r.done());
      REQUIRE(batch.truncated()[i] == r.truncated);
      ref_return[i] += r.reward;
      if (r.done()) {
        // The batch reports the finished episode, then shows the next one's first observation.
        bool reported = false;
        for (const auto& e : batch.finished_episodes()) {
          if (e.env_index == i) {
            reported = true;
            CHECK(e.length == 200);
            CHECK(e.truncated);
            CHECK(e.episode_return == Approx(ref_return[i]).epsilon(1e-12));
          }
        }
        CHECK(reported);
        ++finished;
        ref_return[i] = 0.0;
        ref[i].reset(ref_obs[i]);
      }
      const auto got = batch.observation(i);
      REQUIRE(std::equal(got.begin(), got.end(), ref_obs[i].begin()));
    }
  }
  CHECK(finished == 2 * static_cast<int>(k));
  // env_batch refuses actions outside the spec's bounds before any environment moves.
  actions[1] = 2.5f;
  CHECK_THROWS_AS(batch.step(actions), std::out_of_range);
}
