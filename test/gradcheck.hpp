#pragma once
// Central-difference gradient checking for the numerics tests (float64 only).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "seedrl/core/random.hpp"

namespace seedrl_test {

/// How far an analytic gradient is from central differences.
struct gradcheck_result {
  double norm_relative_error = 0.0;  ///< ||a - n|| / max(||a||, ||n||)
  double worst_element_error = 0.0;  ///< max |a - n| / max(|a|, |n|, 1e-3)
  std::size_t worst_index = 0;
  std::size_t checked = 0;
};

/// Perturbs each of `x`'s elements by +-h, evaluates `loss`, and compares the central
/// difference with `analytic` (d loss / d x at the unperturbed x).
inline gradcheck_result gradcheck(std::span<double> x, std::span<const double> analytic,
                                  const std::function<double()>& loss, double h = 1e-6) {
  gradcheck_result r;
  double diff2 = 0.0, a2 = 0.0, n2 = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * h);
    const double a = analytic[i];
    diff2 += (a - numeric) * (a - numeric);
    a2 += a * a;
    n2 += numeric * numeric;
    const double e = std::abs(a - numeric) / std::max({std::abs(a), std::abs(numeric), 1e-3});
    if (e > r.worst_element_error) {
      r.worst_element_error = e;
      r.worst_index = i;
    }
    ++r.checked;
  }
  r.norm_relative_error = std::sqrt(diff2) / std::max({std::sqrt(a2), std::sqrt(n2), 1e-300});
  return r;
}

/// `n` values uniform in [-scale, scale].
inline std::vector<double> random_vector(std::size_t n, seedrl::random_generator& rng,
                                         double scale = 1.0) {
  std::vector<double> v(n);
  for (auto& x : v)
    x = rng.uniform(-scale, scale);
  return v;
}

/// Plain dot product, for scalar losses of the form <weights, output>.
inline double dot(std::span<const double> a, std::span<const double> b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// Checks a gradcheck result against the tolerances every numerics test uses.
inline void require_close(const seedrl_test::gradcheck_result& r) {
  INFO("checked " << r.checked << " elements; worst at " << r.worst_index);
  CHECK(r.checked > 0);
  CHECK(r.norm_relative_error < 1e-6);
  CHECK(r.worst_element_error < 1e-6);
}

}  // namespace seedrl_test
