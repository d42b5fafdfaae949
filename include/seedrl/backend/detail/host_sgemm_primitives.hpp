#pragma once
/// \file
/// `detail::host_sgemm_primitives`: host_tiled_primitives whose float products of 16 rows or
/// more go to oneDNN's sgemm when seedrl has oneDNN (SEEDRL_HAS_DNNL): oneDNN packs once for the
/// whole product where the stack-sized tiles repack per tile, 1.3-1.9x faster from 32 rows up
/// (docs/performance.md), no faster at 1. A forward product C = A B^T with few rows and a wide
/// B (an LSTM step's gates at H >= 256) is computed as C^T = B A^T and transposed: oneDNN's
/// kernels for a non-transposed left operand ran it 1.1-2x faster on this machine's Intel
/// cores, the transpose included. The CPU LSTM (seedrl/net/lstm.hpp) runs on it; the
/// transposed scratch is kept, so one object must not be used by two threads at once. Every
/// other product is its base's.

#include <cstddef>
#include <type_traits>
#include <vector>

#include "seedrl/backend/detail/host_tiled_primitives.hpp"
#include "seedrl/detail/dnnl_runtime.hpp"

namespace seedrl::detail {

/// See the file comment.
class host_sgemm_primitives : public host_tiled_primitives {
 public:
  /// Row-major C[m, n] = alpha op(A) op(B) + beta C, as host_dense_primitives::gemm.
  template <class S>
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, S alpha, const S* a, int lda,
            const S* b, int ldb, S beta, S* c, int ldc) const {
#ifdef SEEDRL_HAS_DNNL
    if constexpr (std::is_same_v<S, float>) {
      if (!trans_a && trans_b && alpha == 1.0f && beta == 0.0f && m > 0 && m <= 48 && n > 0 &&
          k > 0 && static_cast<long>(n) * k >= (1L << 19)) {
        check_gemm_strides(trans_a, trans_b, m, n, k, lda, ldb, ldc);
        const auto elements = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
        if (transposed_.size() < elements)
          transposed_.resize(elements);
        dnnl_gemm(false, true, n, m, k, b, ldb, a, lda, 0.0f, transposed_.data(), m);
        map<float>(c, m, n, Eigen::OuterStride<>(ldc)) =
            cmap<float>(transposed_.data(), n, m, Eigen::OuterStride<>(m)).transpose();
        return;
      }
      if (m >= 16 && n > 0 && k > 0 && alpha == 1.0f) {
        check_gemm_strides(trans_a, trans_b, m, n, k, lda, ldb, ldc);
        dnnl_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
        return;
      }
    }
#endif
    host_tiled_primitives::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }

 private:
  mutable std::vector<float> transposed_;  ///< C^T of a few-row product, grown on demand
};

}  // namespace seedrl::detail
