#pragma once
/// \file
/// `backend_mlp_torso<Backend, S, Act>`: the torso of `seedrl::mlp_lstm_agent` as a BackendTorso
/// part (seedrl/train/backend_torso.hpp): dense layers X_k = act(X_{k-1} W_k^T + b_k), the last
/// one writing straight into the core input: `detail::dense_stack` (`Act`: `relu_activation`,
/// the default, `tanh_activation` or your own; net/activation_math.hpp). With separate policy
/// and value networks (`separate_value_network`) it is two such stacks side by side, the
/// value's first. Parameters: per layer W [out, in] then b [out] (per tower); the CPU agent
/// (`actor_critic_agent` over it, on host_backend) draws them with `mlp_torso_init`
/// (net/mlp_lstm_agent.hpp). Built from an
/// `mlp_lstm_agent_config`, which also gives the core (`core_config`), so
/// `backend_agent_trainer<Backend, S, backend_mlp_torso<Backend, S>>` (alias
/// `backend_mlp_lstm_trainer`) is constructed from the agent's config alone.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/mlp_lstm_agent_config.hpp"
#include "seedrl/train/backend_core_config.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace seedrl {

/// The MLP torso of an `mlp_lstm_agent` on a backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S, Activation<S> Act = relu_activation>
class backend_mlp_torso {
  using stack_type = detail::dense_stack<S, Act>;

 public:
  /// Checks `config` as `mlp_lstm_agent` does (std::invalid_argument), its core and heads
  /// included, and lays out the torso's parameters.
  backend_mlp_torso(Backend& backend, const mlp_lstm_agent_config& config)
      : backend_(&backend), config_(config) {
    const std::string who = "seedrl::backend_mlp_lstm_trainer";
    if (config_.observation_size <= 0 || config_.num_actions <= 0 || config_.hidden_sizes.empty() ||
        config_.lstm_size < 0 || config_.lstm_layers <= 0) {
      throw std::invalid_argument(who +
                                  ": observation_size, num_actions, lstm_layers must be "
                                  "positive, hidden_sizes non-empty and lstm_size >= 0");
    }
    if (config_.separate_value_network && config_.lstm_size > 0)
      throw std::invalid_argument(who + ": separate policy and value networks need lstm_size 0");
    if (config_.continuous_action_size < 0 ||
        (config_.log_std_init && config_.continuous_action_size == 0))
      throw std::invalid_argument(who +
                                  ": continuous_action_size must be >= 0, and log_std_init set "
                                  "only with continuous actions");
    towers_ = config_.separate_value_network ? 2 : 1;
    obs_ = static_cast<std::size_t>(config_.observation_size);
    if (std::any_of(config_.hidden_sizes.begin(), config_.hidden_sizes.end(),
                    [](std::ptrdiff_t h) { return h <= 0; }))
      throw std::invalid_argument(who + ": hidden sizes must be positive");
    stack_ = stack_type(
        obs_, std::vector<std::size_t>(config_.hidden_sizes.begin(), config_.hidden_sizes.end()),
        who);
  }

  /// The core and heads of the agent `config` describes.
  static backend_core_config core_config(const mlp_lstm_agent_config& config) {
    backend_core_config c;
    c.num_actions = config.num_actions;
    c.continuous_action_size = config.continuous_action_size;
    c.independent_log_std = config.continuous_action_size > 0 && config.log_std_init.has_value();
    c.value_features = config.separate_value_network ? config.hidden_sizes.back() : 0;
    c.lstm_size = config.lstm_size;
    c.lstm_layers = config.lstm_layers;
    c.reward_and_action_inputs = config.reward_and_action_inputs;
    c.max_abs_input_reward = config.max_abs_input_reward;
    return c;
  }

  /// The agent's shape.
  const mlp_lstm_agent_config& config() const noexcept { return config_; }

  std::size_t num_parameters() const noexcept { return towers_ * stack_.num_parameters(); }
  std::size_t output_size() const noexcept { return towers_ * stack_.output_size(); }
  std::size_t observation_size() const noexcept { return obs_; }
  std::size_t state_size() const noexcept { return 0; }
  std::size_t max_rows() const noexcept { return stack_.max_rows(); }

  /// Calls f(layer, outputs, inputs) for every dense layer, towers in order and layers in
  /// order, `layer` pointing at its W [outputs, inputs] then b [outputs] in `params` (the
  /// torso's): where an initialiser draws them (mlp_lstm_agent does, on the host).
  template <class F>
  void for_each_layer(S* params, F&& f) const {
    for (std::size_t t = 0; t < towers_; ++t) {
      std::size_t in = obs_;
      for (std::size_t k = 0; k < stack_.num_layers(); ++k) {
        f(params + t * stack_.num_parameters() + stack_.weight_offset(k), stack_.width(k), in);
        in = stack_.width(k);
      }
    }
  }

  /// Sizes the hidden activations and gradients for `rows` rows; reallocates only to grow.
  void reserve(std::size_t rows) {
    for (std::size_t t = 0; t < towers_; ++t)
      stack_.reserve(*backend_, ws_[t], rows);
  }

  /// Every layer on all rows; each tower's last one writes into its columns of out (row
  /// stride ld).
  void forward(const backend_torso_batch<S>& batch, const S* params, S* out, std::size_t ld) {
    for (std::size_t t = 0; t < towers_; ++t)
      stack_.forward(*backend_, ws_[t], params + t * stack_.num_parameters(), batch.observations,
                     obs_, batch.rows(), out + t * stack_.output_size(), ld);
  }

  /// Adds the layers' gradients into grads, from d_out (row stride ld).
  void backward(const backend_torso_batch<S>& batch, const S* params, S* grads, const S* out,
                const S* d_out, std::size_t ld) {
    for (std::size_t t = 0; t < towers_; ++t) {
      const std::size_t p = t * stack_.num_parameters(), c = t * stack_.output_size();
      stack_.backward(*backend_, ws_[t], params + p, grads + p, batch.observations, obs_,
                      batch.rows(), out + c, ld, d_out + c, ld);
    }
  }

 private:
  Backend* backend_;
  mlp_lstm_agent_config config_;
  std::size_t obs_ = 0;
  std::size_t towers_ = 1;  ///< 2: the value network, then the policy network
  stack_type stack_;
  std::array<typename stack_type::template workspace<Backend>, 2> ws_;
};

}  // namespace seedrl
