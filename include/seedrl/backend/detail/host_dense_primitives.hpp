#pragma once
/// \file
/// `detail::host_dense_primitives`: the host primitives a dense part needs (detail::
/// host_primitives plus a row-major GEMM on Eigen), without the convolutions that
/// `host_backend` (seedrl/backend/host_backend.hpp) adds, so that a part with no convolution
/// (`mlp_torso`) runs on the host without including oneDNN.

#include <algorithm>
#include <stdexcept>
#include <string>

#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/detail/eigen_core.hpp"

namespace seedrl::detail {

/// host_primitives and GEMM; see the file comment.
class host_dense_primitives : public host_primitives {
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
    const cmap A(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
    const cmap Bm(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
    if (beta == S(0) && alpha == S(1) && k > 0) {
      // A layer's forward pass: one product, no pass to clear C first.
      if (trans_a && trans_b)
        C.noalias() = A.transpose() * Bm.transpose();
      else if (trans_a)
        C.noalias() = A.transpose() * Bm;
      else if (trans_b)
        C.noalias() = A * Bm.transpose();
      else
        C.noalias() = A * Bm;
      return;
    }
    if (beta == S(0))
      C.setZero();  // beta = 0 ignores C, NaN included, as BLAS does
    else if (beta != S(1))
      C *= beta;
    if (k <= 0 || alpha == S(0))
      return;
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
};

}  // namespace seedrl::detail
