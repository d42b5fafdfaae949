#pragma once
/// \file
/// Pointwise nonlinearities: ReLU and tanh, forward in place and backward from the forward's
/// output (both derivatives are functions of the output, so no input needs to be cached), and
/// the same as policy types (`relu_activation`, `tanh_activation`). The per-element functions
/// (relu, sigmoid and the derivatives) are in `activation_math.hpp`.

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

/// ReLU as a policy for parts whose activation is a template parameter (`mlp_torso`,
/// `dense_torso`). A policy provides `name`, `forward(matrix_view<S> x)` in place and
/// `backward(const_matrix_view<S> y, matrix_view<S> grad)` from the forward's output. A type,
/// not a run-time flag: a part instantiates only the nonlinearity it uses, which keeps the
/// compiler's inlining of the LSTM's own tanh as it was.
struct relu_activation {
  static constexpr const char* name = "relu";
  template <std::floating_point S>
  static void forward(matrix_view<S> x) {
    relu_forward(x);
  }
  template <std::floating_point S>
  static void backward(const_matrix_view<S> y, matrix_view<S> grad) {
    relu_backward(y, grad);
  }
};

/// tanh as a policy; see relu_activation.
struct tanh_activation {
  static constexpr const char* name = "tanh";
  template <std::floating_point S>
  static void forward(matrix_view<S> x) {
    tanh_forward(x);
  }
  template <std::floating_point S>
  static void backward(const_matrix_view<S> y, matrix_view<S> grad) {
    tanh_backward(y, grad);
  }
};

/// An activation policy for scalar type S (relu_activation, tanh_activation or your own).
template <class A, class S>
concept Activation = requires(matrix_view<S> x, const_matrix_view<S> y) {
  A::template forward<S>(x);
  A::template backward<S>(y, x);
};

}  // namespace seedrl
