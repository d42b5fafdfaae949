#pragma once
/// \file
/// `backend_pixel_lstm_trainer`: the training step of the pixel agents the Atari example trains,
/// `frame_stacked<pixel_lstm_agent<Torso, S>>` over the Nature CNN (`nature_cnn_config`, the
/// default) or the IMPALA ResNet (`impala_resnet_config`): frame stacks rebuilt from single
/// frames, pixels scaled by observation_scale, the torso, a dense layer with ReLU, an LSTM fed
/// the dense output, the clipped reward and the one-hot previous action, then policy and value
/// heads, with SEED's IMPALA loss, back-propagation through time, global-norm clipping and Adam
/// or RMSProp, written once against the ComputeBackend primitives
/// (seedrl/backend/compute_backend.hpp) as `backend_mlp_lstm_trainer` is for the MLP agent. On
/// `host_backend` it runs on the CPU, which is how the tests check it against `host_trainer` +
/// the CPU network; on a CUDA backend every array stays on the GPU and the convolutions run in
/// cuDNN. It includes no Eigen, so nvcc compiles it together with a CUDA backend.
///
/// The arithmetic is the CPU network's: the same parameter layout (`parameters()`: the torso's
/// (train/detail/*_torso.hpp), dense W [D, F] then b, LSTM W [4H, I + H] then b [4H], policy,
/// value), the same per-element functions, the same reset semantics (frame history and LSTM
/// state zeroed before a step marked done, no gradient across it) and the same clipping rule.
/// Only the order of some sums differs, so results agree to rounding.
///
/// Data flow of one step, N = (T+1) * B rows, time-major:
///   input:   one gather builds every step's scaled CHW stack from the unroll's frames and the
///            start state's frame history (detail::frame_stack_input_kernel);
///   torso:   the backend's conv2d primitives and for_each bodies on all N images at once;
///   dense, LSTM and heads: as backend_mlp_lstm_trainer with one LSTM layer, the dense layer
///            writing straight into the core input.

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss_config.hpp"
#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/detail/impala_math.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/impala_resnet_config.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/train/backend_optimizer.hpp"
#include "seedrl/train/detail/impala_resnet_torso.hpp"
#include "seedrl/train/detail/mlp_lstm_kernels.hpp"
#include "seedrl/train/detail/nature_cnn_torso.hpp"
#include "seedrl/train/detail/pixel_lstm_kernels.hpp"

namespace seedrl {

/// Trains a `frame_stacked<pixel_lstm_agent<Torso, S>>`'s parameters on a ComputeBackend, the
/// torso given by its config type (nature_cnn_config or impala_resnet_config); see the file
/// comment. Keeps a reference to the backend, which must outlive it. Parameters start at
/// zero: load them with `set_parameters` (e.g. from the CPU network's `parameters()`), and
/// choose the optimizer with `set_optimizer`, before the first `train_step`. Work buffers are
/// allocated at the first step and again only when T or B grow.
template <ComputeBackend Backend, std::floating_point S, class TorsoConfig = nature_cnn_config>
class backend_pixel_lstm_trainer {
  template <class T>
  using buffer = typename Backend::template buffer<T>;
  using torso_type = typename detail::backend_torso<Backend, S, TorsoConfig>::type;

 public:
  using scalar_type = S;                                      ///< parameter and activation type
  using backend_type = Backend;                               ///< where the arrays live
  using agent_config = pixel_lstm_agent_config<TorsoConfig>;  ///< the agent's shape

