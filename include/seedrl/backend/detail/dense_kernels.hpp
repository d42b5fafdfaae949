#pragma once
/// \file
/// The non-GEMM kernels of a dense layer (`detail::dense_stack`, seedrl/net/detail/
/// dense_stack.hpp): the bias and activation after the GEMM (or the activation alone, after a
/// convolution) and the activation's backward
/// (`for_each_2d` bodies), and the bias gradient, a column sum (a `for_each` body, also the
/// LSTM's); a residual block's ReLU into a copy and its skip addition (`for_each` bodies, the
/// IMPALA ResNet's). Any backend runs them element by element; the host recognises them
/// (detail::host_dense_primitives) and runs ReLU, tanh, the identity and the column sums as
/// Eigen expressions, which it vectorises where a loop of calls would not be.

#include <cstddef>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// y[r, j] = Act(y[r, j] + bias[j]), in place.
template <class S, class Act>
struct bias_activation_kernel {
  S* y;
  std::size_t ld;
  const S* bias;

  SEEDRL_HOST_DEVICE void operator()(std::size_t r, std::size_t j) const {
    S& v = y[r * ld + j];
    v = Act::forward(v + bias[j]);
  }
};

/// y[r, j] = Act(y[r, j]), in place: an activation whose bias is already in y (a
/// convolution's output).
template <class S, class Act>
struct activation_kernel {
  S* y;
  std::size_t ld;

  SEEDRL_HOST_DEVICE void operator()(std::size_t r, std::size_t j) const {
    S& v = y[r * ld + j];
    v = Act::forward(v);
  }
};

/// dx[r, j] = Act::backward(dy[r, j], y[r, j]); dx is [rows, width] contiguous and may be dy
/// itself (then ld_dy must be width).
template <class S, class Act>
struct activation_backward_kernel {
  const S* dy;
  std::size_t ld_dy;
  const S* y;
  std::size_t ld_y;
  S* dx;
  std::size_t width;

  SEEDRL_HOST_DEVICE void operator()(std::size_t r, std::size_t j) const {
    dx[r * width + j] = Act::backward(dy[r * ld_dy + j], y[r * ld_y + j]);
  }
};

/// out[j] += sum over r of x[r, j] for `rows` rows; one call per column j (deterministic: each
/// column is summed in row order by one thread).
template <class S>
struct column_sum_add_kernel {
  const S* x;
  std::size_t rows;
  std::size_t ld;
  S* out;

  SEEDRL_HOST_DEVICE void operator()(std::size_t j) const {
    S sum = S(0);
    for (std::size_t r = 0; r < rows; ++r)
      sum += x[r * ld + j];
    out[j] += sum;
  }
};

/// dst[i] = max(src[i], 0); a NaN stays NaN.
template <class S>
struct relu_copy_kernel {
  const S* src;
  S* dst;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const S v = src[i];
    dst[i] = v < S(0) ? S(0) : v;
  }
};

/// dst[i] += src[i].
template <class S>
struct add_kernel {
  const S* src;
  S* dst;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const { dst[i] += src[i]; }
};

}  // namespace seedrl::detail
