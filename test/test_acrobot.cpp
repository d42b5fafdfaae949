// Acrobot against gymnasium's own Acrobot-v1 episodes (test/fixtures/acrobot, made by
// tools/gen_acrobot_fixture.py), plus what the fixture cannot show.
#include "seedrl/env/acrobot.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

namespace {

seedrl::acrobot::state to_acrobot_state(const nlohmann::json& j) {
  return {j.at(0).get<double>(), j.at(1).get<double>(), j.at(2).get<double>(),
          j.at(3).get<double>()};
}

}  // namespace

static_assert(seedrl::check_environment<seedrl::acrobot>());
static_assert(seedrl::has_discrete_actions<seedrl::acrobot>);

// Tolerance: the step follows gymnasium's operations in order in double precision, so each
// one-step replay from a recorded state agrees to rounding (libm's sin and cos, and the
// compiler's FMA contraction, may move the last bits: 1e-12 relative is a 1000x margin on the
// worst seen, 1e-15). A physics error (a sign, the "nips" dynamics, a missing wrap) moves
// states by 1e-3 or more. Observations are float32 roundings of the same doubles.
TEST_CASE("acrobot reproduces gymnasium Acrobot-v1 step by step", "[acrobot]") {
  std::ifstream in(SEEDRL_TEST_FIXTURES "/acrobot/gymnasium_acrobot_v1.json");
  REQUIRE(in.good());
  const auto fixture = nlohmann::json::parse(in);
  int terminations = 0, clipped = 0, wrapped = 0, steps = 0;
  for (const auto& episode : fixture.at("episodes")) {
    INFO("episode seed " << episode.at("seed").get<int>());
    seedrl::acrobot env;
    std::array<float, 6> obs{};
    seedrl::acrobot::state before = to_acrobot_state(episode.at("start"));
    for (const auto& step : episode.at("steps")) {
      env.reset_to(before, obs);
      const auto r = env.step(step.at("action").get<std::int32_t>(), obs);
      const auto want = to_acrobot_state(step.at("state"));
      const auto& got = env.physics_state();
      for (std::size_t i = 0; i < 4; ++i)
        CHECK(std::abs(got[i] - want[i]) <= 1e-12 * std::max(1.0, std::abs(want[i])));
      const auto want_obs = step.at("observation").get<std::vector<double>>();
      for (std::size_t i = 0; i < 6; ++i)
        CHECK(std::abs(obs[i] - want_obs[i]) <= 1e-6 * std::max(1.0, std::abs(want_obs[i])));
      CHECK(r.reward == step.at("reward").get<double>());
      CHECK(r.terminated == step.at("terminated").get<bool>());
      terminations += r.terminated ? 1 : 0;
      clipped += std::abs(want[2]) == seedrl::acrobot::max_velocity_1 ? 1 : 0;
      wrapped += std::abs(want[0] - before[0]) > 3.0 ? 1 : 0;
      before = want;
      ++steps;
    }
  }
  // The fixture covers terminations, the velocity clip and the angle wrap.
  CHECK(steps > 600);
  CHECK(terminations >= 3);
  CHECK(clipped >= 1);
  CHECK(wrapped >= 1);
}

TEST_CASE("acrobot truncates at 500 steps, refuses bad actions and steps after the end",
          "[acrobot]") {
  seedrl::acrobot env(3);
  std::array<float, 6> obs{};
  env.reset_to({0.0, 0.0, 0.0, 0.0}, obs);  // hanging still: no torque keeps it there
  CHECK(obs[0] == 1.0f);
  CHECK(obs[1] == 0.0f);
  seedrl::step_result r;
  for (int i = 0; i < 500; ++i) {
    r = env.step(1, obs);
    REQUIRE_FALSE(r.terminated);
    CHECK(r.reward == -1.0);
    CHECK(r.truncated == (i == 499));
  }
  CHECK_THROWS_AS(env.step(1, obs), std::logic_error);
  env.reset(obs);
  for (const double x : env.physics_state())
    CHECK(std::abs(x) <= 0.1);
  CHECK_THROWS_WITH(env.step(3, obs), Catch::Matchers::Contains("action 3"));
  CHECK_THROWS_WITH(env.step(-1, obs), Catch::Matchers::Contains("action -1"));
  std::array<float, 5> small{};
  CHECK_THROWS_WITH(env.reset(small), Catch::Matchers::Contains("needs 6"));
}
