#pragma once
/// \file
/// `detail::host_tiled_primitives`: host_dense_primitives whose forward products (C = A B^T,
/// what a dense layer's forward pass asks) are cut into stack-sized tiles
/// (detail::gemm_stack_tiled), so that Eigen never mallocs its packing buffers there: the CPU
/// pixel torsos' dense layer (3136 x 512 for the Nature CNN) runs `dense_stack` on it and so
/// keeps inference off the heap. Every other product is host_dense_primitives'.

#include "seedrl/backend/detail/host_dense_primitives.hpp"
#include "seedrl/detail/eigen_core.hpp"
#include "seedrl/detail/gemm_tiled.hpp"

namespace seedrl::detail {

/// See the file comment.
class host_tiled_primitives : public host_dense_primitives {
 public:
  /// Row-major C[m, n] = alpha op(A) op(B) + beta C, as host_dense_primitives::gemm.
  template <class S>
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, S alpha, const S* a, int lda,
            const S* b, int ldb, S beta, S* c, int ldc) const {
    if (!trans_a && trans_b && alpha == S(1) && beta == S(0) && m > 0 && n > 0 && k > 0) {
      check_gemm_strides(trans_a, trans_b, m, n, k, lda, ldb, ldc);
      using matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Eigen::Map<matrix, 0, Eigen::OuterStride<>> C(c, m, n, Eigen::OuterStride<>(ldc));
      const Eigen::Map<const matrix, 0, Eigen::OuterStride<>> A(a, m, k, Eigen::OuterStride<>(lda));
      const Eigen::Map<const matrix, 0, Eigen::OuterStride<>> B(b, n, k, Eigen::OuterStride<>(ldb));
      gemm_stack_tiled(C, A, B.transpose(), false);
      return;
    }
    host_dense_primitives::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
};

}  // namespace seedrl::detail
