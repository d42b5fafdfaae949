#pragma once
/// \file
/// `detail::dense_stack<S, Act>`: fully connected layers X_k = Act(X_{k-1} W_k^T + b_k) over a
/// backend's primitives (`gemm`, `for_each`, `for_each_2d`, `allocate`; compute_backend.hpp). It is
/// the one implementation of the MLP torso and of the heads' layers: `backend_mlp_torso` runs
/// it on any ComputeBackend (host_backend for the CPU agents, CUDA included).
/// Parameters: per layer W [out, in] row-major, then b [out], first layer first. The stack
/// holds only its shape; the activations and the gradient scratch live in a `workspace` that
/// the caller keeps per use (the CPU torso keeps one for inference and one for training).
/// No Eigen here, so that nvcc compiles it.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/net/activation_math.hpp"

namespace seedrl::detail {

/// The layers of an MLP; see the file comment.
template <std::floating_point S, class Act>
class dense_stack {
 public:
  /// What one use of the stack keeps: the outputs of all but the last layer (the last one
  /// writes into the caller's y) and two gradient arrays.
  template <class Backend>
  struct workspace {
    using buffer = typename Backend::template buffer<S>;
    std::vector<buffer> hidden;
    buffer d_a, d_b;
  };

  dense_stack() = default;
  /// `who` names the owner in error messages; widths must be positive and not empty.
  dense_stack(std::size_t input_size, std::vector<std::size_t> widths, const std::string& who)
      : input_(input_size), widths_(std::move(widths)) {
    if (input_ == 0 || widths_.empty() ||
        std::any_of(widths_.begin(), widths_.end(), [](std::size_t w) { return w == 0; }))
      throw std::invalid_argument(who +
                                  ": input_size must be positive and widths a non-empty list of "
                                  "positive sizes");
    std::size_t at = 0, in = input_;
    for (const std::size_t w : widths_) {
      weight_at_.push_back(at);
      at += w * in;
      bias_at_.push_back(at);
      at += w;
      in = w;
      widest_ = std::max(widest_, w);
    }
    num_parameters_ = at;
    if (widest_ + input_ > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw std::invalid_argument(who + ": a layer width exceeds INT_MAX");
  }

  std::size_t input_size() const noexcept { return input_; }
  std::size_t output_size() const noexcept { return widths_.back(); }
  std::size_t num_layers() const noexcept { return widths_.size(); }
  std::size_t width(std::size_t k) const noexcept { return widths_[k]; }
  /// Layer k's W and b in the parameter array.
  std::size_t weight_offset(std::size_t k) const noexcept { return weight_at_[k]; }
  std::size_t bias_offset(std::size_t k) const noexcept { return bias_at_[k]; }
  std::size_t num_parameters() const noexcept { return num_parameters_; }
  /// The most rows the backends' int-indexed GEMMs take.
  std::size_t max_rows() const noexcept {
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) / (widest_ + input_ + 1);
  }

  /// Sizes ws for N rows ahead of `forward` and `backward` (which otherwise grow it as they
  /// go), for a caller that must not allocate inside them (a captured CUDA graph).
  template <class Backend>
  void reserve(const Backend& b, workspace<Backend>& ws, std::size_t N) const {
    ws.hidden.resize(widths_.size() - 1);
    for (std::size_t k = 0; k + 1 < widths_.size(); ++k)
      grow(b, ws.hidden[k], N * widths_[k]);
    grow(b, ws.d_a, N * widest_);
    grow(b, ws.d_b, N * widest_);
  }

  /// Every layer on the N rows of x [N, input_size()] (row stride ldx); the last layer writes
  /// y [N, output_size()] (row stride ldy), the others ws.hidden, which `backward` reads.
  template <class Backend>
  void forward(const Backend& b, workspace<Backend>& ws, const S* params, const S* x,
               std::size_t ldx, std::size_t N, S* y, std::size_t ldy) const {
    if (N > max_rows())
      throw std::length_error("seedrl: " + std::to_string(N) +
                              " rows exceed what a dense layer's int-indexed GEMM takes (" +
                              std::to_string(max_rows()) + ")");
    ws.hidden.resize(widths_.size() - 1);
    const S* in = x;
    std::size_t in_width = input_, ld_in = ldx;
    for (std::size_t k = 0; k < widths_.size(); ++k) {
      const std::size_t w = widths_[k];
      const bool last = k + 1 == widths_.size();
      if (!last)
        grow(b, ws.hidden[k], N * w);
      S* out = last ? y : ws.hidden[k].data();
      const std::size_t ld_out = last ? ldy : w;
      gemm(b, false, true, N, w, in_width, in, ld_in, params + weight_at_[k], in_width, S(0), out,
           ld_out);
      for_each_2d(b, N, w, bias_activation_kernel<S, Act>{out, ld_out, params + bias_at_[k]});
      in = out;
      in_width = w;
      ld_in = ld_out;
    }
  }

