#pragma once
/// \file
/// `detail::agent_body<S>`: everything of an actor-critic agent after its torso, over a
/// backend's primitives, for the backend trainer and the inference step (CUDA included):
///
///     torso features ─► core input [features | reward | previous action] ─► LSTM (or none)
///                                                       ─► policy layer ─► policy outputs
///                                                       └► value layer  ─► values
///
/// - The core input's reward and previous-action columns (a one-hot over the actions, or a
///   continuous action's D values) are zero at an episode start (core_input_kernels.hpp).
/// - The core is `detail::lstm_stack` (n layers); without it the heads read the core input.
/// - The heads are `detail::policy_layer` (the CPU heads' code) and a one-output linear layer,
///   reading the whole core output, or each its own columns when the policy and value
///   networks are separate (`backend_core_config::value_features`: the value's first).
/// - The parameter layout is the agents' (`actor_critic_agent`): the torso's parameters,
///   then per LSTM layer W [4H, I + H] and b [4H], the policy layer's (W [A', C_p], b [A'],
///   then D log-stds when state-independent, A' = A - D), the value layer's W [1, C_v], b [1].
///   Every member takes the whole flat array, so checkpoints and optimizers stay one array.
/// The body holds only its shape; buffers live in a `workspace` per use (one for inference,
/// one for training). No Eigen, so nvcc compiles it.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "seedrl/backend/detail/core_input_kernels.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/detail/lstm_stack.hpp"
#include "seedrl/net/detail/policy_layer.hpp"
#include "seedrl/train/backend_core_config.hpp"

namespace seedrl::detail {

/// See the file comment.
template <std::floating_point S>
class agent_body {
  using value_layer = dense_stack<S, identity_activation>;

 public:
  /// A step's (or an unroll's) per-row inputs besides the torso's features, in the backend's
  /// memory: read only when the core takes the reward and previous action (dones always).
  struct row_inputs {
    const S* rewards = nullptr;                  ///< [N]
    const std::uint8_t* dones = nullptr;         ///< [N] nonzero: an episode starts here
    const std::int32_t* prev_actions = nullptr;  ///< [N] discrete
    const S* prev_continuous_actions = nullptr;  ///< [N, D] continuous
  };

  /// What one use of the body keeps: the core input (the torso writes its features into the
  /// first columns), the parts' workspaces and the backward's gradients.
  template <class Backend>
  struct workspace {
    using buffer = typename Backend::template buffer<S>;
    buffer core_in;  ///< [N, core_input_width()]
    typename lstm_stack<S>::template workspace<Backend> lstm;
    typename policy_layer<S>::template workspace<Backend> policy;
    typename value_layer::template workspace<Backend> value;
    buffer d_core_out, d_core_in;  ///< training: [N, core_output_width()], [N, core_input_width()]
    const S* core_out = nullptr;   ///< forward's: what the heads read (row stride core_out_ld)
    std::size_t core_out_ld = 0;
  };

  agent_body() = default;

