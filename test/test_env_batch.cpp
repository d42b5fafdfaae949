// The actor's inner loop: auto-reset semantics, episode accounting and action checks, directly
// and through any_env_batch.
#include "seedrl/env/env_batch.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "seedrl/env/any_env_batch.hpp"
#include "seedrl/env/cartpole.hpp"

namespace {

/// Ends every episode after `length` steps; reward = action + 1; the observation counts steps
/// and episodes so that the test can see exactly which observation it got.
struct counting_env {
  using observation_type = std::int32_t;
  using action_type = std::int32_t;
  int length = 3;
  int step_in_episode = 0;
  int episodes = 0;
  seedrl::observation_spec observation_spec() const { return {seedrl::dtype::int32, {2}}; }
  seedrl::action_spec action_spec() const { return seedrl::action_spec::discrete(3); }
  void seed(std::uint64_t) {}
  void reset(std::span<std::int32_t> obs) {
    step_in_episode = 0;
    ++episodes;
    obs[0] = step_in_episode;
    obs[1] = episodes;
  }
  seedrl::step_result step(std::int32_t a, std::span<std::int32_t> obs) {
    ++step_in_episode;
    obs[0] = step_in_episode;
    obs[1] = episodes;
    const bool end = step_in_episode == length;
    return {static_cast<double>(a + 1), end && length != 4, end && length == 4};
  }
};

/// A one-dimensional point that moves by the action; continuous actions in [-1, 1].
struct point_env {
  using observation_type = double;
  using action_type = std::span<const float>;
  double x = 0.0;
  seedrl::observation_spec observation_spec() const { return {seedrl::dtype::float64, {1}}; }
  seedrl::action_spec action_spec() const {
    return seedrl::action_spec::continuous({1}, -1.0, 1.0);
  }
  void seed(std::uint64_t) {}
  void reset(std::span<double> obs) { obs[0] = x = 0.0; }
  seedrl::step_result step(std::span<const float> a, std::span<double> obs) {
    obs[0] = x += a[0];
    return {-std::abs(x), false, false};
  }
};

/// A planar point with per-element bounds: x in [-1, 1], y unbounded below and at most 2.
struct plane_env {
  using observation_type = double;
  using action_type = std::span<const float>;
  seedrl::observation_spec observation_spec() const { return {seedrl::dtype::float64, {2}}; }
  seedrl::action_spec action_spec() const {
    return seedrl::action_spec::continuous({2}, {-1.0, -std::numeric_limits<double>::infinity()},
                                           {1.0, 2.0});
  }
  void seed(std::uint64_t) {}
  void reset(std::span<double> obs) { obs[0] = obs[1] = 0.0; }
  seedrl::step_result step(std::span<const float> a, std::span<double> obs) {
    obs[0] = a[0];
    obs[1] = a[1];
    return {0.0, false, false};
  }
};

}  // namespace

TEST_CASE("env_batch reports terminal reward and done with the next episode's first observation",
          "[env_batch]") {
  std::vector<counting_env> envs(2);
  envs[1].length = 2;
  seedrl::env_batch<counting_env> batch(std::move(envs), 5);
  REQUIRE(batch.size() == 2);
  std::vector<std::int32_t> actions{0, 2};

  batch.step(actions);  // env 0 at step 1, env 1 at step 1
  CHECK(batch.dones()[0] == 0);
  CHECK(batch.dones()[1] == 0);
  CHECK(batch.finished_episodes().empty());

  batch.step(actions);  // env 1 ends its 2-step episode
  CHECK(batch.dones()[0] == 0);
  CHECK(batch.dones()[1] == 1);
  CHECK(batch.rewards()[1] == 3.0f);  // the terminal reward
  // ...delivered with the first observation of episode 2.
  CHECK(batch.observation(1)[0] == 0);
  CHECK(batch.observation(1)[1] == 2);
  REQUIRE(batch.finished_episodes().size() == 1);
  CHECK(batch.finished_episodes()[0].env_index == 1);
  CHECK(batch.finished_episodes()[0].length == 2);
  CHECK(batch.finished_episodes()[0].episode_return == 6.0);
  CHECK(batch.episode_steps()[1] == 0);
  CHECK(batch.episode_returns()[1] == 0.0);

  batch.step(actions);  // env 0 ends its 3-step episode
  CHECK(batch.dones()[0] == 1);
  CHECK(batch.truncated()[0] == 0);
  REQUIRE(batch.finished_episodes().size() == 1);
  CHECK(batch.finished_episodes()[0].env_index == 0);
  CHECK(batch.finished_episodes()[0].episode_return == 3.0);
  CHECK(batch.episode_steps()[1] == 1);
}

