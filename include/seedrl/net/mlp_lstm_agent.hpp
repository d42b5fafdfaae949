#pragma once
/// \file
/// A ready agent network for vector observations (CartPole, MuJoCo-like tasks), shaped like
/// SEED RL's: an MLP torso, then the torso's output concatenated with the reward and the
/// one-hot previous action, then an optional LSTM core, then a categorical policy head
/// (logits) and a value head. Models seedrl::Network.
///
/// Every parameter lives in one flat buffer (`parameters()`), every gradient in another of the
/// same layout (`gradients()`). Inference keeps its own workspaces, grown to the largest batch
/// seen, so `infer` does not allocate in steady state and may be interleaved with a training
/// unroll on another instance.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/linear.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/net/mlp_lstm_agent_config.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// MLP(+LSTM) actor-critic; see the file comment.
template <std::floating_point S = float>
class mlp_lstm_agent {
 public:
  using scalar_type = S;
  using state_type = recurrent_state<S>;
  using inference_input = agent_step_input<S>;
  using inference_output = agent_step_output<S>;
  using unroll_input = agent_unroll_input<S>;
  using unroll_output = agent_unroll_output<S>;
  using output_gradient = agent_output_gradient<S>;

  explicit mlp_lstm_agent(mlp_lstm_agent_config config = {}) : config_(std::move(config)) {
    if (config_.observation_size <= 0 || config_.num_actions <= 0 || config_.hidden_sizes.empty() ||
        config_.lstm_size < 0 || config_.lstm_layers <= 0) {
      throw std::invalid_argument(
          "seedrl::mlp_lstm_agent: observation_size, num_actions, lstm_layers must be positive, "
          "hidden_sizes non-empty and lstm_size >= 0");
    }
    std::ptrdiff_t in = config_.observation_size;
    for (std::ptrdiff_t h : config_.hidden_sizes) {
      torso_.emplace_back(in, h);
      in = h;
    }
    core_in_width_ = in + (config_.reward_and_action_inputs ? 1 + config_.num_actions : 0);
    if (config_.lstm_size > 0) {
      lstm_.emplace(
          lstm_config{core_in_width_, config_.lstm_size, config_.lstm_layers, config_.forget_bias});
    }
    const std::ptrdiff_t core_out = core_out_width();
    policy_ = linear<S>(core_out, config_.num_actions);
    value_ = linear<S>(core_out, 1);
    std::size_t n = policy_.num_parameters() + value_.num_parameters();
    for (const auto& l : torso_)
      n += l.num_parameters();
    if (lstm_)
      n += lstm_->num_parameters();
    params_.assign(n, S(0));
    grads_.assign(n, S(0));
    bind();
    random_generator rng(config_.seed);
    for (auto& l : torso_)
      l.init(rng);
    if (lstm_)
      lstm_->init(rng);
    policy_.init(rng, S(0.01));  // near-uniform initial policy
    value_.init(rng);
  }

  mlp_lstm_agent(const mlp_lstm_agent& other) : mlp_lstm_agent(other.config_) {
    std::copy(other.params_.begin(), other.params_.end(), params_.begin());
  }
  mlp_lstm_agent& operator=(const mlp_lstm_agent&) = delete;
  mlp_lstm_agent(mlp_lstm_agent&&) = delete;  // layers point into the buffers: keep them put

  const mlp_lstm_agent_config& config() const noexcept { return config_; }
  std::int32_t num_actions() const noexcept { return config_.num_actions; }
  bool has_lstm() const noexcept { return lstm_.has_value(); }

