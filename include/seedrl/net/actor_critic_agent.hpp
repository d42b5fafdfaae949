#pragma once
/// \file
/// `actor_critic_agent<S, Torso, Config...>`: an agent network composed of a torso part and the
/// core and heads, run on the CPU by the code the GPU runs:
///
///     observation rows ─► Torso ─► [features | reward | previous action]
///                                        ─► LSTM (n layers) or none ─► policy head ─► logits
///                                                                   └► value head  ─► value
///
/// - `Torso` is a BackendTorso part on host_backend (seedrl/train/backend_torso.hpp), written
///   once over the ComputeBackend primitives: `backend_mlp_torso`, `backend_pixel_torso` or a
///   user's own, built as `Torso(host_backend&, const Config&...)`;
/// - the core and heads are `detail::agent_body`, configured by a `backend_core_config`: an
///   n-layer LSTM or none, the reward (clipped if asked) and previous action (one-hot, or the
///   D values of a continuous action) as core inputs, zero at an episode start (a row whose
///   `done` is set), a categorical policy or a diagonal Gaussian (log-stds state-dependent or
///   one vector), a value head, optionally separate policy and value features.
///
/// `infer` is `backend_agent_step` (the CUDA inference engine's step) over the caller's state
/// rows, stepped in place; `forward_unroll` / `backward_unroll` are `detail::torso_and_body`
/// (the backend trainer's passes), the gradients into `gradients()`. So host_trainer (any
/// optimizer, its threads), cpu_inference_engine and every CPU test run the composition a GPU
/// learner runs, up to the primitives; on a GPU, `actor_critic_recipe<Part, Config...>`
/// (seedrl/train/actor_critic_recipe.hpp) trains and infers with the same agent. Models
/// seedrl::Network over the agent_io.hpp types.
///
/// Parameters are laid out as the torso's, then per LSTM layer W and b, the policy layer's,
/// the value layer's, and drawn from one generator seeded with `agent_options::seed` in that
/// order: the torso by the `torso_init` given to the constructor (or its own `init`), the LSTM
/// as PyTorch's default plus the forget bias, the heads as PyTorch's default (policy gain 0.01)
/// or orthogonal. The ready agents (`mlp_lstm_agent`, the pixel agents) are such compositions.
///
/// For example, a user's torso part (docs/concepts/trainer.md) under a 64-unit LSTM:
///
///     seedrl::backend_core_config core;
///     core.num_actions = 3;
///     core.lstm_size = 64;
///     seedrl::actor_critic_agent<float, my_torso<seedrl::host_backend, float>, my_config> net(
///         {.name = "my_agent", .seed = 1}, core, my_config{...});
///
/// Inference and training keep a backend, a torso and buffers each, so `infer` never disturbs
/// what `forward_unroll` kept, and the two may run on different threads. A copy rebuilds its
/// own from the configs and takes the parameters.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/detail/agent_input_checks.hpp"
#include "seedrl/net/detail/torso_and_body.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/train/agent_step.hpp"
#include "seedrl/train/backend_core_config.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace seedrl {

/// How an actor_critic_agent starts and names itself.
struct agent_options {
  std::string name = "actor_critic_agent";  ///< in messages: "seedrl::<name>: ..."
  std::uint64_t seed = 0;                   ///< initialisation
  /// The heads' initialisation: PyTorch's default (policy gain 0.01, value 1) or orthogonal
  /// with the usual gains (orthogonal_policy_gain, orthogonal_value_gain).
  init_scheme init = init_scheme::pytorch_default;
  double forget_bias = 1.0;      ///< added to the LSTM's forget-gate biases
  double initial_log_std = 0.0;  ///< where a state-independent log-std starts
};

/// See the file comment.
template <std::floating_point S, class Torso, class... Config>
class actor_critic_agent {
  using backend_type = host_backend;
  static_assert(check_backend_torso<Torso, backend_type, S>());
  static_assert(std::constructible_from<Torso, backend_type&, const Config&...>,
                "seedrl::actor_critic_agent: the torso lacks a constructor "
                "`Torso(host_backend&, const Config&...)` for the agent's config types");

 public:
  using scalar_type = S;
  using torso_type = Torso;
  using state_type = recurrent_state<S>;
  using inference_input = agent_step_input<S>;
  using inference_output = agent_step_output<S>;
  using unroll_input = agent_unroll_input<S>;
  using unroll_output = agent_unroll_output<S>;
  using output_gradient = agent_output_gradient<S>;
  /// Draws the torso's initial parameters (Torso::num_parameters() values) into host memory.
  using torso_init = std::function<void(const Torso&, random_generator&, S*)>;

