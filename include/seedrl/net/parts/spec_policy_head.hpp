#pragma once
/// \file
/// `spec_policy_head<S>`: the policy head of an agent whose action kind is known only at run
/// time (from the environment's action spec), as `spec_sampler` and `spec_distribution` are the
/// sampler and loss side of it. Its rows are always `num_outputs` values:
///   - discrete actions, or continuous ones with a state-dependent log-std: one linear layer,
///     exactly `categorical_head` (logits; or D means then D log-stds, num_outputs = 2D);
///   - continuous actions with a state-independent log-std (`independent_log_std_size` D > 0):
///     `gaussian_head` (D means from a linear layer, then one log-std vector of D parameters
///     starting at `initial_log_std`), num_outputs = 2D.
/// Parameters and initialisation are those of the head it is, so the first two kinds keep the
/// layout and the draws of `categorical_head`. `num_actions()` is the outputs per row (the
/// convention of agents that hold 2D Gaussian outputs as "actions", e.g. mlp_lstm_agent).
/// Models seedrl::PolicyHead.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>

#include "seedrl/core/random.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/parts/gaussian_head.hpp"
#include "seedrl/net/parts/head.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// See the file comment.
template <std::floating_point S>
class spec_policy_head {
 public:
  struct options_type {
    std::int32_t num_outputs = 0;               ///< values per row (2D for a Gaussian)
    std::int32_t independent_log_std_size = 0;  ///< D > 0: a state-independent log-std
    double initial_log_std = 0.0;               ///< where that log-std starts
    init_scheme init = init_scheme::pytorch_default;
    double orthogonal_gain = orthogonal_policy_gain;  ///< with init_scheme::orthogonal
  };

  spec_policy_head(const options_type& o, std::ptrdiff_t input_size)
      : num_outputs_(o.num_outputs), head_(make(o, input_size)) {}

  std::int32_t num_actions() const noexcept { return num_outputs_; }
  std::ptrdiff_t output_size() const noexcept { return num_outputs_; }
  /// Whether the log-stds are one parameter vector rather than outputs of the layer.
  bool independent_log_std() const noexcept { return head_.index() == 1; }

  std::size_t num_parameters() const noexcept {
    return std::visit([](const auto& h) { return h.num_parameters(); }, head_);
  }
  void bind(S* params, S* grads) noexcept {
    std::visit([&](auto& h) { h.bind(params, grads); }, head_);
  }
  void init(random_generator& rng) {
    std::visit([&](auto& h) { h.init(rng); }, head_);
  }
  void forward(const_matrix_view<S> x, matrix_view<S> y) const {
    std::visit([&](const auto& h) { h.forward(x, y); }, head_);
  }
  void backward(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S> dx,
                bool accumulate) {
    std::visit([&](auto& h) { h.backward(x, dy, dx, accumulate); }, head_);
  }

 private:
  using head_type = std::variant<categorical_head<S>, gaussian_head<S>>;

  static head_type make(const options_type& o, std::ptrdiff_t input_size) {
    const std::int32_t D = o.independent_log_std_size;
    if (D < 0 || (D > 0 && o.num_outputs != 2 * D))
      throw std::invalid_argument("seedrl::spec_policy_head: a state-independent log-std over " +
                                  std::to_string(D) + " action dimensions needs 2 * " +
                                  std::to_string(D) + " outputs, got " +
                                  std::to_string(o.num_outputs));
    if (D == 0)
      return head_type(
          std::in_place_index<0>,
          typename categorical_head<S>::options_type{
              .num_actions = o.num_outputs, .init = o.init, .orthogonal_gain = o.orthogonal_gain},
          input_size);
    return head_type(std::in_place_index<1>,
                     typename gaussian_head<S>::options_type{.action_size = D,
                                                             .state_dependent_log_std = false,
                                                             .initial_log_std = o.initial_log_std,
                                                             .init = o.init,
                                                             .orthogonal_gain = o.orthogonal_gain},
                     input_size);
  }

  std::int32_t num_outputs_;
  head_type head_;
};

static_assert(PolicyHead<spec_policy_head<float>, float>);
static_assert(PolicyHead<spec_policy_head<double>, double>);

}  // namespace seedrl
