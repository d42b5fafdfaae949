#pragma once
/// \file
/// `backend_mlp_torso<Backend, S, Act>`: the torso of `seedrl::mlp_lstm_agent` as a BackendTorso
/// part (seedrl/train/backend_torso.hpp): dense layers X_k = act(X_{k-1} W_k^T + b_k), the last
/// one writing straight into the core input. `Act` is the CPU parts' activation policy
/// (net/activation.hpp): `relu_activation` (the default, the agent's) or `tanh_activation`, so
/// it trains `mlp_torso<S, Act>` compositions; `backend_activation<Act>` gives its kernels.
/// Parameters in the CPU agent's order: per layer W [out, in] then b [out]. Built from an
/// `mlp_lstm_agent_config`, which also gives the core (`core_config`), so
/// `backend_agent_trainer<Backend, S, backend_mlp_torso<Backend, S>>` (alias
/// `backend_mlp_lstm_trainer`) is constructed from the agent's config alone.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/mlp_lstm_agent_config.hpp"
#include "seedrl/train/backend_core_config.hpp"
#include "seedrl/train/backend_torso.hpp"
#include "seedrl/train/detail/backend_ops.hpp"
#include "seedrl/train/detail/mlp_lstm_kernels.hpp"

namespace seedrl {

struct relu_activation;  // net/activation.hpp; only named here, so CUDA code needs no Eigen
struct tanh_activation;

namespace detail {

/// y[r, j] = tanh(y[r, j] + bias[j]) over rows x `width` (i = r * width + j).
template <class S>
struct bias_tanh_kernel {
  S* y;
  const S* bias;
  std::size_t width;
  std::size_t ld;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    using std::tanh;  // float stays float
    const std::size_t r = i / width, j = i % width;
    y[r * ld + j] = tanh(y[r * ld + j] + bias[j]);
  }
};

/// dx[r, j] = dy[r, j] (1 - y[r, j]^2): tanh's backward from its output.
template <class S>
struct tanh_backward_kernel {
  const S* dy;
  std::size_t ld_dy;
  const S* y;
  std::size_t ld_y;
  S* dx;
  std::size_t width;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t r = i / width, j = i % width;
    dx[i] = dy[r * ld_dy + j] * tanh_grad_from_output(y[r * ld_y + j]);
  }
};

}  // namespace detail

/// The backend kernels of an activation policy: `forward<S>` (bias add, then the activation, in
/// place; fields y, bias, width, ld) and `backward<S>` (fields dy, ld_dy, y, ld_y, dx, width).
/// Specialise it to train a torso with an activation of your own on a backend.
template <class Act>
struct backend_activation;

template <>
struct backend_activation<relu_activation> {
  template <class S>
  using forward = detail::bias_relu_kernel<S>;
  template <class S>
  using backward = detail::relu_backward_kernel<S>;
};

template <>
struct backend_activation<tanh_activation> {
  template <class S>
  using forward = detail::bias_tanh_kernel<S>;
  template <class S>
  using backward = detail::tanh_backward_kernel<S>;
};

/// The MLP torso of an `mlp_lstm_agent` on a backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S, class Act = relu_activation>
class backend_mlp_torso {
  template <class T>
  using buffer = typename Backend::template buffer<T>;
  using forward_kernel = typename backend_activation<Act>::template forward<S>;
  using backward_kernel = typename backend_activation<Act>::template backward<S>;

 public:
  /// Checks `config` as `mlp_lstm_agent` does (std::invalid_argument), its core and heads
  /// included, and lays out the torso's parameters.
  backend_mlp_torso(Backend& backend, const mlp_lstm_agent_config& config)
      : backend_(backend), config_(config) {
    const std::string who = "seedrl::backend_mlp_lstm_trainer";
    if (config_.observation_size <= 0 || config_.num_actions <= 0 || config_.hidden_sizes.empty() ||
        config_.lstm_size < 0 || config_.lstm_layers <= 0) {
      throw std::invalid_argument(who +
                                  ": observation_size, num_actions, lstm_layers must be "
                                  "positive, hidden_sizes non-empty and lstm_size >= 0");
    }
    obs_ = static_cast<std::size_t>(config_.observation_size);
    std::size_t at = 0, in = obs_;
    for (const std::ptrdiff_t h : config_.hidden_sizes) {
      if (h <= 0)
        throw std::invalid_argument(who + ": hidden sizes must be positive");
      const auto out = static_cast<std::size_t>(h);
      hidden_.push_back(out);
      w_.push_back(at);
      at += out * in;
      b_.push_back(at);
      at += out;
      in = out;
      max_hidden_ = std::max(max_hidden_, out);
    }
    num_parameters_ = at;
    if (max_hidden_ + obs_ > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw std::invalid_argument(who + ": a layer width (" + std::to_string(max_hidden_ + obs_) +
                                  ") exceeds INT_MAX");
    }
  }

