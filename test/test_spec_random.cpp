// Specs (shapes, dtypes, action spaces) and the portable random generator.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>

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
