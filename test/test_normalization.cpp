// Observation normalization and reward scaling: running_mean_std against a float64 two-pass
// reference over every row seen, and input_normalizer (the learner's piece) against an
// independent float64 replay of VecNormalize's rules, its checkpoint round trip and frozen use.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "seedrl/algo/running_mean_std.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/runtime/input_normalizer.hpp"
#include "seedrl/runtime/learner_config.hpp"
#include "thread_ranks.hpp"

namespace {

/// Mean and population variance of column i of `rows` x n row-major values: two passes.
struct column_stats {
  double mean = 0.0, var = 0.0;
};
column_stats two_pass(const std::vector<double>& x, std::size_t n, std::size_t i) {
  const std::size_t rows = x.size() / n;
  column_stats s;
  for (std::size_t r = 0; r < rows; ++r)
    s.mean += x[r * n + i];
  s.mean /= static_cast<double>(rows);
  for (std::size_t r = 0; r < rows; ++r)
    s.var += (x[r * n + i] - s.mean) * (x[r * n + i] - s.mean);
  s.var /= static_cast<double>(rows);
  return s;
}

seedrl::observation_spec vector_spec(std::int64_t n) {
  return {seedrl::dtype::float32, seedrl::tensor_shape{n}};
}

}  // namespace

TEST_CASE("running_mean_std matches a two-pass float64 reference over every row seen",
          "[normalization]") {
  constexpr std::size_t n = 3;
  seedrl::random_generator rng(7);
  seedrl::running_mean_std rms(n);
  // Before any row: mean 0, variance 1, so normalize only clips.
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(rms.mean()[i] == 0.0);
    CHECK(rms.var()[i] == 1.0);
  }
  std::vector<double> seen;
  // Columns with very different offsets and scales: a naive sum of squares loses the small
  // variance of the column offset by 1e4.
  const double offset[n] = {0.0, 1e4, -3.0}, scale[n] = {1.0, 0.01, 50.0};
  for (std::size_t batch = 0; batch < 40; ++batch) {
    const std::size_t rows = 1 + batch % 7;  // 1..7 rows, a single row too
    std::vector<float> x(rows * n);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < n; ++i) {
        x[r * n + i] = static_cast<float>(offset[i] + scale[i] * rng.normal());
        seen.push_back(static_cast<double>(x[r * n + i]));
      }
    rms.update(std::span<const float>(x), rows);
    REQUIRE(rms.count() == static_cast<double>(seen.size() / n));
    for (std::size_t i = 0; i < n; ++i) {
      const auto want = two_pass(seen, n, i);
      INFO("batch " << batch << " element " << i);
      CHECK(rms.mean()[i] == Approx(want.mean).epsilon(1e-12).margin(1e-12));
      CHECK(rms.var()[i] == Approx(want.var).epsilon(1e-9).margin(1e-15));
    }
  }
  // normalize: clip((x - mean) / sqrt(var + eps)), computed here from the reference.
  std::vector<double> probe = {0.5, 1e4 + 0.02, 1000.0};  // the last far beyond the clip
  std::vector<double> out = probe;
  rms.normalize(std::span<double>(out), 1, 5.0, 1e-8);
  for (std::size_t i = 0; i < n; ++i) {
    const auto s = two_pass(seen, n, i);
    const double want = std::clamp((probe[i] - s.mean) / std::sqrt(s.var + 1e-8), -5.0, 5.0);
    CHECK(out[i] == Approx(want).epsilon(1e-9));
  }
  CHECK(out[2] == 5.0);
}

TEST_CASE("running_mean_std refuses batches and statistics that do not fit", "[normalization]") {
  seedrl::running_mean_std rms(2);
  const std::vector<float> three(3, 1.0f);
  CHECK_THROWS_AS(rms.update(std::span<const float>(three), 2), std::invalid_argument);
  const std::vector<double> mean(2, 0.0), var{1.0, -1.0}, short_mean(1, 0.0);
  CHECK_THROWS_AS(rms.assign(3.0, mean, var), std::invalid_argument);
  CHECK_THROWS_AS(rms.assign(3.0, short_mean, mean), std::invalid_argument);
  CHECK_THROWS_AS(rms.assign(-1.0, mean, mean), std::invalid_argument);
  CHECK(rms.count() == 0.0);  // unchanged
}

