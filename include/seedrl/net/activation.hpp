#pragma once
/// \file
/// Pointwise nonlinearities over batches: ReLU and tanh, forward in place and backward from the
/// forward's output (both derivatives are functions of the output, so no input needs to be
/// cached), and any activation policy (`relu_activation`, `tanh_activation`, yours) applied to
/// a batch. The per-element functions and the policies are in `activation_math.hpp`.

#include <cmath>
#include <concepts>
#include <cstddef>

#include "seedrl/detail/relu_backward_rows.hpp"
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
  detail::relu_backward_rows(static_cast<std::size_t>(y.rows()), static_cast<std::size_t>(y.cols()),
                             y.data(), static_cast<std::size_t>(y.outerStride()), grad.data(),
                             static_cast<std::size_t>(grad.outerStride()), grad.data(),
                             static_cast<std::size_t>(grad.outerStride()));
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

/// `x = Act::forward(x)` for every element: an activation policy (activation_math.hpp) over a
/// batch.
template <class Act, std::floating_point S>
void activation_forward(matrix_view<S> x) {
  x = x.unaryExpr([](S v) { return Act::template forward<S>(v); });
}

/// `grad = Act::backward(grad, y)` for every element, given the forward's output y.
template <class Act, std::floating_point S>
void activation_backward(const_matrix_view<S> y, matrix_view<S> grad) {
  grad = grad.binaryExpr(y, [](S g, S v) { return Act::template backward<S>(g, v); });
}

}  // namespace seedrl
