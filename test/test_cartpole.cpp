// CartPole against gymnasium's own trajectories (test/fixtures/cartpole, made by
// tools/gen_cartpole_fixture.py), plus the behaviour gymnasium leaves to wrappers.
#include "seedrl/env/cartpole.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace {

nlohmann::json load_fixture() {
  std::ifstream in(SEEDRL_TEST_FIXTURES "/cartpole/gymnasium_cartpole_v1.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

seedrl::cartpole::state to_state(const nlohmann::json& j) {
  return {j.at(0).get<double>(), j.at(1).get<double>(), j.at(2).get<double>(),
          j.at(3).get<double>()};
}

}  // namespace

TEST_CASE("cartpole reproduces gymnasium CartPole-v1 step by step", "[cartpole]") {
  const auto fixture = load_fixture();
  const auto& episodes = fixture.at("episodes");
  REQUIRE(episodes.size() >= 20);
  int truncated_episodes = 0;
  int terminated_episodes = 0;
  for (const auto& episode : episodes) {
    INFO("episode seed " << episode.at("seed").get<int>());
    seedrl::cartpole env;
    std::array<float, 4> obs{};
    env.reset_to(to_state(episode.at("initial_state")), obs);
    const auto& steps = episode.at("steps");
    for (std::size_t t = 0; t < steps.size(); ++t) {
      INFO("step " << t);
      const auto& expected = steps[t];
      const auto r = env.step(expected.at("action").get<std::int32_t>(), obs);
      const auto want = to_state(expected.at("state"));
      const auto& got = env.physics_state();
      CHECK(std::abs(got.x - want.x) <= 1e-12);
      CHECK(std::abs(got.x_dot - want.x_dot) <= 1e-12);
      CHECK(std::abs(got.theta - want.theta) <= 1e-12);
      CHECK(std::abs(got.theta_dot - want.theta_dot) <= 1e-12);
      for (int i = 0; i < 4; ++i) {
        CHECK(obs[i] == Approx(expected.at("observation").at(i).get<double>()).margin(1e-6));
      }
      CHECK(r.reward == expected.at("reward").get<double>());
      REQUIRE(r.terminated == expected.at("terminated").get<bool>());
      REQUIRE(r.truncated == expected.at("truncated").get<bool>());
    }
    REQUIRE(env.elapsed_steps() == static_cast<std::int32_t>(steps.size()));
    truncated_episodes += steps.back().at("truncated").get<bool>();
    terminated_episodes += steps.back().at("terminated").get<bool>();
  }
  // The fixture must exercise both ways an episode ends.
  CHECK(truncated_episodes > 0);
  CHECK(terminated_episodes > 0);
}

TEST_CASE("cartpole truncates at 500 steps apart from termination", "[cartpole]") {
  seedrl::cartpole env;
  std::array<float, 4> obs{};
  env.reset_to({}, obs);  // upright and at rest; a simple controller keeps it balanced
  seedrl::step_result r;
  for (int t = 0; t < seedrl::cartpole::max_episode_steps; ++t) {
    const auto& s = env.physics_state();
    r = env.step(s.theta + 0.5 * s.theta_dot + 0.01 * s.x + 0.1 * s.x_dot > 0.0 ? 1 : 0, obs);
    if (t + 1 < seedrl::cartpole::max_episode_steps) {
      REQUIRE_FALSE(r.done());
    }
  }
  CHECK(r.truncated);
  CHECK_FALSE(r.terminated);
  CHECK(r.reward == 1.0);
  CHECK_THROWS_AS(env.step(0, obs), std::logic_error);
}

TEST_CASE("cartpole reset is seeded and uniform within 0.05 of zero", "[cartpole]") {
  std::array<float, 4> a{}, b{}, c{};
  seedrl::cartpole env1(7), env2(7), env3(8);
  env1.reset(a);
  env2.reset(b);
  env3.reset(c);
  CHECK(a == b);
  CHECK(a != c);
  // Many resets: every component stays in range and the sample spreads over the interval.
  double lo = 1.0, hi = -1.0, sum = 0.0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    env1.reset(a);
    const auto& s = env1.physics_state();
    for (double v : {s.x, s.x_dot, s.theta, s.theta_dot}) {
      REQUIRE(v >= -0.05);
      REQUIRE(v < 0.05);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
  }
  CHECK(lo < -0.049);
  CHECK(hi > 0.049);
  CHECK(std::abs(sum / (4.0 * n)) < 0.002);  // mean of U(-0.05, 0.05) is 0; sd of mean ~4.6e-4
}

TEST_CASE("cartpole rejects bad use with clear errors", "[cartpole]") {
  seedrl::cartpole env(1);
  std::array<float, 4> obs{};
  CHECK_THROWS_AS(env.step(0, obs), std::logic_error);  // before the first reset
  env.reset(obs);
  CHECK_THROWS_AS(env.step(2, obs), std::out_of_range);
  CHECK_THROWS_AS(env.step(-1, obs), std::out_of_range);
  std::array<float, 3> small{};
  CHECK_THROWS_AS(env.step(0, small), std::invalid_argument);
  CHECK_THROWS_WITH(env.step(5, obs), Catch::Contains("outside the action space"));
}

TEST_CASE("cartpole terminates when the pole falls past 12 degrees", "[cartpole]") {
  seedrl::cartpole env;
  std::array<float, 4> obs{};
  env.reset_to({0.0, 0.0, 0.25, 0.0}, obs);  // 0.25 rad > 12 degrees already
  const auto r = env.step(1, obs);
  CHECK(r.terminated);
  CHECK_FALSE(r.truncated);
  CHECK(r.reward == 1.0);  // gymnasium pays the terminating step too
}
