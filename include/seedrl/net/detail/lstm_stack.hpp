#pragma once
/// \file
/// `detail::lstm_stack<S>`: an n-layer LSTM over a backend's primitives (`gemm`, `for_each`,
/// `allocate`; compute_backend.hpp), with per-environment state resets. It is the one
/// implementation of the LSTM: the CPU layer `lstm` (seedrl/net/lstm.hpp) runs it on the host,
/// the backend trainer and inference step (seedrl/train/) on any ComputeBackend, CUDA included.
///
/// Gate order is PyTorch's: input, forget, cell candidate, output. Layer l keeps W_l =
/// [W_ih | W_hh] of [4H, I_l + H] (row-major) and b_l [4H] (PyTorch's b_ih + b_hh), first layer
/// first. A state row holds (h, c) per layer. Where an environment's step is marked done, its
/// state (every layer) is zeroed before the step, as SEED RL's agents do at episode starts; no
/// gradient crosses such a reset.
///
/// - `step`: one inference step; per layer [x | h] is gathered (with resets) for one GEMM, then
///   the cell update. A `LayerStep` functor may replace that per-layer work (the CUDA engine's
///   fused kernels).
/// - `forward` over an unroll: per layer X W_ih^T for all rows in one GEMM, then per step
///   h_prev W_hh^T and the cell update; `backward` mirrors it: per step only the cell's
///   backward and dz_t W_hh, then dX = dZ W_ih and the weight gradients dZ^T [X | H_prev] in one
///   GEMM each per layer.
/// The stack holds only its shape; activations and scratch live in a `workspace` the caller
/// keeps per use (one for inference, one for training). No Eigen here, so that nvcc compiles it.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/backend_ref.hpp"
#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/backend/detail/lstm_kernels.hpp"
#include "seedrl/core/random.hpp"

namespace seedrl {

namespace detail {

/// One layer's inference step for B rows, in the backend's memory: x [B, I] (row stride ldx)
/// and the incoming state (h_prev, c_prev: row stride ld_prev, zeroed first where resets[b];
/// resets may be null) through W = [W_ih | W_hh] [4H, I + H] and the bias into h and c (row
/// stride ld_out; they may be the incoming state's own columns). xh [B, I + H], c_reset [B, H]
/// and gates [B, 4H] are scratch.
template <class S>
struct lstm_step_args {
  std::size_t B = 0, I = 0, H = 0;
  const S* weight = nullptr;
  const S* bias = nullptr;
  const S* x = nullptr;
  std::size_t ldx = 0;
  const S* h_prev = nullptr;
  const S* c_prev = nullptr;
  std::size_t ld_prev = 0;
  const std::uint8_t* resets = nullptr;
  S* h = nullptr;
  S* c = nullptr;
  std::size_t ld_out = 0;
  S* xh = nullptr;
  S* c_reset = nullptr;
  S* gates = nullptr;
};

}  // namespace detail

/// The LSTM layer step on any backend: [x | h_prev] gathered with the resets, one GEMM with W,
/// then the cell update (detail::lstm_unit) in a for_each.
struct backend_lstm_step {
  template <class Backend, class S>
  void operator()(Backend& backend, const detail::lstm_step_args<S>& a) const {
    const std::size_t K = a.I + a.H;
    backend.for_each(a.B * K,
                     detail::lstm_step_input_kernel<S>{a.x, a.ldx, a.h_prev, a.c_prev, a.ld_prev,
                                                       a.resets, a.xh, a.c_reset, a.I, a.H});
    detail::backend_ref<Backend>(backend).gemm(false, true, a.B, 4 * a.H, K, S(1),
                                               static_cast<const S*>(a.xh), K, a.weight, K, S(0),
                                               a.gates, 4 * a.H);
    backend.for_each(a.B * a.H, detail::lstm_step_pointwise_kernel<S>{a.gates, a.bias, a.c_reset,
                                                                      a.h, a.c, a.ld_out, a.H});
  }
};

namespace detail {

/// The layers of an LSTM; see the file comment.
template <std::floating_point S>
class lstm_stack {
 public:
  /// What one use of the stack keeps: a step's scratch, an unroll's activations and the
  /// backward's scratch.
  template <class Backend>
  struct workspace {
    using buffer = typename Backend::template buffer<S>;
    struct layer {
      buffer gates;   ///< [N, 4H] pre-activations, then the activated gates
      buffer h_prev;  ///< [N, H] incoming h of each step, after resets
      buffer c_prev;  ///< [N, H] incoming c of each step, after resets
      buffer tanh_c;  ///< [N, H]
      buffer h;       ///< [N, H] outgoing h: the next layer's input
    };
    buffer xh, c_reset, gates;  ///< a step's
    std::vector<layer> layers;  ///< an unroll's
    buffer dz, dh_next, dc_next, d_below;
  };

