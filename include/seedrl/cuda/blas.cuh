#pragma once
/// \file
/// cuBLAS GEMM for float and double behind one name, and an owning handle.

#include <cublas_v2.h>

#include <utility>

#include "seedrl/cuda/error.cuh"

namespace seedrl::cuda {

/// An owning cuBLAS handle bound to a stream.
class blas_handle {
 public:
  explicit blas_handle(cudaStream_t stream = nullptr) {
    SEEDRL_CUDA_CHECK(cublasCreate(&handle_));
    SEEDRL_CUDA_CHECK(cublasSetStream(handle_, stream));
  }
  blas_handle(blas_handle&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  blas_handle& operator=(blas_handle&& o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  blas_handle(const blas_handle&) = delete;
  blas_handle& operator=(const blas_handle&) = delete;
  ~blas_handle() {
    if (handle_ != nullptr) {
      (void)cublasDestroy(handle_);
    }
  }
  cublasHandle_t get() const noexcept { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

/// Row-major C[m, n] = alpha * op(A) * op(B) + beta * C, where op(A) is [m, k] and op(B) is
/// [k, n]; `lda`, `ldb`, `ldc` are row strides (elements between rows) of the matrices as
/// stored, and trans_a / trans_b say the stored matrix is the transpose of op(X). Row-major
/// C = A B is column-major C^T = B^T A^T, so this calls cuBLAS with the operands swapped.
inline void gemm_row_major(cublasHandle_t h, bool trans_a, bool trans_b, int m, int n, int k,
                           float alpha, const float* a, int lda, const float* b, int ldb,
                           float beta, float* c, int ldc) {
  SEEDRL_CUDA_CHECK(cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a,
                                lda, &beta, c, ldc));
}

/// The double overload of gemm_row_major.
inline void gemm_row_major(cublasHandle_t h, bool trans_a, bool trans_b, int m, int n, int k,
                           double alpha, const double* a, int lda, const double* b, int ldb,
                           double beta, double* c, int ldc) {
  SEEDRL_CUDA_CHECK(cublasDgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a,
                                lda, &beta, c, ldc));
}

}  // namespace seedrl::cuda
