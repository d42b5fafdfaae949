#pragma once
/// \file
/// A stack of LSTM layers over row-major batches, with per-environment state resets, on the
/// CPU: `detail::lstm_stack` (seedrl/net/detail/lstm_stack.hpp), the one LSTM the GPU trainer
/// and inference step run too, on the host's primitives (detail::host_sgemm_primitives: oneDNN's
/// sgemm for the gates of 16 rows or more, Eigen's vectorised logistic and tanh for the cells).
///
/// Gate order is PyTorch's: input, forget, cell candidate, output. Layer l keeps one weight
/// matrix W_l = [W_ih | W_hh] of shape [4H, I_l + H] (row-major) and one bias b_l of [4H]
/// (PyTorch's b_ih + b_hh): a step's input and recurrent products are a single GEMM over [x, h].
/// The state of one environment is one row of `state_size()` elements: for each layer, h then
/// c. Where `done` is set for a step, that environment's state (every layer) is zeroed before
/// the step, as SEED RL's agents do at episode starts; no gradient flows across such a reset.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/backend/detail/host_sgemm_primitives.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/detail/lstm_stack.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Sizes of an LSTM stack.
struct lstm_config {
  std::ptrdiff_t input_size = 0;
  std::ptrdiff_t hidden_size = 0;
  std::ptrdiff_t num_layers = 1;
  /// Added to the forget-gate biases at initialisation (1 is common: it keeps memories early
  /// in training); the biases stay trainable.
  double forget_bias = 0.0;
};

/// Multi-layer LSTM; see the file comment. Parameters live in the owner's flat buffer.
template <std::floating_point S>
class lstm {
  using primitives = detail::host_sgemm_primitives;

 public:
  lstm() = default;
  explicit lstm(const lstm_config& config) : config_(config) {
    if (config.input_size <= 0 || config.hidden_size <= 0 || config.num_layers <= 0) {
      throw std::invalid_argument(
          "seedrl::lstm: input_size, hidden_size and num_layers must be positive");
    }
    stack_ = detail::lstm_stack<S>(static_cast<std::size_t>(config.input_size),
                                   static_cast<std::size_t>(config.hidden_size),
                                   static_cast<std::size_t>(config.num_layers), "seedrl::lstm");
  }

  const lstm_config& config() const noexcept { return config_; }
  std::ptrdiff_t hidden_size() const noexcept { return config_.hidden_size; }
  std::ptrdiff_t num_layers() const noexcept { return config_.num_layers; }

  /// Elements of one environment's state: (h, c) per layer.
  std::ptrdiff_t state_size() const noexcept {
    return 2 * config_.num_layers * config_.hidden_size;
  }

  /// Input width of layer l: the stack's input for layer 0, H above it.
  std::ptrdiff_t layer_input_size(std::ptrdiff_t l) const noexcept {
    return l == 0 ? config_.input_size : config_.hidden_size;
  }

