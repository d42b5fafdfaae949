#pragma once
/// \file
/// `actor_critic_agent<S, Preprocess, Torso, Core, PolicyHead, ValueHead>`: an agent network
/// composed of parts, each modelling the concept in its header under seedrl/net/parts/:
///
///     observation rows ─► Preprocess ─► Torso ─► [features | reward | one-hot prev action]
///                                                        ─► Core ─► PolicyHead ─► logits
///                                                                └► ValueHead  ─► value
///
/// The reward (clipped if asked) and the one-hot previous action join the torso's features as
/// the core's input when `agent_options::reward_and_action_inputs` is set (SEED RL's agents do
/// this). At an episode start (a row whose `done` is set) both are zero: reward 0 and no action,
/// whatever the row carries, so every composed agent gets the convention from the input part
/// (docs/architecture.md, "Episode-start inputs"). A network built for continuous actions
/// (`agent_options::continuous_action_size` D > 0) takes the previous action as its D values
/// (`prev_continuous_actions`, what the env got) in place of the one-hot. Models
/// seedrl::Network over the agent_io.hpp types.
///
/// Every parameter lives in one flat buffer (`parameters()`), every gradient in another of the
/// same layout: torso, core, policy head, value head, each part's slice laid out as the part
/// likes. Initialisation draws from one generator seeded with `agent_options::seed`, in the
/// same order. Inference and training keep separate workspaces, grown to the largest batch
/// seen, so `infer` does not allocate in steady state when the parts do not.
///
/// For example, an MLP with tanh and no recurrent core, for CartPole:
///
///     using namespace seedrl;
///     using torso_t = mlp_torso<float, tanh_activation>;
///     using net_t = actor_critic_agent<float, vector_observations, torso_t, no_core<float>,
///                                      categorical_head<float>>;
///     net_t net({.num_actions = 2, .reward_and_action_inputs = false},
///               vector_observations{4}, torso_t({.input_size = 4, .widths = {64, 64}}),
///               {}, {.num_actions = 2});
///
/// The pixel agents (`nature_cnn_lstm_agent`, `impala_resnet_lstm_agent`) are names for
/// compositions; `mlp_lstm_agent` is the backend agent (seedrl/net/backend_agent.hpp) that
/// starts and computes as its composition of these parts.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/backend/detail/core_input_kernels.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/detail/agent_input_checks.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/parts/core.hpp"
#include "seedrl/net/parts/head.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/parts/torso.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// What an `actor_critic_agent` needs beyond its parts.
struct agent_options {
  /// The policy head's action count (`num_actions()`, which it must agree with): the action
  /// spec's count for discrete actions, D for a Gaussian head (seedrl/net/parts/gaussian_head.hpp).
  std::int32_t num_actions = 0;
  /// Feed the reward and the one-hot previous action to the core, after the torso's features
  /// (both zero at an episode start).
  bool reward_and_action_inputs = true;
  std::optional<double> max_abs_input_reward = std::nullopt;  ///< clip the reward fed to the core
  std::uint64_t seed = 0;                                     ///< initialisation
  std::string name = "actor_critic_agent";                    ///< in error messages
  /// D > 0: a continuous action space of D elements, whose previous action enters the core as
  /// its D values instead of a one-hot over num_actions. 0: discrete.
  std::int32_t continuous_action_size = 0;
  /// n > 0: separate policy and value networks. The value head reads the core output's first n
  /// columns and the policy head the others (the rest of the torso's features, then the reward
  /// and previous action when they are fed), so that a torso with a value tower and a policy
  /// tower side by side (mlp_torso's `towers = 2`) shares no weights between the two. Needs a
  /// core that passes its input through (no state, output = input). 0: both heads read the
  /// whole core output (SEED's shared network).
  std::ptrdiff_t value_features = 0;
};

/// An agent composed of parts; see the file comment.
template <std::floating_point S, class Preprocess, class Torso, class Core, class PolicyHead,
          class ValueHead = value_head<S>>
class actor_critic_agent {
  // Checked here rather than as constraints so that a part that does not fit gets a message
  // naming the member it lacks.
  static_assert(check_preprocess<Preprocess, S>());
  static_assert(check_torso<Torso, S>());
  static_assert(check_core<Core, S>());
  static_assert(check_policy_head<PolicyHead, S>());
  static_assert(check_head<ValueHead, S>());

 public:
  using scalar_type = S;
  using preprocess_type = Preprocess;
  using torso_type = Torso;
  using core_type = Core;
  using policy_head_type = PolicyHead;
  using value_head_type = ValueHead;
  using state_type = recurrent_state<S>;
  using inference_input = agent_step_input<S>;
  using inference_output = agent_step_output<S>;
  using unroll_input = agent_unroll_input<S>;
  using unroll_output = agent_unroll_output<S>;
  using output_gradient = agent_output_gradient<S>;