  /// The agent of `config...` (the core and heads `Torso::core_config(config...)`); throws
  /// std::invalid_argument where the torso or the core refuses it, then draws the parameters
  /// (see the file comment).
  actor_critic_agent(agent_options options, const torso_init& init_torso,
                     const Config&... config) requires requires {
    { Torso::core_config(config...) } -> std::convertible_to<backend_core_config>;
  } : actor_critic_agent(std::move(options), init_torso, Torso::core_config(config...), config...) {
  }

  /// The torso of `config...` under the core and heads `core`, e.g. a user's own torso part.
  actor_critic_agent(agent_options options, const torso_init& init_torso,
                     const backend_core_config& core, const Config&... config)
      : options_(std::move(options)),
        configs_(config...),
        core_(core),
        train_(make_train(train_backend_, core_, who(), config...)),
        step_(make_step(step_backend_, core_, config...)) {
    params_.assign(train_.num_parameters(), S(0));
    grads_.assign(params_.size(), S(0));
    random_generator rng(options_.seed);
    init_torso(train_.torso(), rng, params_.data());
    init_body(rng);
  }

  /// As above, with the torso drawing its own parameters: `void init(seedrl::random_generator&,
  /// S* params) const` (num_parameters() values into host memory), which this constructor
  /// asks of it.
  actor_critic_agent(agent_options options, const backend_core_config& core,
                     const Config&... config)
      : actor_critic_agent(std::move(options), part_init(), core, config...) {}

  /// A copy with the same parameters and its own backends, parts and buffers.
  actor_critic_agent(const actor_critic_agent& other)
      : options_(other.options_),
        configs_(other.configs_),
        core_(other.core_),
        train_(std::apply(
            [&](const Config&... r) { return make_train(train_backend_, core_, who(), r...); },
            configs_)),
        step_(std::apply([&](const Config&... r) { return make_step(step_backend_, core_, r...); },
                         configs_)),
        params_(other.params_),
        grads_(other.grads_.size(), S(0)) {}
  actor_critic_agent& operator=(const actor_critic_agent&) = delete;
  actor_critic_agent(actor_critic_agent&&) = delete;  // the parts point at the backends

  /// The policy's outputs per row (2D for D continuous action elements).
  std::int32_t num_actions() const noexcept { return core_.num_actions; }
  /// Scalars of one observation row.
  std::ptrdiff_t observation_size() const noexcept {
    return static_cast<std::ptrdiff_t>(step_.observation_size());
  }
  /// Outputs of the policy head per row (the width of `logits`).
  std::ptrdiff_t policy_size() const noexcept { return core_.num_actions; }
  /// Width of one environment's recurrent state (0 without one).
  std::ptrdiff_t state_size() const noexcept {
    return static_cast<std::ptrdiff_t>(step_.state_size());
  }
  /// The core and heads (layout, LSTM, policy layer).
  const detail::agent_body<S>& body() const noexcept { return train_.body(); }
  const backend_core_config& core_config() const noexcept { return core_; }
  /// What the torso was built from.
  const std::tuple<Config...>& configs() const noexcept { return configs_; }

  state_type initial_state(std::size_t batch_size) const {
    return state_type(static_cast<std::ptrdiff_t>(batch_size), state_size());
  }

  std::span<S> parameters() noexcept { return params_; }
  std::span<const S> parameters() const noexcept { return params_; }
  std::span<S> gradients() noexcept { return grads_; }
  void zero_gradients() noexcept { std::fill(grads_.begin(), grads_.end(), S(0)); }

  /// One batched step: reads the state, resets it where `dones`, writes it back updated.
  void infer(const inference_input& in, state_type& state, inference_output& out) {
    const std::size_t B = in.rewards.size();
    detail::check_agent_step<S>(input_shape(), in, state, out);
    if (B == 0)
      return;
    step_.reserve(B);
    agent_step_operands<S> op;
    op.B = B;
    op.observations = in.observations.data();
    op.rewards = in.rewards.data();
    op.resets = in.dones.data();
    op.prev_actions = in.prev_actions.data();
    op.prev_continuous_actions = in.prev_continuous_actions.data();
    op.params = params_.data();
    op.table = state.data.data();  // no slots: the rows in order, in place
    op.logits = out.logits.data();
    op.values = out.values.data();
    step_.step(op);
  }

