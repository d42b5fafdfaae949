// detail::fast_exp (the vectorisable exp V-trace's row loop uses) against std::exp: a sweep of
// the whole float and double range, normal results within 2 ulp (measured: 1), the subnormal
// range within 2 ulp or 2 units of the smallest subnormal, the edges (+-inf, NaN, overflow,
// underflow, 0) exactly as std::exp gives them; and the clamp + arithmetic split V-trace uses
// equals the one-call form.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "seedrl/detail/fast_exp.hpp"

namespace {

/// Distance in representable values between two finite numbers of the same sign.
template <class S>
std::int64_t ulp_distance(S a, S b) {
  using I = std::conditional_t<sizeof(S) == 4, std::int32_t, std::int64_t>;
  I ia = 0, ib = 0;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  const std::int64_t d = static_cast<std::int64_t>(ia) - static_cast<std::int64_t>(ib);
  return d < 0 ? -d : d;
}

/// Sweeps [lo, hi] in `steps` steps plus a nudge so that the points are not round numbers;
/// returns "" or the first point out of tolerance.
template <class S>
std::string sweep(S lo, S hi, int steps) {
  std::int64_t worst = 0;
  for (int i = 0; i <= steps; ++i) {
    const S x = lo + (hi - lo) * static_cast<S>(i) / static_cast<S>(steps) +
                static_cast<S>(i % 7) * S(1e-5);
    const S got = seedrl::detail::fast_exp(x), want = std::exp(x);
    if (std::isinf(want) || want == S(0)) {
      if (got != want)
        return "at x = " + std::to_string(x) + ": got " + std::to_string(got);
      continue;
    }
    const bool subnormal = want < std::numeric_limits<S>::min();
    const std::int64_t d = ulp_distance(got, want);
    if (d > 2)
      return "at x = " + std::to_string(x) + ": " + std::to_string(d) + " ulp" +
             (subnormal ? " (subnormal)" : "");
    worst = std::max(worst, d);
  }
  (void)worst;
  return "";
}

}  // namespace

TEMPLATE_TEST_CASE("fast_exp matches std::exp over the whole range", "[fast_exp]", float, double) {
  using S = TestType;
  const S lo = std::log(std::numeric_limits<S>::denorm_min()) - S(2);
  const S hi = std::log(std::numeric_limits<S>::max()) + S(2);
  CHECK(sweep<S>(lo, hi, 400'000) == "");
  CHECK(sweep<S>(S(-1), S(1), 100'000) == "");  // V-trace's log rhos live here
  CHECK(sweep<S>(S(-1e-6), S(1e-6), 1'000) == "");
}

TEMPLATE_TEST_CASE("fast_exp's edges are std::exp's", "[fast_exp]", float, double) {
  using S = TestType;
  using lim = std::numeric_limits<S>;
  using seedrl::detail::fast_exp;
  CHECK(fast_exp(S(0)) == S(1));
  CHECK(fast_exp(-S(0)) == S(1));
  CHECK(fast_exp(S(1)) == Approx(std::exp(S(1))).epsilon(lim::epsilon() * 2));
  CHECK(fast_exp(lim::infinity()) == lim::infinity());
  CHECK(fast_exp(-lim::infinity()) == S(0));
  CHECK(std::isnan(fast_exp(lim::quiet_NaN())));
  CHECK(fast_exp(lim::max()) == lim::infinity());
  CHECK(fast_exp(lim::lowest()) == S(0));
  S top = std::log(lim::max());  // then down to the largest x whose e^x is finite
  while (!std::isfinite(std::exp(top)))
    top = std::nextafter(top, S(0));
  CHECK(std::isfinite(fast_exp(top)));
  CHECK(ulp_distance(fast_exp(top), std::exp(top)) <= 2);
  CHECK(fast_exp(std::nextafter(top, S(1000)) + S(1)) == lim::infinity());
  const S x = S(-3.25);
  CHECK(seedrl::detail::fast_exp_clamped(seedrl::detail::fast_exp_clamp(x)) == fast_exp(x));
}