  /// Builds the core and heads from their options, checks that the parts fit together
  /// (std::invalid_argument naming the mismatch), binds every part to the flat buffers and
  /// initialises them in order.
  actor_critic_agent(agent_options options, Preprocess preprocess, Torso torso,
                     const typename Core::options_type& core,
                     const typename PolicyHead::options_type& policy,
                     const typename ValueHead::options_type& value = {})
      : options_(std::move(options)),
        preprocess_(std::move(preprocess)),
        torso_(std::move(torso)),
        core_in_width_(checked_core_input_width()),
        core_(core, core_in_width_),
        policy_(policy, core_.output_size() - checked_value_features()),
        value_(value, options_.value_features > 0 ? options_.value_features : core_.output_size()) {
    if (policy_.num_actions() != options_.num_actions) {
      throw std::invalid_argument(
          prefix() + "the policy head has " + std::to_string(policy_.num_actions()) +
          " actions but the agent's action count is " + std::to_string(options_.num_actions));
    }
    if (value_.output_size() != 1) {
      throw std::invalid_argument(prefix() + "the value head has " +
                                  std::to_string(value_.output_size()) + " outputs, expected 1");
    }
    const std::size_t n = torso_.num_parameters() + core_.num_parameters() +
                          policy_.num_parameters() + value_.num_parameters();
    params_.assign(n, S(0));
    grads_.assign(n, S(0));
    bind();
    random_generator rng(options_.seed);
    torso_.init(rng);
    core_.init(rng);
    policy_.init(rng);
    value_.init(rng);
  }

  /// A copy with the same parameters, its parts bound to its own buffers. Training state
  /// (what `forward_unroll` kept) is not copied.
  actor_critic_agent(const actor_critic_agent& other)
      : options_(other.options_),
        preprocess_(other.preprocess_),
        torso_(other.torso_),
        core_in_width_(other.core_in_width_),
        core_(other.core_),
        policy_(other.policy_),
        value_(other.value_),
        params_(other.params_),
        grads_(other.grads_.size(), S(0)) {
    bind();
  }
  actor_critic_agent& operator=(const actor_critic_agent&) = delete;
  actor_critic_agent(actor_critic_agent&&) = delete;  // parts point into the buffers

  const agent_options& options() const noexcept { return options_; }
  std::int32_t num_actions() const noexcept { return options_.num_actions; }
  /// Scalars of one observation row.
  std::ptrdiff_t observation_size() const noexcept { return preprocess_.input_size(); }
  /// Outputs of the policy head per row (the width of `logits`).
  std::ptrdiff_t policy_size() const noexcept { return policy_.output_size(); }
  /// Width of one environment's recurrent state (0 without one).
  std::ptrdiff_t state_size() const noexcept { return core_.state_size(); }

  const Preprocess& preprocess() const noexcept { return preprocess_; }
  const Torso& torso() const noexcept { return torso_; }
  const Core& core() const noexcept { return core_; }
  const PolicyHead& policy() const noexcept { return policy_; }
  const ValueHead& value() const noexcept { return value_; }

  state_type initial_state(std::size_t batch_size) const {
    return state_type(static_cast<std::ptrdiff_t>(batch_size), state_size());
  }

  std::span<S> parameters() noexcept { return params_; }
  std::span<const S> parameters() const noexcept { return params_; }
  std::span<S> gradients() noexcept { return grads_; }
  void zero_gradients() noexcept { std::fill(grads_.begin(), grads_.end(), S(0)); }

  /// One batched step: reads the state, resets it where `dones`, writes it back updated.
  void infer(const inference_input& in, state_type& state, inference_output& out) {
    const auto B = static_cast<std::ptrdiff_t>(in.rewards.size());
    detail::check_agent_step<S>(input_shape(), in, state, out);
    auto& ws = step_ws_;
    const auto x = preprocess_.apply(cview(in.observations.data(), B, observation_size()), ws.x);
    auto core_in = core_input(ws, B);
    torso_.infer(x, torso_columns(core_in));
    add_reward_and_action(core_in, in.rewards, in.dones, in.prev_actions,
                          in.prev_continuous_actions);
    const auto y = core_.step(cview(core_in), in.dones, state.rows());
    forward_heads(y, out.logits, out.values);
  }

