#pragma once
/// \file
/// How a linear layer's parameters start (`linear::init`, `init_linear_parameters`):
///   - `init_scheme::pytorch_default`: weights and biases uniform in +-gain/sqrt(in), what
///     every part uses unless told otherwise (the fixtures were made with it);
///   - `init_scheme::orthogonal`: weights a (semi-)orthogonal matrix times gain, biases 0, as
///     PPO implementations for continuous control initialise (gains sqrt(2) for hidden layers,
///     0.01 for the policy, 1 for the value; Engstrom et al. 2020, "Implementation Matters").
///
/// `orthogonal_fill` draws the matrix as PyTorch's nn.init.orthogonal_ does: the Q of the QR
/// decomposition of a standard Gaussian matrix (of the tall orientation), its columns' signs
/// set by R's diagonal so that Q is uniformly (Haar) distributed rather than biased by the
/// decomposition's sign convention. For W [rows, cols]: W^T W = gain^2 I when rows >= cols,
/// W W^T = gain^2 I otherwise.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <span>
#include <stdexcept>

#include "seedrl/core/random.hpp"
#include "seedrl/detail/eigen_core.hpp"  // before any other Eigen header
#include "seedrl/net/detail/pytorch_default_init.hpp"

#include <Eigen/QR>

namespace seedrl {

/// See the file comment.
enum class init_scheme { pytorch_default, orthogonal };

/// Gains of the orthogonal scheme's usual use.
inline constexpr double orthogonal_hidden_gain = 1.4142135623730951;  // sqrt(2), for ReLU/tanh
inline constexpr double orthogonal_policy_gain = 0.01;
inline constexpr double orthogonal_value_gain = 1.0;

/// Writes gain x a random (semi-)orthogonal [rows, cols] matrix, row-major, into `w`.
template <std::floating_point S>
void orthogonal_fill(random_generator& rng, std::span<S> w, std::ptrdiff_t rows,
                     std::ptrdiff_t cols, double gain) {
  if (rows <= 0 || cols <= 0 || w.size() != static_cast<std::size_t>(rows * cols))
    throw std::invalid_argument("seedrl::orthogonal_fill: the span is not a rows x cols matrix");
  const bool wide = rows < cols;
  const std::ptrdiff_t n = wide ? cols : rows, m = wide ? rows : cols;  // n >= m
  Eigen::MatrixXd a(n, m);
  // Row-major draws, as the weights are laid out; the order only fixes the stream.
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (std::ptrdiff_t j = 0; j < m; ++j)
      a(i, j) = rng.normal();
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
  Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(n, m);
  const auto r = qr.matrixQR().diagonal();
  for (std::ptrdiff_t j = 0; j < m; ++j)
    if (r(j) < 0.0)
      q.col(j) = -q.col(j);
  for (std::ptrdiff_t i = 0; i < rows; ++i)
    for (std::ptrdiff_t j = 0; j < cols; ++j)
      w[static_cast<std::size_t>(i * cols + j)] = static_cast<S>(gain * (wide ? q(j, i) : q(i, j)));
}

/// One linear layer's parameters, W [out, in] row-major then b [out], at `params`, as `scheme`
/// says: PyTorch's default (weights and biases uniform in +-gain/sqrt(in), drawn in that order)
/// or gain x an orthogonal W and zero biases.
template <std::floating_point S>
void init_linear_parameters(random_generator& rng, S* params, std::ptrdiff_t out, std::ptrdiff_t in,
                            init_scheme scheme, S gain) {
  const auto weights = static_cast<std::size_t>(out * in);
  if (scheme == init_scheme::orthogonal) {
    orthogonal_fill(rng, std::span<S>(params, weights), out, in, static_cast<double>(gain));
    std::fill_n(params + weights, out, S(0));
    return;
  }
  detail::pytorch_default_fill(rng, params, weights + static_cast<std::size_t>(out),
                               static_cast<std::size_t>(in), static_cast<double>(gain));
}

}  // namespace seedrl