  /// Forward over an unroll from its start state; keeps activations for `backward_unroll`
  /// (and the input's arrays, which must stay valid until then).
  void forward_unroll(const unroll_input& in, unroll_output& out) {
    const std::size_t N = in.steps * in.batch;
    detail::check_agent_unroll<S>(input_shape(), in, out);
    if (N == 0)
      return;
    if (in.steps > train_.max_rows() / in.batch)
      throw std::invalid_argument(who() + "::forward_unroll: " + std::to_string(N) +
                                  " rows are too many for int-sized tensors (at most " +
                                  std::to_string(train_.max_rows()) + ")");
    batch_ = {};
    batch_.observations = in.observations.data();
    batch_.start_state = in.start_state.data();
    batch_.state_width = static_cast<std::size_t>(state_size());
    batch_.dones = in.dones.data();
    batch_.steps = in.steps;
    batch_.B = in.batch;
    train_.reserve(train_backend_, in.steps, in.batch);
    train_.forward(train_backend_, params_.data(), batch_,
                   {in.rewards.data(), in.dones.data(), in.prev_actions.data(),
                    in.prev_continuous_actions.data()},
                   out.logits.data(), out.values.data());
  }

  /// Back-propagates the loss's output gradient through time; adds into `gradients()`.
  void backward_unroll(const output_gradient& grad) {
    const std::size_t N = batch_.rows();
    if (N == 0)
      throw std::logic_error(who() + "::backward_unroll: call forward_unroll first");
    detail::check_extent("backward_unroll: logits gradient", grad.logits.size(),
                         N * policy_width());
    detail::check_extent("backward_unroll: values gradient", grad.values.size(), N);
    train_.backward(train_backend_, params_.data(), grads_.data(), batch_, grad.logits.data(),
                    grad.values.data());
  }

 private:
  using train_type = detail::torso_and_body<backend_type, S, Torso>;
  using step_type = backend_agent_step<backend_type, S, Torso>;

  static train_type make_train(backend_type& b, const backend_core_config& core,
                               const std::string& who, const Config&... r) {
    return train_type(Torso(b, r...), core, who);
  }
  static step_type make_step(backend_type& b, const backend_core_config& core, const Config&... r) {
    return step_type(b, Torso(b, r...), core);
  }

  static torso_init part_init() {
    constexpr bool has_init = requires(const Torso& t, random_generator& rng, S* p) {
      t.init(rng, p);
    };
    static_assert(
        has_init,
        "seedrl::actor_critic_agent: the torso part lacks `void init(seedrl::random_generator&, "
        "S* params) const` (its initial parameters, drawn on the host); give it one or "
        "pass the agent a torso_init");
    if constexpr (has_init)
      return [](const Torso& t, random_generator& rng, S* p) { t.init(rng, p); };
    else
      return {};
  }

  std::string who() const { return "seedrl::" + options_.name; }
  std::size_t policy_width() const noexcept { return static_cast<std::size_t>(core_.num_actions); }

  detail::agent_input_shape input_shape() const {
    return {.name = options_.name,
            .observation_size = step_.observation_size(),
            .num_actions = core_.num_actions,
            .continuous_action_size = core_.continuous_action_size,
            .reward_and_action_inputs = core_.reward_and_action_inputs,
            .policy_size = policy_width(),
            .state_size = step_.state_size()};
  }

  /// The core's and heads' draws, after the torso's: the LSTM, the policy layer (then a
  /// state-independent log-std's start), the value layer.
  void init_body(random_generator& rng) {
    const auto& body = train_.body();
    S* p = params_.data();
    if (body.lstm().num_layers() > 0)
      body.lstm().init(p + body.lstm_offset(), rng, options_.forget_bias);
    const bool orthogonal = options_.init == init_scheme::orthogonal;
    const auto& policy = body.policy();
    init_linear_parameters(rng, p + body.policy_offset(),
                           static_cast<std::ptrdiff_t>(policy.layer_outputs()),
                           static_cast<std::ptrdiff_t>(policy.input_size()), options_.init,
                           static_cast<S>(orthogonal ? orthogonal_policy_gain : 0.01));
    std::fill_n(p + body.policy_offset() + policy.layer_parameters(), policy.independent_log_std(),
                static_cast<S>(options_.initial_log_std));
    init_linear_parameters(rng, p + body.value_offset(), std::ptrdiff_t{1},
                           static_cast<std::ptrdiff_t>(body.value_inputs()), options_.init,
                           static_cast<S>(orthogonal ? orthogonal_value_gain : 1.0));
  }

  agent_options options_;
  std::tuple<Config...> configs_;
  backend_core_config core_;
  backend_type train_backend_, step_backend_;  // before the parts, which point at them
  train_type train_;
  step_type step_;
  std::vector<S> params_, grads_;
  backend_torso_batch<S> batch_;  ///< the last forward_unroll's (backward reads it)
};

}  // namespace seedrl
