// Specs (shapes, dtypes, action spaces) and the portable random generator.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"

TEST_CASE("tensor_shape counts elements and validates dimensions", "[spec]") {
  const seedrl::tensor_shape s{84, 84, 4};
  CHECK(s.rank() == 3);
  CHECK(s.num_elements() == 84 * 84 * 4);
  CHECK(s.to_string() == "[84, 84, 4]");
  CHECK(seedrl::tensor_shape{}.num_elements() == 1);
  CHECK_THROWS_AS((seedrl::tensor_shape{3, 0}), std::invalid_argument);
  CHECK_THROWS_AS((seedrl::tensor_shape{1, 1, 1, 1, 1, 1, 1}), std::invalid_argument);
  CHECK(seedrl::tensor_shape{2, 3} == seedrl::tensor_shape{2, 3});
  CHECK_FALSE(seedrl::tensor_shape{2, 3} == seedrl::tensor_shape{3, 2});
}

TEST_CASE("observation and action specs", "[spec]") {
  const seedrl::observation_spec atari{seedrl::dtype::uint8, {84, 84, 1}};
  CHECK(atari.num_bytes() == 84 * 84);
  const seedrl::observation_spec vec{seedrl::dtype::float32, {4}};
  CHECK(vec.num_bytes() == 16);
  CHECK_FALSE(atari == vec);
  CHECK(seedrl::dtype_of<float>() == seedrl::dtype::float32);
  CHECK(seedrl::dtype_of<std::uint8_t>() == seedrl::dtype::uint8);
  CHECK(std::string(seedrl::to_string(seedrl::dtype::int32)) == "int32");
  CHECK(seedrl::action_spec::discrete(6).num_actions == 6);
  CHECK(seedrl::action_spec::discrete(6).is_discrete());
  CHECK_THROWS_AS(seedrl::action_spec::discrete(0), std::invalid_argument);
  const auto box = seedrl::action_spec::continuous({2}, -1.0, 1.0);
  CHECK_FALSE(box.is_discrete());
  CHECK(box.shape.num_elements() == 2);
  CHECK_THROWS_AS(seedrl::action_spec::continuous({2}, 1.0, 1.0), std::invalid_argument);
}

