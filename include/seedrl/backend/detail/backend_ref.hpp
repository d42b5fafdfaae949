#pragma once
/// \file
/// `detail::backend_ref<Backend>`: how every backend-trained part (the trainer and its torsos)
/// holds its backend: a pointer (`->`, `*`) plus the two helpers they all use, growing a work
/// buffer and a row-major GEMM taking std::size_t sizes, which the callers have checked to fit
/// int (the backends' GEMMs take int, as cuBLAS does).

#include <cstddef>
#include <type_traits>

namespace seedrl::detail {

/// A non-owning reference to a backend with grow and gemm; see the file comment.
template <class Backend>
class backend_ref {
 public:
  explicit backend_ref(Backend& backend) noexcept : backend_(&backend) {}

  Backend* operator->() const noexcept { return backend_; }
  Backend& operator*() const noexcept { return *backend_; }

  /// Reallocates `b` (a Backend::buffer<T>) to n elements if it holds fewer.
  template <class Buffer>
  void grow(Buffer& b, std::size_t n) const {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(b.data())>>;
    if (b.size() < n)
      b = backend_->template allocate<T>(n);
  }

  /// backend.gemm (row-major C[m, n] = alpha op(A) op(B) + beta C) with sizes cast to int.
  template <class S>
  void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, S alpha, const S* a,
            std::size_t lda, const S* b, std::size_t ldb, S beta, S* c, std::size_t ldc) const {
    backend_->gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                   static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  }

 private:
  Backend* backend_;
};

}  // namespace seedrl::detail
