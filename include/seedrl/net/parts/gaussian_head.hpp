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
/// (seedrl/net/init_scheme.hpp), and the log-stds to `initial_log_std`. The arithmetic is
/// `detail::policy_layer` (seedrl/net/detail/policy_layer.hpp) on the host's primitives: the
/// code the backend trainer and inference step run for their policy heads.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/host_sgemm_primitives.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/detail/policy_layer.hpp"
#include "seedrl/net/diag_gaussian.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/parts/head.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

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
        layer_(checked_input(input_size), 2 * static_cast<std::size_t>(D_),
               options.state_dependent_log_std ? 0 : static_cast<std::size_t>(D_),
               "seedrl::gaussian_head") {}

  std::int32_t num_actions() const noexcept { return static_cast<std::int32_t>(D_); }
  std::ptrdiff_t output_size() const noexcept { return 2 * D_; }
  bool state_dependent_log_std() const noexcept { return options_.state_dependent_log_std; }

  std::size_t num_parameters() const noexcept { return layer_.num_parameters(); }

  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }

  void init(random_generator& rng) {
    const bool orthogonal = options_.init == init_scheme::orthogonal;
    init_linear_parameters(rng, params_, static_cast<std::ptrdiff_t>(layer_.layer_outputs()),
                           static_cast<std::ptrdiff_t>(layer_.input_size()), options_.init,
                           orthogonal ? static_cast<S>(options_.orthogonal_gain) : S(0.01));
    if (independent())
      std::fill_n(params_ + layer_.layer_parameters(), D_,
                  static_cast<S>(options_.initial_log_std));
  }

  void forward(const_matrix_view<S> x, matrix_view<S> y) const {
    layer_.forward(backend_type{}, ws_, params_, x.data(), view_stride(x), view_rows(x), y.data(),
                   view_stride(y));
  }

  void backward(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S> dx,
                bool accumulate) {
    layer_.backward(backend_type{}, ws_, params_, grads_, x.data(), view_stride(x), view_rows(x),
                    dy.data(), view_stride(dy), dx.data(), view_stride(dx),
                    accumulate ? S(1) : S(0));
  }

 private:
  bool independent() const noexcept { return !options_.state_dependent_log_std; }

  static const options_type& checked(const options_type& o) {
    if (o.action_size <= 0)
      throw std::invalid_argument("seedrl::gaussian_head: action_size must be positive");
    return o;
  }
  static std::size_t checked_input(std::ptrdiff_t n) {
    if (n <= 0)
      throw std::invalid_argument("seedrl::gaussian_head: input_size must be positive");
    return static_cast<std::size_t>(n);
  }

  // host_backend's GEMM, made per call as linear_head's (linear_heads.hpp says why).
  using backend_type = detail::host_sgemm_primitives;
  using layer_type = detail::policy_layer<S>;

  options_type options_;
  std::ptrdiff_t D_;
  layer_type layer_;
  S* params_ = nullptr;  // the layer's W and b, then the state-independent log-stds
  S* grads_ = nullptr;
  // The layer's (unused) scratch; mutable because a head's forward is const.
  mutable typename layer_type::template workspace<backend_type> ws_;
};

static_assert(PolicyHead<gaussian_head<float>, float>);
static_assert(PolicyHead<gaussian_head<double>, double>);

}  // namespace seedrl
