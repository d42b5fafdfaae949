#pragma once
/// \file
/// `gaussian_head<S>`: the policy head of a diagonal Gaussian over D action dimensions
/// (seedrl/net/diag_gaussian.hpp). Each output row is D means then D log-stds, the layout
/// `gaussian_sampler` and diag_gaussian's state-dependent batch read, whichever log-std the
/// head has:
///   - state-independent (the default, as PPO for continuous control usually has it): the
///     means are a linear layer of the core's output; the log-stds are one parameter vector of
///     D values, written into every row clamped into diag_gaussian's range. Its gradient is the
///     sum over rows of the rows' log-std gradients, which diag_gaussian's shared-vector
///     gradient also is, passed through the clamp: the distribution gives no gradient beyond
///     the range, so a vector that an update pushed past it would otherwise stay there for
///     good. Beyond an end only a gradient that moves it back passes; one pushing further out
///     does not, so the vector never drifts past the range by more than a step's momentum and
///     returns as soon as the loss asks (the gradient is always that at the clamped value);
///   - state-dependent: one linear layer writes the whole row.
/// Models seedrl::PolicyHead (seedrl/net/parts/head.hpp) with num_actions() = D and 2D outputs.
/// Parameters: the linear layer's (W [outputs, inputs] row-major, then b), then, when
/// state-independent, the D log-stds. The layer is initialised with gain 0.01 (means near 0,
/// as the categorical head's near-uniform logits), or orthogonally when the options ask
/// (seedrl/net/init_scheme.hpp), and the log-stds to `initial_log_std`. The layer is the
/// heads' `detail::linear_head` (a one-layer `dense_stack`) and the log-std rows and their
/// gradient are backend kernels (below), so that the code is the one any backend runs.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/host_dense_primitives.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/diag_gaussian.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/parts/head.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

namespace detail {

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

}  // namespace detail

/// See the file comment.
template <std::floating_point S>
class gaussian_head {
 public:
  struct options_type {
    std::int32_t action_size = 0;          ///< D
    bool state_dependent_log_std = false;  ///< log-stds from the layer instead of a vector
    double initial_log_std = 0.0;          ///< of the state-independent vector
    /// PyTorch's default with gain 0.01 (the default), or orthogonal x `orthogonal_gain`.
    init_scheme init = init_scheme::pytorch_default;
    double orthogonal_gain = orthogonal_policy_gain;
  };

  gaussian_head(const options_type& options, std::ptrdiff_t input_size)
      : options_(checked(options)),
        D_(options.action_size),
        layer_(input_size, options.state_dependent_log_std ? 2 * D_ : D_, S(0.01), options.init,
               options.orthogonal_gain) {}

  std::int32_t num_actions() const noexcept { return static_cast<std::int32_t>(D_); }
  std::ptrdiff_t output_size() const noexcept { return 2 * D_; }
  bool state_dependent_log_std() const noexcept { return options_.state_dependent_log_std; }

  std::size_t num_parameters() const noexcept {
    return layer_.num_parameters() + (independent() ? static_cast<std::size_t>(D_) : 0);
  }

  void bind(S* params, S* grads) noexcept {
    layer_.bind(params, grads);
    log_std_ = params + layer_.num_parameters();
    log_std_grad_ = grads + layer_.num_parameters();
  }

  void init(random_generator& rng) {
    layer_.init(rng);
    if (independent())
      std::fill_n(log_std_, D_, static_cast<S>(options_.initial_log_std));
  }

  void forward(const_matrix_view<S> x, matrix_view<S> y) const {
    if (!independent()) {
      layer_.forward(x, y);
      return;
    }
    const std::ptrdiff_t N = x.rows();
    layer_.forward(x, view(y.data(), N, D_, y.outerStride()));
    for_each_2d(backend_type{}, view_rows(y), static_cast<std::size_t>(D_),
                detail::log_std_rows_kernel<S>{y.data(), view_stride(y),
                                               static_cast<std::size_t>(D_), log_std_});
  }

  void backward(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S> dx,
                bool accumulate) {
    // The layer sees only its own columns: all of dy, or the means' when state-independent.
    const auto d_layer = independent() ? cview(dy.data(), dy.rows(), D_, dy.outerStride()) : dy;
    layer_.backward(x, d_layer, dx, accumulate);
    if (independent()) {
      // Through the clamp of forward, but beyond it only towards the range (file comment).
      backend_type{}.for_each(static_cast<std::size_t>(D_),
                              detail::log_std_gradient_kernel<S>{
                                  dy.data(), view_rows(dy), view_stride(dy),
                                  static_cast<std::size_t>(D_), log_std_, log_std_grad_});
    }
  }

 private:
  bool independent() const noexcept { return !options_.state_dependent_log_std; }

  static const options_type& checked(const options_type& o) {
    if (o.action_size <= 0)
      throw std::invalid_argument("seedrl::gaussian_head: action_size must be positive");
    return o;
  }

  using backend_type = detail::host_dense_primitives;

  options_type options_;
  std::ptrdiff_t D_;
  detail::linear_head<S> layer_;
  S* log_std_ = nullptr;       // the state-independent vector, in the parameter buffer
  S* log_std_grad_ = nullptr;  // its gradient
};

static_assert(PolicyHead<gaussian_head<float>, float>);
static_assert(PolicyHead<gaussian_head<double>, double>);

}  // namespace seedrl
