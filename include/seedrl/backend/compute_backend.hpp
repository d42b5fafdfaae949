#pragma once
/// \file
/// The ComputeBackend plug point: where a backend-generic trainer (`seedrl/train/`) and the
/// losses (`impala_loss::compute`, seedrl/algo/impala_loss.hpp) keep their arrays and run their
/// arithmetic. They are written once against these few primitives;
/// `host_backend` (seedrl/backend/host_backend.hpp) runs them on the CPU and
/// `cuda::cuda_backend` (seedrl/cuda/cuda_backend.cuh) on a GPU, so the CPU tests check the
/// trainer's whole data flow (offsets, transposes, resets, back-propagation through time) and
/// the GPU adds only kernel launches and cuBLAS calls.
///
/// A type `B` models `seedrl::ComputeBackend` when an object `b` of it provides:
///   - `template <class T> using buffer = ...;` an owning array in the backend's memory with
///     `T* data()`, `const T* data() const` and `std::size_t size() const`; movable;
///   - `b.template allocate<T>(n)`: a `buffer<T>` of n elements, every one zero;
///   - `b.upload(std::span<const T> host, T* dst)`, `b.download(const T* src, std::span<T> host)`:
///     copies between host memory and the backend's (download waits for earlier work);
///   - `b.copy(const T* src, T* dst, n)` and `b.fill(T* dst, n, T value)` within the backend;
///   - `b.for_each(n, f)`: calls `f(i)` for every i in [0, n), in any order and possibly in
///     parallel. `f` is a trivially copyable functor whose `operator()(std::size_t) const` is
///     `SEEDRL_HOST_DEVICE` and which holds only values and backend pointers;
///   - `b.gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`: row-major
///     C[m, n] = alpha op(A) op(B) + beta C, with op(A) [m, k], op(B) [k, n] and the row strides
///     of the matrices as stored (the convention of `cuda::gemm_row_major`); beta = 0 ignores
///     what C held (NaN included);
///   - `b.sum_of_squares(const S* x, n)`: the sum of x_i^2 accumulated in double, returned to
///     the host (a synchronisation point);
///   - `b.vtrace(coefficients, operands)`: the V-trace reverse scan over time-major [T][B]
///     arrays (`vtrace_operands`), each step by `detail::vtrace_step` and cut at truncations by
///     `detail::vtrace_cut` (seedrl/detail/vtrace_step.hpp): the CPU's blocked scan
///     (seedrl/algo/vtrace.hpp) or a kernel with one thread per column;
///   - `b.sums(x, arrays, n, out)`: out[a] = the sum of x[a*n .. a*n+n) for each of `arrays`
///     consecutive arrays of doubles, in an order that does not vary from call to call, into
///     host memory (a synchronisation point). Losses sum their per-row terms with it.
///   - `b.conv2d_forward(shape, x, w, bias, y)`: y = conv(x, w) + bias over a batch of NCHW
///     images (`conv2d_shape`: weights [O, C, KH, KW], cross-correlation as PyTorch's, zero
///     padding, no dilation, one group), overwriting y [batch, O*OH*OW];
///   - `b.conv2d_backward(shape, x, w, dy, dx, dw, dbias)`: adds the gradients w.r.t. w and the
///     bias into dw and dbias (gradients accumulate) and, when dx is not null,
///     overwrites dx with the gradient w.r.t. x. Both throw std::invalid_argument on a shape
///     that is not a valid convolution or whose tensors exceed INT_MAX elements;
///   - `b.synchronize()`: waits until all work given so far is done.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "seedrl/core/config.hpp"
#include "seedrl/detail/vtrace_step.hpp"

