#pragma once
/// \file
/// `detail::policy_layer<S>`: the arithmetic of every policy head, on any backend's primitives
/// (`detail::agent_body`: every agent on the host, the backend trainer and inference step on
/// theirs, CUDA included). A row of `output_size()` policy outputs is
///   - all of it one linear layer of the input (categorical logits; or a Gaussian's D means
///     then D log-stds, state-dependent), or
///   - with a state-independent log-std of D values (`independent_log_std` D > 0, outputs 2D):
///     D means from the linear layer, then the D log-stds of one parameter vector, clamped into
///     diag_gaussian's range. Their gradient is the column sum of the rows' log-std gradients,
///     passed through the clamp only where it moves the vector back into the range: a log-std
///     past the clamp that took no gradient would stay there for good, while one that took
///     every gradient would drift further out; this way it leaves when the loss asks.
/// Parameters: the layer's W [layer outputs, inputs] row-major, then b, then the D log-stds.
/// No Eigen, so nvcc compiles it.

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "seedrl/core/config.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/diag_gaussian.hpp"

namespace seedrl::detail {

/// y[r, D + i] = clamp_log_std(log_std[i]): the state-independent vector written into row r's
/// log-std columns (a `for_each_2d` body over rows x D).
template <class S>
struct log_std_rows_kernel {
  S* y;
  std::size_t ld;
  std::size_t D;
  const S* log_std;

  SEEDRL_HOST_DEVICE void operator()(std::size_t r, std::size_t i) const {
    y[r * ld + D + i] = clamp_log_std(log_std[i]);
  }
};

/// grad[i] += the sum over rows of dy[r, D + i], passed through the clamp at log_std[i]: all of
/// it inside the range; beyond an end only a gradient whose descent step moves the vector back
/// (a `for_each` body over D; each element summed in row order by one thread).
template <class S>
struct log_std_gradient_kernel {
  const S* dy;
  std::size_t rows;
  std::size_t ld;
  std::size_t D;
  const S* log_std;
  S* grad;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    S g = S(0);
    for (std::size_t r = 0; r < rows; ++r)
      g += dy[r * ld + D + i];
    const S v = log_std[i];
    if (v > S(diag_gaussian_log_std_max))
      g = g > S(0) ? g : S(0);
    else if (v < S(diag_gaussian_log_std_min))
      g = g < S(0) ? g : S(0);
    grad[i] += g;
  }
};

/// A policy head's layers; see the file comment.
template <std::floating_point S>
class policy_layer {
  using stack_type = dense_stack<S, identity_activation>;

 public:
  /// The layer keeps nothing between forward and backward; the stack's (unused) scratch.
  template <class Backend>
  using workspace = typename stack_type::template workspace<Backend>;

  policy_layer() = default;
  /// `outputs` per row from `input_size` inputs; `independent_log_std` D > 0 makes the last D
  /// outputs a parameter vector (outputs must then be 2D). Throws std::invalid_argument naming
  /// `who` for sizes that cannot work.
  policy_layer(std::size_t input_size, std::size_t outputs, std::size_t independent_log_std,
               const std::string& who)
      : outputs_(outputs),
        D_(independent_log_std),
        layer_(input_size, {checked_layer_outputs(outputs, independent_log_std, who)}, who) {}

  std::size_t input_size() const noexcept { return layer_.input_size(); }
  std::size_t output_size() const noexcept { return outputs_; }
  /// The linear layer's outputs per row (all of them, or the D means).
  std::size_t layer_outputs() const noexcept { return layer_.output_size(); }
  /// D of the state-independent log-std, 0 for none.
  std::size_t independent_log_std() const noexcept { return D_; }
  /// Elements of the layer's W then b; the log-std vector follows them.
  std::size_t layer_parameters() const noexcept { return layer_.num_parameters(); }
  std::size_t num_parameters() const noexcept { return layer_.num_parameters() + D_; }
  std::size_t max_rows() const noexcept { return layer_.max_rows(); }

  template <class Backend>
  void reserve(const Backend& b, workspace<Backend>& ws, std::size_t N) const {
    layer_.reserve(b, ws, N);
  }

  /// y [N, output_size()] (row stride ldy) from x [N, input_size()] (row stride ldx).
  template <class Backend>
  void forward(const Backend& b, workspace<Backend>& ws, const S* params, const S* x,
               std::size_t ldx, std::size_t N, S* y, std::size_t ldy) const {
    layer_.forward(b, ws, params, x, ldx, N, y, ldy);
    if (D_ > 0)
      for_each_2d(b, N, D_, log_std_rows_kernel<S>{y, ldy, D_, params + layer_.num_parameters()});
  }

  /// After `forward` on x: adds the parameter gradients for dy = d loss / d y (row stride
  /// ld_dy) into grads, and writes d loss / d x into dx (row stride ld_dx) scaled as
  /// dense_stack::backward does (dx_beta 0 overwrites, 1 adds); dx may be null.
  template <class Backend>
  void backward(const Backend& b, workspace<Backend>& ws, const S* params, S* grads, const S* x,
                std::size_t ldx, std::size_t N, const S* dy, std::size_t ld_dy, S* dx,
                std::size_t ld_dx, S dx_beta) const {
    // The layer sees only its own columns: the first layer_outputs() of dy.
    layer_.backward(b, ws, params, grads, x, ldx, N, nullptr, 0, dy, ld_dy, dx, ld_dx, dx_beta);
    if (D_ > 0) {
      const std::size_t at = layer_.num_parameters();
      b.for_each(D_, log_std_gradient_kernel<S>{dy, N, ld_dy, D_, params + at, grads + at});
    }
  }

 private:
  static std::size_t checked_layer_outputs(std::size_t outputs, std::size_t D,
                                           const std::string& who) {
    if (outputs == 0)
      throw std::invalid_argument(who + ": the policy needs at least one output per row");
    if (D > 0 && outputs != 2 * D)
      throw std::invalid_argument(who + ": a state-independent log-std of " + std::to_string(D) +
                                  " values needs 2 * " + std::to_string(D) +
                                  " policy outputs (means, then log-stds), not " +
                                  std::to_string(outputs));
    return outputs - D;
  }

  std::size_t outputs_ = 0, D_ = 0;
  stack_type layer_;
};

}  // namespace seedrl::detail
