#pragma once
/// \file
/// `backend_mlp_lstm_trainer`: the training step of `seedrl::mlp_lstm_agent` (forward over the
/// unrolls, SEED's IMPALA loss, back-propagation through time, global-norm clipping, Adam or
/// RMSProp) written once against the ComputeBackend primitives
/// (seedrl/backend/compute_backend.hpp). On `host_backend` it runs on the CPU, which is how the
/// tests check its data flow against `host_trainer` + `mlp_lstm_agent`; on a CUDA backend the same
/// code keeps every array on the GPU. It includes no Eigen, so nvcc compiles it together with a
/// CUDA backend.
///
/// The arithmetic is the CPU agent's: the same parameter layout (`mlp_lstm_agent::bind`), the
/// same per-element functions (detail::lstm_unit, detail::lstm_unit_grad, detail::adam_update,
/// ...), the same reset semantics (an environment's state is zeroed before a step marked done
/// and no gradient crosses it) and the same clipping rule as `clip_by_global_norm`. Only the
/// order of some sums differs (GEMMs are split into input and recurrent parts, bias gradients
/// are column sums), so results agree to rounding.
///
/// Data flow of one step, N = (T+1) * B rows, time-major:
///   torso:   X_k = relu(X_{k-1} W_k^T + b_k), the last layer writing straight into the core
///            input [N, core_in], followed by the reward and one-hot previous-action columns;
///   LSTM l:  G = X W_ih^T for all rows at once, then per step t: G_t += h_prev_t W_hh^T and a
///            pointwise pass (gates, c, tanh c, h, and step t+1's incoming state);
///   heads:   logits = Y W_p^T + b_p, values = Y W_v^T + b_v;
///   backward mirrors it: per step only the pointwise pass and dh_prev = dz_t W_hh; the input
///            gradient dX = dZ W_ih and the weight gradients dZ^T [X | H_prev] are one GEMM each
///            per layer after the loop.

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
#include "seedrl/net/mlp_lstm_agent_config.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/train/backend_optimizer.hpp"
#include "seedrl/train/detail/mlp_lstm_kernels.hpp"

namespace seedrl {

/// Trains an `mlp_lstm_agent`'s parameters on a ComputeBackend; see the file comment. Keeps a
/// reference to the backend, which must outlive it. Parameters start at zero: load them with
/// `set_parameters` (e.g. from an `mlp_lstm_agent`), and choose the optimizer with
/// `set_optimizer`, before the first `train_step`. Work buffers are allocated at the first step
/// and again only when T or B grow.
template <ComputeBackend Backend, std::floating_point S>
class backend_mlp_lstm_trainer {
  template <class T>
  using buffer = typename Backend::template buffer<T>;

 public:
  using scalar_type = S;         ///< parameter and activation type
  using backend_type = Backend;  ///< where the arrays live

  /// Checks `config` as `mlp_lstm_agent` does (std::invalid_argument) and allocates the
  /// parameter and gradient arrays.
  backend_mlp_lstm_trainer(Backend& backend, const mlp_lstm_agent_config& config)
      : backend_(&backend), config_(config), opt_(backend, "seedrl::backend_mlp_lstm_trainer", 0) {
    if (config_.observation_size <= 0 || config_.num_actions <= 0 || config_.hidden_sizes.empty() ||
        config_.lstm_size < 0 || config_.lstm_layers <= 0) {
      throw std::invalid_argument(
          "seedrl::backend_mlp_lstm_trainer: observation_size, num_actions, lstm_layers must be "
          "positive, hidden_sizes non-empty and lstm_size >= 0");
    }
    for (const std::ptrdiff_t h : config_.hidden_sizes) {
      if (h <= 0)
        throw std::invalid_argument(
            "seedrl::backend_mlp_lstm_trainer: hidden sizes must be positive");
    }
    obs_ = static_cast<std::size_t>(config_.observation_size);
    A_ = static_cast<std::size_t>(config_.num_actions);
    H_ = static_cast<std::size_t>(config_.lstm_size);
    L_ = H_ > 0 ? static_cast<std::size_t>(config_.lstm_layers) : 0;
    // The layout of mlp_lstm_agent::bind(): torso layers (W [out, in], b [out]), LSTM layers
    // (W [4H, I + H], b [4H]), policy (W [A, C], b [A]), value (W [1, C], b [1]).
    std::size_t at = 0;
    std::size_t in = obs_;
    for (const std::ptrdiff_t h : config_.hidden_sizes) {
      const auto out = static_cast<std::size_t>(h);
      hidden_.push_back(out);
      torso_w_.push_back(at);
      at += out * in;
      torso_b_.push_back(at);
      at += out;
      in = out;
      max_hidden_ = out > max_hidden_ ? out : max_hidden_;
    }
    core_in_width_ = in + (config_.reward_and_action_inputs ? 1 + A_ : 0);
    for (std::size_t l = 0; l < L_; ++l) {
      lstm_w_.push_back(at);
      at += 4 * H_ * (layer_input(l) + H_);
      lstm_b_.push_back(at);
      at += 4 * H_;
    }
    core_out_width_ = L_ > 0 ? H_ : core_in_width_;
    policy_w_ = at;
    at += A_ * core_out_width_;
    policy_b_ = at;
    at += A_;
    value_w_ = at;
    at += core_out_width_;
    value_b_ = at;
    at += 1;
    num_parameters_ = at;
    check_fits_int("a layer width", core_in_width_ + H_ + 4 * H_ + max_hidden_ + obs_ + A_);
    opt_ =
        backend_optimizer<Backend, S>(backend, "seedrl::backend_mlp_lstm_trainer", num_parameters_);
    params_ = backend_->template allocate<S>(num_parameters_);
    grads_ = backend_->template allocate<S>(num_parameters_);
  }

