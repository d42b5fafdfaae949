#pragma once
/// \file
/// A fully connected layer, y = x W^T + b, over row-major batches. Its weights live in the
/// owning network's flat parameter buffer (W as [out, in] row-major, then b), bound with
/// `bind`, so the layer itself holds no memory.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <stdexcept>

#include "seedrl/core/random.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Fully connected layer; see the file comment.
template <std::floating_point S>
class linear {
 public:
  linear() = default;
  linear(std::ptrdiff_t in, std::ptrdiff_t out) : in_(in), out_(out) {
    if (in <= 0 || out <= 0) {
      throw std::invalid_argument("seedrl::linear: sizes must be positive");
    }
  }

  std::ptrdiff_t in_features() const noexcept { return in_; }
  std::ptrdiff_t out_features() const noexcept { return out_; }

  /// Parameters this layer takes from the flat buffer: out*in weights, then out biases.
  std::size_t num_parameters() const noexcept { return static_cast<std::size_t>(out_ * (in_ + 1)); }

  /// Points the layer at its slice of the parameter and gradient buffers.
  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }

  /// PyTorch's default: weights and biases uniform in +-1/sqrt(in), scaled by `gain`.
  void init(random_generator& rng, S gain = S(1)) { init(rng, init_scheme::pytorch_default, gain); }

  /// As `scheme` says (seedrl/net/init_scheme.hpp): PyTorch's default scaled by `gain`, as
  /// above, or gain x an orthogonal W and zero biases.
  void init(random_generator& rng, init_scheme scheme, S gain) {
    init_linear_parameters(rng, params_, out_, in_, scheme, gain);
  }

  const_matrix_view<S> weight() const { return cview(params_, out_, in_); }
  matrix_view<S> weight_grad() { return view(grads_, out_, in_); }
  Eigen::Map<const Eigen::Matrix<S, 1, Eigen::Dynamic>> bias() const {
    return {params_ + out_ * in_, out_};
  }
  Eigen::Map<Eigen::Matrix<S, 1, Eigen::Dynamic>> bias_grad() {
    return {grads_ + out_ * in_, out_};
  }

  /// y = x W^T + b for every row of x; y must not alias x.
  void forward(const_matrix_view<S> x, matrix_view<S> y) const {
    y.noalias() = x * weight().transpose();
    y.rowwise() += bias();
  }

  /// Accumulates dW += dy^T x and db += column sums of dy into the gradient buffer.
  void backward_params(const_matrix_view<S> x, const_matrix_view<S> dy) {
    weight_grad().noalias() += dy.transpose() * x;
    bias_grad() += dy.colwise().sum();
  }

  /// dx = dy W (overwrites dx).
  void backward_input(const_matrix_view<S> dy, matrix_view<S> dx) const {
    dx.noalias() = dy * weight();
  }

 private:
  std::ptrdiff_t in_ = 0;
  std::ptrdiff_t out_ = 0;
  S* params_ = nullptr;
  S* grads_ = nullptr;
};

}  // namespace seedrl
