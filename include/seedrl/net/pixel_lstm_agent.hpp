#pragma once
/// \file
/// The part every SEED-style pixel agent shares, over any convolutional torso: pixels scaled
/// to [0, 1] (and moved to CHW if they come HWC), the torso, a dense layer with ReLU, then an
/// LSTM core whose input is the dense output concatenated with the clipped reward and the
/// one-hot previous action, then policy logits and a value. Models seedrl::Network.
///
/// Observations are rows of `channels * height * width` scalars holding raw pixel values
/// (0..255: the learner converts uint8 observations to S unchanged); `observation_scale`
/// (1/255) is applied here. For frame stacks built by the learner wrap the agent in
/// `frame_stacked` (frame_stack.hpp) with `channels` = stack depth x frame channels.
///
/// Ready agents: `nature_cnn_lstm_agent<S>` (nature_cnn_lstm_agent.hpp) and
/// `impala_resnet_lstm_agent<S>` (impala_resnet_lstm_agent.hpp).
///
/// Every parameter lives in one flat buffer (`parameters()`), every gradient in another of the
/// same layout: torso, dense, LSTM, policy, value. Inference and training keep separate
/// workspaces, grown to the largest batch seen, so `infer` does not allocate in steady state.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/conv2d.hpp"  // detail::gemm_stack_tiled
#include "seedrl/net/linear.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// A convolutional torso `pixel_lstm_agent` can run. `T` must provide:
///   - `using config_type = ...;` with `static constexpr std::string_view agent_name`,
///     `std::string describe_fields() const` (" key=value ..." for checkpoints) and
///     `static constexpr std::array<std::string_view, n> field_keys` (the keys it writes);
///   - a constructor `T(const config_type&, channels, height, width)`;
///   - `input_size()` (= C*H*W) and `output_size()` (flattened features per image);
///   - `num_parameters()`, `bind(S* params, S* grads)`, `init(random_generator&)`;
///   - `const_matrix_view<S> infer(const_matrix_view<S> x)` and the same-shaped `forward(x)`,
///     which also keeps what `backward(matrix_view<S> d_output)` needs to accumulate
///     parameter gradients (no input gradient: the input is pixels).
template <class T, class S>
concept PixelTorso = requires(T& t, const T& ct, const_matrix_view<S> x, matrix_view<S> dy,
                              random_generator& rng, S* p) {
  typename T::config_type;
  { T::config_type::agent_name } -> std::convertible_to<std::string_view>;
  { ct.input_size() } -> std::convertible_to<std::ptrdiff_t>;
  { ct.output_size() } -> std::convertible_to<std::ptrdiff_t>;
  { ct.num_parameters() } -> std::convertible_to<std::size_t>;
  t.bind(p, p);
  t.init(rng);
  { t.infer(x) } -> std::same_as<const_matrix_view<S>>;
  { t.forward(x) } -> std::same_as<const_matrix_view<S>>;
  t.backward(dy);
};

/// Pixel actor-critic over `Torso`; see the file comment.
template <std::floating_point S, class Torso>
requires PixelTorso<Torso, S>
class pixel_lstm_agent {
 public:
  using scalar_type = S;
  using torso_type = Torso;
  using config_type = pixel_lstm_agent_config<typename Torso::config_type>;
  using state_type = recurrent_state<S>;
  using inference_input = agent_step_input<S>;
  using inference_output = agent_step_output<S>;
  using unroll_input = agent_unroll_input<S>;
  using unroll_output = agent_unroll_output<S>;
  using output_gradient = agent_output_gradient<S>;

  explicit pixel_lstm_agent(config_type config = {})
      : config_(std::move(config)),
        torso_(config_.torso, config_.channels, config_.height, config_.width) {
    if (config_.num_actions <= 0 || config_.dense_size <= 0 || config_.lstm_size <= 0) {
      throw std::invalid_argument(std::string("seedrl::") +
                                  std::string(Torso::config_type::agent_name) +
                                  ": num_actions, dense_size and lstm_size must be positive");
    }
    dense_ = linear<S>(torso_.output_size(), config_.dense_size);
    core_in_width_ = config_.dense_size + 1 + config_.num_actions;
    lstm_ = lstm<S>(lstm_config{core_in_width_, config_.lstm_size, 1, config_.forget_bias});
    policy_ = linear<S>(config_.lstm_size, config_.num_actions);
    value_ = linear<S>(config_.lstm_size, 1);
    const std::size_t n = torso_.num_parameters() + dense_.num_parameters() +
                          lstm_.num_parameters() + policy_.num_parameters() +
                          value_.num_parameters();
    params_.assign(n, S(0));
    grads_.assign(n, S(0));
    bind();
    random_generator rng(config_.seed);
    torso_.init(rng);
    dense_.init(rng);
    lstm_.init(rng);
    policy_.init(rng, S(0.01));  // near-uniform initial policy
    value_.init(rng);
  }

