#pragma once
/// \file
/// `backend_pixel_torso<Backend, S, TorsoConfig>`: the torso of the pixel agents the Atari
/// example trains, `frame_stacked<pixel_lstm_agent<Torso, S>>` over the Nature CNN
/// (`nature_cnn_config`, the default), the IMPALA ResNet (`impala_resnet_config`) or the small
/// conv stack for low-resolution images (`small_conv_torso_config`), as a
/// BackendTorso part (seedrl/train/backend_torso.hpp): frame stacks rebuilt from single frames,
/// pixels scaled by observation_scale, the convolutional torso (train/detail/*_torso.hpp: the
/// backend's conv2d primitives), then a dense layer with ReLU writing straight into the core
/// input. Its recurrent state is frame_stacked's frame history (the depth-1 previous frames).
/// Parameters in the CPU network's order: the convolutional torso's, then dense W [D, F] and
/// b [D]. Built from (frame_stack_config, pixel_lstm_agent_config<TorsoConfig>), which also give
/// the core (one LSTM fed the reward and previous action), so
/// `backend_agent_trainer<Backend, S, backend_pixel_torso<Backend, S, TorsoConfig>>` (alias
/// `backend_pixel_lstm_trainer`) is constructed from the network's configs alone.
///
/// Data flow, N = (T+1) * B rows: one gather builds every step's scaled CHW stack from the
/// unroll's frames and the start state's frame history (detail::frame_stack_input_kernel); the
/// convolutions run on all N images at once; then the dense GEMM.

#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/backend_ref.hpp"
#include "seedrl/backend/detail/frame_stack_kernels.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/conv_stack.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/detail/impala_resnet_torso.hpp"
#include "seedrl/net/detail/nature_cnn_torso.hpp"
#include "seedrl/net/detail/pytorch_default_init.hpp"
#include "seedrl/net/detail/small_conv_torso.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/impala_resnet_config.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/net/small_conv_lstm_agent_config.hpp"
#include "seedrl/train/backend_core_config.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace seedrl {

/// Frame stacking, a convolutional torso (given by its config type) and a dense ReLU layer on a
/// backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S, class TorsoConfig = nature_cnn_config>
class backend_pixel_torso {
  template <class T>
  using buffer = typename Backend::template buffer<T>;
  using conv_type = typename backend_conv_stack<Backend, S, TorsoConfig>::type;

 public:
  using agent_config = pixel_lstm_agent_config<TorsoConfig>;  ///< the agent's shape

