#pragma once
/// \file
/// `detail::agent_heads<S>`: the policy and value heads of a backend agent where
/// detail::agent_layout puts them (their parameters, and their columns of the core output:
/// one network, or separate policy and value networks), over any backend: the policy layer of
/// the CPU heads (detail::policy_layer) and a one-output linear layer. One type for the training
/// step (backend_agent_trainer) and the inference step (backend_agent_step). No Eigen.

#include <concepts>
#include <cstddef>
#include <string>

#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/detail/policy_layer.hpp"
#include "seedrl/train/detail/agent_layout.hpp"

namespace seedrl::detail {

/// See the file comment.
template <std::floating_point S>
class agent_heads {
  using value_type = dense_stack<S, identity_activation>;

 public:
  /// The heads' scratch on backend `Backend` (nothing is kept between forward and backward).
  template <class Backend>
  struct workspace {
    typename policy_layer<S>::template workspace<Backend> policy;
    typename value_type::template workspace<Backend> value;
  };

  agent_heads() = default;
  /// The heads `layout` describes; `who` names the owner in error messages.
  agent_heads(const agent_layout& layout, const std::string& who)
      : policy_(layout.policy_in, layout.A, layout.log_std, who),
        value_(layout.value_in, {1}, who),
        A_(layout.A),
        policy_col_(layout.policy_col),
        policy_w_(layout.policy_w),
        value_w_(layout.value_w) {}

  template <class Backend>
  void reserve(const Backend& b, workspace<Backend>& ws, std::size_t N) const {
    policy_.reserve(b, ws.policy, N);
    value_.reserve(b, ws.value, N);
  }

  /// Policy outputs [N, A] and values [N] of the core output x (row stride ldx).
  template <class Backend>
  void forward(const Backend& b, workspace<Backend>& ws, const S* params, const S* x,
               std::size_t ldx, std::size_t N, S* outputs, S* values) const {
    policy_.forward(b, ws.policy, params + policy_w_, x + policy_col_, ldx, N, outputs, A_);
    value_.forward(b, ws.value, params + value_w_, x, ldx, N, values, 1);
  }

  /// After forward on x: adds both heads' parameter gradients for d_outputs [N, A] and
  /// d_values [N] into grads, and writes the gradient w.r.t. x into dx (row stride ldx): the
  /// two heads' sum, or each head its own columns when the networks are separate.
  template <class Backend>
  void backward(const Backend& b, workspace<Backend>& ws, const S* params, S* grads, const S* x,
                std::size_t ldx, std::size_t N, const S* d_outputs, const S* d_values,
                S* dx) const {
    policy_.backward(b, ws.policy, params + policy_w_, grads + policy_w_, x + policy_col_, ldx, N,
                     d_outputs, A_, dx + policy_col_, ldx, S(0));
    value_.backward(b, ws.value, params + value_w_, grads + value_w_, x, ldx, N, nullptr, 0,
                    d_values, 1, dx, ldx, policy_col_ > 0 ? S(0) : S(1));
  }

 private:
  policy_layer<S> policy_;
  value_type value_;
  std::size_t A_ = 0, policy_col_ = 0, policy_w_ = 0, value_w_ = 0;
};

}  // namespace seedrl::detail