TEST_CASE("input_normalizer: observations and rewards against a float64 replay",
          "[normalization]") {
  constexpr std::size_t n = 2, envs = 3;
  const double gamma = 0.9, obs_clip = 4.0, reward_clip = 2.0, eps = 1e-8;
  seedrl::input_normalizer<float> norm({.enabled = true, .clip = obs_clip},
                                       {.enabled = true, .gamma = gamma, .clip = reward_clip},
                                       vector_spec(n), envs, false);
  seedrl::random_generator rng(3);
  std::vector<double> seen_obs, seen_returns;
  std::vector<double> R(envs, 0.0);  // the replay's discounted returns
  std::size_t clipped = 0;
  for (std::size_t step = 0; step < 60; ++step) {
    // Slots in a changing order, some batches without slot 2.
    const std::size_t rows = step % 4 == 3 ? 2 : 3;
    std::vector<std::uint32_t> slots(rows);
    for (std::size_t r = 0; r < rows; ++r)
      slots[r] = static_cast<std::uint32_t>((r + step) % rows);
    std::vector<float> obs(rows * n), rewards(rows);
    std::vector<std::uint8_t> dones(rows), starts(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      obs[r * n] = static_cast<float>(10.0 + 3.0 * rng.normal());
      obs[r * n + 1] = static_cast<float>(rng.uniform(-1.0, 1.0));
      rewards[r] = static_cast<float>(rng.uniform() < 0.05 ? 200.0 : rng.normal());
      starts[r] = step == 0 || (step == 30 && slots[r] == 1);  // slot 1's actor restarts
      dones[r] = starts[r] || rng.uniform() < 0.1;
    }
    const std::vector<float> raw_obs = obs, raw_rewards = rewards;
    norm.apply(rows, slots, std::span(obs), std::span(rewards), dones, starts);
    // Replay: the statistics include this batch, then normalize.
    for (float v : raw_obs)
      seen_obs.push_back(v);
    for (std::size_t r = 0; r < rows; ++r) {
      double& Rs = R[slots[r]];
      if (starts[r]) {
        Rs = 0.0;
        continue;
      }
      Rs = gamma * Rs + raw_rewards[r];
      seen_returns.push_back(Rs);
      if (dones[r])
        Rs = 0.0;
    }
    const double var_R =
        seen_returns.empty() ? 1.0 : two_pass(seen_returns, 1, 0).var;  // 1 before any return
    for (std::size_t r = 0; r < rows; ++r) {
      INFO("step " << step << " row " << r);
      for (std::size_t i = 0; i < n; ++i) {
        const auto s = two_pass(seen_obs, n, i);
        const double want =
            std::clamp((raw_obs[r * n + i] - s.mean) / std::sqrt(s.var + eps), -obs_clip, obs_clip);
        CHECK(obs[r * n + i] == Approx(want).epsilon(1e-5).margin(1e-5));
      }
      const double want_r =
          std::clamp(raw_rewards[r] / std::sqrt(var_R + eps), -reward_clip, reward_clip);
      CHECK(rewards[r] == Approx(want_r).epsilon(1e-5).margin(1e-6));
      clipped += std::abs(want_r) == reward_clip ? 1 : 0;
    }
  }
  CHECK(clipped > 0);  // the rare large rewards reach the clip
  CHECK(norm.return_statistics().count() == static_cast<double>(seen_returns.size()));
}

TEST_CASE("input_normalizer: a non-finite observation row never reaches the statistics",
          "[normalization]") {
  // The wire refuses such rows; this is the second line of defence: one NaN would make the
  // running mean NaN for good, and every later action and checkpoint with it.
  constexpr std::size_t n = 2;
  seedrl::input_normalizer<float> norm({.enabled = true}, {.enabled = true, .gamma = 0.9},
                                       vector_spec(n), 3, false);
  seedrl::input_normalizer<float> reference({.enabled = true}, {.enabled = true, .gamma = 0.9},
                                            vector_spec(n), 3, false);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::uint32_t> slots{0, 1, 2};
  const std::vector<std::uint8_t> no(3, 0), starts(3, 1);
  std::vector<float> obs{1.0f, 2.0f, nan, 0.0f, 3.0f, -inf};
  std::vector<float> rewards(3, 0.0f);
  norm.apply(3, slots, std::span(obs), std::span(rewards), no, starts);
  // The reference saw row 0 alone.
  std::vector<float> row0{1.0f, 2.0f};
  std::vector<float> reward0{0.0f};
  const std::vector<std::uint32_t> slot0{0};
  const std::vector<std::uint8_t> no1(1, 0), start1(1, 1);
  reference.apply(1, slot0, std::span(row0), std::span(reward0), no1, start1);
  const auto got = norm.observation_statistics();
  const auto want = reference.observation_statistics();
  CHECK(got.count() == want.count());
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(std::isfinite(got.mean()[i]));
    CHECK(got.mean()[i] == want.mean()[i]);
    CHECK(got.var()[i] == want.var()[i]);
  }
  // A batch of finite rows afterwards normalizes to finite values.
  std::vector<float> next{0.5f, 1.0f, 2.0f, 3.0f, -1.0f, 4.0f};
  norm.apply(3, slots, std::span(next), std::span(rewards), no, no);
  for (float v : next)
    CHECK(std::isfinite(v));
}

