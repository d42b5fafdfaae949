#pragma once
/// \file
/// What every oneDNN call of seedrl's shares (compiled in with SEEDRL_HAS_DNNL): the thread
/// count per call, and `dnnl_sgemm` for float products.
///
/// Threads: Debian's oneDNN runs on OpenMP. Each call sets the calling thread's OpenMP thread
/// count to `dnnl_threads()` (default 1) for its duration and restores it after (the count is
/// per calling thread in libgomp), so a learner that runs inference and training on two threads
/// gets one core each, not two OpenMP teams fighting over both.

#include <atomic>
#include <stdexcept>
#include <string>

// The knobs exist in every build (they do nothing without oneDNN), so callers need no #ifdef.
namespace seedrl {

namespace detail {
inline std::atomic<int>& dnnl_thread_count() {
  static std::atomic<int> n{1};
  return n;
}
inline std::atomic<bool>& dnnl_convolutions_flag() {
  static std::atomic<bool> on{true};
  return on;
}
}  // namespace detail

/// Threads each oneDNN call (convolution or sgemm) uses (default 1).
inline int dnnl_threads() noexcept {
  return detail::dnnl_thread_count().load();
}
/// Sets the threads per oneDNN call. For convolutions it takes effect for shapes first seen
/// after it (a primitive's threading is fixed when it is built).
inline void set_dnnl_threads(int n) {
  if (n < 1)
    throw std::invalid_argument("seedrl::set_dnnl_threads: needs at least 1 thread");
  detail::dnnl_thread_count().store(n);
}

/// Whether float convolutions run on oneDNN (default: yes, when built with it). oneDNN
/// allocates a few small blocks inside each primitive call (its argument map), so a program
/// that must not touch the heap per inference step turns this off and gets im2col + GEMM.
inline bool dnnl_convolutions() noexcept {
  return detail::dnnl_convolutions_flag().load();
}
inline void set_dnnl_convolutions(bool on) noexcept {
  detail::dnnl_convolutions_flag().store(on);
}

}  // namespace seedrl

#ifdef SEEDRL_HAS_DNNL

#include <oneapi/dnnl/dnnl.h>

#if __has_include(<omp.h>)
#include <omp.h>
#else
extern "C" {
int omp_get_max_threads(void);
void omp_set_num_threads(int);
}
#endif

namespace seedrl {

namespace detail {

/// Sets the calling thread's OpenMP thread count for a scope.
class omp_threads_scope {
 public:
  explicit omp_threads_scope(int n) : saved_(omp_get_max_threads()) {
    if (n != saved_)
      omp_set_num_threads(n);
    set_ = n;
  }
  ~omp_threads_scope() {
    if (set_ != saved_)
      omp_set_num_threads(saved_);
  }
  omp_threads_scope(const omp_threads_scope&) = delete;
  omp_threads_scope& operator=(const omp_threads_scope&) = delete;

 private:
  int saved_;
  int set_;
};

/// Row-major C[m, n] = op(A) op(B) + beta C on oneDNN's sgemm, under `dnnl_threads()`.
inline void dnnl_gemm(bool trans_a, bool trans_b, long m, long n, long k, const float* a, long lda,
                      const float* b, long ldb, float beta, float* c, long ldc) {
  const omp_threads_scope threads(dnnl_threads());
  const auto status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda, b,
                                 ldb, beta, c, ldc);
  if (status != dnnl_success)
    throw std::runtime_error("seedrl: dnnl_sgemm failed (status " +
                             std::to_string(static_cast<int>(status)) + ")");
}

}  // namespace detail

}  // namespace seedrl

#endif  // SEEDRL_HAS_DNNL
