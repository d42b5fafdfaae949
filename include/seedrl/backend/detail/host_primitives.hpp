#pragma once
/// \file
/// `detail::host_primitives`: the ComputeBackend primitives of `host_backend`
/// (seedrl/backend/host_backend.hpp) that need no Eigen: buffers, copies, `for_each`, the
/// V-trace scan and the sums, and the frame stacks' kernels as row copies. The losses
/// (seedrl/algo/impala_loss.hpp) run their host path on them, so that headers nvcc compiles can
/// include a loss without Eigen; `host_backend` adds GEMMs and convolutions.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "seedrl/algo/vtrace.hpp"
#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/frame_stack_kernels.hpp"
#include "seedrl/backend/detail/state_table_kernels.hpp"

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

  /// Frame stacks (frame_stack_kernels.hpp) row by row: each slot's frame copied whole (pixel
  /// by pixel into an interleaved stack) and scaled, or zeros. A stack the agent reads
  /// channels-last (its HWC to CHW transpose) runs the element bodies.
  template <class S>
  void for_each(std::size_t n, const frame_stack_input_kernel<S>& k) const {
    const std::size_t C = k.frame_channels, F = C * k.frame_pixels, D = k.D;
    if ((k.input_channels_last && k.input_channels > 1) || D * F == 0) {
      for (std::size_t i = 0; i < n; ++i)
        k(i);
      return;
    }
    const bool interleaved = k.stack_channels_last && C > 1;
    for (std::size_t r = 0; r < n / (D * F); ++r) {
      S* x = k.x + r * D * F;
      for (std::size_t slot = 0; slot < D; ++slot) {
        const S* src = k.frame_source(r / k.B, r % k.B, slot);
        if (!interleaved) {
          scaled_copy(src, F, k.scale, x + slot * F);
        } else {
          for (std::size_t p = 0; p < k.frame_pixels; ++p)
            scaled_copy(src != nullptr ? src + p * C : nullptr, C, k.scale, x + (p * D + slot) * C);
        }
      }
    }
  }

  /// The frame history's shift (frame_stack_kernels.hpp), row by row and slot by slot in order,
  /// so that `next` may be `before`.
  template <class S>
  void for_each(std::size_t n, const frame_history_step_kernel<S>& k) const {
    const std::size_t width = k.slots * k.F;
    for (std::size_t r = 0; width > 0 && r < n / width; ++r) {
      const S* before = k.before + r * k.state_width;
      S* next = k.next + r * k.ld_next;
      const bool reset = k.resets != nullptr && k.resets[r] != 0;
      for (std::size_t slot = 0; slot + 1 < k.slots; ++slot) {
        if (reset)
          std::fill_n(next + slot * k.F, k.F, S(0));
        else
          std::copy_n(before + (slot + 1) * k.F, k.F, next + slot * k.F);
      }
      std::copy_n(k.obs + r * k.F, k.F, next + (k.slots - 1) * k.F);
    }
  }

  /// A state table's rows gathered and scattered by slot (state_table_kernels.hpp), a row copy
  /// each: the element bodies divide every index.
  template <class S>
  void for_each(std::size_t n, const gather_rows_kernel<S>& k) const {
    for (std::size_t r = 0; k.width > 0 && r < n / k.width; ++r)
      std::copy_n(k.table + static_cast<std::size_t>(k.slots[r]) * k.width, k.width,
                  k.rows + r * k.width);
  }
  template <class S>
  void for_each(std::size_t n, const scatter_rows_kernel<S>& k) const {
    for (std::size_t r = 0; k.width > 0 && r < n / k.width; ++r)
      std::copy_n(k.rows + r * k.width, k.width,
                  k.table + static_cast<std::size_t>(k.slots[r]) * k.width);
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

 private:
  /// dst[0, n) = src[0, n) * scale (zeros * scale for a null src), as the element bodies compute.
  template <class S>
  static void scaled_copy(const S* src, std::size_t n, S scale, S* dst) {
    if (src == nullptr)
      std::fill_n(dst, n, S(0) * scale);
    else if (scale == S(1))
      std::copy_n(src, n, dst);
    else
      for (std::size_t i = 0; i < n; ++i)
        dst[i] = src[i] * scale;
  }
};

}  // namespace seedrl::detail
