#pragma once
// Comparing computed values with a fixture's float64 references, by the fixtures' rule
// |got - expected| <= abs + rel * |expected|, for the numerics tests.
#include <cmath>
#include <cstddef>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace seedrl_test {

/// A fixture comparison's allowance: absolute plus relative to the expected value.
struct tolerance {
  double abs = 0.0;
  double rel = 0.0;
};

/// The first element of `got` that breaks the rule, described with `name`, or "" when every
/// element passes (a size mismatch is described too).
template <class S>
std::string first_mismatch(const std::string& name, std::span<const S> got,
                           const std::vector<double>& expected, tolerance tol) {
  if (got.size() != expected.size()) {
    return name + ": got " + std::to_string(got.size()) + " values, expected " +
           std::to_string(expected.size());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double bound = tol.abs + tol.rel * std::abs(expected[i]);
    if (!(std::abs(g - expected[i]) <= bound)) {  // NaN fails too
      std::ostringstream out;
      out.precision(17);
      out << name << "[" << i << "]: got " << g << ", expected " << expected[i] << " (|diff| "
          << std::abs(g - expected[i]) << " > " << bound << ")";
      return out.str();
    }
  }
  return {};
}

template <class S>
std::string first_mismatch(const std::string& name, const std::vector<S>& got,
                           const std::vector<double>& expected, tolerance tol) {
  return first_mismatch(name, std::span<const S>(got), expected, tol);
}

inline std::string first_mismatch(const std::string& name, double got, double expected,
                                  tolerance tol) {
  return first_mismatch(name, std::span<const double>(&got, 1), {expected}, tol);
}

/// A fixture's float64 values as S.
template <class S>
std::vector<S> cast_to(const std::vector<double>& v) {
  return std::vector<S>(v.begin(), v.end());
}

}  // namespace seedrl_test