  /// The body after a torso of `torso_parameters` parameters and `torso_features` outputs.
  /// Throws std::invalid_argument, naming `who`, for a core that cannot work: no actions,
  /// negative sizes, Gaussian outputs that are not 2D, a state-independent log-std without
  /// continuous actions, separate networks with an LSTM or without policy features.
  agent_body(std::size_t torso_parameters, std::size_t torso_features,
             const backend_core_config& core, const std::string& who)
      : core_(core), who_(who), features_(torso_features) {
    if (core.num_actions <= 0 || core.lstm_size < 0 || core.lstm_layers < 0 ||
        core.continuous_action_size < 0 || core.value_features < 0)
      throw std::invalid_argument(who +
                                  ": num_actions must be positive, lstm_size, lstm_layers, "
                                  "continuous_action_size and value_features non-negative");
    if (torso_features == 0)
      throw std::invalid_argument(who + ": the torso has no output");
    A_ = static_cast<std::size_t>(core.num_actions);
    D_ = static_cast<std::size_t>(core.continuous_action_size);
    if (D_ > 0 && A_ != 2 * D_)
      throw std::invalid_argument(
          who + ": continuous actions of " + std::to_string(D_) + " elements need 2 * " +
          std::to_string(D_) + " policy outputs (means, then log-stds), not " + std::to_string(A_));
    if (core.independent_log_std && D_ == 0)
      throw std::invalid_argument(who + ": a state-independent log-std needs continuous actions");
    action_inputs_ = D_ > 0 ? D_ : A_;
    core_in_ = features_ + (core.reward_and_action_inputs ? 1 + action_inputs_ : 0);
    const auto H = static_cast<std::size_t>(core.lstm_size);
    const std::size_t L = H > 0 ? static_cast<std::size_t>(core.lstm_layers) : 0;
    lstm_at_ = torso_parameters;
    if (L > 0)
      lstm_ = lstm_stack<S>(core_in_, H, L, who);
    core_out_ = L > 0 ? H : core_in_;
    std::size_t value_in = core_out_;
    if (core.value_features > 0) {
      value_in = static_cast<std::size_t>(core.value_features);
      if (L > 0 || value_in >= core_out_)
        throw std::invalid_argument(who + ": separate policy and value networks (value_features " +
                                    std::to_string(value_in) +
                                    ") need no LSTM and fewer value features than the " +
                                    std::to_string(core_out_) + " core outputs");
      policy_col_ = value_in;
    }
    if (const std::size_t widest = core_in_ + 5 * H + A_;
        widest > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw std::invalid_argument(who + ": a layer width (" + std::to_string(widest) +
                                  ") exceeds INT_MAX");
    policy_ = policy_layer<S>(core_out_ - policy_col_, A_, core.independent_log_std ? D_ : 0, who);
    value_ = value_layer(value_in, {1}, who);
    policy_at_ = lstm_at_ + lstm_.num_parameters();
    value_at_ = policy_at_ + policy_.num_parameters();
    num_parameters_ = value_at_ + value_.num_parameters();
  }

  const backend_core_config& config() const noexcept { return core_; }
  /// The whole agent's parameters: the torso's, then the body's.
  std::size_t num_parameters() const noexcept { return num_parameters_; }
  /// Policy outputs per row (2D for a Gaussian over D elements).
  std::size_t num_actions() const noexcept { return A_; }
  /// D of a continuous action, 0 for discrete actions.
  std::size_t continuous_action_size() const noexcept { return D_; }
  /// The torso's output width, the core input's first columns.
  std::size_t features() const noexcept { return features_; }
  std::size_t core_input_width() const noexcept { return core_in_; }
  std::size_t core_output_width() const noexcept { return core_out_; }
  /// Elements of one environment's core state: (h, c) per LSTM layer.
  std::size_t state_size() const noexcept { return lstm_.state_size(); }
  /// Whether the core reads the previous action (and the reward).
  bool takes_previous_action() const noexcept { return core_.reward_and_action_inputs; }
  /// The most rows the int-indexed GEMMs of the core and heads take.
  std::size_t max_rows() const noexcept {
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) /
           (4 * lstm_.hidden_size() + core_in_ + A_ + 1);
  }
  /// Elements a step's workspace holds per row (for a memory estimate).
  std::size_t step_elements_per_row() const noexcept {
    const std::size_t H = lstm_.hidden_size();
    return core_in_ + (H > 0 ? std::max(core_in_, H) + 6 * H : 0);  // lstm_stack::reserve_step
  }

  /// The parts and where their parameters start in the flat array, for a host that draws the
  /// initial parameters (actor_critic_agent) and for tests.
  const lstm_stack<S>& lstm() const noexcept { return lstm_; }
  const policy_layer<S>& policy() const noexcept { return policy_; }
  std::size_t lstm_offset() const noexcept { return lstm_at_; }
  std::size_t policy_offset() const noexcept { return policy_at_; }
  std::size_t value_offset() const noexcept { return value_at_; }
  /// Inputs of the value layer (the core output's first value_features columns when the
  /// networks are separate, else all of it).
  std::size_t value_inputs() const noexcept { return value_.input_size(); }