  lstm_stack() = default;
  /// `who` names the owner in error messages; every size must be positive.
  lstm_stack(std::size_t input_size, std::size_t hidden_size, std::size_t num_layers,
             const std::string& who)
      : input_(input_size), H_(hidden_size), L_(num_layers) {
    if (input_ == 0 || H_ == 0 || L_ == 0)
      throw std::invalid_argument(who +
                                  ": input_size, hidden_size and num_layers must be positive");
    if (std::max(input_, H_) + 5 * H_ > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw std::invalid_argument(who + ": a layer width exceeds INT_MAX");
    std::size_t at = 0;
    for (std::size_t l = 0; l < L_; ++l) {
      weight_at_.push_back(at);
      at += 4 * H_ * (layer_input(l) + H_);
      bias_at_.push_back(at);
      at += 4 * H_;
    }
    num_parameters_ = at;
  }

  std::size_t input_size() const noexcept { return input_; }
  std::size_t hidden_size() const noexcept { return H_; }
  std::size_t num_layers() const noexcept { return L_; }
  /// Inputs of layer l: the stack's input for the first, H above it.
  std::size_t layer_input(std::size_t l) const noexcept { return l == 0 ? input_ : H_; }
  /// Elements of one environment's state: (h, c) per layer.
  std::size_t state_size() const noexcept { return 2 * L_ * H_; }
  /// Layer l's W and b in the parameter array.
  std::size_t weight_offset(std::size_t l) const noexcept { return weight_at_[l]; }
  std::size_t bias_offset(std::size_t l) const noexcept { return bias_at_[l]; }
  std::size_t num_parameters() const noexcept { return num_parameters_; }
  /// The most rows the backends' int-indexed GEMMs take.
  std::size_t max_rows() const noexcept {
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) /
           (std::max(input_, H_) + 5 * H_);
  }

  /// PyTorch's draws into host memory: every weight and bias uniform in +-1/sqrt(H), then
  /// `forget_bias` added to the forget-gate biases.
  void init(S* params, random_generator& rng, double forget_bias) const {
    const double bound = 1.0 / std::sqrt(static_cast<double>(H_));
    for (std::size_t i = 0; i < num_parameters_; ++i)
      params[i] = static_cast<S>(rng.uniform(-bound, bound));
    for (std::size_t l = 0; l < L_; ++l)
      for (std::size_t j = H_; j < 2 * H_; ++j)
        params[bias_at_[l] + j] += static_cast<S>(forget_bias);
  }

  /// Sizes ws for steps of up to B rows ahead of `step`, which otherwise grows it.
  template <class Backend>
  void reserve_step(const Backend& b, workspace<Backend>& ws, std::size_t B) const {
    check_rows(B);
    grow(b, ws.xh, B * (std::max(input_, H_) + H_));
    grow(b, ws.c_reset, B * H_);
    grow(b, ws.gates, B * 4 * H_);
  }

  /// One inference step for B rows: x [B, input_size()] (row stride ldx); the state rows
  /// `state_in` (row stride ld_in: (h, c) per layer from column 0), zeroed first where
  /// resets[b] (null: none); each layer's new (h, c) into `state_out` (row stride ld_out), which
  /// may be state_in. The top layer's h ends at state_out + 2H(L-1), row stride ld_out.
  template <class Backend, class LayerStep = backend_lstm_step>
  void step(Backend& b, workspace<Backend>& ws, const S* params, const S* x, std::size_t ldx,
            std::size_t B, const std::uint8_t* resets, const S* state_in, std::size_t ld_in,
            S* state_out, std::size_t ld_out, LayerStep&& layer_step = {}) const {
    if (B == 0)
      return;
    reserve_step(b, ws, B);
    for (std::size_t l = 0; l < L_; ++l) {
      lstm_step_args<S> a;
      a.B = B;
      a.I = layer_input(l);
      a.H = H_;
      a.weight = params + weight_at_[l];
      a.bias = params + bias_at_[l];
      a.x = l == 0 ? x : state_out + 2 * H_ * (l - 1);  // the layer below, already updated
      a.ldx = l == 0 ? ldx : ld_out;
      a.h_prev = state_in + 2 * H_ * l;
      a.c_prev = a.h_prev + H_;
      a.ld_prev = ld_in;
      a.resets = resets;
      a.h = state_out + 2 * H_ * l;
      a.c = a.h + H_;
      a.ld_out = ld_out;
      a.xh = ws.xh.data();
      a.c_reset = ws.c_reset.data();
      a.gates = ws.gates.data();
      layer_step(b, a);
    }
  }