  /// Width of one environment's recurrent state (0 without an LSTM).
  std::ptrdiff_t state_size() const noexcept { return lstm_ ? lstm_->state_size() : 0; }

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
    check_common(static_cast<std::size_t>(B), in.observations, in.rewards, in.dones,
                 in.prev_actions);
    detail::check_extent("infer: logits", out.logits.size(),
                         static_cast<std::size_t>(B) * num_actions_u());
    detail::check_extent("infer: values", out.values.size(), static_cast<std::size_t>(B));
    if (state.batch != B || state.width != state_size()) {
      throw std::invalid_argument("seedrl::mlp_lstm_agent::infer: state is [" +
                                  std::to_string(state.batch) + ", " + std::to_string(state.width) +
                                  "], expected [" + std::to_string(B) + ", " +
                                  std::to_string(state_size()) + "]");
    }
    auto core_in = forward_torso(step_ws_, B, in.observations, in.rewards, in.prev_actions);
    if (lstm_) {
      grow(step_ws_.core_out, B * config_.lstm_size);
      auto y = view(step_ws_.core_out.data(), B, config_.lstm_size);
      lstm_->step(cview(core_in), in.dones, state.rows(), y);
      forward_heads(cview(y), out.logits, out.values);
    } else {
      forward_heads(cview(core_in), out.logits, out.values);
    }
  }

  /// Forward over an unroll from its start state; keeps activations for `backward_unroll`.
  void forward_unroll(const unroll_input& in, unroll_output& out) {
    const auto T1 = static_cast<std::ptrdiff_t>(in.steps),
               B = static_cast<std::ptrdiff_t>(in.batch);
    const auto N = static_cast<std::size_t>(T1 * B);
    check_common(N, in.observations, in.rewards, in.dones, in.prev_actions);
    detail::check_extent("forward_unroll: start_state", in.start_state.size(),
                         static_cast<std::size_t>(B * state_size()));
    detail::check_extent("forward_unroll: logits", out.logits.size(), N * num_actions_u());
    detail::check_extent("forward_unroll: values", out.values.size(), N);
    unroll_rows_ = T1 * B;
    auto core_in =
        forward_torso(train_ws_, unroll_rows_, in.observations, in.rewards, in.prev_actions);
    core_out_ = core_in.data();
    if (lstm_) {
      grow(train_ws_.core_out, unroll_rows_ * config_.lstm_size);
      auto y = view(train_ws_.core_out.data(), unroll_rows_, config_.lstm_size);
      lstm_->forward_unroll(T1, B, cview(core_in), in.dones,
                            cview(in.start_state.data(), B, state_size()), y);
      core_out_ = train_ws_.core_out.data();
    }
    forward_heads(core_out_view(), out.logits, out.values);
  }

  /// Back-propagates the loss's output gradient through time; adds into `gradients()`.
  void backward_unroll(const output_gradient& grad) {
    const std::ptrdiff_t N = unroll_rows_, A = config_.num_actions, C = core_out_width();
    if (N == 0)
      throw std::logic_error("seedrl::mlp_lstm_agent::backward_unroll: call forward_unroll first");
    detail::check_extent("backward_unroll: logits gradient", grad.logits.size(),
                         static_cast<std::size_t>(N * A));
    detail::check_extent("backward_unroll: values gradient", grad.values.size(),
                         static_cast<std::size_t>(N));
    const auto dlogits = cview(grad.logits.data(), N, A);
    const auto dvalues = cview(grad.values.data(), N, 1);
    policy_.backward_params(core_out_view(), dlogits);
    value_.backward_params(core_out_view(), dvalues);
    grow(train_ws_.d_core_out, N * C);
    auto d_core_out = view(train_ws_.d_core_out.data(), N, C);
    policy_.backward_input(dlogits, d_core_out);
    d_core_out.noalias() += dvalues * value_.weight();
    S* d_core_in = d_core_out.data();  // without an LSTM the core input is the core output
    if (lstm_) {
      grow(train_ws_.d_core_in, N * core_in_width_);
      d_core_in = train_ws_.d_core_in.data();
      auto d_core_in_view = view(d_core_in, N, core_in_width_);
      lstm_->backward_unroll(cview(d_core_out), nullptr, &d_core_in_view);
    }
    // Back through the torso; the reward and action columns of the core input have no parameters.
    const std::ptrdiff_t last = static_cast<std::ptrdiff_t>(torso_.size()) - 1;
    grow(train_ws_.d_torso, N * max_hidden());
    grow(train_ws_.d_torso2, N * max_hidden());
    S* d = train_ws_.d_torso.data();
    S* d_next = train_ws_.d_torso2.data();
    const std::ptrdiff_t last_width = torso_[static_cast<std::size_t>(last)].out_features();
    view(d, N, last_width) = cview<S>(d_core_in, N, last_width, core_in_width_);
    for (std::ptrdiff_t k = last; k >= 0; --k) {
      auto& layer = torso_[static_cast<std::size_t>(k)];
      auto dk = view(d, N, layer.out_features());
      relu_backward(torso_output(train_ws_, k, N), dk);
      const auto input = k == 0 ? cview(train_ws_.observations, N, config_.observation_size)
                                : torso_output(train_ws_, k - 1, N);
      layer.backward_params(input, cview(dk));
      if (k > 0) {
        layer.backward_input(cview(dk), view(d_next, N, layer.in_features()));
        std::swap(d, d_next);
      }
    }
  }

 private:
  struct workspace {
    const S* observations = nullptr;
    std::vector<std::vector<S>> torso;  // outputs of all but the last torso layer
    std::vector<S> core_in, core_out, d_core_out, d_core_in, d_torso, d_torso2;
  };

  std::size_t num_actions_u() const noexcept {
    return static_cast<std::size_t>(config_.num_actions);
  }
  std::ptrdiff_t core_out_width() const noexcept {
    return lstm_ ? config_.lstm_size : core_in_width_;
  }
  std::ptrdiff_t max_hidden() const noexcept {
    return *std::max_element(config_.hidden_sizes.begin(), config_.hidden_sizes.end());
  }
  const_matrix_view<S> core_out_view() const {
    return cview(core_out_, unroll_rows_, core_out_width());
  }

  void bind() {
    S* p = params_.data();
    S* g = grads_.data();
    auto take = [&](auto& layer) {
      layer.bind(p, g);
      p += layer.num_parameters();
      g += layer.num_parameters();
    };
    for (auto& l : torso_)
      take(l);
    if (lstm_)
      take(*lstm_);
    take(policy_);
    take(value_);
  }

  void check_common(std::size_t n, std::span<const S> obs, std::span<const S> rewards,
                    std::span<const std::uint8_t> dones,
                    std::span<const std::int32_t> prev_actions) const {
    detail::check_extent("observations", obs.size(),
                         n * static_cast<std::size_t>(config_.observation_size));
    detail::check_extent("rewards", rewards.size(), n);
    detail::check_extent("dones", dones.size(), n);
    detail::check_extent("prev_actions", prev_actions.size(), n);
    if (config_.reward_and_action_inputs) {
      for (std::int32_t a : prev_actions) {
        if (a < 0 || a >= config_.num_actions) {
          throw std::out_of_range("seedrl::mlp_lstm_agent: previous action " + std::to_string(a) +
                                  " is outside [0, " + std::to_string(config_.num_actions) + ")");
        }
      }
    }
  }

  /// Output of torso layer k (k < last) or, for the last, its columns of the core input.
  const_matrix_view<S> torso_output(workspace& ws, std::ptrdiff_t k, std::ptrdiff_t N) const {
    const auto last = static_cast<std::ptrdiff_t>(torso_.size()) - 1;
    const std::ptrdiff_t w = torso_[static_cast<std::size_t>(k)].out_features();
    if (k == last)
      return cview(ws.core_in.data(), N, w, core_in_width_);
    return cview(ws.torso[static_cast<std::size_t>(k)].data(), N, w);
  }

  /// Runs the torso and assembles the core input [N, core_in_width_] in `ws`.
  matrix_view<S> forward_torso(workspace& ws, std::ptrdiff_t N, std::span<const S> obs,
                               std::span<const S> rewards,
                               std::span<const std::int32_t> prev_actions) {
    ws.observations = obs.data();
    ws.torso.resize(torso_.size());
    grow(ws.core_in, N * core_in_width_);
    const auto last = static_cast<std::ptrdiff_t>(torso_.size()) - 1;
    const S* input = obs.data();
    std::ptrdiff_t input_width = config_.observation_size, input_stride = config_.observation_size;
    for (std::ptrdiff_t k = 0; k <= last; ++k) {
      const auto& layer = torso_[static_cast<std::size_t>(k)];
      S* out = ws.core_in.data();  // the last layer writes straight into the core input
      std::ptrdiff_t stride = core_in_width_;
      if (k < last) {
        grow(ws.torso[static_cast<std::size_t>(k)], N * layer.out_features());
        out = ws.torso[static_cast<std::size_t>(k)].data();
        stride = layer.out_features();
      }
      auto out_view = view(out, N, layer.out_features(), stride);
      layer.forward(cview<S>(input, N, input_width, input_stride), out_view);
      relu_forward(out_view);
      input = out;
      input_width = layer.out_features();
      input_stride = stride;
    }
    auto core_in = view(ws.core_in.data(), N, core_in_width_);
    if (config_.reward_and_action_inputs) {
      const std::ptrdiff_t c = torso_.back().out_features();
      core_in.middleCols(c, 1 + config_.num_actions).setZero();
      for (std::ptrdiff_t r = 0; r < N; ++r) {
        double reward = static_cast<double>(rewards[static_cast<std::size_t>(r)]);
        if (config_.max_abs_input_reward) {
          reward =
              std::clamp(reward, -*config_.max_abs_input_reward, *config_.max_abs_input_reward);
        }
        core_in(r, c) = static_cast<S>(reward);
        core_in(r, c + 1 + prev_actions[static_cast<std::size_t>(r)]) = S(1);
      }
    }
    return core_in;
  }

  void forward_heads(const_matrix_view<S> core_out, std::span<S> logits,
                     std::span<S> values) const {
    const std::ptrdiff_t N = core_out.rows();
    policy_.forward(core_out, view(logits.data(), N, config_.num_actions));
    value_.forward(core_out, view(values.data(), N, 1));
  }

  static void grow(std::vector<S>& v, std::ptrdiff_t n) {
    if (v.size() < static_cast<std::size_t>(n))
      v.resize(static_cast<std::size_t>(n));
  }

  mlp_lstm_agent_config config_;
  std::vector<linear<S>> torso_;
  std::optional<lstm<S>> lstm_;
  linear<S> policy_;
  linear<S> value_;
  std::ptrdiff_t core_in_width_ = 0;
  std::vector<S> params_, grads_;
  workspace step_ws_, train_ws_;
  std::ptrdiff_t unroll_rows_ = 0;
  const S* core_out_ = nullptr;
};

static_assert(Network<mlp_lstm_agent<float>>);
static_assert(Network<mlp_lstm_agent<double>>);

}  // namespace seedrl
