#pragma once
/// \file
/// Pointwise nonlinearities: ReLU and tanh, forward in place and backward from the forward's
/// output (both derivatives are functions of the output, so no input needs to be cached), and
/// `activation`, the run-time choice between them. The per-element functions (relu, sigmoid and
/// the derivatives) are in `activation_math.hpp`.

#include <cmath>
#include <concepts>

#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

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

/// A nonlinearity chosen at run time, for parts whose activation is a parameter (the MLP
/// torso, the dense layer over a conv stack).
enum class activation { relu, tanh };

/// The name `activation` goes by in descriptions and messages.
constexpr const char* to_string(activation a) noexcept {
  return a == activation::relu ? "relu" : "tanh";
}

/// `a` in place.
template <std::floating_point S>
void activation_forward(activation a, matrix_view<S> x) {
  if (a == activation::relu)
    relu_forward(x);
  else
    tanh_forward(x);
}

/// Multiplies `grad` in place by `a`'s derivative, given the output `y`.
template <std::floating_point S>
void activation_backward(activation a, const_matrix_view<S> y, matrix_view<S> grad) {
  if (a == activation::relu)
    relu_backward(y, grad);
  else
    tanh_backward(y, grad);
}

}  // namespace seedrl