  /// The core and heads of the agent `config` describes.
  static backend_core_config core_config(const mlp_lstm_agent_config& config) {
    backend_core_config c;
    c.num_actions = config.num_actions;
    c.lstm_size = config.lstm_size;
    c.lstm_layers = config.lstm_layers;
    c.reward_and_action_inputs = config.reward_and_action_inputs;
    c.max_abs_input_reward = config.max_abs_input_reward;
    return c;
  }

  /// The agent's shape.
  const mlp_lstm_agent_config& config() const noexcept { return config_; }

  std::size_t num_parameters() const noexcept { return num_parameters_; }
  std::size_t output_size() const noexcept { return hidden_.back(); }
  std::size_t observation_size() const noexcept { return obs_; }
  std::size_t state_size() const noexcept { return 0; }
  std::size_t max_rows() const noexcept {
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) / (max_hidden_ + obs_ + 1);
  }

  /// Sizes the hidden activations and gradients for `rows` rows; reallocates only to grow.
  void reserve(std::size_t rows) {
    out_.resize(hidden_.size() - 1);
    for (std::size_t k = 0; k + 1 < hidden_.size(); ++k)
      backend_.grow(out_[k], rows * hidden_[k]);
    backend_.grow(d_a_, rows * max_hidden_);
    backend_.grow(d_b_, rows * max_hidden_);
  }

  /// Every layer on all rows; the last one writes into out (row stride ld).
  void forward(const backend_torso_batch<S>& batch, const S* params, S* out, std::size_t ld) {
    const std::size_t N = batch.rows();
    const S* in = batch.observations;
    std::size_t in_width = obs_;
    for (std::size_t k = 0; k < hidden_.size(); ++k) {
      const bool last = k + 1 == hidden_.size();
      S* y = last ? out : out_[k].data();
      const std::size_t ld_y = last ? ld : hidden_[k];
      backend_.gemm(false, true, N, hidden_[k], in_width, S(1), in, in_width, params + w_[k],
                    in_width, S(0), y, ld_y);
      backend_->for_each(N * hidden_[k], forward_kernel{y, params + b_[k], hidden_[k], ld_y});
      in = y;
      in_width = hidden_[k];
    }
  }

  /// From the last layer down; each activation's backward runs into one of two scratch arrays.
  void backward(const backend_torso_batch<S>& batch, const S* params, S* grads, const S* out,
                const S* d_out, std::size_t ld) {
    const std::size_t N = batch.rows();
    const S* dy = d_out;
    std::size_t ld_dy = ld;
    S* d = d_a_.data();
    S* d_next = d_b_.data();
    for (std::size_t k = hidden_.size(); k-- > 0;) {
      const std::size_t width = hidden_[k];
      const bool last = k + 1 == hidden_.size();
      const S* y = last ? out : static_cast<const S*>(out_[k].data());
      backend_->for_each(N * width, backward_kernel{dy, ld_dy, y, last ? ld : width, d, width});
      const S* input = k == 0 ? batch.observations : static_cast<const S*>(out_[k - 1].data());
      const std::size_t in_width = k == 0 ? obs_ : hidden_[k - 1];
      backend_.gemm(true, false, width, in_width, N, S(1), d, width, input, in_width, S(1),
                    grads + w_[k], in_width);
      backend_->for_each(width, detail::column_sum_add_kernel<S>{d, N, width, grads + b_[k]});
      if (k > 0) {
        backend_.gemm(false, false, N, in_width, width, S(1), d, width, params + w_[k], in_width,
                      S(0), d_next, in_width);
        dy = d_next;
        ld_dy = in_width;
        std::swap(d, d_next);  // the next activation's backward runs in place on d_next
      }
    }
  }

 private:
  detail::backend_ref<Backend> backend_;
  mlp_lstm_agent_config config_;
  std::size_t obs_ = 0, max_hidden_ = 0, num_parameters_ = 0;
  std::vector<std::size_t> hidden_, w_, b_;  ///< widths; offsets of W and b per layer
  std::vector<buffer<S>> out_;               ///< outputs of all but the last layer
  buffer<S> d_a_, d_b_;                      ///< gradients before / after a layer's activation
};

}  // namespace seedrl