  /// Throws std::invalid_argument, naming `member`, when a continuous-action core that takes
  /// the previous action gets none (step and forward check it too; a caller that must not
  /// start work on bad input checks first).
  void check_inputs(const row_inputs& in, const char* member) const {
    if (D_ > 0 && core_.reward_and_action_inputs && in.prev_continuous_actions == nullptr)
      throw std::invalid_argument(who_ + "::" + member +
                                  ": this network takes the previous continuous action; "
                                  "prev_continuous_actions is null");
  }

  /// Sizes ws for inference steps of up to B rows (a captured CUDA graph must not allocate;
  /// the one-layer heads keep nothing in a step).
  template <class Backend>
  void reserve_step(const Backend& b, workspace<Backend>& ws, std::size_t B) const {
    grow(b, ws.core_in, B * core_in_);
    if (has_lstm())
      lstm_.reserve_step(b, ws.lstm, B);
  }

  /// Sizes ws for unrolls of `steps` x B rows, forward and backward.
  template <class Backend>
  void reserve(const Backend& b, workspace<Backend>& ws, std::size_t steps, std::size_t B) const {
    const std::size_t N = steps * B;
    grow(b, ws.core_in, N * core_in_);
    if (has_lstm()) {
      lstm_.reserve(b, ws.lstm, steps, B);
      grow(b, ws.d_core_in, N * core_in_);
    }
    grow(b, ws.d_core_out, N * core_out_);
    policy_.reserve(b, ws.policy, N);
    value_.reserve(b, ws.value, N);
  }

  /// Where the torso writes its features: the core input's first columns (row stride
  /// core_input_width()), after reserve or reserve_step.
  template <class Backend>
  S* torso_output(workspace<Backend>& ws) const {
    return ws.core_in.data();
  }

  /// One inference step of B rows after the torso wrote its features: the reward and action
  /// columns, the LSTM from the core state rows `state_in` (row stride ld_in, zeroed where
  /// dones) into `state_out` (row stride ld_out; may be state_in), each layer by
  /// `layer_step` (lstm_stack::step), then outputs [B, A] and values [B]. Throws
  /// std::invalid_argument when a continuous-action core that takes the previous action gets
  /// none.
  template <class Backend, class LayerStep = backend_lstm_step>
  void step(Backend& b, workspace<Backend>& ws, const S* params, std::size_t B,
            const row_inputs& in, const S* state_in, std::size_t ld_in, S* state_out,
            std::size_t ld_out, S* outputs, S* values, LayerStep&& layer_step = {}) const {
    check_inputs(in, "step");
    add_reward_and_action(b, ws, B, in);
    const S* x = ws.core_in.data();
    std::size_t ldx = core_in_;
    if (has_lstm()) {
      lstm_.step(b, ws.lstm, params + lstm_at_, x, ldx, B, in.dones, state_in, ld_in, state_out,
                 ld_out, layer_step);
      x = state_out + 2 * lstm_.hidden_size() * (lstm_.num_layers() - 1);
      ldx = ld_out;
    }
    heads_forward(b, ws, params, x, ldx, B, outputs, values);
  }

  /// Forward over `steps` x B rows (time-major) after the torso wrote its features, from the
  /// core state rows `start_state` (row stride ld_start); keeps in ws what backward reads.
  /// With `end_state`, writes the core state each row reaches after the last step there (row
  /// stride ld_end; a replay loss's burn-in).
  template <class Backend>
  void forward(Backend& b, workspace<Backend>& ws, const S* params, std::size_t steps,
               std::size_t B, const row_inputs& in, const S* start_state, std::size_t ld_start,
               S* outputs, S* values, S* end_state = nullptr, std::size_t ld_end = 0) const {
    check_inputs(in, "forward");
    const std::size_t N = steps * B;
    add_reward_and_action(b, ws, N, in);
    ws.core_out = ws.core_in.data();
    ws.core_out_ld = core_in_;
    if (has_lstm()) {
      ws.core_out =
          lstm_.forward(b, ws.lstm, params + lstm_at_, static_cast<const S*>(ws.core_in.data()),
                        core_in_, steps, B, in.dones, start_state, ld_start, end_state, ld_end);
      ws.core_out_ld = lstm_.hidden_size();
    }
    heads_forward(b, ws, params, ws.core_out, ws.core_out_ld, N, outputs, values);
  }