TEST_CASE("env_batch tells truncation from termination", "[env_batch]") {
  std::vector<counting_env> envs(1);
  envs[0].length = 4;  // counting_env truncates 4-step episodes
  seedrl::env_batch<counting_env> batch(std::move(envs), 0);
  std::vector<std::int32_t> a{1};
  for (int i = 0; i < 4; ++i)
    batch.step(a);
  CHECK(batch.dones()[0] == 1);
  CHECK(batch.truncated()[0] == 1);
  REQUIRE(batch.finished_episodes().size() == 1);
  CHECK(batch.finished_episodes()[0].truncated);
}

TEST_CASE("env_batch rejects out-of-range actions before moving any environment", "[env_batch]") {
  auto batch = seedrl::env_batch<seedrl::cartpole>::create(
      3, [](std::size_t) { return seedrl::cartpole{}; }, 11);
  const std::vector<float> before(batch.observations().begin(), batch.observations().end());
  std::vector<std::int32_t> bad{0, 2, 1};
  CHECK_THROWS_WITH(batch.step(bad),
                    Catch::Contains("action 2 for environment 1 is outside [0, 2)"));
  std::vector<std::int32_t> negative{0, 0, -1};
  CHECK_THROWS_AS(batch.step(negative), std::out_of_range);
  std::vector<std::int32_t> short_list{0, 1};
  CHECK_THROWS_AS(batch.step(short_list), std::invalid_argument);
  const std::vector<float> after(batch.observations().begin(), batch.observations().end());
  CHECK(before == after);
  CHECK(batch.episode_steps()[0] == 0);
}

TEST_CASE("env_batch seeds each environment differently and reproducibly", "[env_batch]") {
  auto make = [](std::size_t) { return seedrl::cartpole{}; };
  auto a = seedrl::env_batch<seedrl::cartpole>::create(4, make, 99);
  auto b = seedrl::env_batch<seedrl::cartpole>::create(4, make, 99);
  const std::vector<float> oa(a.observations().begin(), a.observations().end());
  const std::vector<float> ob(b.observations().begin(), b.observations().end());
  CHECK(oa == ob);
  CHECK(std::vector<float>(oa.begin(), oa.begin() + 4) !=
        std::vector<float>(oa.begin() + 4, oa.begin() + 8));
}

TEST_CASE("env_batch runs CartPole with a random policy and accounts every episode",
          "[env_batch]") {
  auto batch = seedrl::env_batch<seedrl::cartpole>::create(
      8, [](std::size_t) { return seedrl::cartpole{}; }, 3);
  seedrl::random_generator rng(4);
  std::vector<std::int32_t> actions(8);
  double reward_sum = 0.0, finished_return_sum = 0.0;
  std::int64_t episodes = 0;
  for (int t = 0; t < 2000; ++t) {
    for (auto& a : actions)
      a = static_cast<std::int32_t>(rng.below(2));
    batch.step(actions);
    for (float r : batch.rewards())
      reward_sum += r;
    for (const auto& e : batch.finished_episodes()) {
      finished_return_sum += e.episode_return;
      CHECK(e.length == static_cast<std::int64_t>(e.episode_return));  // reward 1 per step
      ++episodes;
    }
  }
  double open_returns = 0.0;
  for (double r : batch.episode_returns())
    open_returns += r;
  // Every reward is either in a finished episode or in one still running.
  CHECK(reward_sum == Approx(finished_return_sum + open_returns));
  // A random policy balances for about 22 steps on average.
  const double mean = finished_return_sum / static_cast<double>(episodes);
  CHECK(mean > 15.0);
  CHECK(mean < 30.0);
}

TEST_CASE("env_batch checks continuous actions against their bounds", "[env_batch]") {
  std::vector<point_env> envs(2);
  seedrl::env_batch<point_env> batch(std::move(envs), 0);
  CHECK(batch.action_size() == 1);
  std::vector<float> ok{0.5f, -1.0f};
  batch.step(ok);
  CHECK(batch.observation(0)[0] == 0.5);
  CHECK(batch.observation(1)[0] == -1.0);
  std::vector<float> too_big{0.5f, 1.5f};
  CHECK_THROWS_AS(batch.step(too_big), std::out_of_range);
  std::vector<float> nan{std::nanf(""), 0.0f};
  CHECK_THROWS_AS(batch.step(nan), std::out_of_range);
}