  /// The network `frame_stacked<pixel_lstm_agent<Torso, S>>(stack, agent)` would build. Checks
  /// both as the CPU classes do (std::invalid_argument) and allocates the parameter and
  /// gradient arrays.
  backend_pixel_lstm_trainer(Backend& backend, const frame_stack_config& stack,
                             const agent_config& agent)
      : backend_(&backend),
        stack_(stack),
        agent_(agent),
        torso_(make_torso(backend, stack, agent)),
        opt_(backend, "seedrl::backend_pixel_lstm_trainer", 0) {
    frame_ = static_cast<std::size_t>(stack_.height * stack_.width * stack_.channels);
    D_ = static_cast<std::size_t>(stack_.depth);
    history_ = (D_ - 1) * frame_;
    A_ = static_cast<std::size_t>(agent_.num_actions);
    dense_ = static_cast<std::size_t>(agent_.dense_size);
    H_ = static_cast<std::size_t>(agent_.lstm_size);
    input_size_ = D_ * frame_;
    features_ = torso_.output_size();
    std::size_t at = torso_.num_parameters();
    dense_w_ = at;
    at += dense_ * features_;
    dense_b_ = at;
    at += dense_;
    core_in_width_ = dense_ + 1 + A_;
    lstm_w_ = at;
    at += 4 * H_ * (core_in_width_ + H_);
    lstm_b_ = at;
    at += 4 * H_;
    policy_w_ = at;
    at += A_ * H_;
    policy_b_ = at;
    at += A_;
    value_w_ = at;
    at += H_;
    value_b_ = at;
    at += 1;
    num_parameters_ = at;
    check_fits_int("a layer width", core_in_width_ + 4 * H_ + features_ + A_ + input_size_);
    opt_ = backend_optimizer<Backend, S>(backend, "seedrl::backend_pixel_lstm_trainer",
                                         num_parameters_);
    params_ = backend_->template allocate<S>(num_parameters_);
    grads_ = backend_->template allocate<S>(num_parameters_);
  }

  backend_pixel_lstm_trainer(const backend_pixel_lstm_trainer&) = delete;
  backend_pixel_lstm_trainer& operator=(const backend_pixel_lstm_trainer&) = delete;
  backend_pixel_lstm_trainer(backend_pixel_lstm_trainer&&) = default;
  backend_pixel_lstm_trainer& operator=(backend_pixel_lstm_trainer&&) = default;
  ~backend_pixel_lstm_trainer() = default;

  /// The frame stacking.
  const frame_stack_config& stack_config() const noexcept { return stack_; }
  /// The agent's shape.
  const agent_config& config() const noexcept { return agent_; }

  /// Elements of the flat parameter (and gradient) array; the CPU network's count.
  std::size_t num_parameters() const noexcept { return num_parameters_; }

  /// Elements of one single frame: the observation size of a training batch.
  std::size_t observation_size() const noexcept { return frame_; }

  /// Width of one environment's recurrent state, as frame_stacked's: the depth-1 previous
  /// frames, then the LSTM's h and c.
  std::size_t state_size() const noexcept { return history_ + 2 * H_; }

  /// Replaces the parameters (the CPU network's `parameters()` layout); throws
  /// std::invalid_argument on a size mismatch.
  void set_parameters(std::span<const S> host) {
    check_size("set_parameters", host.size(), num_parameters_);
    backend_->upload(host, params_.data());
  }

  /// Copies the parameters out; throws std::invalid_argument on a size mismatch.
  void get_parameters(std::span<S> host) const {
    check_size("get_parameters", host.size(), num_parameters_);
    backend_->download(static_cast<const S*>(params_.data()), host);
  }

  /// Copies out the gradients of the last `train_step`, after clipping (unclipped when the
  /// step was skipped); throws std::invalid_argument on a size mismatch.
  void get_gradients(std::span<S> host) const {
    check_size("get_gradients", host.size(), num_parameters_);
    backend_->download(static_cast<const S*>(grads_.data()), host);
  }

  /// Trains with Adam as `seedrl::adam<S>(config)` would after `step_count` steps. `state` is
  /// {m, v}, each of num_parameters() elements; empty (or two empty arrays, what a fresh
  /// seedrl::adam holds) means zeros, and is the only state allowed with step_count 0 (as
  /// adam::load_state). Throws std::invalid_argument (a bad config, a negative step count,
  /// wrong array count or sizes) and then changes nothing.
  void set_optimizer(const adam_config& config, std::int64_t step_count,
                     std::span<const std::span<const S>> state = {}) {
    opt_.set(config, step_count, state);
  }

  /// Trains with RMSProp as `seedrl::rmsprop<S>(config)` would after `step_count` steps.
  /// `state` is {v} or, when config.momentum > 0, {v, momentum buffer}; otherwise as the Adam
  /// overload.
  void set_optimizer(const rmsprop_config& config, std::int64_t step_count,
                     std::span<const std::span<const S>> state = {}) {
    opt_.set(config, step_count, state);
  }