  /// After forward with the same ws and dones: adds the body's parameter gradients for
  /// d_outputs [N, A] and d_values [N] into grads (the whole flat array) and returns the
  /// gradient w.r.t. the core input (row stride core_input_width(); its first features()
  /// columns are the torso's output gradient).
  template <class Backend>
  const S* backward(Backend& b, workspace<Backend>& ws, const S* params, S* grads,
                    std::size_t steps, std::size_t B, const std::uint8_t* dones, const S* d_outputs,
                    const S* d_values) const {
    const std::size_t N = steps * B;
    if (ws.core_out == nullptr)
      throw std::logic_error(who_ + ": backward before forward");
    const S* x = ws.core_out;
    const std::size_t ldx = ws.core_out_ld;
    S* dx = ws.d_core_out.data();
    // Each head its own columns when the networks are separate, else the two heads' sum.
    policy_.backward(b, ws.policy, params + policy_at_, grads + policy_at_, x + policy_col_, ldx, N,
                     d_outputs, A_, dx + policy_col_, core_out_, S(0));
    value_.backward(b, ws.value, params + value_at_, grads + value_at_, x, ldx, N, nullptr, 0,
                    d_values, 1, dx, core_out_, policy_col_ > 0 ? S(0) : S(1));
    if (!has_lstm())
      return dx;  // the heads read the core input itself
    lstm_.backward(b, ws.lstm, params + lstm_at_, grads + lstm_at_, ws.core_in.data(), core_in_,
                   steps, B, dones, dx, core_out_, ws.d_core_in.data(), core_in_);
    return ws.d_core_in.data();
  }

 private:
  bool has_lstm() const noexcept { return lstm_.num_layers() > 0; }

  template <class Backend>
  void add_reward_and_action(Backend& b, workspace<Backend>& ws, std::size_t N,
                             const row_inputs& in) const {
    if (!core_.reward_and_action_inputs)
      return;
    const bool clip = core_.max_abs_input_reward.has_value();
    for_each_2d(b, N, 1 + action_inputs_,
                reward_action_inputs_kernel<S>{
                    ws.core_in.data(), core_in_, features_, action_inputs_, in.rewards, in.dones,
                    in.prev_actions, clip, clip ? *core_.max_abs_input_reward : 0.0,
                    D_ > 0 ? in.prev_continuous_actions : nullptr});
  }

  template <class Backend>
  void heads_forward(Backend& b, workspace<Backend>& ws, const S* params, const S* x,
                     std::size_t ldx, std::size_t N, S* outputs, S* values) const {
    policy_.forward(b, ws.policy, params + policy_at_, x + policy_col_, ldx, N, outputs, A_);
    value_.forward(b, ws.value, params + value_at_, x, ldx, N, values, 1);
  }

  template <class Backend, class Buffer>
  static void grow(const Backend& b, Buffer& buf, std::size_t n) {
    if (buf.size() < n)
      buf = b.template allocate<S>(n);
  }

  backend_core_config core_;
  std::string who_;
  std::size_t A_ = 0, D_ = 0, features_ = 0, action_inputs_ = 0, core_in_ = 0, core_out_ = 0;
  std::size_t policy_col_ = 0, lstm_at_ = 0, policy_at_ = 0, value_at_ = 0, num_parameters_ = 0;
  lstm_stack<S> lstm_;  ///< no layers: no LSTM
  policy_layer<S> policy_;
  value_layer value_;
};

}  // namespace seedrl::detail