  std::size_t num_parameters() const noexcept { return stack_.num_parameters(); }

  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }

  /// Weights and biases uniform in +-1/sqrt(H) (PyTorch's default), forget biases shifted.
  void init(random_generator& rng) { stack_.init(params_, rng, config_.forget_bias); }

  /// W_l = [W_ih | W_hh], [4H, I_l + H]; its gradient; b_l [4H] and its gradient.
  matrix_view<S> weight(std::ptrdiff_t l) {
    return view(params_ + w_at(l), 4 * hidden_size(), cols(l));
  }
  const_matrix_view<S> weight(std::ptrdiff_t l) const {
    return cview<S>(params_ + w_at(l), 4 * hidden_size(), cols(l));
  }
  matrix_view<S> weight_grad(std::ptrdiff_t l) {
    return view(grads_ + w_at(l), 4 * hidden_size(), cols(l));
  }
  std::span<S> bias(std::ptrdiff_t l) { return {params_ + b_at(l), gates()}; }
  std::span<S> bias_grad(std::ptrdiff_t l) { return {grads_ + b_at(l), gates()}; }

  /// One inference step for B environments: `x` [B, input_size], `dones` [B] (empty: none),
  /// `state` [B, state_size()] read and overwritten, `y` [B, H] gets the top layer's h.
  /// Allocates only when B exceeds every earlier batch.
  void step(const_matrix_view<S> x, std::span<const std::uint8_t> dones, matrix_view<S> state,
            matrix_view<S> y) {
    const std::ptrdiff_t B = x.rows(), H = hidden_size();
    check_rows("step: x", x.cols(), config_.input_size);
    check_rows("step: state rows", state.rows(), B);
    check_rows("step: state width", state.cols(), state_size());
    check_rows("step: y rows", y.rows(), B);
    check_rows("step: y width", y.cols(), H);
    if (!dones.empty())
      check_rows("step: dones", static_cast<std::ptrdiff_t>(dones.size()), B);
    const auto ld = static_cast<std::size_t>(state.outerStride());
    stack_.step(step_primitives_, step_ws_, params_, x.data(),
                static_cast<std::size_t>(x.outerStride()), static_cast<std::size_t>(B),
                dones.empty() ? nullptr : dones.data(), state.data(), ld, state.data(), ld);
    y = state.middleCols(2 * H * (num_layers() - 1), H);
  }

  /// Forward over T steps of B environments (rows t*B + b), from `start_state` [B,
  /// state_size()], resetting where `dones` [T*B] is set. Writes the top layer's h to `y`
  /// [T*B, H] and, if given, the final state to `end_state` [B, state_size()]. Keeps what
  /// `backward_unroll` needs (a copy of x and dones among it).
  void forward_unroll(std::ptrdiff_t T, std::ptrdiff_t B, const_matrix_view<S> x,
                      std::span<const std::uint8_t> dones, const_matrix_view<S> start_state,
                      matrix_view<S> y, matrix_view<S>* end_state = nullptr) {
    const std::ptrdiff_t H = hidden_size(), N = T * B, I = config_.input_size;
    check_rows("forward_unroll: x rows", x.rows(), N);
    check_rows("forward_unroll: x width", x.cols(), I);
    check_rows("forward_unroll: dones", static_cast<std::ptrdiff_t>(dones.size()), N);
    check_rows("forward_unroll: start_state rows", start_state.rows(), B);
    check_rows("forward_unroll: start_state width", start_state.cols(), state_size());
    check_rows("forward_unroll: y rows", y.rows(), N);
    if (end_state != nullptr) {
      check_rows("forward_unroll: end_state rows", end_state->rows(), B);
      check_rows("forward_unroll: end_state width", end_state->cols(), state_size());
    }
    x_.resize(static_cast<std::size_t>(N * I));
    view(x_.data(), N, I) = x;
    dones_.assign(dones.begin(), dones.end());
    T_ = T;
    B_ = B;
    const S* top = stack_.forward(
        train_primitives_, train_ws_, params_, x_.data(), static_cast<std::size_t>(I),
        static_cast<std::size_t>(T), static_cast<std::size_t>(B), dones_.data(), start_state.data(),
        static_cast<std::size_t>(start_state.outerStride()),
        end_state != nullptr ? end_state->data() : nullptr,
        end_state != nullptr ? static_cast<std::size_t>(end_state->outerStride()) : 0);
    y = cview(top, N, H);
  }

  /// Back-propagates through time after `forward_unroll`. `dy` [T*B, H] is the loss's gradient
  /// w.r.t. `y`; `d_end_state` [B, state_size()] w.r.t. the final state (nullptr: zero).
  /// Accumulates parameter gradients; writes dx [T*B, input_size] and the gradient w.r.t. the
  /// start state [B, state_size()] when those are given.
  void backward_unroll(const_matrix_view<S> dy, const const_matrix_view<S>* d_end_state = nullptr,
                       matrix_view<S>* dx = nullptr, matrix_view<S>* d_start_state = nullptr) {
    const std::ptrdiff_t T = T_, B = B_, N = T * B;
    if (T == 0)
      throw std::logic_error("seedrl::lstm::backward_unroll: call forward_unroll first");
    check_rows("backward_unroll: dy rows", dy.rows(), N);
    check_rows("backward_unroll: dy width", dy.cols(), hidden_size());
    if (d_end_state != nullptr) {
      check_rows("backward_unroll: d_end_state rows", d_end_state->rows(), B);
      check_rows("backward_unroll: d_end_state width", d_end_state->cols(), state_size());
    }
    if (dx != nullptr) {
      check_rows("backward_unroll: dx rows", dx->rows(), N);
      check_rows("backward_unroll: dx width", dx->cols(), config_.input_size);
    }
    if (d_start_state != nullptr) {
      check_rows("backward_unroll: d_start_state rows", d_start_state->rows(), B);
      check_rows("backward_unroll: d_start_state width", d_start_state->cols(), state_size());
    }
    const auto stride = [](const auto* m) {
      return m != nullptr ? static_cast<std::size_t>(m->outerStride()) : std::size_t{0};
    };
    stack_.backward(
        train_primitives_, train_ws_, params_, grads_, x_.data(),
        static_cast<std::size_t>(config_.input_size), static_cast<std::size_t>(T),
        static_cast<std::size_t>(B), dones_.data(), dy.data(),
        static_cast<std::size_t>(dy.outerStride()), dx != nullptr ? dx->data() : nullptr,
        stride(dx), d_end_state != nullptr ? d_end_state->data() : nullptr, stride(d_end_state),
        d_start_state != nullptr ? d_start_state->data() : nullptr, stride(d_start_state));
  }

 private:
  std::ptrdiff_t cols(std::ptrdiff_t l) const noexcept {
    return layer_input_size(l) + hidden_size();
  }
  std::size_t gates() const noexcept { return static_cast<std::size_t>(4 * hidden_size()); }
  std::size_t w_at(std::ptrdiff_t l) const noexcept {
    return stack_.weight_offset(static_cast<std::size_t>(l));
  }
  std::size_t b_at(std::ptrdiff_t l) const noexcept {
    return stack_.bias_offset(static_cast<std::size_t>(l));
  }

  static void check_rows(const char* what, std::ptrdiff_t got, std::ptrdiff_t want) {
    if (got != want) {
      throw std::invalid_argument(std::string("seedrl::lstm::") + what + " is " +
                                  std::to_string(got) + ", expected " + std::to_string(want));
    }
  }

  lstm_config config_;
  detail::lstm_stack<S> stack_;
  primitives step_primitives_, train_primitives_;  ///< one per use: they keep scratch
  S* params_ = nullptr;
  S* grads_ = nullptr;
  typename detail::lstm_stack<S>::template workspace<primitives> step_ws_, train_ws_;
  // what backward_unroll reads of the last forward_unroll
  std::ptrdiff_t T_ = 0, B_ = 0;
  std::vector<S> x_;
  std::vector<std::uint8_t> dones_;
};

}  // namespace seedrl