  /// Optimizer steps done so far (0 before set_optimizer).
  std::int64_t optimizer_step_count() const noexcept { return opt_.step_count(); }

  /// The optimizer's arrays in the CPU class's order (adam: m, v; rmsprop: v [, momentum
  /// buffer]); each empty at step count 0, as the CPU classes hold them; {} before
  /// set_optimizer.
  std::vector<std::vector<S>> optimizer_state() const { return opt_.state(); }

  /// The learning rate the next step will use; throws std::logic_error before set_optimizer.
  double learning_rate() const { return opt_.learning_rate(); }

  /// One IMPALA training step on `batch` (single frames as observations, start_state rows as
  /// frame_stacked keeps them); see the file comment. Throws std::logic_error before
  /// set_optimizer, std::invalid_argument (before any work) when max_grad_norm is not > 0, when
  /// the batch's sizes do not fit the network, or on an action or previous action outside
  /// [0, A). A gradient with a non-finite norm skips the update (`applied` false, `skipped`
  /// says why, grad_norm 0 as host_trainer reports it) and changes no parameter.
  train_step_result train_step(const training_batch<S>& batch, const impala_loss_config<S>& loss,
                               double max_grad_norm) {
    opt_.require("train_step");
    if (!(max_grad_norm > 0.0)) {
      throw std::invalid_argument(
          "seedrl::backend_pixel_lstm_trainer::train_step needs max_grad_norm > 0, got " +
          std::to_string(max_grad_norm) + " (+infinity never clips)");
    }
    check_batch(batch);
    const std::size_t B = batch.B, steps = batch.T + 1, N = steps * B;
    reserve(N, B);
    Backend& be = *backend_;
    be.upload(batch.observations, obs_buf_.data());
    be.upload(batch.rewards, rewards_.data());
    be.upload(batch.dones, dones_.data());
    be.upload(batch.truncated, truncated_.data());
    be.upload(batch.actions, actions_.data());
    be.upload(batch.behaviour_log_probs, behaviour_.data());
    be.upload(batch.prev_actions, prev_actions_.data());
    be.upload(batch.start_state, start_state_.data());

    forward(steps, B);
    impala_loss_operands<S> op;
    op.T = static_cast<int>(batch.T);
    op.B = static_cast<int>(B);
    op.A = static_cast<int>(A_);
    op.logits = logits_.data();
    op.values = values_.data();
    op.actions = actions_.data();
    op.behaviour_log_probs = behaviour_.data();
    op.rewards = rewards_.data();
    op.dones = dones_.data();
    op.truncated = truncated_.data();
    op.grad_logits = d_logits_.data();
    op.grad_values = d_values_.data();
    train_step_result r;
    r.terms = be.impala_loss(loss, op);
    backward(steps, B);
    r.learning_rate = opt_.learning_rate();
    if (clip_gradients_on_backend(be, grads_.data(), num_parameters_, max_grad_norm, r))
      opt_.step(params_.data(), grads_.data());
    return r;
  }

 private:
  /// Checks the frame stacking and the agent as the CPU classes do, then builds the torso.
  static torso_type make_torso(Backend& backend, const frame_stack_config& stack,
                               const agent_config& agent) {
    const std::string who = "seedrl::backend_pixel_lstm_trainer";
    const auto fail = [&](const std::string& what) {
      throw std::invalid_argument(who + ": " + what);
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
    return torso_type(backend, agent.torso, static_cast<std::size_t>(agent.channels),
                      static_cast<std::size_t>(agent.height), static_cast<std::size_t>(agent.width),
                      who);
  }

  static void check_fits_int(const char* what, std::size_t n) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw std::invalid_argument(std::string("seedrl::backend_pixel_lstm_trainer: ") + what +
                                  " (" + std::to_string(n) + ") exceeds INT_MAX");
    }
  }

  static void check_size(const char* what, std::size_t got, std::size_t want) {
    if (got != want) {
      throw std::invalid_argument(std::string("seedrl::backend_pixel_lstm_trainer::") + what +
                                  ": got " + std::to_string(got) + " values, expected " +
                                  std::to_string(want));
    }
  }