  /// Sizes ws for unrolls of up to N = steps * B rows ahead of `forward` and `backward`.
  template <class Backend>
  void reserve(const Backend& b, workspace<Backend>& ws, std::size_t steps, std::size_t B) const {
    const std::size_t N = steps * B;
    check_rows(N);
    ws.layers.resize(L_);
    for (auto& c : ws.layers) {
      grow(b, c.gates, N * 4 * H_);
      grow(b, c.h_prev, N * H_);
      grow(b, c.c_prev, N * H_);
      grow(b, c.tanh_c, N * H_);
      grow(b, c.h, N * H_);
    }
    grow(b, ws.dz, N * 4 * H_);
    grow(b, ws.dh_next, B * H_);
    grow(b, ws.dc_next, B * H_);
    if (L_ > 1)
      grow(b, ws.d_below, N * H_);
  }

  /// Forward over `steps` steps of B environments: x [N, input_size()] (row stride ldx),
  /// resetting where dones [N] is set, from `start_state` rows (row stride ld_start, (h, c)
  /// per layer from column 0; null: zeros). With `end_state`, writes the final (h, c) of every
  /// layer there (row stride ld_end). Returns the top layer's h [N, H] (in ws), which is what
  /// `backward` reads with the same ws, x and dones.
  template <class Backend>
  const S* forward(Backend& b, workspace<Backend>& ws, const S* params, const S* x, std::size_t ldx,
                   std::size_t steps, std::size_t B, const std::uint8_t* dones,
                   const S* start_state, std::size_t ld_start, S* end_state = nullptr,
                   std::size_t ld_end = 0) const {
    const std::size_t N = steps * B;
    reserve(b, ws, steps, B);
    const backend_ref<Backend> be(b);
    const S* in = x;
    std::size_t ld_in = ldx;
    for (std::size_t l = 0; l < L_; ++l) {
      auto& c = ws.layers[l];
      const std::size_t I = layer_input(l), ldw = I + H_;
      const S* w = params + weight_at_[l];
      be.gemm(false, true, N, 4 * H_, I, S(1), in, ld_in, w, ldw, S(0), c.gates.data(), 4 * H_);
      b.for_each(B * H_, lstm_state_split_kernel<S>{start_state, ld_start, 2 * H_ * l, dones,
                                                    c.h_prev.data(), c.c_prev.data(), H_});
      for (std::size_t t = 0; t < steps; ++t) {
        be.gemm(false, true, B, 4 * H_, H_, S(1),
                static_cast<const S*>(c.h_prev.data()) + t * B * H_, H_, w + I, ldw, S(1),
                c.gates.data() + t * B * 4 * H_, 4 * H_);
        b.for_each(B * H_, lstm_forward_step_kernel<S>{c.gates.data(), params + bias_at_[l], dones,
                                                       c.c_prev.data(), c.h_prev.data(),
                                                       c.tanh_c.data(), c.h.data(), H_, B, t, steps,
                                                       end_state, ld_end, 2 * H_ * l});
      }
      in = c.h.data();
      ld_in = H_;
    }
    return in;
  }