  /// Forward over an unroll from its start state; keeps activations for `backward_unroll`.
  void forward_unroll(const unroll_input& in, unroll_output& out) {
    const auto T1 = static_cast<std::ptrdiff_t>(in.steps),
               B = static_cast<std::ptrdiff_t>(in.batch);
    detail::check_agent_unroll<S>(input_shape(), in, out);
    auto& ws = train_ws_;
    rows_ = T1 * B;
    const auto x =
        preprocess_.apply(cview(in.observations.data(), rows_, observation_size()), ws.x);
    auto core_in = core_input(ws, rows_);
    torso_.forward(x, torso_columns(core_in));
    add_reward_and_action(core_in, in.rewards, in.dones, in.prev_actions,
                          in.prev_continuous_actions);
    const auto y = core_.forward_unroll(T1, B, cview(core_in), in.dones,
                                        cview(in.start_state.data(), B, state_size()));
    core_out_ = y.data();
    core_out_stride_ = y.outerStride();
    forward_heads(y, out.logits, out.values);
  }

  /// Back-propagates the loss's output gradient through time; adds into `gradients()`.
  void backward_unroll(const output_gradient& grad) {
    const std::ptrdiff_t N = rows_, P = policy_size(), C = core_.output_size();
    if (N == 0)
      throw std::logic_error("seedrl::" + options_.name +
                             "::backward_unroll: call forward_unroll first");
    detail::check_extent("backward_unroll: logits gradient", grad.logits.size(),
                         static_cast<std::size_t>(N * P));
    detail::check_extent("backward_unroll: values gradient", grad.values.size(),
                         static_cast<std::size_t>(N));
    auto& ws = train_ws_;
    const auto core_out = cview(core_out_, N, C, core_out_stride_);
    grow(ws.d_core_out, N * C);
    auto d_core_out = view(ws.d_core_out.data(), N, C);
    if (options_.value_features > 0) {  // each head its own columns, written
      policy_.backward(policy_columns(core_out), cview(grad.logits.data(), N, P),
                       policy_columns(d_core_out), false);
      value_.backward(value_columns(core_out), cview(grad.values.data(), N, 1),
                      value_columns(d_core_out), false);
    } else {
      policy_.backward(core_out, cview(grad.logits.data(), N, P), d_core_out, false);
      value_.backward(core_out, cview(grad.values.data(), N, 1), d_core_out, true);
    }
    auto d_core_in = core_.backward_unroll(d_core_out);
    // The torso's columns of the core input; the reward and action columns have no weights.
    torso_.backward(view(d_core_in.data(), N, torso_.output_size(), d_core_in.outerStride()));
  }

 private:
  struct workspace {
    std::vector<S> x, core_in, d_core_out;
  };

  std::string prefix() const { return "seedrl::" + options_.name + ": "; }

  /// Checks how preprocessing, torso and action count fit; the core's input width.
  std::ptrdiff_t checked_core_input_width() const {
    if (options_.num_actions <= 0)
      throw std::invalid_argument(prefix() + "num_actions must be positive");
    if (options_.continuous_action_size < 0)
      throw std::invalid_argument(prefix() + "continuous_action_size must not be negative");
    if (preprocess_.output_layout() != torso_.input_layout()) {
      throw std::invalid_argument(
          prefix() + "the torso reads " + to_string(torso_.input_layout()) +
          " but the preprocessing gives it " + to_string(preprocess_.output_layout()) +
          (torso_.input_layout() == feature_layout::vector
               ? ": flatten the images (image_observations{.flatten = true}) or use a conv torso"
               : ": use a torso for flat vectors, such as mlp_torso"));
    }
    if (preprocess_.output_size() != torso_.input_size()) {
      throw std::invalid_argument(
          prefix() + "the preprocessing gives " + std::to_string(preprocess_.output_size()) +
          " scalars per observation but the torso reads " + std::to_string(torso_.input_size()));
    }
    if (torso_.output_size() <= 0)
      throw std::invalid_argument(prefix() + "the torso has no outputs");
    return torso_.output_size() +
           (options_.reward_and_action_inputs ? 1 + action_input_width() : 0);
  }

  void bind() {
    S* p = params_.data();
    S* g = grads_.data();
    const auto take = [&](auto& part) {
      part.bind(p, g);
      p += part.num_parameters();
      g += part.num_parameters();
    };
    take(torso_);
    take(core_);
    take(policy_);
    take(value_);
  }