  /// The torso of `frame_stacked<pixel_lstm_agent<Torso, S>>(stack, agent)`. Checks both as the
  /// CPU classes do (std::invalid_argument), the core's sizes included.
  backend_pixel_torso(Backend& backend, const frame_stack_config& stack, const agent_config& agent)
      : backend_(backend), stack_(stack), agent_(agent), conv_(make_conv(backend, stack, agent)) {
    frame_ = static_cast<std::size_t>(stack_.height * stack_.width * stack_.channels);
    D_ = static_cast<std::size_t>(stack_.depth);
    history_ = (D_ - 1) * frame_;
    dense_ = static_cast<std::size_t>(agent_.dense_size);
    input_size_ = D_ * frame_;
    features_ = conv_.output_size();
    dense_w_ = conv_.num_parameters();
    dense_layer_ = dense_type(features_, {dense_}, who());
    num_parameters_ = dense_w_ + dense_layer_.num_parameters();
    if (dense_ + features_ + input_size_ >
        static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw std::invalid_argument(who() + ": a layer width exceeds INT_MAX");
  }

  /// The core and heads of the agent: one LSTM fed the dense output, the reward (clipped as
  /// the agent says) and the one-hot previous action.
  static backend_core_config core_config(const frame_stack_config&, const agent_config& agent) {
    backend_core_config c;
    c.num_actions = agent.num_actions;
    c.lstm_size = agent.lstm_size;
    c.lstm_layers = 1;
    c.reward_and_action_inputs = true;
    c.max_abs_input_reward = agent.max_abs_input_reward;
    return c;
  }

  /// The frame stacking.
  const frame_stack_config& stack_config() const noexcept { return stack_; }
  /// The agent's shape.
  const agent_config& config() const noexcept { return agent_; }

  std::size_t num_parameters() const noexcept { return num_parameters_; }
  std::size_t output_size() const noexcept { return dense_; }
  /// One single frame: the observation size of a training batch.
  std::size_t observation_size() const noexcept { return frame_; }
  /// frame_stacked's history: the depth-1 previous frames.
  std::size_t state_size() const noexcept { return history_; }
  /// N images through the convolutions, whose tensors are int-indexed (cuBLAS, cuDNN).
  std::size_t max_rows() const noexcept { return conv_.max_batch(); }

  /// Draws the torso's parameters into host memory as the CPU parts do: the convolutions'
  /// (each W then b uniform in +-1/sqrt(fan in)), then the dense layer's as PyTorch's default.
  void init(random_generator& rng, S* params) const {
    conv_.init(rng, params);
    detail::pytorch_default_fill(rng, params + dense_w_, dense_layer_.num_parameters(), features_);
  }

  /// Sizes the stacks, activations and gradients for `rows` rows; reallocates only to grow.
  void reserve(std::size_t rows) {
    backend_.grow(input_, rows * input_size_);
    conv_.reserve(rows);
    backend_.grow(d_features_, rows * features_);
    dense_layer_.reserve(*backend_, dense_ws_, rows);
  }

  void forward(const backend_torso_batch<S>& batch, const S* params, S* out, std::size_t ld) {
    stack_input(batch);
    features_data_ = conv_.forward(params, input_.data(), batch.rows());
    // Dense + ReLU into out (the core input's first columns): the MLP torso's code.
    dense_layer_.forward(*backend_, dense_ws_, params + dense_w_, features_data_, features_,
                         batch.rows(), out, ld);
  }

  /// Sizes `infer`'s buffers for `rows` rows (not the gradients); reallocates only to grow.
  void reserve_inference(std::size_t rows) {
    backend_.grow(input_, rows * input_size_);
    conv_.reserve_inference(rows);
  }

  /// As forward, keeping nothing for a backward: the convolutions' inference path (the
  /// ResNet's keeps no argmaxes and no block activations); needs `reserve_inference`.
  void infer(const backend_torso_batch<S>& batch, const S* params, S* out, std::size_t ld) {
    const std::size_t N = batch.rows();
    stack_input(batch);
    const S* features = conv_.infer(params, input_.data(), N);
    dense_layer_.forward(*backend_, dense_ws_, params + dense_w_, features, features_, N, out, ld);
  }

 private:
  /// Every step's stack, scaled, in the agent's CHW layout, into input_.
  void stack_input(const backend_torso_batch<S>& batch) {
    Backend& be = *backend_;
    const std::size_t N = batch.rows();
    be.for_each(N * input_size_,
                detail::frame_stack_input_kernel<S>{
                    input_.data(), batch.observations, batch.start_state, batch.state_width,
                    batch.dones, batch.B, D_, static_cast<std::size_t>(stack_.channels),
                    static_cast<std::size_t>(stack_.height * stack_.width), stack_.channels_last,
                    static_cast<std::size_t>(agent_.channels),
                    static_cast<std::size_t>(agent_.height * agent_.width), agent_.channels_last,
                    static_cast<S>(agent_.observation_scale)});
  }

 public:
  /// For one-step inference (batch.steps == 1): each row's frame history after the step, as
  /// frame_stacked keeps it (the old history shifted by one frame, zero after a reset, the
  /// step's frame last), into next [B, ld]'s first state_size() columns.
  void next_state(const backend_torso_batch<S>& batch, S* next, std::size_t ld) {
    if (history_ == 0)
      return;
    (*backend_).for_each(batch.B * history_, detail::frame_history_step_kernel<S>{
                                                 batch.start_state, batch.state_width, batch.dones,
                                                 batch.observations, frame_, D_ - 1, next, ld});
  }

  void backward(const backend_torso_batch<S>& batch, const S* params, S* grads, const S* out,
                const S* d_out, std::size_t ld) {
    Backend& be = *backend_;
    const std::size_t N = batch.rows();
    dense_layer_.backward(be, dense_ws_, params + dense_w_, grads + dense_w_, features_data_,
                          features_, N, out, ld, d_out, ld, d_features_.data(), features_, S(0));
    conv_.backward(params, grads, d_features_.data(), N);
  }

 private:
  /// Messages name the agent (the CPU agent and the trainers run this torso alike).
  static std::string who() { return "seedrl::" + std::string(TorsoConfig::agent_name); }

  /// Checks the frame stacking and the agent as the CPU classes do, then builds the
  /// convolutional torso.
  static conv_type make_conv(Backend& backend, const frame_stack_config& stack,
                             const agent_config& agent) {
    const std::string name = who();
    const auto fail = [&](const std::string& what) {
      throw std::invalid_argument(name + ": " + what);
    };
    if (stack.height <= 0 || stack.width <= 0 || stack.channels <= 0 || stack.depth <= 0)
      fail("frame height, width, channels and depth must be positive");
    if (agent.height <= 0 || agent.width <= 0 || agent.channels <= 0)
      fail("the agent's height, width and channels must be positive");
    if (agent.num_actions <= 0 || agent.dense_size <= 0 || agent.lstm_size <= 0)
      fail("num_actions, dense_size and lstm_size must be positive");
    const auto frame = static_cast<std::size_t>(stack.height * stack.width * stack.channels);
    const auto input = static_cast<std::size_t>(agent.channels * agent.height * agent.width);
    if (input != static_cast<std::size_t>(stack.depth) * frame) {
      fail("the agent reads " + std::to_string(input) +
           " elements per observation, but a stack of " + std::to_string(stack.depth) +
           " frames of " + std::to_string(frame) + " is " +
           std::to_string(static_cast<std::size_t>(stack.depth) * frame));
    }
    return conv_type(backend, agent.torso, static_cast<std::size_t>(agent.channels),
                     static_cast<std::size_t>(agent.height), static_cast<std::size_t>(agent.width),
                     name);
  }

  detail::backend_ref<Backend> backend_;
  frame_stack_config stack_;
  agent_config agent_;
  conv_type conv_;
  const S* features_data_ = nullptr;  ///< the convolutions' output of the last forward
  std::size_t frame_ = 0, D_ = 0, history_ = 0, dense_ = 0, input_size_ = 0, features_ = 0;
  std::size_t num_parameters_ = 0, dense_w_ = 0;
  using dense_type = detail::dense_stack<S, relu_activation>;
  dense_type dense_layer_;  ///< the dense layer and its ReLU, W then b after the convolutions
  typename dense_type::template workspace<Backend> dense_ws_;
  buffer<S> input_;  ///< [N, C*H*W] every step's scaled stack
  buffer<S> d_features_;
};

}  // namespace seedrl
