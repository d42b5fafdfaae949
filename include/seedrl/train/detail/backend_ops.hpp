#pragma once
/// \file
/// Two helpers every backend-trained part (the trainer and its torsos) uses: growing a work
/// buffer, and a row-major GEMM taking std::size_t sizes, which the callers have checked to fit
/// int (the backends' GEMMs take int, as cuBLAS does).

#include <cstddef>
#include <type_traits>

namespace seedrl::detail {

/// Reallocates `b` (a Backend::buffer<T>) to n elements if it holds fewer.
template <class Backend, class Buffer>
void grow(Backend& backend, Buffer& b, std::size_t n) {
  using T = std::remove_cv_t<std::remove_pointer_t<decltype(b.data())>>;
  if (b.size() < n)
    b = backend.template allocate<T>(n);
}

/// backend.gemm (row-major C[m, n] = alpha op(A) op(B) + beta C) with sizes cast to int.
template <class Backend, class S>
void gemm(Backend& backend, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, S alpha,
          const S* a, std::size_t lda, const S* b, std::size_t ldb, S beta, S* c, std::size_t ldc) {
  backend.gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
               static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

}  // namespace seedrl::detail