  /// After `forward` with the same ws, x (row stride ldx) and dones: adds d loss / d parameters
  /// into grads, given dy [N, H] (row stride ld_dy) w.r.t. the top layer's h and, when not
  /// null, d_end_state w.r.t. the final state (row stride ld_d_end). Overwrites dx [N,
  /// input_size()] (row stride ld_dx) and d_start_state (row stride ld_d_start) with the
  /// gradients w.r.t. the input and the start state, where they are not null.
  template <class Backend>
  void backward(Backend& b, workspace<Backend>& ws, const S* params, S* grads, const S* x,
                std::size_t ldx, std::size_t steps, std::size_t B, const std::uint8_t* dones,
                const S* dy, std::size_t ld_dy, S* dx, std::size_t ld_dx,
                const S* d_end_state = nullptr, std::size_t ld_d_end = 0,
                S* d_start_state = nullptr, std::size_t ld_d_start = 0) const {
    const std::size_t N = steps * B;
    if (ws.layers.size() != L_ || ws.layers.back().h.size() < N * H_)
      throw std::logic_error("seedrl::detail::lstm_stack::backward: call forward first");
    const backend_ref<Backend> be(b);
    for (std::size_t l = L_; l-- > 0;) {
      auto& c = ws.layers[l];
      const std::size_t I = layer_input(l), ldw = I + H_;
      const S* w = params + weight_at_[l];
      const S* g = l + 1 == L_ ? dy : static_cast<const S*>(ws.d_below.data());
      const std::size_t ld_g = l + 1 == L_ ? ld_dy : H_;
      const bool end_carry = d_end_state != nullptr;
      if (end_carry)
        b.for_each(B * H_, lstm_state_split_kernel<S>{d_end_state, ld_d_end, 2 * H_ * l, nullptr,
                                                      ws.dh_next.data(), ws.dc_next.data(), H_});
      for (std::size_t t = steps; t-- > 0;) {
        b.for_each(B * H_, lstm_backward_step_kernel<S>{g, ld_g, c.gates.data(), c.tanh_c.data(),
                                                        c.c_prev.data(), dones, ws.dh_next.data(),
                                                        ws.dc_next.data(), ws.dz.data(), H_, B, t,
                                                        steps, end_carry});
        if (t > 0 || d_start_state != nullptr)  // dh into step t-1 (or the start): dz_t W_hh
          be.gemm(false, false, B, H_, 4 * H_, S(1),
                  static_cast<const S*>(ws.dz.data()) + t * B * 4 * H_, 4 * H_, w + I, ldw, S(0),
                  ws.dh_next.data(), H_);
      }
      if (d_start_state != nullptr)  // a reset at step 0 cuts the start state off
        b.for_each(B * H_, lstm_state_merge_kernel<S>{ws.dh_next.data(), ws.dc_next.data(), dones,
                                                      d_start_state, ld_d_start, 2 * H_ * l, H_});
      const S* in = l == 0 ? x : static_cast<const S*>(ws.layers[l - 1].h.data());
      const std::size_t ld_in = l == 0 ? ldx : H_;
      S* gw = grads + weight_at_[l];
      be.gemm(true, false, 4 * H_, I, N, S(1), static_cast<const S*>(ws.dz.data()), 4 * H_, in,
              ld_in, S(1), gw, ldw);
      be.gemm(true, false, 4 * H_, H_, N, S(1), static_cast<const S*>(ws.dz.data()), 4 * H_,
              static_cast<const S*>(c.h_prev.data()), H_, S(1), gw + I, ldw);
      b.for_each(4 * H_, column_sum_add_kernel<S>{ws.dz.data(), N, 4 * H_, grads + bias_at_[l]});
      // The gradient w.r.t. this layer's input: the layer below's h (read above as g no more),
      // or the stack's input.
      if (l > 0)
        be.gemm(false, false, N, I, 4 * H_, S(1), static_cast<const S*>(ws.dz.data()), 4 * H_, w,
                ldw, S(0), ws.d_below.data(), H_);
      else if (dx != nullptr)
        be.gemm(false, false, N, I, 4 * H_, S(1), static_cast<const S*>(ws.dz.data()), 4 * H_, w,
                ldw, S(0), dx, ld_dx);
    }
  }

 private:
  void check_rows(std::size_t n) const {
    if (n > max_rows())
      throw std::length_error("seedrl: " + std::to_string(n) +
                              " rows exceed what an LSTM layer's int-indexed GEMM takes (" +
                              std::to_string(max_rows()) + ")");
  }

  template <class Backend, class Buffer>
  static void grow(const Backend& b, Buffer& buf, std::size_t n) {
    if (buf.size() < n)
      buf = b.template allocate<S>(n);
  }

  std::size_t input_ = 0, H_ = 0, L_ = 0, num_parameters_ = 0;
  std::vector<std::size_t> weight_at_, bias_at_;
};

}  // namespace detail

}  // namespace seedrl
