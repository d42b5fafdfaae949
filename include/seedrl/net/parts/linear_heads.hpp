#pragma once
/// \file
/// The two heads of SEED RL's actor-critic agents, each one linear layer over the core's
/// output: `categorical_head<S>` (logits of a categorical policy, initialised 100x smaller than
/// PyTorch's default so that the initial policy is near uniform) and `value_head<S>` (one value
/// per row, PyTorch's default initialisation). Either can be initialised orthogonally instead
/// (options' `init`, with gains 0.01 and 1 unless told; seedrl/net/init_scheme.hpp). They model
/// seedrl::PolicyHead and seedrl::Head (seedrl/net/parts/head.hpp). Parameters: W [outputs, inputs]
/// row-major, then b.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "seedrl/core/random.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/linear.hpp"
#include "seedrl/net/parts/head.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

namespace detail {

/// A linear layer as a head, initialised as PyTorch's default scaled by `gain`, or orthogonal
/// with `orthogonal_gain`.
template <std::floating_point S>
class linear_head {
 public:
  linear_head(std::ptrdiff_t in, std::ptrdiff_t out, S gain, init_scheme scheme,
              double orthogonal_gain)
      : layer_(in, out),
        gain_(scheme == init_scheme::orthogonal ? static_cast<S>(orthogonal_gain) : gain),
        scheme_(scheme) {}

  std::ptrdiff_t output_size() const noexcept { return layer_.out_features(); }
  std::size_t num_parameters() const noexcept { return layer_.num_parameters(); }
  void bind(S* params, S* grads) noexcept { layer_.bind(params, grads); }
  void init(random_generator& rng) { layer_.init(rng, scheme_, gain_); }
  void forward(const_matrix_view<S> x, matrix_view<S> y) const { layer_.forward(x, y); }
  void backward(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S> dx,
                bool accumulate) {
    layer_.backward_params(x, dy);
    if (accumulate)
      dx.noalias() += dy * layer_.weight();
    else
      layer_.backward_input(dy, dx);
  }

 private:
  linear<S> layer_;
  S gain_;
  init_scheme scheme_;
};

}  // namespace detail

/// Logits of a categorical policy over `num_actions` actions; see the file comment.
template <std::floating_point S>
class categorical_head : public detail::linear_head<S> {
 public:
  struct options_type {
    std::int32_t num_actions = 0;
    init_scheme init = init_scheme::pytorch_default;
    double orthogonal_gain = orthogonal_policy_gain;  ///< with init_scheme::orthogonal
  };

  categorical_head(const options_type& options, std::ptrdiff_t input_size)
      : detail::linear_head<S>(input_size, checked(options.num_actions), S(0.01), options.init,
                               options.orthogonal_gain),
        num_actions_(options.num_actions) {}

  std::int32_t num_actions() const noexcept { return num_actions_; }

 private:
  static std::ptrdiff_t checked(std::int32_t n) {
    if (n <= 0)
      throw std::invalid_argument("seedrl::categorical_head: num_actions must be positive");
    return n;
  }
  std::int32_t num_actions_;
};

/// One value per row; see the file comment.
template <std::floating_point S>
class value_head : public detail::linear_head<S> {
 public:
  struct options_type {
    init_scheme init = init_scheme::pytorch_default;
    double orthogonal_gain = orthogonal_value_gain;  ///< with init_scheme::orthogonal
  };

  value_head(const options_type& options, std::ptrdiff_t input_size)
      : detail::linear_head<S>(input_size, 1, S(1), options.init, options.orthogonal_gain) {}
};

static_assert(PolicyHead<categorical_head<float>, float>);
static_assert(Head<value_head<double>, double>);

}  // namespace seedrl
