#pragma once
/// \file
/// R2D2's invertible value rescaling (Kapturowski et al. 2019, after Pohlen et al. 2018):
///   h(x)    = sign(x) (sqrt(|x| + 1) - 1) + eps x
///   h^-1(y) = sign(y) (((sqrt(1 + 4 eps (|y| + 1 + eps)) - 1) / (2 eps))^2 - 1)
/// The Q network learns h of the return, so that returns of very different scales train with
/// one learning rate; the n-step target bootstraps from h^-1 of the target network's value and
/// is rescaled again: y = h(r_t + ... + gamma^n h^-1(Q_target)). eps = 1e-3 in R2D2 and SEED.
/// Both are computed without the closed forms' cancellations near 0 (below).
/// The derivatives are what backward() needs through h and h^-1. Checked against float64
/// references made by tools/gen_r2d2_fixture.py (h^-1 there by bisection on h, derivatives by
/// high-precision finite differences). Host and device functions: the R2D2 loss's kernels call
/// them.

#include <cmath>
#include <concepts>

#include "seedrl/core/config.hpp"

namespace seedrl {

/// R2D2's epsilon.
inline constexpr double default_value_rescaling_eps = 1e-3;

/// h(x); eps > 0. sqrt(|x| + 1) - 1 is computed as |x| / (sqrt(|x| + 1) + 1): the difference
/// would cancel near 0.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S value_rescale(S x, S eps = S(default_value_rescaling_eps)) {
  const S a = std::abs(x);
  return std::copysign(a / (std::sqrt(a + S(1)) + S(1)), x) + eps * x;
}

/// h^-1(y), the inverse of value_rescale for the same eps. The closed form's root^2 - 1 cancels
/// near 0 (in float, h^-1(0) came out as 2.6e-5): with D = (1 + 2 eps)^2 + 4 eps |y| it is
/// (root - 1)(root + 1), where root - 1 = 2 |y| / (sqrt(D) + 1 + 2 eps) has no difference.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S value_unrescale(S y, S eps = S(default_value_rescaling_eps)) {
  const S a = std::abs(y);
  const S b = S(1) + S(2) * eps;
  const S root_minus_one = S(2) * a / (std::sqrt(b * b + S(4) * eps * a) + b);
  return std::copysign(root_minus_one * (root_minus_one + S(2)), y);
}

/// h'(x) = 1 / (2 sqrt(|x| + 1)) + eps.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S value_rescale_derivative(S x, S eps = S(default_value_rescaling_eps)) {
  return S(1) / (S(2) * std::sqrt(std::abs(x) + S(1))) + eps;
}

/// (h^-1)'(y) = 1 / h'(h^-1(y)).
template <std::floating_point S>
SEEDRL_HOST_DEVICE S value_unrescale_derivative(S y, S eps = S(default_value_rescaling_eps)) {
  return S(1) / value_rescale_derivative(value_unrescale(y, eps), eps);
}

}  // namespace seedrl