TEST_CASE("input_normalizer: checkpoint round trip, frozen use and old checkpoints",
          "[normalization]") {
  constexpr std::size_t n = 2;
  const seedrl::observation_normalization_config obs{.enabled = true};
  const seedrl::reward_scaling_config rew{.enabled = true, .gamma = 0.5};
  seedrl::input_normalizer<float> trained(obs, rew, vector_spec(n), 2, false);
  const std::vector<std::uint32_t> slots{0, 1};
  const std::vector<std::uint8_t> no(2, 0), yes(2, 1);
  std::vector<float> o{1.0f, 2.0f, 3.0f, 5.0f}, r{1.0f, 0.0f};
  trained.apply(2, slots, std::span(o), std::span(r), yes, yes);  // starts: no returns counted
  for (int k = 0; k < 5; ++k) {
    o = {1.0f * static_cast<float>(k), 2.0f, 3.0f, -5.0f * static_cast<float>(k)};
    r = {1.0f, 2.0f * static_cast<float>(k)};
    trained.apply(2, slots, std::span(o), std::span(r), no, no);
  }
  seedrl::checkpoint c;
  trained.store(c);
  // Through the byte format, as a file would carry it.
  const seedrl::checkpoint back =
      seedrl::parse_checkpoint(seedrl::serialize_checkpoint(c), "memory");
  seedrl::input_normalizer<float> eval(obs, rew, vector_spec(n), 2, true);
  eval.load(eval.read(back));
  const auto a = trained.observation_statistics(), b = eval.observation_statistics();
  REQUIRE(b.count() == a.count());
  CHECK(a.count() == 12.0);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(b.mean()[i] == a.mean()[i]);
    CHECK(b.var()[i] == a.var()[i]);
  }
  CHECK(eval.return_statistics().var()[0] == trained.return_statistics().var()[0]);
  CHECK(eval.return_statistics().count() == 10.0);
  // Frozen: normalizes with the restored statistics and leaves them as they were.
  const std::vector<float> x{4.0f, -1.0f, 0.0f, 7.0f};
  std::vector<float> x_eval = x, r_eval{2.0f, -2.0f};
  eval.apply(2, slots, std::span(x_eval), std::span(r_eval), no, no);
  CHECK(eval.observation_statistics().count() == 12.0);
  CHECK(eval.return_statistics().count() == 10.0);
  for (std::size_t k = 0; k < x.size(); ++k) {
    const std::size_t i = k % n;
    const double want =
        std::clamp((x[k] - a.mean()[i]) / std::sqrt(a.var()[i] + 1e-8), -10.0, 10.0);
    CHECK(x_eval[k] == Approx(want).epsilon(1e-6));
  }
  CHECK(r_eval[0] ==
        Approx(2.0 / std::sqrt(trained.return_statistics().var()[0] + 1e-8)).epsilon(1e-6));
  // A checkpoint without the statistics (saved before normalization existed) loads none.
  seedrl::checkpoint old;
  seedrl::input_normalizer<float> fresh(obs, rew, vector_spec(n), 2, false);
  const auto none = fresh.read(old);
  CHECK_FALSE(none.observations.has_value());
  CHECK_FALSE(none.returns.has_value());
  // Statistics of another observation size are refused by name.
  seedrl::input_normalizer<float> wider(obs, rew, vector_spec(3), 2, false);
  CHECK_THROWS_WITH(wider.read(back), Catch::Contains("observation_normalization.mean"));
}

TEST_CASE("input_normalizer refuses normalizing pixel observations", "[normalization]") {
  const seedrl::observation_spec pixels{seedrl::dtype::uint8, seedrl::tensor_shape{84, 84, 4}};
  CHECK_THROWS_WITH(seedrl::input_normalizer<float>({.enabled = true}, {}, pixels, 4, false),
                    Catch::Contains("float observations"));
  // Reward scaling alone is fine for pixels.
  CHECK_NOTHROW(seedrl::input_normalizer<float>({}, {.enabled = true}, pixels, 4, false));
}