  void check_batch(const training_batch<S>& batch) const {
    const auto fail = [](const std::string& what) {
      throw std::invalid_argument("seedrl::backend_pixel_lstm_trainer::train_step: " + what);
    };
    const std::size_t T = batch.T, B = batch.B;
    if (T == 0 || B == 0) {
      fail("T and B must be positive (an unroll has T+1 >= 2 steps), got T = " + std::to_string(T) +
           ", B = " + std::to_string(B));
    }
    if (batch.num_actions != A_) {
      fail("batch.num_actions is " + std::to_string(batch.num_actions) + ", the network has " +
           std::to_string(A_));
    }
    // N images through the torso, whose tensors are int-indexed (cuBLAS, cuDNN).
    if (T + 1 > torso_.max_batch() / B)
      fail("(T+1)*B = " + std::to_string((T + 1) * B) +
           " images exceed the torso's int-sized tensors (at most " +
           std::to_string(torso_.max_batch()) + ")");
    const std::size_t N = (T + 1) * B;
    const auto size = [&](const char* name, std::size_t got, std::size_t want, const char* shape) {
      if (got != want) {
        fail(std::string(name) + " holds " + std::to_string(got) + " values, expected " + shape +
             " = " + std::to_string(want) + " (T = " + std::to_string(T) +
             ", B = " + std::to_string(B) + ")");
      }
    };
    size("observations", batch.observations.size(), N * frame_, "(T+1)*B*frame size");
    size("rewards", batch.rewards.size(), N, "(T+1)*B");
    size("dones", batch.dones.size(), N, "(T+1)*B");
    size("truncated", batch.truncated.size(), N, "(T+1)*B");
    size("prev_actions", batch.prev_actions.size(), N, "(T+1)*B");
    size("actions", batch.actions.size(), N, "(T+1)*B");
    size("behaviour_log_probs", batch.behaviour_log_probs.size(), N, "(T+1)*B");
    size("start_state", batch.start_state.size(), B * state_size(), "B*state_size()");
    detail::impala_check_truncated_done(batch.truncated.data(), batch.dones.data(), N, B,
                                        "seedrl::backend_pixel_lstm_trainer::train_step");
    const auto in_range = [&](std::int32_t a) {
      return a >= 0 && static_cast<std::size_t>(a) < A_;
    };
    for (std::size_t i = 0; i < N; ++i) {
      if (!in_range(batch.prev_actions[i])) {
        fail("prev_actions[" + std::to_string(i) + "] is " + std::to_string(batch.prev_actions[i]) +
             ", outside [0, " + std::to_string(A_) + ")");
      }
    }
    for (std::size_t i = 0; i < T * B; ++i) {  // step T's action is never used, as in the loss
      if (!in_range(batch.actions[i])) {
        fail("actions[" + std::to_string(i) + "] is " + std::to_string(batch.actions[i]) +
             ", outside [0, " + std::to_string(A_) + ")");
      }
    }
  }

  /// Sizes every work buffer for N rows and B environments; reallocates only to grow.
  void reserve(std::size_t N, std::size_t B) {
    grow(obs_buf_, N * frame_);
    grow(rewards_, N);
    grow(behaviour_, N);
    grow(dones_, N);
    grow(truncated_, N);
    grow(actions_, N);
    grow(prev_actions_, N);
    grow(start_state_, B * state_size());
    grow(input_, N * input_size_);
    torso_.reserve(N);
    grow(d_features_, N * features_);
    grow(core_in_, N * core_in_width_);
    grow(gates_, N * 4 * H_);
    grow(h_prev_, N * H_);
    grow(c_prev_, N * H_);
    grow(tanh_c_, N * H_);
    grow(h_, N * H_);
    grow(dz_, N * 4 * H_);
    grow(dh_next_, B * H_);
    grow(dc_next_, B * H_);
    grow(d_core_in_, N * core_in_width_);
    grow(d_dense_, N * dense_);
    grow(logits_, N * A_);
    grow(values_, N);
    grow(d_logits_, N * A_);
    grow(d_values_, N);
    grow(d_core_out_, N * H_);
  }