namespace seedrl {

/// Backend pointers of one V-trace problem for `vtrace`: [T*B] arrays time-major, bootstrap
/// [B], outputs that overlap no input.
template <class S>
struct vtrace_operands {
  int T = 0;
  int B = 0;
  const S* log_rhos = nullptr;
  const S* discounts = nullptr;
  const S* rewards = nullptr;
  const S* values = nullptr;
  const S* bootstrap = nullptr;
  /// [T*B] or null (none): nonzero where transition t ended its episode at a time limit; that
  /// step is cut (`seedrl::detail::vtrace_cut`)
  const std::uint8_t* truncated = nullptr;
  S* vs = nullptr;             ///< out
  S* pg_advantages = nullptr;  ///< out
};

/// Sizes of one 2-D convolution over a batch, for `conv2d_forward` / `conv2d_backward`.
struct conv2d_shape {
  int batch = 0;
  int in_channels = 0;
  int input_height = 0;
  int input_width = 0;
  int out_channels = 0;
  int kernel_h = 0;
  int kernel_w = 0;
  int stride_h = 1;
  int stride_w = 1;
  int padding_h = 0;
  int padding_w = 0;

  /// floor((H + 2 padding - kernel) / stride) + 1 in 64-bit arithmetic (no overflow for any
  /// int fields); 0 for a kernel that does not fit or a non-positive stride.
  static constexpr long long output_extent(int input, int padding, int kernel, int stride) {
    const long long span = static_cast<long long>(input) + 2LL * padding - kernel;
    return span < 0 || stride <= 0 ? 0 : span / stride + 1;
  }
  /// The output extents as int, saturated at INT_MAX (which check_conv2d_shape refuses).
  constexpr int output_height() const noexcept {
    const long long e = output_extent(input_height, padding_h, kernel_h, stride_h);
    return e > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max()
                                               : static_cast<int>(e);
  }
  constexpr int output_width() const noexcept {
    const long long e = output_extent(input_width, padding_w, kernel_w, stride_w);
    return e > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max()
                                               : static_cast<int>(e);
  }
  friend constexpr bool operator==(const conv2d_shape&, const conv2d_shape&) = default;
};

namespace detail {
/// The `for_each` body that runs a `for_each_2d` body: f(i / cols, i % cols).
template <class F>
struct index_2d_body {
  F f;
  std::size_t cols;
  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const { f(i / cols, i % cols); }
};

/// A for_each body that does nothing, for the concept check.
struct no_op_body {
  SEEDRL_HOST_DEVICE void operator()(std::size_t) const {}
};
}  // namespace detail

/// Where a backend-generic trainer computes; see the file comment.
template <class B>
concept ComputeBackend = requires(B& b, float* p, const float* cp, std::span<float> host,
                                  std::span<const float> chost, std::span<double> sums,
                                  const detail::vtrace_coefficients<float>& vtrace_k,
                                  const vtrace_operands<float>& vtrace_op, const double* terms,
                                  const conv2d_shape& conv) {
  {
    b.template allocate<float>(std::size_t{1})
    } -> std::same_as<typename B::template buffer<float>>;
  b.upload(chost, p);
  b.download(cp, host);
  b.copy(cp, p, std::size_t{1});
  b.fill(p, std::size_t{1}, 0.0f);
  b.for_each(std::size_t{1}, detail::no_op_body{});
  b.gemm(false, false, 1, 1, 1, 1.0f, cp, 1, cp, 1, 0.0f, p, 1);
  { b.sum_of_squares(cp, std::size_t{1}) } -> std::same_as<double>;
  b.vtrace(vtrace_k, vtrace_op);
  b.sums(terms, std::size_t{1}, std::size_t{1}, sums);
  b.conv2d_forward(conv, cp, cp, cp, p);
  b.conv2d_backward(conv, cp, cp, cp, p, p, p);
  b.synchronize();
};

/// f(r, j) for every r < rows, j < cols on backend b: its `for_each_2d` member if it has one,
/// otherwise `for_each` over rows x cols elements (see the file comment).
template <class B, class F>
void for_each_2d(const B& b, std::size_t rows, std::size_t cols, const F& f) {
  if constexpr (requires { b.for_each_2d(rows, cols, f); })
    b.for_each_2d(rows, cols, f);
  else
    b.for_each(rows * cols, detail::index_2d_body<F>{f, cols});
}

}  // namespace seedrl