  /// After `forward` with the same ws, x and y: adds d loss / d parameters into grads, given
  /// dy = d loss / d y (row stride ld_dy; left unchanged). With dx, also the gradient w.r.t. the
  /// input: dx [N, input_size()] (row stride ld_dx) = dx_beta dx + that gradient (dx_beta 0
  /// overwrites, 1 adds, as two heads reading the same input do). Without an activation
  /// (identity_activation) y is not read.
  template <class Backend>
  void backward(const Backend& b, workspace<Backend>& ws, const S* params, S* grads, const S* x,
                std::size_t ldx, std::size_t N, const S* y, std::size_t ldy, const S* dy,
                std::size_t ld_dy, S* dx = nullptr, std::size_t ld_dx = 0, S dx_beta = S(0)) const {
    constexpr bool linear = std::is_same_v<Act, identity_activation>;
    if (!linear || widths_.size() > 1) {
      grow(b, ws.d_a, N * widest_);
      grow(b, ws.d_b, N * widest_);
    }
    const S* g = dy;
    std::size_t ld_g = ld_dy;
    S* scratch = ws.d_a.data();
    S* scratch_next = ws.d_b.data();
    for (std::size_t k = widths_.size(); k-- > 0;) {
      const std::size_t w = widths_[k];
      const bool last = k + 1 == widths_.size();
      // d: the gradient w.r.t. layer k's pre-activation, and its row stride.
      const S* d = g;
      std::size_t ld_d = ld_g;
      if constexpr (!linear) {
        const S* out = last ? y : static_cast<const S*>(ws.hidden[k].data());
        for_each_2d(b, N, w,
                    activation_backward_kernel<S, Act>{g, ld_g, out, last ? ldy : w, scratch, w});
        d = scratch;
        ld_d = w;
      }
      const S* input = k == 0 ? x : static_cast<const S*>(ws.hidden[k - 1].data());
      const std::size_t in_width = k == 0 ? input_ : widths_[k - 1];
      const std::size_t ld_input = k == 0 ? ldx : in_width;
      // dW += d^T input, db += the column sums of d.
      gemm(b, true, false, w, in_width, N, d, ld_d, input, ld_input, S(1), grads + weight_at_[k],
           in_width);
      b.for_each(w, column_sum_add_kernel<S>{d, N, ld_d, grads + bias_at_[k]});
      if (k > 0) {
        // The gradient w.r.t. layer k-1's output, into the scratch array d does not use.
        S* next = d == scratch ? scratch_next : scratch;
        gemm(b, false, false, N, in_width, w, d, ld_d, params + weight_at_[k], in_width, S(0), next,
             in_width);
        g = next;
        ld_g = in_width;
        if (next == scratch_next)
          std::swap(scratch, scratch_next);  // the next activation's backward runs in place
      } else if (dx != nullptr) {
        gemm(b, false, false, N, in_width, w, d, ld_d, params + weight_at_[k], in_width, dx_beta,
             dx, ld_dx);
      }
    }
  }

 private:
  template <class Backend, class Buffer>
  static void grow(const Backend& b, Buffer& buf, std::size_t n) {
    if (buf.size() < n)
      buf = b.template allocate<S>(n);
  }

  /// backend.gemm with alpha 1 and the sizes cast to int (checked against max_rows by callers).
  template <class Backend>
  static void gemm(const Backend& b, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k,
                   const S* a, std::size_t lda, const S* bm, std::size_t ldb, S beta, S* c,
                   std::size_t ldc) {
    b.gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), S(1), a,
           static_cast<int>(lda), bm, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  }

  std::size_t input_ = 0, widest_ = 0, num_parameters_ = 0;
  std::vector<std::size_t> widths_, weight_at_, bias_at_;
};

}  // namespace seedrl::detail