  backend_mlp_lstm_trainer(const backend_mlp_lstm_trainer&) = delete;
  backend_mlp_lstm_trainer& operator=(const backend_mlp_lstm_trainer&) = delete;
  backend_mlp_lstm_trainer(backend_mlp_lstm_trainer&&) = default;
  backend_mlp_lstm_trainer& operator=(backend_mlp_lstm_trainer&&) = default;
  ~backend_mlp_lstm_trainer() = default;

  /// The network's shape.
  const mlp_lstm_agent_config& config() const noexcept { return config_; }

  /// Elements of the flat parameter (and gradient) array; `mlp_lstm_agent`'s count.
  std::size_t num_parameters() const noexcept { return num_parameters_; }

  /// Width of one environment's recurrent state: (h, c) per LSTM layer, 0 without an LSTM.
  std::size_t state_size() const noexcept { return 2 * L_ * H_; }

  /// Replaces the parameters (mlp_lstm_agent's layout); throws std::invalid_argument on a size
  /// mismatch.
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

  /// One IMPALA training step on `batch`; see the file comment. Throws std::logic_error before
  /// set_optimizer, std::invalid_argument (before any work) when max_grad_norm is not > 0, when
  /// the batch's sizes do not fit the network, or on an action or previous action outside
  /// [0, A). A gradient with a non-finite norm skips the update (`applied` false, `skipped`
  /// says why, grad_norm 0 as host_trainer reports it) and changes no parameter.
  train_step_result train_step(const training_batch<S>& batch, const impala_loss_config<S>& loss,
                               double max_grad_norm) {
    opt_.require("train_step");
    if (!(max_grad_norm > 0.0)) {
      throw std::invalid_argument(
          "seedrl::backend_mlp_lstm_trainer::train_step needs max_grad_norm > 0, got " +
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
    if (config_.reward_and_action_inputs)
      be.upload(batch.prev_actions, prev_actions_.data());
    if (L_ > 0)
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
  std::size_t layer_input(std::size_t l) const noexcept { return l == 0 ? core_in_width_ : H_; }

  static void check_fits_int(const char* what, std::size_t n) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw std::invalid_argument(std::string("seedrl::backend_mlp_lstm_trainer: ") + what + " (" +
                                  std::to_string(n) + ") exceeds INT_MAX");
    }
  }

  static void check_size(const char* what, std::size_t got, std::size_t want) {
    if (got != want) {
      throw std::invalid_argument(std::string("seedrl::backend_mlp_lstm_trainer::") + what +
                                  ": got " + std::to_string(got) + " values, expected " +
                                  std::to_string(want));
    }
  }

  void check_batch(const training_batch<S>& batch) const {
    const auto fail = [](const std::string& what) {
      throw std::invalid_argument("seedrl::backend_mlp_lstm_trainer::train_step: " + what);
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
    const std::size_t max_rows = static_cast<std::size_t>(std::numeric_limits<int>::max()) /
                                 (4 * H_ + core_in_width_ + max_hidden_ + obs_ + A_ + 1);
    if (T + 1 > max_rows / B)
      fail("(T+1)*B is too large for int-sized GEMMs");
    const std::size_t N = (T + 1) * B;
    const auto size = [&](const char* name, std::size_t got, std::size_t want, const char* shape) {
      if (got != want) {
        fail(std::string(name) + " holds " + std::to_string(got) + " values, expected " + shape +
             " = " + std::to_string(want) + " (T = " + std::to_string(T) +
             ", B = " + std::to_string(B) + ")");
      }
    };
    size("observations", batch.observations.size(), N * obs_, "(T+1)*B*observation_size");
    size("rewards", batch.rewards.size(), N, "(T+1)*B");
    size("dones", batch.dones.size(), N, "(T+1)*B");
    size("truncated", batch.truncated.size(), N, "(T+1)*B");
    size("prev_actions", batch.prev_actions.size(), N, "(T+1)*B");
    size("actions", batch.actions.size(), N, "(T+1)*B");
    size("behaviour_log_probs", batch.behaviour_log_probs.size(), N, "(T+1)*B");
    size("start_state", batch.start_state.size(), B * state_size(), "B*state_size()");
    detail::impala_check_truncated_done(batch.truncated.data(), batch.dones.data(), N, B,
                                        "seedrl::backend_mlp_lstm_trainer::train_step");
    const auto in_range = [&](std::int32_t a) {
      return a >= 0 && static_cast<std::size_t>(a) < A_;
    };
    if (config_.reward_and_action_inputs) {
      for (std::size_t i = 0; i < N; ++i) {
        if (!in_range(batch.prev_actions[i])) {
          fail("prev_actions[" + std::to_string(i) + "] is " +
               std::to_string(batch.prev_actions[i]) + ", outside [0, " + std::to_string(A_) + ")");
        }
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
    grow(obs_buf_, N * obs_);
    grow(rewards_, N);
    grow(behaviour_, N);
    grow(dones_, N);
    grow(truncated_, N);
    grow(actions_, N);
    if (config_.reward_and_action_inputs)
      grow(prev_actions_, N);
    torso_out_.resize(hidden_.size() - 1);
    for (std::size_t k = 0; k + 1 < hidden_.size(); ++k)
      grow(torso_out_[k], N * hidden_[k]);
    grow(core_in_, N * core_in_width_);
    layers_.resize(L_);
    for (auto& layer : layers_) {
      grow(layer.gates, N * 4 * H_);
      grow(layer.h_prev, N * H_);
      grow(layer.c_prev, N * H_);
      grow(layer.tanh_c, N * H_);
      grow(layer.h, N * H_);
    }
    if (L_ > 0) {
      grow(start_state_, B * state_size());
      grow(dz_, N * 4 * H_);
      grow(dh_next_, B * H_);
      grow(dc_next_, B * H_);
      grow(d_core_in_, N * core_in_width_);
    }
    grow(logits_, N * A_);
    grow(values_, N);
    grow(d_logits_, N * A_);
    grow(d_values_, N);
    grow(d_core_out_, N * core_out_width_);
    grow(d_torso_a_, N * max_hidden_);
    grow(d_torso_b_, N * max_hidden_);
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

  const S* core_out() const {
    return L_ > 0 ? layers_[L_ - 1].h.data() : static_cast<const S*>(core_in_.data());
  }

  void forward(std::size_t steps, std::size_t B) {
    Backend& be = *backend_;
    const std::size_t N = steps * B;
    const S* p = params_.data();
    // Torso; the last layer writes into the first columns of the core input.
    const S* in = obs_buf_.data();
    std::size_t in_width = obs_;
    for (std::size_t k = 0; k < hidden_.size(); ++k) {
      const bool last = k + 1 == hidden_.size();
      S* out = last ? core_in_.data() : torso_out_[k].data();
      const std::size_t ld = last ? core_in_width_ : hidden_[k];
      gemm(false, true, N, hidden_[k], in_width, S(1), in, in_width, p + torso_w_[k], in_width,
           S(0), out, ld);
      be.for_each(N * hidden_[k],
                  detail::bias_relu_kernel<S>{out, p + torso_b_[k], hidden_[k], ld});
      in = out;
      in_width = hidden_[k];
    }
    if (config_.reward_and_action_inputs) {
      const bool clip = config_.max_abs_input_reward.has_value();
      be.for_each(N * (1 + A_),
                  detail::reward_action_inputs_kernel<S>{
                      core_in_.data(), core_in_width_, hidden_.back(), A_, rewards_.data(),
                      prev_actions_.data(), clip, clip ? *config_.max_abs_input_reward : 0.0});
    }
    // LSTM layers, one after another over the whole unroll.
    const S* x = core_in_.data();
    for (std::size_t l = 0; l < L_; ++l) {
      auto& c = layers_[l];
      const std::size_t I = layer_input(l), ldw = I + H_;
      const S* w = p + lstm_w_[l];
      gemm(false, true, N, 4 * H_, I, S(1), x, I, w, ldw, S(0), c.gates.data(), 4 * H_);
      be.for_each(B * H_, detail::lstm_start_state_kernel<S>{start_state_.data(), state_size(),
                                                             2 * H_ * l, dones_.data(),
                                                             c.h_prev.data(), c.c_prev.data(), H_});
      for (std::size_t t = 0; t < steps; ++t) {
        gemm(false, true, B, 4 * H_, H_, S(1), c.h_prev.data() + t * B * H_, H_, w + I, ldw, S(1),
             c.gates.data() + t * B * 4 * H_, 4 * H_);
        be.for_each(B * H_, detail::lstm_forward_step_kernel<S>{
                                c.gates.data(), p + lstm_b_[l], dones_.data(), c.c_prev.data(),
                                c.h_prev.data(), c.tanh_c.data(), c.h.data(), H_, B, t, steps});
      }
      x = c.h.data();
    }
    // Heads.
    const std::size_t C = core_out_width_;
    gemm(false, true, N, A_, C, S(1), core_out(), C, p + policy_w_, C, S(0), logits_.data(), A_);
    be.for_each(N * A_, detail::add_bias_kernel<S>{logits_.data(), p + policy_b_, A_, A_});
    gemm(false, true, N, 1, C, S(1), core_out(), C, p + value_w_, C, S(0), values_.data(), 1);
    be.for_each(N, detail::add_bias_kernel<S>{values_.data(), p + value_b_, 1, 1});
  }

  void backward(std::size_t steps, std::size_t B) {
    Backend& be = *backend_;
    const std::size_t N = steps * B, C = core_out_width_;
    const S* p = params_.data();
    S* g = grads_.data();
    be.fill(g, num_parameters_, S(0));
    // Heads: weight and bias gradients, then the gradient w.r.t. the core output.
    gemm(true, false, A_, C, N, S(1), d_logits_.data(), A_, core_out(), C, S(1), g + policy_w_, C);
    be.for_each(A_, detail::column_sum_add_kernel<S>{d_logits_.data(), N, A_, g + policy_b_});
    gemm(true, false, 1, C, N, S(1), d_values_.data(), 1, core_out(), C, S(1), g + value_w_, C);
    be.for_each(1, detail::column_sum_add_kernel<S>{d_values_.data(), N, 1, g + value_b_});
    gemm(false, false, N, C, A_, S(1), d_logits_.data(), A_, p + policy_w_, C, S(0),
         d_core_out_.data(), C);
    gemm(false, false, N, C, 1, S(1), d_values_.data(), 1, p + value_w_, C, S(1),
         d_core_out_.data(), C);
    // LSTM layers from the top; d_core_out_ holds the gradient w.r.t. the current layer's h.
    for (std::size_t l = L_; l-- > 0;) {
      auto& c = layers_[l];
      const std::size_t I = layer_input(l), ldw = I + H_;
      const S* w = p + lstm_w_[l];
      for (std::size_t t = steps; t-- > 0;) {
        be.for_each(B * H_, detail::lstm_backward_step_kernel<S>{
                                d_core_out_.data(), H_, c.gates.data(), c.tanh_c.data(),
                                c.c_prev.data(), dones_.data(), dh_next_.data(), dc_next_.data(),
                                dz_.data(), H_, B, t, steps});
        if (t > 0) {  // dh into step t-1: dz_t W_hh
          gemm(false, false, B, H_, 4 * H_, S(1), dz_.data() + t * B * 4 * H_, 4 * H_, w + I, ldw,
               S(0), dh_next_.data(), H_);
        }
      }
      const S* x = l == 0 ? static_cast<const S*>(core_in_.data()) : layers_[l - 1].h.data();
      S* gw = g + lstm_w_[l];
      gemm(true, false, 4 * H_, I, N, S(1), dz_.data(), 4 * H_, x, I, S(1), gw, ldw);
      gemm(true, false, 4 * H_, H_, N, S(1), dz_.data(), 4 * H_, c.h_prev.data(), H_, S(1), gw + I,
           ldw);
      be.for_each(4 * H_, detail::column_sum_add_kernel<S>{dz_.data(), N, 4 * H_, g + lstm_b_[l]});
      // The gradient w.r.t. this layer's input: the layer below's h, or the core input.
      S* dx = l == 0 ? d_core_in_.data() : d_core_out_.data();
      gemm(false, false, N, I, 4 * H_, S(1), dz_.data(), 4 * H_, w, ldw, S(0), dx, I);
    }
    // Torso, from the last layer (whose output is the first columns of the core input; the
    // reward and action columns have no parameters).
    const S* dy = L_ > 0 ? static_cast<const S*>(d_core_in_.data()) : d_core_out_.data();
    std::size_t ld_dy = core_in_width_;
    S* d = d_torso_a_.data();
    S* d_next = d_torso_b_.data();
    for (std::size_t k = hidden_.size(); k-- > 0;) {
      const std::size_t width = hidden_[k];
      const bool last = k + 1 == hidden_.size();
      const S* y = last ? static_cast<const S*>(core_in_.data()) : torso_out_[k].data();
      be.for_each(N * width, detail::relu_backward_kernel<S>{
                                 dy, ld_dy, y, last ? core_in_width_ : width, d, width});
      const S* input = k == 0 ? static_cast<const S*>(obs_buf_.data()) : torso_out_[k - 1].data();
      const std::size_t in_width = k == 0 ? obs_ : hidden_[k - 1];
      gemm(true, false, width, in_width, N, S(1), d, width, input, in_width, S(1), g + torso_w_[k],
           in_width);
      be.for_each(width, detail::column_sum_add_kernel<S>{d, N, width, g + torso_b_[k]});
      if (k > 0) {
        gemm(false, false, N, in_width, width, S(1), d, width, p + torso_w_[k], in_width, S(0),
             d_next, in_width);
        dy = d_next;
        ld_dy = in_width;
        std::swap(d, d_next);  // the next ReLU backward runs in place on d_next
      }
    }
  }

  struct layer_buffers {
    buffer<S> gates;   ///< [N, 4H] pre-activations, then the activated gates
    buffer<S> h_prev;  ///< [N, H] incoming h of each step, after resets
    buffer<S> c_prev;  ///< [N, H] incoming c of each step, after resets
    buffer<S> tanh_c;  ///< [N, H]
    buffer<S> h;       ///< [N, H] outgoing h: the next layer's input
  };

  Backend* backend_;
  mlp_lstm_agent_config config_;
  std::size_t obs_ = 0, A_ = 0, H_ = 0, L_ = 0;
  std::size_t core_in_width_ = 0, core_out_width_ = 0, max_hidden_ = 0;
  std::vector<std::size_t> hidden_;
  std::size_t num_parameters_ = 0;
  std::vector<std::size_t> torso_w_, torso_b_, lstm_w_, lstm_b_;
  std::size_t policy_w_ = 0, policy_b_ = 0, value_w_ = 0, value_b_ = 0;
  buffer<S> params_, grads_;

  backend_optimizer<Backend, S> opt_;  ///< Adam or RMSProp state

  buffer<S> obs_buf_, rewards_, behaviour_, start_state_;
  buffer<std::uint8_t> dones_;
  buffer<std::uint8_t> truncated_;  ///< per step: ended by a time limit (read by the loss only)
  buffer<std::int32_t> actions_, prev_actions_;
  std::vector<buffer<S>> torso_out_;  ///< outputs of all but the last torso layer
  buffer<S> core_in_;                 ///< [N, core_in_width]
  std::vector<layer_buffers> layers_;
  buffer<S> logits_, values_, d_logits_, d_values_;
  buffer<S> d_core_out_, d_core_in_, dz_, dh_next_, dc_next_, d_torso_a_, d_torso_b_;
};

}  // namespace seedrl
