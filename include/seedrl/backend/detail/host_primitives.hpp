#pragma once
/// \file
/// `detail::host_primitives`: the ComputeBackend primitives of `host_backend`
/// (seedrl/backend/host_backend.hpp) that need no Eigen: buffers, copies, `for_each`, the
/// V-trace scan and the sums. The losses (seedrl/algo/impala_loss.hpp) run their host path on
/// them, so that headers nvcc compiles can include a loss without Eigen; `host_backend` adds
/// GEMMs and convolutions.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "seedrl/algo/vtrace.hpp"
#include "seedrl/backend/compute_backend.hpp"

namespace seedrl::detail {

/// See the file comment.
class host_primitives {
 public:
  template <class T>
  using buffer = std::vector<T>;

  template <class T>
  buffer<T> allocate(std::size_t n) const {
    return buffer<T>(n, T{});
  }

  template <class T>
  void upload(std::span<const T> host, T* dst) const {
    std::copy(host.begin(), host.end(), dst);
  }
  template <class T>
  void upload(std::span<T> host, T* dst) const {
    upload(std::span<const T>(host), dst);
  }

  template <class T>
  void download(const T* src, std::span<T> host) const {
    std::copy_n(src, host.size(), host.begin());
  }

  template <class T>
  void copy(const T* src, T* dst, std::size_t n) const {
    std::copy_n(src, n, dst);
  }

  template <class T>
  void fill(T* dst, std::size_t n, T value) const {
    std::fill_n(dst, n, value);
  }

  template <class F>
  void for_each(std::size_t n, const F& f) const {
    for (std::size_t i = 0; i < n; ++i)
      f(i);
  }

  /// f(r, j) row by row: the inner loop over j is contiguous and divides nothing.
  template <class F>
  void for_each_2d(std::size_t rows, std::size_t cols, const F& f) const {
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < cols; ++j)
        f(r, j);
  }

  template <class S>
  double sum_of_squares(const S* x, std::size_t n) const {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(x[i]);
      sum += d * d;
    }
    return sum;
  }

  /// The V-trace scan of seedrl::vtrace (blocks of columns, t backwards); see
  /// compute_backend.hpp. The caller checks sizes and overlaps.
  template <class S>
  void vtrace(const detail::vtrace_coefficients<S>& k, const vtrace_operands<S>& op) const {
    const auto T = static_cast<std::size_t>(op.T), B = static_cast<std::size_t>(op.B);
    if (T == 0 || B == 0)
      return;
    if (op.truncated != nullptr)
      detail::vtrace_blocks<S, true>(k, T, B, op.log_rhos, op.discounts, op.rewards, op.values,
                                     op.bootstrap, op.truncated, op.vs, op.pg_advantages);
    else
      detail::vtrace_blocks<S, false>(k, T, B, op.log_rhos, op.discounts, op.rewards, op.values,
                                      op.bootstrap, nullptr, op.vs, op.pg_advantages);
  }

  /// out[a] = x[a*n] + ... + x[a*n + n-1], in index order; see compute_backend.hpp.
  void sums(const double* x, std::size_t arrays, std::size_t n, std::span<double> out) const {
    for (std::size_t a = 0; a < arrays; ++a) {
      double s = 0.0;
      for (std::size_t i = 0; i < n; ++i)
        s += x[a * n + i];
      out[a] = s;
    }
  }
};

}  // namespace seedrl::detail
