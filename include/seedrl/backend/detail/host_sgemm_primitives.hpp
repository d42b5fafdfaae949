#pragma once
/// \file
/// `detail::host_sgemm_primitives`: host_tiled_primitives whose float forward products
/// (C = A B^T, what a layer's gates ask) of 16 rows or more go to oneDNN's sgemm when seedrl
/// has oneDNN (SEEDRL_HAS_DNNL). oneDNN packs once for the whole product where the stack-sized
/// tiles repack per tile: 1.3-1.9x faster from 32 rows up (docs/performance.md), no faster at
/// 1. The CPU LSTM (seedrl/net/lstm.hpp) runs on it. Every other product is its base's.

#include <type_traits>

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
      if (m >= 16 && n > 0 && k > 0 && alpha == 1.0f) {
        check_gemm_strides(trans_a, trans_b, m, n, k, lda, ldb, ldc);
        dnnl_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
        return;
      }
    }
#endif
    host_tiled_primitives::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
};

}  // namespace seedrl::detail