TEST_CASE("running_mean_std: merging two sets of rows equals updating with all of them",
          "[normalization]") {
  constexpr std::size_t n = 2;
  seedrl::random_generator rng(11);
  std::vector<float> a(5 * n), b(9 * n);
  for (auto& v : a)
    v = static_cast<float>(3.0 + rng.normal());
  for (auto& v : b)
    v = static_cast<float>(-1.0 + 4.0 * rng.normal());
  seedrl::running_mean_std left(n), right(n), empty(n);
  left.update(std::span<const float>(a), 5);
  right.update(std::span<const float>(b), 9);
  left.merge(empty);  // nothing to merge: unchanged
  CHECK(left.count() == 5.0);
  left.merge(right);
  std::vector<double> all(a.begin(), a.end());
  all.insert(all.end(), b.begin(), b.end());
  CHECK(left.count() == 14.0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto want = two_pass(all, n, i);
    CHECK(left.mean()[i] == Approx(want.mean).epsilon(1e-12));
    CHECK(left.var()[i] == Approx(want.var).epsilon(1e-12));
  }
  CHECK_THROWS_AS(left.merge(seedrl::running_mean_std(3)), std::invalid_argument);
}

TEST_CASE("input_normalizer: learner ranks share their statistics at every exchange",
          "[normalization][distributed]") {
  constexpr std::size_t n = 2, envs = 2;
  auto hub = std::make_shared<seedrl_test::thread_rank_hub>(2);
  std::vector<std::unique_ptr<seedrl::input_normalizer<float>>> ranks;
  for (int k = 0; k < 2; ++k) {
    ranks.push_back(std::make_unique<seedrl::input_normalizer<float>>(
        seedrl::observation_normalization_config{.enabled = true},
        seedrl::reward_scaling_config{.enabled = true, .gamma = 0.5}, vector_spec(n), envs, false));
    ranks.back()->share_between_ranks();
  }
  std::vector<double> seen;  // every observation row of both ranks
  seedrl::random_generator rng(5);
  // Rank k steps its two envs `steps` times; rewards 1 with no episode end.
  const auto feed = [&](int k, int steps) {
    for (int t = 0; t < steps; ++t) {
      std::vector<float> obs(envs * n), rewards(envs, 1.0f);
      for (auto& v : obs) {
        v = static_cast<float>(k * 10.0 + rng.normal());
        seen.push_back(static_cast<double>(v));
      }
      const std::uint32_t slots[envs] = {0, 1};
      const std::uint8_t dones[envs] = {0, 0}, starts[envs] = {0, 0};
      ranks[static_cast<std::size_t>(k)]->apply(envs, slots, std::span<float>(obs),
                                                std::span<float>(rewards), dones, starts);
    }
  };
  const auto exchange = [&] {
    std::vector<std::thread> threads;
    for (int k = 0; k < 2; ++k)
      threads.emplace_back([&, k] {
        seedrl_test::thread_rank rank(hub, k);
        ranks[static_cast<std::size_t>(k)]->share_with_ranks(rank);
      });
    for (auto& t : threads)
      t.join();
  };
  const auto check_all_seen = [&] {
    const auto s0 = ranks[0]->observation_statistics(), s1 = ranks[1]->observation_statistics();
    CHECK(s0.count() == static_cast<double>(seen.size() / n));
    for (std::size_t i = 0; i < n; ++i) {
      const auto want = two_pass(seen, n, i);
      CHECK(s0.mean()[i] == Approx(want.mean).epsilon(1e-12));
      CHECK(s0.var()[i] == Approx(want.var).epsilon(1e-10));
      CHECK(s1.mean()[i] == s0.mean()[i]);  // bit for bit: merged in the same order
      CHECK(s1.var()[i] == s0.var()[i]);
    }
    CHECK(ranks[1]->return_statistics().count() == ranks[0]->return_statistics().count());
    CHECK(ranks[1]->return_statistics().var()[0] == ranks[0]->return_statistics().var()[0]);
  };
  feed(0, 3);
  feed(1, 5);
  // Before the exchange each rank knows its own rows only.
  CHECK(ranks[0]->observation_statistics().count() == 6.0);
  CHECK(ranks[1]->observation_statistics().count() == 10.0);
  exchange();
  check_all_seen();
  // Returns: rank 0 had 2 envs x 3 steps, rank 1 2 x 5, each counted once.
  CHECK(ranks[0]->return_statistics().count() == 16.0);
  feed(0, 4);  // only rank 0 sees new rows; the next exchange brings them to rank 1
  exchange();
  check_all_seen();
}
