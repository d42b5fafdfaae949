#pragma once
/// \file
/// The per-element activations and their derivatives, without Eigen, so that CUDA kernels
/// (`seedrl/cuda/`) include exactly the functions the CPU layers run. `activation.hpp` includes
/// this header and adds the batched (Eigen) forms.

#include <cmath>

#include "seedrl/core/config.hpp"

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

}  // namespace seedrl
