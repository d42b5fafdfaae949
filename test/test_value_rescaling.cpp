// R2D2's value rescaling h, its inverse and both derivatives against float64 references made
// independently of the closed forms (tools/gen_r2d2_fixture.py: h^-1 by bisection, derivatives
// by high-precision finite differences), in double and float, and the round trips.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fixture_compare.hpp"
#include "seedrl/algo/value_rescaling.hpp"

namespace {

nlohmann::json fixture() {
  std::ifstream in(std::string(SEEDRL_TEST_FIXTURES) + "/r2d2/value_rescaling.json");
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

template <class S, class F>
std::vector<S> apply(const std::vector<double>& in, F f) {
  std::vector<S> out;
  for (const double v : in)
    out.push_back(f(static_cast<S>(v)));
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("value rescaling matches its float64 references", "[r2d2]", double, float) {
  using S = TestType;
  const auto j = fixture();
  const auto x = j["x"].get<std::vector<double>>();
  const auto y = j["y"].get<std::vector<double>>();
  const S eps = static_cast<S>(j["eps"].get<double>());
  // float: the inputs themselves round (x = 12345.678), so the allowance is relative.
  const seedrl_test::tolerance tol = std::is_same_v<S, double>
                                         ? seedrl_test::tolerance{1e-12, 1e-10}
                                         : seedrl_test::tolerance{1e-6, 2e-6};
  const seedrl_test::tolerance derivative_tol = std::is_same_v<S, double>
                                                    ? seedrl_test::tolerance{1e-9, 1e-8}
                                                    : seedrl_test::tolerance{1e-6, 2e-6};
  CHECK(seedrl_test::first_mismatch("h",
                                    apply<S>(x, [&](S v) { return seedrl::value_rescale(v, eps); }),
                                    j["h"].get<std::vector<double>>(), tol) == "");
  CHECK(seedrl_test::first_mismatch(
            "h'", apply<S>(x, [&](S v) { return seedrl::value_rescale_derivative(v, eps); }),
            j["h_derivative"].get<std::vector<double>>(), derivative_tol) == "");
  CHECK(seedrl_test::first_mismatch(
            "h^-1", apply<S>(y, [&](S v) { return seedrl::value_unrescale(v, eps); }),
            j["h_inverse"].get<std::vector<double>>(), tol) == "");
  CHECK(seedrl_test::first_mismatch(
            "(h^-1)'", apply<S>(y, [&](S v) { return seedrl::value_unrescale_derivative(v, eps); }),
            j["h_inverse_derivative"].get<std::vector<double>>(), derivative_tol) == "");
}

TEST_CASE("value rescaling round trips over nine orders of magnitude", "[r2d2]") {
  for (double m = 1e-4; m < 1e6; m *= 1.7) {
    for (const double x : {m, -m}) {
      CHECK(seedrl::value_unrescale(seedrl::value_rescale(x)) == Approx(x).epsilon(1e-10));
      CHECK(seedrl::value_rescale(seedrl::value_unrescale(x)) == Approx(x).epsilon(1e-10));
      // The derivatives are each other's reciprocals along the curve.
      CHECK(seedrl::value_rescale_derivative(x) *
                seedrl::value_unrescale_derivative(seedrl::value_rescale(x)) ==
            Approx(1.0).epsilon(1e-12));
    }
  }
  CHECK(seedrl::value_rescale(0.0) == 0.0);
  CHECK(seedrl::value_unrescale(0.0) == 0.0);
}
