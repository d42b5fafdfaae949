// seedrl::replay::sum_tree (R2D2's prioritized sampling) against brute force: the item a
// prefix sum lands on, checked against a linear scan on exactly representable priorities;
// draws proportional to priority, checked with a chi-square test over many draws; priority
// changes, zero priorities, the edges of the range and the refusals. Then the sequence priority
// (eta mix) and the importance weights that go with the draws.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "seedrl/replay/priorities.hpp"
#include "seedrl/replay/sum_tree.hpp"

namespace {

using seedrl::replay::sum_tree;

// The item a linear scan picks for u: the first whose cumulative sum exceeds u.
std::size_t scan(const std::vector<double>& p, double u) {
  double sum = 0;
  std::size_t last_nonzero = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] > 0)
      last_nonzero = i;
    sum += p[i];
    if (p[i] > 0 && u < sum)
      return i;
  }
  return last_nonzero;
}

// The chi-square statistic's upper quantile for `df` degrees of freedom at the normal quantile
// z (Wilson-Hilferty).
double chi_square_quantile(double df, double z) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

}  // namespace

TEST_CASE("sum_tree finds the item a linear scan finds, for every prefix sum", "[replay]") {
  std::mt19937_64 rng(7);
  for (const std::size_t n : {1u, 2u, 5u, 37u, 64u, 100u}) {
    // Small integers: every sum is exact in double, so the tree and the scan must agree.
    std::vector<double> p(n);
    sum_tree tree(n);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = static_cast<double>(rng() % 5);  // zeros included
      tree.set(i, p[i]);
    }
    if (n == 1)
      p[0] = 3;
    tree.set(0, p[0]);
    double total = 0;
    for (const double v : p)
      total += v;
    if (total == 0) {
      p[n - 1] = 1;
      tree.set(n - 1, 1);
      total = 1;
    }
    REQUIRE(tree.total() == total);
    // Every integer boundary and every midpoint, then past the end (rounding's case).
    for (double u = 0; u < total; u += 0.5)
      REQUIRE(tree.find(u) == scan(p, u));
    CHECK(tree.find(total) == scan(p, total));
    CHECK(tree.find(total * 2) == scan(p, total * 2));
    CHECK(p[tree.find(total)] > 0);
  }
}

TEST_CASE("sum_tree draws each item in proportion to its priority (chi-square)", "[replay]") {
  constexpr std::size_t n = 50;
  constexpr std::size_t draws = 200'000;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> priority(0.05, 3.0);
  sum_tree tree(n);
  std::vector<double> p(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = i % 10 == 3 ? 0.0 : priority(rng);  // some items never drawn
    tree.set(i, p[i]);
  }
  // Change some priorities after the fact: the draws must follow the new ones.
  for (std::size_t i = 0; i < n; i += 7) {
    p[i] = i % 2 == 0 ? 0.0 : priority(rng) * 4;
    tree.set(i, p[i]);
  }
  double total = 0;
  for (const double v : p)
    total += v;
  REQUIRE(tree.total() == Approx(total).epsilon(1e-12));
  std::vector<std::size_t> count(n, 0);
  std::uniform_real_distribution<double> u(0.0, tree.total());
  for (std::size_t d = 0; d < draws; ++d)
    ++count[tree.find(u(rng))];
  double chi2 = 0;
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] == 0) {
      CHECK(count[i] == 0);
      continue;
    }
    ++nonzero;
    const double expected = static_cast<double>(draws) * p[i] / total;
    chi2 += (static_cast<double>(count[i]) - expected) *
            (static_cast<double>(count[i]) - expected) / expected;
  }
  // Fails by chance once in ten thousand seeds; a tree that ignored a change, or drew an item
  // from its neighbour's range, lands far above it.
  const double limit = chi_square_quantile(static_cast<double>(nonzero - 1), 3.72);
  INFO("chi-square " << chi2 << " over " << nonzero - 1 << " degrees of freedom, limit " << limit);
  CHECK(chi2 < limit);
}

TEST_CASE("sum_tree refuses NaN, infinite and negative priorities and stays unchanged",
          "[replay]") {
  sum_tree tree(4);
  tree.set(0, 1.0);
  tree.set(2, 2.0);
  for (const double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), -1.0}) {
    try {
      tree.set(2, bad);
      FAIL("priority " << bad << " was taken");
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Catch::Contains("item 2"));
    }
    CHECK(tree.total() == 3.0);
    CHECK(tree.get(2) == 2.0);
  }
  CHECK_THROWS_AS(tree.set(4, 1.0), std::out_of_range);
  CHECK_THROWS_AS(sum_tree(0), std::invalid_argument);
  sum_tree empty(3);
  CHECK_THROWS_AS(empty.find(0.0), std::logic_error);
}

// --- R2D2's priorities and importance weights (seedrl/replay/priorities.hpp) -----------------

TEST_CASE("sequence priority mixes the largest and the mean absolute TD error", "[replay]") {
  const std::vector<double> td = {0.5, -2.0, 1.0, -0.5};  // |.|: max 2, mean 1
  CHECK(seedrl::replay::sequence_priority(std::span<const double>(td)) ==
        Approx(0.9 * 2.0 + 0.1 * 1.0));
  CHECK(seedrl::replay::sequence_priority(std::span<const double>(td), 0.0) == Approx(1.0));
  CHECK(seedrl::replay::sequence_priority(std::span<const double>(td), 1.0) == Approx(2.0));
  const std::vector<float> tdf = {-3.0f};
  CHECK(seedrl::replay::sequence_priority(std::span<const float>(tdf)) == Approx(3.0));
  std::vector<double> bad = td;
  bad[2] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(seedrl::replay::sequence_priority(std::span<const double>(bad)),
                    Catch::Contains("step 2"));
  CHECK_THROWS_AS(seedrl::replay::sequence_priority(std::span<const double>()),
                  std::invalid_argument);
  CHECK_THROWS_AS(seedrl::replay::sequence_priority(std::span<const double>(td), 1.5),
                  std::invalid_argument);
}

TEST_CASE("importance weights are (N P)^-beta over the batch's largest", "[replay]") {
  // N = 10: P = 0.05 -> 0.5^-0.6, P = 0.2 -> 2^-0.6, P = 0.1 -> 1; the largest is 0.5^-0.6.
  const std::vector<double> p = {0.05, 0.2, 0.1};
  const auto w = seedrl::replay::importance_weights(std::span<const double>(p), 10, 0.6);
  REQUIRE(w.size() == 3);
  CHECK(w[0] == Approx(1.0));
  CHECK(w[1] == Approx(std::pow(2.0, -0.6) / std::pow(0.5, -0.6)));
  CHECK(w[2] == Approx(1.0 / std::pow(0.5, -0.6)));
  // beta 0: no correction.
  for (const double x : seedrl::replay::importance_weights(std::span<const double>(p), 10, 0.0))
    CHECK(x == 1.0);
  const std::vector<double> zero = {0.1, 0.0};
  CHECK_THROWS_WITH(seedrl::replay::importance_weights(std::span<const double>(zero), 10),
                    Catch::Contains("item 1"));
  CHECK_THROWS_AS(seedrl::replay::importance_weights(std::span<const double>(p), 0),
                  std::invalid_argument);
}