TEST_CASE("env_batch checks each action element against its own bounds", "[env_batch]") {
  std::vector<plane_env> envs(2);
  seedrl::env_batch<plane_env> batch(std::move(envs), 0);
  CHECK(batch.action_size() == 2);
  // y may go far below x's bound; both envs' element 1 use [-inf, 2].
  std::vector<float> ok{1.0f, -1e30f, -1.0f, 2.0f};
  batch.step(ok);
  CHECK(batch.observation(0)[1] == static_cast<double>(-1e30f));
  CHECK(batch.observation(1)[1] == 2.0);
  // 1.5 would pass element 1's bound, not element 0's; 2.5 the other way round.
  std::vector<float> x_out{1.5f, 0.0f, 0.0f, 0.0f};
  CHECK_THROWS_AS(batch.step(x_out), std::out_of_range);
  std::vector<float> y_out{0.0f, 0.0f, 0.0f, 2.5f};
  CHECK_THROWS_AS(batch.step(y_out), std::out_of_range);
  std::vector<float> nan{0.0f, std::nanf(""), 0.0f, 0.0f};
  CHECK_THROWS_AS(batch.step(nan), std::out_of_range);
}

TEST_CASE("env_batch refuses inconsistent environments", "[env_batch]") {
  CHECK_THROWS_AS(seedrl::env_batch<seedrl::cartpole>(std::vector<seedrl::cartpole>{}, 0),
                  std::invalid_argument);
}

TEST_CASE("any_env_batch steps an env_batch through its virtual interface", "[env_batch]") {
  // Discrete, int32 observations: the bytes are the batch's, converted values exact.
  const auto factory = seedrl::make_env_batch_factory<counting_env>(
      [](std::size_t i) { return counting_env{static_cast<int>(i) + 2}; });
  const auto erased = factory(2, 7);
  seedrl::env_batch<counting_env> direct(std::vector<counting_env>{{2}, {3}}, 7);
  REQUIRE(erased->size() == 2);
  CHECK(erased->action_spec().is_discrete());
  CHECK(erased->action_size() == 1);
  std::vector<double> values(4);
  for (int t = 0; t < 5; ++t) {
    const auto bytes = erased->observation_bytes();
    const auto want = std::as_bytes(direct.observations());
    REQUIRE(bytes.size() == want.size());
    CHECK(std::equal(bytes.begin(), bytes.end(), want.begin()));
    erased->observations(std::span<double>(values));
    for (std::size_t j = 0; j < values.size(); ++j)
      CHECK(values[j] == static_cast<double>(direct.observations()[j]));
    const std::vector<std::int32_t> actions{t % 3, (t + 1) % 3};
    erased->step(std::span<const std::int32_t>(actions));
    direct.step(actions);
    CHECK(std::vector<float>(erased->rewards().begin(), erased->rewards().end()) ==
          std::vector<float>(direct.rewards().begin(), direct.rewards().end()));
    CHECK(std::vector<std::uint8_t>(erased->dones().begin(), erased->dones().end()) ==
          std::vector<std::uint8_t>(direct.dones().begin(), direct.dones().end()));
    CHECK(std::vector<std::uint8_t>(erased->truncated().begin(), erased->truncated().end()) ==
          std::vector<std::uint8_t>(direct.truncated().begin(), direct.truncated().end()));
    CHECK(erased->finished_episodes().size() == direct.finished_episodes().size());
  }
  // The other kind of action is refused, and a wrong-sized conversion too.
  const std::vector<float> continuous{0.0f, 0.0f};
  CHECK_THROWS_AS(erased->step(std::span<const float>(continuous)), std::logic_error);
  std::vector<float> short_out(3);
  CHECK_THROWS_AS(erased->observations(std::span<float>(short_out)), std::invalid_argument);

  // Continuous actions reach the environments; a discrete step is refused.
  const auto points =
      seedrl::make_env_batch_factory<point_env>([](std::size_t) { return point_env{}; })(2, 0);
  CHECK_FALSE(points->action_spec().is_discrete());
  const std::vector<float> moves{0.5f, -0.25f};
  points->step(std::span<const float>(moves));
  std::vector<float> xs(2);
  points->observations(std::span<float>(xs));
  CHECK(xs == std::vector<float>{0.5f, -0.25f});
  CHECK_THROWS_AS(points->step(std::span<const std::int32_t>()), std::logic_error);
  CHECK_THROWS_AS(points->step(std::span<const float>(continuous).first(1)), std::invalid_argument);
}
