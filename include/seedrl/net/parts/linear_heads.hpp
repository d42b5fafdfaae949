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

#include "seedrl/backend/detail/host_sgemm_primitives.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/parts/head.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

namespace detail {

/// A linear layer as a head, initialised as PyTorch's default scaled by `gain`, or orthogonal
/// with `orthogonal_gain`: a `dense_stack` of one layer without activation on the host's
/// primitives (host_backend's GEMM: oneDNN's sgemm from 16 rows), the code the backend trainers
/// run for their heads. The primitives are made per call: a head's product never takes their
/// few-row transposed path, the one that keeps scratch (it needs a weight of 2^19 elements).
template <std::floating_point S>
class linear_head {
  using backend_type = host_sgemm_primitives;
  using stack_type = dense_stack<S, identity_activation>;

 public:
  linear_head(std::ptrdiff_t in, std::ptrdiff_t out, S gain, init_scheme scheme,
              double orthogonal_gain)
      : stack_(checked_size(in), {checked_size(out)}, "seedrl::linear_head"),
        gain_(scheme == init_scheme::orthogonal ? static_cast<S>(orthogonal_gain) : gain),
        scheme_(scheme) {}

  std::ptrdiff_t output_size() const noexcept {
    return static_cast<std::ptrdiff_t>(stack_.output_size());
  }
  std::size_t num_parameters() const noexcept { return stack_.num_parameters(); }
  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }
  void init(random_generator& rng) {
    init_linear_parameters(rng, params_, output_size(),
                           static_cast<std::ptrdiff_t>(stack_.input_size()), scheme_, gain_);
  }
  void forward(const_matrix_view<S> x, matrix_view<S> y) const {
    stack_.forward(backend_type{}, ws_, params_, x.data(), view_stride(x), view_rows(x), y.data(),
                   view_stride(y));
  }
  void backward(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S> dx,
                bool accumulate) {
    stack_.backward(backend_type{}, ws_, params_, grads_, x.data(), view_stride(x), view_rows(x),
                    nullptr, 0, dy.data(), view_stride(dy), dx.data(), view_stride(dx),
                    accumulate ? S(1) : S(0));
  }

 private:
  static std::size_t checked_size(std::ptrdiff_t n) {
    if (n <= 0)
      throw std::invalid_argument("seedrl::linear_head: sizes must be positive");
    return static_cast<std::size_t>(n);
  }

  stack_type stack_;
  S gain_;
  init_scheme scheme_;
  S* params_ = nullptr;
  S* grads_ = nullptr;
  // The stack's work arrays (none used by one layer without activation); mutable because a
  // head's forward is const.
  mutable typename stack_type::template workspace<backend_type> ws_;
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