  /// agent_options::value_features, checked against the parts (the core is built by now).
  std::ptrdiff_t checked_value_features() const {
    const std::ptrdiff_t n = options_.value_features;
    if (n == 0)
      return 0;
    if (n < 0 || n >= torso_.output_size()) {
      throw std::invalid_argument(prefix() + "value_features = " + std::to_string(n) +
                                  " must leave the policy some of the torso's " +
                                  std::to_string(torso_.output_size()) + " features");
    }
    if (core_.state_size() != 0 || core_.output_size() != core_in_width_) {
      throw std::invalid_argument(
          prefix() +
          "separate policy and value networks (value_features > 0) need a core that passes "
          "the torso's features through (no recurrent state), such as no_core or an lstm_core "
          "without LSTM");
    }
    return n;
  }

  /// Core input columns for the previous action: D values, or a one-hot over the actions.
  std::ptrdiff_t action_input_width() const noexcept {
    return options_.continuous_action_size > 0 ? options_.continuous_action_size
                                               : options_.num_actions;
  }

  detail::agent_input_shape input_shape() const {
    return {.name = options_.name,
            .observation_size = static_cast<std::size_t>(observation_size()),
            .num_actions = options_.num_actions,
            .continuous_action_size = options_.continuous_action_size,
            .reward_and_action_inputs = options_.reward_and_action_inputs,
            .policy_size = static_cast<std::size_t>(policy_size()),
            .state_size = static_cast<std::size_t>(state_size())};
  }

  matrix_view<S> core_input(workspace& ws, std::ptrdiff_t N) {
    grow(ws.core_in, N * core_in_width_);
    return view(ws.core_in.data(), N, core_in_width_);
  }

  /// The torso's output columns of the core input: the torso writes there directly.
  matrix_view<S> torso_columns(matrix_view<S> core_in) const {
    return view(core_in.data(), core_in.rows(), torso_.output_size(), core_in_width_);
  }

  /// The clipped reward and the previous action (one-hot, or its D values when continuous)
  /// after the torso's columns, both zero at an episode start (a row with `done`): the backend
  /// agents' kernel, so the rule is written once.
  void add_reward_and_action(matrix_view<S> core_in, std::span<const S> rewards,
                             std::span<const std::uint8_t> dones,
                             std::span<const std::int32_t> prev_actions,
                             std::span<const S> prev_continuous_actions) const {
    if (!options_.reward_and_action_inputs)
      return;
    const auto cols = static_cast<std::size_t>(1 + action_input_width());
    const bool clip = options_.max_abs_input_reward.has_value();
    const detail::reward_action_inputs_kernel<S> k{
        core_in.data(),
        static_cast<std::size_t>(core_in.outerStride()),
        static_cast<std::size_t>(torso_.output_size()),
        cols - 1,
        rewards.data(),
        dones.data(),
        prev_actions.data(),
        clip,
        clip ? *options_.max_abs_input_reward : 0.0,
        options_.continuous_action_size > 0 ? prev_continuous_actions.data() : nullptr};
    for (std::size_t r = 0; r < static_cast<std::size_t>(core_in.rows()); ++r)
      for (std::size_t c = 0; c < cols; ++c)
        k(r, c);
  }

  void forward_heads(const_matrix_view<S> core_out, std::span<S> logits,
                     std::span<S> values) const {
    const std::ptrdiff_t N = core_out.rows();
    if (options_.value_features > 0) {
      policy_.forward(policy_columns(core_out), view(logits.data(), N, policy_size()));
      value_.forward(value_columns(core_out), view(values.data(), N, 1));
      return;
    }
    policy_.forward(core_out, view(logits.data(), N, policy_size()));
    value_.forward(core_out, view(values.data(), N, 1));
  }

  /// The policy head's and the value head's columns of a core output (or its gradient) when
  /// the networks are separate (agent_options::value_features): the value's first.
  template <class View>
  auto policy_columns(View v) const {
    return View(v.data() + options_.value_features, v.rows(), v.cols() - options_.value_features,
                Eigen::OuterStride<>(v.outerStride()));
  }
  template <class View>
  auto value_columns(View v) const {
    return View(v.data(), v.rows(), options_.value_features, Eigen::OuterStride<>(v.outerStride()));
  }

  static void grow(std::vector<S>& v, std::ptrdiff_t n) {
    if (v.size() < static_cast<std::size_t>(n))
      v.resize(static_cast<std::size_t>(n));
  }

  agent_options options_;
  Preprocess preprocess_;
  Torso torso_;
  std::ptrdiff_t core_in_width_ = 0;
  Core core_;
  PolicyHead policy_;
  ValueHead value_;
  std::vector<S> params_, grads_;
  workspace step_ws_, train_ws_;
  std::ptrdiff_t rows_ = 0;
  const S* core_out_ = nullptr;
  std::ptrdiff_t core_out_stride_ = 0;
};

}  // namespace seedrl
