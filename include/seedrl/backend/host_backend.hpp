#pragma once
/// \file
/// `host_backend`: the CPU model of `seedrl::ComputeBackend` (seedrl/backend/compute_backend.hpp).
/// Buffers are std::vector, `for_each` is a loop, GEMMs are Eigen products, V-trace is the CPU
/// scan of seedrl/algo/vtrace.hpp, convolutions are im2col + GEMM (backend/detail/
/// conv2d_gemm.hpp, an implementation apart from the CPU layer in net/conv2d.hpp). It is what
/// the CPU tests run a backend-generic trainer on, and a reference for the GPU backend's
/// primitives. The convolutions' scratch is kept between calls, so one object must not be used
/// by two threads at once. With oneDNN (SEEDRL_HAS_DNNL) the float convolutions run on oneDNN
/// (seedrl/detail/dnnl_conv2d.hpp), primitives kept per shape; double keeps im2col + GEMM.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/conv2d_gemm.hpp"
#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/detail/dnnl_conv2d.hpp"
#include "seedrl/detail/eigen_core.hpp"

namespace seedrl {

/// Runs the ComputeBackend primitives on the calling thread; see the file comment. The ones
/// without Eigen (buffers, copies, for_each, V-trace, sums) are detail::host_primitives'.
class host_backend : public detail::host_primitives {
 public:
  /// Row-major C[m, n] = alpha op(A) op(B) + beta C; see compute_backend.hpp.
  template <class S>
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, S alpha, const S* a, int lda,
            const S* b, int ldb, S beta, S* c, int ldc) const {
    using matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using cmap = Eigen::Map<const matrix, 0, Eigen::OuterStride<>>;
    using map = Eigen::Map<matrix, 0, Eigen::OuterStride<>>;
    check_gemm_strides(trans_a, trans_b, m, n, k, lda, ldb, ldc);
    if (m <= 0 || n <= 0)
      return;
    map C(c, m, n, Eigen::OuterStride<>(ldc));
    if (beta == S(0))
      C.setZero();  // beta = 0 ignores C, NaN included, as BLAS does
    else if (beta != S(1))
      C *= beta;
    if (k <= 0 || alpha == S(0))
      return;
    const cmap A(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
    const cmap Bm(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
    if (trans_a && trans_b)
      C.noalias() += alpha * (A.transpose() * Bm.transpose());
    else if (trans_a)
      C.noalias() += alpha * (A.transpose() * Bm);
    else if (trans_b)
      C.noalias() += alpha * (A * Bm.transpose());
    else
      C.noalias() += alpha * (A * Bm);
  }

  /// Rejects what cuBLAS rejects (a row stride shorter than a stored row, negative sizes), so
  /// that the CPU tests catch a call the GPU backend would refuse.
  static void check_gemm_strides(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb,
                                 int ldc) {
    const auto fail = [&](const std::string& what) {
      throw std::invalid_argument("seedrl::host_backend::gemm: " + what +
                                  " (m = " + std::to_string(m) + ", n = " + std::to_string(n) +
                                  ", k = " + std::to_string(k) + ")");
    };
    if (m < 0 || n < 0 || k < 0)
      fail("negative size");
    const int a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
    if (lda < std::max(1, a_cols))
      fail("lda = " + std::to_string(lda) + " is shorter than a row of A");
    if (ldb < std::max(1, b_cols))
      fail("ldb = " + std::to_string(ldb) + " is shorter than a row of B");
    if (ldc < std::max(1, n))
      fail("ldc = " + std::to_string(ldc) + " is shorter than a row of C");
  }

  /// y = conv(x, w) + bias; see compute_backend.hpp.
  template <class S>
  void conv2d_forward(const conv2d_shape& shape, const S* x, const S* w, const S* bias,
                      S* y) const {
    detail::check_conv2d_shape(shape, "seedrl::host_backend::conv2d_forward");
#ifdef SEEDRL_DNNL_CONV
    if constexpr (std::is_same_v<S, float>) {
      if (shape.batch > 0 &&
          detail::dnnl_conv2d_forward(dnnl_conv_, dnnl_shape(shape), x, w, bias, y))
        return;
    }
#endif
    detail::conv2d_gemm_forward(*this, conv_scratch<S>(), shape, x, w, bias, y);
  }

  /// dw += d/dw, dbias += d/dbias, dx = d/dx (when not null); see compute_backend.hpp.
  template <class S>
  void conv2d_backward(const conv2d_shape& shape, const S* x, const S* w, const S* dy, S* dx, S* dw,
                       S* dbias) const {
    detail::check_conv2d_shape(shape, "seedrl::host_backend::conv2d_backward");
#ifdef SEEDRL_DNNL_CONV
    if constexpr (std::is_same_v<S, float>) {
      if (shape.batch > 0 &&
          detail::dnnl_conv2d_backward(dnnl_conv_, dnnl_shape(shape), x, w, dy, dx, dw, dbias))
        return;
    }
#endif
    detail::conv2d_gemm_backward(*this, conv_scratch<S>(), shape, x, w, dy, dx, dw, dbias);
  }

  void synchronize() const noexcept {}

 private:
#ifdef SEEDRL_DNNL_CONV
  static detail::dnnl_conv2d_shape dnnl_shape(const conv2d_shape& s) noexcept {
    const long in = static_cast<long>(s.in_channels) * s.input_height * s.input_width;
    const long out = static_cast<long>(s.out_channels) * s.output_height() * s.output_width();
    return {s.batch,    s.in_channels, s.input_height, s.input_width, s.out_channels, s.kernel_h,
            s.kernel_w, s.stride_h,    s.stride_w,     s.padding_h,   s.padding_w,    in,
            out};
  }
  mutable detail::dnnl_conv2d_cache dnnl_conv_;
#endif

  template <class S>
  detail::conv2d_gemm_scratch<std::vector<S>>& conv_scratch() const {
    if constexpr (std::is_same_v<S, float>) {
      return conv_float_;
    } else {
      static_assert(std::is_same_v<S, double>,
                    "seedrl: host_backend convolutions take float or double");
      return conv_double_;
    }
  }

  // Grown on demand; mutable so that the primitives stay const, as the other backends' are.
  mutable detail::conv2d_gemm_scratch<std::vector<float>> conv_float_;
  mutable detail::conv2d_gemm_scratch<std::vector<double>> conv_double_;
};

static_assert(ComputeBackend<host_backend>);

}  // namespace seedrl
