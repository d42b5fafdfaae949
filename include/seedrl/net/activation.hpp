#pragma once
/// \file
/// Pointwise nonlinearities: ReLU and tanh, forward in place and backward from the forward's
/// output (both derivatives are functions of the output, so no input needs to be cached).

#include <cmath>
#include <concepts>

#include "seedrl/core/config.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// max(x, 0).
template <class S>
SEEDRL_HOST_DEVICE S relu(S x) {
  return x > S(0) ? x : S(0);
}

/// d relu / dx written in terms of the output y = relu(x); 0 at x = 0, like PyTorch.
template <class S>
SEEDRL_HOST_DEVICE S relu_grad_from_output(S y) {
  return y > S(0) ? S(1) : S(0);
}

/// The logistic function 1 / (1 + e^-x).
template <class S>
SEEDRL_HOST_DEVICE S sigmoid(S x) {
  using std::exp;  // float stays float (the C exp would widen to double)
  return S(1) / (S(1) + exp(-x));
}

/// d tanh / dx = 1 - y^2, from the output y.
template <class S>
SEEDRL_HOST_DEVICE S tanh_grad_from_output(S y) {
  return S(1) - y * y;
}

/// d sigmoid / dx = y (1 - y), from the output y.
template <class S>
SEEDRL_HOST_DEVICE S sigmoid_grad_from_output(S y) {
  return y * (S(1) - y);
}

/// ReLU in place.
template <std::floating_point S>
void relu_forward(matrix_view<S> x) {
  x = x.cwiseMax(S(0));
}

/// Multiplies `grad` (d loss / d output) in place by ReLU's derivative, given the output `y`.
template <std::floating_point S>
void relu_backward(const_matrix_view<S> y, matrix_view<S> grad) {
  grad = (y.array() > S(0)).select(grad, S(0));
}

/// tanh in place.
template <std::floating_point S>
void tanh_forward(matrix_view<S> x) {
  x = x.array().tanh();
}

/// Multiplies `grad` in place by tanh's derivative, given the output `y`.
template <std::floating_point S>
void tanh_backward(const_matrix_view<S> y, matrix_view<S> grad) {
  grad.array() *= S(1) - y.array().square();
}

}  // namespace seedrl