  /// Reallocates `b` (a buffer<T>) to n elements if it holds fewer.
  template <class Buffer>
  void grow(Buffer& b, std::size_t n) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(b.data())>>;
    if (b.size() < n)
      b = backend_->template allocate<T>(n);
  }

  /// Row-major GEMM with sizes checked to fit int when the batch was checked.
  void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, S alpha, const S* a,
            std::size_t lda, const S* b, std::size_t ldb, S beta, S* c, std::size_t ldc) {
    backend_->gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                   static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  }

  void forward(std::size_t steps, std::size_t B) {
    Backend& be = *backend_;
    const std::size_t N = steps * B;
    const S* p = params_.data();
    // Every step's stack, scaled, in the agent's CHW layout.
    be.for_each(N * input_size_,
                detail::frame_stack_input_kernel<S>{
                    input_.data(), obs_buf_.data(), start_state_.data(), state_size(),
                    dones_.data(), B, D_, static_cast<std::size_t>(stack_.channels),
                    static_cast<std::size_t>(stack_.height * stack_.width), stack_.channels_last,
                    static_cast<std::size_t>(agent_.channels),
                    static_cast<std::size_t>(agent_.height * agent_.width), agent_.channels_last,
                    static_cast<S>(agent_.observation_scale)});
    // The torso on all N images.
    features_data_ = torso_.forward(p, input_.data(), N);
    // Dense + ReLU into the core input's first columns, then reward and previous action.
    gemm(false, true, N, dense_, features_, S(1), features_data_, features_, p + dense_w_,
         features_, S(0), core_in_.data(), core_in_width_);
    be.for_each(N * dense_,
                detail::bias_relu_kernel<S>{core_in_.data(), p + dense_b_, dense_, core_in_width_});
    const bool clip = agent_.max_abs_input_reward.has_value();
    be.for_each(N * (1 + A_),
                detail::reward_action_inputs_kernel<S>{core_in_.data(), core_in_width_, dense_, A_,
                                                       rewards_.data(), prev_actions_.data(), clip,
                                                       clip ? *agent_.max_abs_input_reward : 0.0});
    // LSTM over the whole unroll, from the start state's (h, c) after the frame history.
    const std::size_t I = core_in_width_, ldw = I + H_;
    const S* w = p + lstm_w_;
    gemm(false, true, N, 4 * H_, I, S(1), core_in_.data(), I, w, ldw, S(0), gates_.data(), 4 * H_);
    be.for_each(B * H_, detail::lstm_start_state_kernel<S>{start_state_.data(), state_size(),
                                                           history_, dones_.data(), h_prev_.data(),
                                                           c_prev_.data(), H_});
    for (std::size_t t = 0; t < steps; ++t) {
      gemm(false, true, B, 4 * H_, H_, S(1), h_prev_.data() + t * B * H_, H_, w + I, ldw, S(1),
           gates_.data() + t * B * 4 * H_, 4 * H_);
      be.for_each(B * H_, detail::lstm_forward_step_kernel<S>{
                              gates_.data(), p + lstm_b_, dones_.data(), c_prev_.data(),
                              h_prev_.data(), tanh_c_.data(), h_.data(), H_, B, t, steps});
    }
    // Heads.
    gemm(false, true, N, A_, H_, S(1), h_.data(), H_, p + policy_w_, H_, S(0), logits_.data(), A_);
    be.for_each(N * A_, detail::add_bias_kernel<S>{logits_.data(), p + policy_b_, A_, A_});
    gemm(false, true, N, 1, H_, S(1), h_.data(), H_, p + value_w_, H_, S(0), values_.data(), 1);
    be.for_each(N, detail::add_bias_kernel<S>{values_.data(), p + value_b_, 1, 1});
  }

  void backward(std::size_t steps, std::size_t B) {
    Backend& be = *backend_;
    const std::size_t N = steps * B;
    const S* p = params_.data();
    S* g = grads_.data();
    be.fill(g, num_parameters_, S(0));
    // Heads: weight and bias gradients, then the gradient w.r.t. the LSTM's h.
    gemm(true, false, A_, H_, N, S(1), d_logits_.data(), A_, h_.data(), H_, S(1), g + policy_w_,
         H_);
    be.for_each(A_, detail::column_sum_add_kernel<S>{d_logits_.data(), N, A_, g + policy_b_});
    gemm(true, false, 1, H_, N, S(1), d_values_.data(), 1, h_.data(), H_, S(1), g + value_w_, H_);
    be.for_each(1, detail::column_sum_add_kernel<S>{d_values_.data(), N, 1, g + value_b_});
    gemm(false, false, N, H_, A_, S(1), d_logits_.data(), A_, p + policy_w_, H_, S(0),
         d_core_out_.data(), H_);
    gemm(false, false, N, H_, 1, S(1), d_values_.data(), 1, p + value_w_, H_, S(1),
         d_core_out_.data(), H_);
    // LSTM, back through time.
    const std::size_t I = core_in_width_, ldw = I + H_;
    const S* w = p + lstm_w_;
    for (std::size_t t = steps; t-- > 0;) {
      be.for_each(B * H_, detail::lstm_backward_step_kernel<S>{
                              d_core_out_.data(), H_, gates_.data(), tanh_c_.data(), c_prev_.data(),
                              dones_.data(), dh_next_.data(), dc_next_.data(), dz_.data(), H_, B, t,
                              steps});
      if (t > 0) {  // dh into step t-1: dz_t W_hh
        gemm(false, false, B, H_, 4 * H_, S(1), dz_.data() + t * B * 4 * H_, 4 * H_, w + I, ldw,
             S(0), dh_next_.data(), H_);
      }
    }
    gemm(true, false, 4 * H_, I, N, S(1), dz_.data(), 4 * H_, core_in_.data(), I, S(1), g + lstm_w_,
         ldw);
    gemm(true, false, 4 * H_, H_, N, S(1), dz_.data(), 4 * H_, h_prev_.data(), H_, S(1),
         g + lstm_w_ + I, ldw);
    be.for_each(4 * H_, detail::column_sum_add_kernel<S>{dz_.data(), N, 4 * H_, g + lstm_b_});
    gemm(false, false, N, I, 4 * H_, S(1), dz_.data(), 4 * H_, w, ldw, S(0), d_core_in_.data(), I);
    // Dense: its output is the core input's first columns (reward and action have no weights).
    be.for_each(N * dense_,
                detail::relu_backward_kernel<S>{d_core_in_.data(), core_in_width_, core_in_.data(),
                                                core_in_width_, d_dense_.data(), dense_});
    gemm(true, false, dense_, features_, N, S(1), d_dense_.data(), dense_, features_data_,
         features_, S(1), g + dense_w_, features_);
    be.for_each(dense_, detail::column_sum_add_kernel<S>{d_dense_.data(), N, dense_, g + dense_b_});
    gemm(false, false, N, features_, dense_, S(1), d_dense_.data(), dense_, p + dense_w_, features_,
         S(0), d_features_.data(), features_);
    // The torso, from its output's gradient.
    torso_.backward(p, g, d_features_.data(), N);
  }

  Backend* backend_;
  frame_stack_config stack_;
  agent_config agent_;
  torso_type torso_;
  const S* features_data_ = nullptr;  ///< the torso's output of the last forward
  std::size_t frame_ = 0, D_ = 0, history_ = 0, A_ = 0, dense_ = 0, H_ = 0;
  std::size_t input_size_ = 0, features_ = 0, core_in_width_ = 0;
  std::size_t num_parameters_ = 0;
  std::size_t dense_w_ = 0, dense_b_ = 0, lstm_w_ = 0, lstm_b_ = 0;
  std::size_t policy_w_ = 0, policy_b_ = 0, value_w_ = 0, value_b_ = 0;
  buffer<S> params_, grads_;

  backend_optimizer<Backend, S> opt_;  ///< Adam or RMSProp state

  buffer<S> obs_buf_, rewards_, behaviour_, start_state_;
  buffer<std::uint8_t> dones_;
  buffer<std::uint8_t> truncated_;  ///< per step: ended by a time limit (read by the loss only)
  buffer<std::int32_t> actions_, prev_actions_;
  buffer<S> input_;  ///< [N, C*H*W] every step's scaled stack
  buffer<S> d_features_, d_dense_;
  buffer<S> core_in_;  ///< [N, D + 1 + A]
  buffer<S> gates_, h_prev_, c_prev_, tanh_c_, h_;
  buffer<S> logits_, values_, d_logits_, d_values_;
  buffer<S> d_core_out_, d_core_in_, dz_, dh_next_, dc_next_;
};

}  // namespace seedrl
