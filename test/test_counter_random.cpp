// The counter-based generator and inverse-CDF categorical sampling
// (seedrl/core/counter_random.hpp): SplitMix64's published outputs, a pure function of (seed,
// counter, row), uniform moments, sampling frequencies against softmax, and log-probs against
// seedrl::log_prob.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "seedrl/core/counter_random.hpp"
#include "seedrl/net/categorical.hpp"

TEST_CASE("splitmix64_mix is SplitMix64: the reference outputs for seed 0", "[counter_random]") {
  // SplitMix64 seeded with 0 outputs mix(0), mix(0x9E37...), ... where each state step adds the
  // golden gamma; splitmix64_mix(k * gamma) is output k+1 (Vigna's splitmix64.c).
  const std::uint64_t gamma = 0x9E3779B97F4A7C15ull;
  CHECK(seedrl::splitmix64_mix(0) == 0xE220A8397B1DCDAFull);
  CHECK(seedrl::splitmix64_mix(gamma) == 0x6E789E6AA1B965F4ull);
  CHECK(seedrl::splitmix64_mix(2 * gamma) == 0x06C45D188009454Full);
}

TEST_CASE("counter_uniform is a function of (seed, counter, row), uniform with 0 <= u < 1",
          "[counter_random]") {
  CHECK(seedrl::counter_uniform(1, 2, 3) == seedrl::counter_uniform(1, 2, 3));
  std::set<double> seen;
  for (std::uint64_t s = 0; s < 3; ++s)
    for (std::uint64_t c = 0; c < 3; ++c)
      for (std::uint64_t r = 0; r < 3; ++r)
        seen.insert(seedrl::counter_uniform(s, c, r));
  CHECK(seen.size() == 27);  // neighbouring words give different draws
  constexpr int n = 200000;
  double sum = 0.0, sq = 0.0;
  for (int i = 0; i < n; ++i) {
    const double u = seedrl::counter_uniform(42, static_cast<std::uint64_t>(i / 100),
                                             static_cast<std::uint64_t>(i % 100));
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    sq += u * u;
  }
  // Mean 1/2 and variance 1/12, within about 5 standard errors.
  CHECK(std::abs(sum / n - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::abs(sq / n - sum * sum / n / n - 1.0 / 12) < 5e-3);
}

TEST_CASE("counter_categorical samples softmax(logits) and returns the action's log-prob",
          "[counter_random]") {
  const float logits[] = {1.0f, -0.5f, 2.0f, 0.0f};
  constexpr int A = 4, n = 200000;
  double p[A], z = 0.0;
  for (int i = 0; i < A; ++i)
    z += std::exp(static_cast<double>(logits[i]));
  for (int i = 0; i < A; ++i)
    p[i] = std::exp(static_cast<double>(logits[i])) / z;
  std::vector<int> counts(A, 0);
  for (int r = 0; r < n; ++r) {
    float lp = 0.0f;
    const int a = seedrl::counter_categorical(
        logits, A, seedrl::counter_uniform(7, 0, static_cast<std::uint64_t>(r)), &lp);
    REQUIRE(a >= 0);
    REQUIRE(a < A);
    ++counts[static_cast<std::size_t>(a)];
    if (r < 8)
      CHECK(lp == Approx(seedrl::log_prob(logits, A, a)).margin(1e-6));
  }
  for (int i = 0; i < A; ++i) {
    const double se = std::sqrt(p[i] * (1 - p[i]) / n);
    CHECK(std::abs(counts[static_cast<std::size_t>(i)] / static_cast<double>(n) - p[i]) < 5 * se);
  }
  // The inverse CDF's edges: u = 0 takes the first action, u just below 1 the last.
  float lp = 0.0f;
  CHECK(seedrl::counter_categorical(logits, A, 0.0, &lp) == 0);
  CHECK(seedrl::counter_categorical(logits, A, std::nextafter(1.0, 0.0), &lp) == A - 1);
  // A logit far above the rest always wins, with log-prob 0.
  const double huge[] = {-100.0, 300.0, -5.0};
  double lh = 1.0;
  CHECK(seedrl::counter_categorical(huge, 3, 0.999, &lh) == 1);
  CHECK(lh == Approx(0.0).margin(1e-12));
}