  pixel_lstm_agent(const pixel_lstm_agent& other) : pixel_lstm_agent(other.config_) {
    std::copy(other.params_.begin(), other.params_.end(), params_.begin());
  }
  pixel_lstm_agent& operator=(const pixel_lstm_agent&) = delete;
  pixel_lstm_agent(pixel_lstm_agent&&) = delete;  // layers point into the buffers

  const config_type& config() const noexcept { return config_; }
  std::int32_t num_actions() const noexcept { return config_.num_actions; }
  /// Elements of one observation, C*H*W.
  std::ptrdiff_t observation_size() const noexcept { return torso_.input_size(); }
  /// Width of one environment's recurrent state: the LSTM's h and c.
  std::ptrdiff_t state_size() const noexcept { return lstm_.state_size(); }

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
                         static_cast<std::size_t>(B) * static_cast<std::size_t>(num_actions()));
    detail::check_extent("infer: values", out.values.size(), static_cast<std::size_t>(B));
    if (state.batch != B || state.width != state_size()) {
      throw std::invalid_argument("seedrl::pixel_lstm_agent::infer: state is [" +
                                  std::to_string(state.batch) + ", " + std::to_string(state.width) +
                                  "], expected [" + std::to_string(B) + ", " +
                                  std::to_string(state_size()) + "]");
    }
    auto& ws = step_ws_;
    const auto x = scale_input(ws, B, in.observations);
    const auto features = torso_.infer(x);
    const auto core_in = forward_core_input(ws, features, in.rewards, in.prev_actions);
    grow(ws.core_out, B * config_.lstm_size);
    auto y = view(ws.core_out.data(), B, config_.lstm_size);
    lstm_.step(core_in, in.dones, state.rows(), y);
    forward_heads(cview(y), out.logits, out.values);
  }

  /// Forward over an unroll from its start state; keeps activations for `backward_unroll`.
  void forward_unroll(const unroll_input& in, unroll_output& out) {
    const auto T1 = static_cast<std::ptrdiff_t>(in.steps),
               B = static_cast<std::ptrdiff_t>(in.batch);
    const auto N = static_cast<std::size_t>(T1 * B);
    check_common(N, in.observations, in.rewards, in.dones, in.prev_actions);
    detail::check_extent("forward_unroll: start_state", in.start_state.size(),
                         static_cast<std::size_t>(B * state_size()));
    detail::check_extent("forward_unroll: logits", out.logits.size(),
                         N * static_cast<std::size_t>(num_actions()));
    detail::check_extent("forward_unroll: values", out.values.size(), N);
    auto& ws = train_ws_;
    rows_ = T1 * B;
    const auto x = scale_input(ws, rows_, in.observations);
    const auto features = torso_.forward(x);
    features_ = features.data();
    const auto core_in = forward_core_input(ws, features, in.rewards, in.prev_actions);
    grow(ws.core_out, rows_ * config_.lstm_size);
    auto y = view(ws.core_out.data(), rows_, config_.lstm_size);
    lstm_.forward_unroll(T1, B, core_in, in.dones, cview(in.start_state.data(), B, state_size()),
                         y);
    forward_heads(cview(y), out.logits, out.values);
  }

  /// Back-propagates the loss's output gradient through time; adds into `gradients()`.
  void backward_unroll(const output_gradient& grad) {
    const std::ptrdiff_t N = rows_, A = config_.num_actions, H = config_.lstm_size,
                         D = config_.dense_size;
    if (N == 0)
      throw std::logic_error(
          "seedrl::pixel_lstm_agent::backward_unroll: call forward_unroll first");
    detail::check_extent("backward_unroll: logits gradient", grad.logits.size(),
                         static_cast<std::size_t>(N * A));
    detail::check_extent("backward_unroll: values gradient", grad.values.size(),
                         static_cast<std::size_t>(N));
    auto& ws = train_ws_;
    const auto dlogits = cview(grad.logits.data(), N, A);
    const auto dvalues = cview(grad.values.data(), N, 1);
    const auto core_out = cview(ws.core_out.data(), N, H);
    policy_.backward_params(core_out, dlogits);
    value_.backward_params(core_out, dvalues);
    grow(ws.d_core_out, N * H);
    auto d_core_out = view(ws.d_core_out.data(), N, H);
    policy_.backward_input(dlogits, d_core_out);
    d_core_out.noalias() += dvalues * value_.weight();
    grow(ws.d_core_in, N * core_in_width_);
    auto d_core_in = view(ws.d_core_in.data(), N, core_in_width_);
    lstm_.backward_unroll(cview(d_core_out), nullptr, &d_core_in);
    // The dense output is the core input's first D columns; reward and action have no weights.
    auto d_dense = view(ws.d_core_in.data(), N, D, core_in_width_);
    relu_backward(cview(ws.core_in.data(), N, D, core_in_width_), d_dense);
    const auto features = cview(features_, N, torso_.output_size());
    dense_.backward_params(features, cview(d_dense));
    grow(ws.d_features, N * torso_.output_size());
    auto d_features = view(ws.d_features.data(), N, torso_.output_size());
    dense_.backward_input(cview(d_dense), d_features);
    torso_.backward(d_features);
  }

 private:
  struct workspace {
    std::vector<S> x, core_in, core_out, d_core_out, d_core_in, d_features;
  };

  void bind() {
    S* p = params_.data();
    S* g = grads_.data();
    const auto take = [&](auto& layer) {
      layer.bind(p, g);
      p += layer.num_parameters();
      g += layer.num_parameters();
    };
    take(torso_);
    take(dense_);
    take(lstm_);
    take(policy_);
    take(value_);
  }

  void check_common(std::size_t n, std::span<const S> obs, std::span<const S> rewards,
                    std::span<const std::uint8_t> dones,
                    std::span<const std::int32_t> prev_actions) const {
    detail::check_extent("observations", obs.size(),
                         n * static_cast<std::size_t>(observation_size()));
    detail::check_extent("rewards", rewards.size(), n);
    detail::check_extent("dones", dones.size(), n);
    detail::check_extent("prev_actions", prev_actions.size(), n);
    for (std::int32_t a : prev_actions) {
      if (a < 0 || a >= config_.num_actions) {
        throw std::out_of_range("seedrl::pixel_lstm_agent: previous action " + std::to_string(a) +
                                " is outside [0, " + std::to_string(config_.num_actions) + ")");
      }
    }
  }

  /// Pixels times `observation_scale`, as CHW rows (transposed from HWC if channels_last).
  const_matrix_view<S> scale_input(workspace& ws, std::ptrdiff_t N, std::span<const S> obs) {
    const std::ptrdiff_t n = observation_size();
    grow(ws.x, N * n);
    const auto scale = static_cast<S>(config_.observation_scale);
    if (!config_.channels_last || config_.channels == 1) {
      view(ws.x.data(), N, n) = cview(obs.data(), N, n) * scale;
    } else {
      const std::ptrdiff_t C = config_.channels, P = config_.height * config_.width;
      for (std::ptrdiff_t r = 0; r < N; ++r) {
        // Row r as [P, C] (HWC) into [C, P] (CHW).
        view(ws.x.data() + r * n, C, P) = cview(obs.data() + r * n, P, C).transpose() * scale;
      }
    }
    return cview(ws.x.data(), N, n);
  }

  /// Dense + ReLU into the core input's first columns, then the clipped reward and the
  /// one-hot previous action.
  const_matrix_view<S> forward_core_input(workspace& ws, const_matrix_view<S> features,
                                          std::span<const S> rewards,
                                          std::span<const std::int32_t> prev_actions) {
    const std::ptrdiff_t N = features.rows(), D = config_.dense_size;
    grow(ws.core_in, N * core_in_width_);
    auto core_in = view(ws.core_in.data(), N, core_in_width_);
    auto dense_out = view(ws.core_in.data(), N, D, core_in_width_);
    // linear::forward's plain product would let Eigen malloc its packing buffers at these
    // sizes (3136 x 512); the tiled product keeps inference off the heap.
    detail::gemm_stack_tiled(dense_out, features, dense_.weight().transpose(), false);
    dense_out.rowwise() += dense_.bias();
    relu_forward(dense_out);
    core_in.rightCols(1 + config_.num_actions).setZero();
    for (std::ptrdiff_t r = 0; r < N; ++r) {
      double reward = static_cast<double>(rewards[static_cast<std::size_t>(r)]);
      if (config_.max_abs_input_reward)
        reward = std::clamp(reward, -*config_.max_abs_input_reward, *config_.max_abs_input_reward);
      core_in(r, D) = static_cast<S>(reward);
      core_in(r, D + 1 + prev_actions[static_cast<std::size_t>(r)]) = S(1);
    }
    return cview(core_in);
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

  config_type config_;
  Torso torso_;
  linear<S> dense_;
  lstm<S> lstm_;
  linear<S> policy_;
  linear<S> value_;
  std::ptrdiff_t core_in_width_ = 0;
  std::vector<S> params_, grads_;
  workspace step_ws_, train_ws_;
  std::ptrdiff_t rows_ = 0;
  const S* features_ = nullptr;
};

}  // namespace seedrl