TEST_CASE("continuous action specs hold one pair of bounds or one per element", "[spec]") {
  using seedrl::action_spec;
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();

  // One pair broadcast over every element.
  const auto box = action_spec::continuous({2, 2}, -1.0, 2.0);
  CHECK_FALSE(box.per_element_bounds());
  CHECK(box.uniform_bounds());
  CHECK(box.bound_pairs() == 1);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(box.low_at(i) == -1.0);
    CHECK(box.high_at(i) == 2.0);
  }
  CHECK(box.bounds_to_string() == "[-1, 2]");

  // Gymnasium's Box(low=[-1, -2, -inf], high=[1, 0.5, inf]).
  const auto per = action_spec::continuous({3}, {-1.0, -2.0, -inf}, {1.0, 0.5, inf});
  CHECK(per.per_element_bounds());
  CHECK_FALSE(per.uniform_bounds());
  CHECK(per.bound_pairs() == 3);
  CHECK(per.low_at(1) == -2.0);
  CHECK(per.high_at(1) == 0.5);
  CHECK(per.low_at(2) == -inf);
  CHECK(per.high_at(2) == inf);
  CHECK(per.bounds_to_string() == "[[-1, 1], [-2, 0.5], [-inf, inf]]");
  // The span overload takes the same values.
  const std::vector<double> lo = {-1.0, -2.0, -inf}, hi = {1.0, 0.5, inf};
  CHECK(action_spec::continuous({3}, std::span<const double>(lo), std::span<const double>(hi)) ==
        per);

  // Equality compares every element's bounds, however they are stored.
  CHECK(action_spec::continuous({2}, {-1.0, -1.0}, {1.0, 1.0}) ==
        action_spec::continuous({2}, -1.0, 1.0));
  CHECK(action_spec::continuous({2}, {-1.0, -1.0}, {1.0, 1.0}).uniform_bounds());
  CHECK_FALSE(action_spec::continuous({2}, {-1.0, -1.0}, {1.0, 2.0}) ==
              action_spec::continuous({2}, -1.0, 1.0));
  CHECK_FALSE(action_spec::continuous({2}, {-1.0, -1.0}, {1.0, 2.0}) ==
              action_spec::continuous({2}, {-1.0, -1.0}, {2.0, 1.0}));
  CHECK_FALSE(action_spec::continuous({2}, -1.0, 1.0) == action_spec::continuous({3}, -1.0, 1.0));
  CHECK_FALSE(per == action_spec::discrete(3));
  // -0.0 and 0.0 are equal bounds, but one pair cannot say both exactly: not uniform.
  const auto signed_zero = action_spec::continuous({2}, {-0.0, 0.0}, {1.0, 1.0});
  CHECK(signed_zero == action_spec::continuous({2}, 0.0, 1.0));
  CHECK_FALSE(signed_zero.uniform_bounds());

  // Infinite bounds are allowed on either side, alone or both; NaN and low >= high are not.
  CHECK_NOTHROW(action_spec::continuous({1}, -inf, inf));
  CHECK_NOTHROW(action_spec::continuous({2}, {-inf, 0.0}, {0.0, inf}));
  CHECK_THROWS_AS(action_spec::continuous({1}, nan, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(action_spec::continuous({1}, 0.0, nan), std::invalid_argument);
  CHECK_THROWS_AS(action_spec::continuous({1}, inf, inf), std::invalid_argument);
  CHECK_THROWS_AS(action_spec::continuous({1}, -inf, -inf), std::invalid_argument);
  CHECK_THROWS_AS(action_spec::continuous({2}, {0.0, nan}, {1.0, 1.0}), std::invalid_argument);
  try {
    (void)action_spec::continuous({3}, {0.0, 0.0, 2.0}, {1.0, 1.0, 2.0});
    FAIL("low == high accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("element 2") != std::string::npos);
  }
  // One pair per element, no more, no fewer.
  try {
    (void)action_spec::continuous({2, 2}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0});
    FAIL("3 bounds for 4 elements accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("4 elements, got 3 low") != std::string::npos);
  }
  CHECK_THROWS_AS(action_spec::continuous({2}, {0.0, 0.0}, {1.0}), std::invalid_argument);
  // A shape whose element count passes int64 is refused, not overflowed.
  // (Vectors spelled out: a braced single value, {0.0}, would pick the scalar overload.)
  const std::vector<double> one_low = {0.0}, one_high = {1.0};
  CHECK_THROWS_AS(action_spec::continuous({1LL << 40, 1LL << 40}, one_low, one_high),
                  std::invalid_argument);
}

TEST_CASE("random_generator is reproducible and roughly uniform", "[random]") {
  seedrl::random_generator a(42), b(42), c(43);
  for (int i = 0; i < 10; ++i) {
    const auto x = a();
    CHECK(x == b());
    CHECK(x != c());
  }
  // Chi-square over 10 bins: 100000 draws; the 0.999 quantile for 9 dof is 27.9.
  std::map<std::uint64_t, int> counts;
  const int n = 100000;
  for (int i = 0; i < n; ++i)
    ++counts[a.below(10)];
  double chi2 = 0.0;
  for (int k = 0; k < 10; ++k) {
    const double d = counts[static_cast<std::uint64_t>(k)] - n / 10.0;
    chi2 += d * d / (n / 10.0);
  }
  CHECK(counts.size() == 10);
  CHECK(chi2 < 27.9);
  for (int i = 0; i < 1000; ++i) {
    const double u = a.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
  }
  CHECK(seedrl::random_generator::derive(1, 0) != seedrl::random_generator::derive(1, 1));
}
