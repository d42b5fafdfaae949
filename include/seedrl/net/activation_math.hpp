#pragma once
/// \file
/// The per-element activations and their derivatives, without Eigen, so that CUDA kernels
/// (`seedrl/cuda/`) include exactly the functions the CPU layers run, and the activation
/// policies (`relu_activation`, `tanh_activation`) that parts take as a template parameter.
/// `activation.hpp` includes this header and adds the batched (Eigen) forms.

#include <cmath>
#include <concepts>

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

/// ReLU as a policy for parts whose activation is a template parameter (`backend_mlp_torso`,
/// `detail::dense_stack`): `name`, and per element `forward(x)` and `backward(grad, y)`, grad times
/// the derivative, taken from the forward's output y (so no input needs to be kept), host and
/// device functions so that one part runs on every backend. A type, not a run-time flag: a part
/// instantiates only the nonlinearity it uses.
struct relu_activation {
  static constexpr const char* name = "relu";
  /// x < 0 ? 0 : x, so that a NaN stays NaN and a diverged forward pass reaches the
  /// gradient-norm check instead of being zeroed.
  template <class S>
  SEEDRL_HOST_DEVICE static S forward(S x) {
    return x < S(0) ? S(0) : x;
  }
  /// y > 0 ? grad : 0 (a selection, so that an infinite grad where y = 0 gives 0, not NaN).
  template <class S>
  SEEDRL_HOST_DEVICE static S backward(S grad, S y) {
    return y > S(0) ? grad : S(0);
  }
};

/// tanh as a policy; see relu_activation.
struct tanh_activation {
  static constexpr const char* name = "tanh";
  template <class S>
  SEEDRL_HOST_DEVICE static S forward(S x) {
    using std::tanh;  // float stays float
    return tanh(x);
  }
  template <class S>
  SEEDRL_HOST_DEVICE static S backward(S grad, S y) {
    return grad * tanh_grad_from_output(y);
  }
};

/// No nonlinearity: a linear layer (the heads) as a dense stack of one layer. Its backward is
/// the gradient itself, so `detail::dense_stack` passes it on without a pass over it.
struct identity_activation {
  static constexpr const char* name = "identity";
  template <class S>
  SEEDRL_HOST_DEVICE static S forward(S x) {
    return x;
  }
  template <class S>
  SEEDRL_HOST_DEVICE static S backward(S grad, S) {
    return grad;
  }
};

/// An activation policy for scalar type S (relu_activation, tanh_activation or your own, with
/// both members SEEDRL_HOST_DEVICE where it should run on a GPU).
template <class A, class S>
concept Activation = requires(S x) {
  { A::template forward<S>(x) } -> std::convertible_to<S>;
  { A::template backward<S>(x, x) } -> std::convertible_to<S>;
};

}  // namespace seedrl
