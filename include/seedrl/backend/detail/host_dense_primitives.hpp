#pragma once
/// \file
/// `detail::host_dense_primitives`: the host primitives a dense part needs (detail::
/// host_primitives plus a row-major GEMM on Eigen, and the dense layers' pointwise kernels for
/// the library's activations as vectorised Eigen expressions), without the convolutions that
/// `host_backend` (seedrl/backend/host_backend.hpp) adds, so that code with no convolution
/// (`host_sgemm_primitives` builds on it for the LSTM layer `lstm`) runs on the host without
/// oneDNN's convolutions.

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/backend/detail/lstm_kernels.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/detail/eigen_core.hpp"
#include "seedrl/detail/lstm_cell_rows.hpp"
#include "seedrl/detail/relu_backward_rows.hpp"
#include "seedrl/net/activation_math.hpp"

namespace seedrl::detail {

/// host_primitives and GEMM; see the file comment. The LSTM's kernels (lstm_kernels.hpp) run
/// here as row loops and, forward, in Eigen's SIMD packets (detail::lstm_cell_rows).
class host_dense_primitives : public host_primitives {
 public:
  using host_primitives::for_each;
  using host_primitives::for_each_2d;

  /// out[j] += the sum of column j over the rows (dense_kernels.hpp): a bias gradient, as
  /// Eigen's column sums.
  template <class S>
  void for_each(std::size_t n, const column_sum_add_kernel<S>& k) const {
    if (n == 0 || k.rows == 0)
      return;
    const cmap<S> x(k.x, static_cast<Eigen::Index>(k.rows), static_cast<Eigen::Index>(n),
                    Eigen::OuterStride<>(static_cast<Eigen::Index>(k.ld)));
    Eigen::Map<Eigen::Matrix<S, 1, Eigen::Dynamic>>(k.out, static_cast<Eigen::Index>(n)) +=
        x.colwise().sum();
  }

  /// A ReLU into a copy and an addition (dense_kernels.hpp), as Eigen expressions.
  template <class S>
  void for_each(std::size_t n, const relu_copy_kernel<S>& k) const {
    vector_map<S>(k.dst, static_cast<Eigen::Index>(n)) =
        vector_cmap<S>(k.src, static_cast<Eigen::Index>(n)).cwiseMax(S(0));
  }
  template <class S>
  void for_each(std::size_t n, const add_kernel<S>& k) const {
    vector_map<S>(k.dst, static_cast<Eigen::Index>(n)) +=
        vector_cmap<S>(k.src, static_cast<Eigen::Index>(n));
  }

  /// A dense layer's bias and activation (activation_kernels.hpp): ReLU, tanh and the identity
  /// as Eigen expressions, vectorised (tanh by Eigen's float approximation, as the CPU layers
  /// always ran it); any other activation element by element.
  template <class S, class Act>
  void for_each_2d(std::size_t rows, std::size_t cols,
                   const bias_activation_kernel<S, Act>& k) const {
    if constexpr (eigen_activation<Act>) {
      if (rows == 0 || cols == 0)
        return;
      map<S> y(k.y, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols),
               Eigen::OuterStride<>(static_cast<Eigen::Index>(k.ld)));
      y.rowwise() += Eigen::Map<const Eigen::Matrix<S, 1, Eigen::Dynamic>>(
          k.bias, static_cast<Eigen::Index>(cols));
      if constexpr (std::is_same_v<Act, relu_activation>)
        y = y.cwiseMax(S(0));  // vectorised; std::max(x, 0), so a NaN stays NaN
      else if constexpr (std::is_same_v<Act, tanh_activation>)
        y = y.array().tanh().matrix();
    } else {
      host_primitives::for_each_2d(rows, cols, k);
    }
  }

  /// An activation alone (a convolution's), as above.
  template <class S, class Act>
  void for_each_2d(std::size_t rows, std::size_t cols, const activation_kernel<S, Act>& k) const {
    if constexpr (eigen_activation<Act>) {
      if (rows == 0 || cols == 0)
        return;
      map<S> y(k.y, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols),
               Eigen::OuterStride<>(static_cast<Eigen::Index>(k.ld)));
      if constexpr (std::is_same_v<Act, relu_activation>)
        y = y.cwiseMax(S(0));  // std::max(x, 0): a NaN stays NaN
      else if constexpr (std::is_same_v<Act, tanh_activation>)
        y = y.array().tanh().matrix();
    } else {
      host_primitives::for_each_2d(rows, cols, k);
    }
  }

  /// An activation's backward (activation_kernels.hpp), as above.
  template <class S, class Act>
  void for_each_2d(std::size_t rows, std::size_t cols,
                   const activation_backward_kernel<S, Act>& k) const {
    if constexpr (eigen_activation<Act>) {
      if (rows == 0 || cols == 0)
        return;
      if constexpr (std::is_same_v<Act, relu_activation>) {
        relu_backward_rows(rows, cols, k.y, k.ld_y, k.dy, k.ld_dy, k.dx, k.width);
      } else {
        const auto r = static_cast<Eigen::Index>(rows), c = static_cast<Eigen::Index>(cols);
        const cmap<S> dy(k.dy, r, c, Eigen::OuterStride<>(static_cast<Eigen::Index>(k.ld_dy)));
        map<S> dx(k.dx, r, c, Eigen::OuterStride<>(static_cast<Eigen::Index>(k.width)));
        if constexpr (std::is_same_v<Act, tanh_activation>) {
          const cmap<S> y(k.y, r, c, Eigen::OuterStride<>(static_cast<Eigen::Index>(k.ld_y)));
          dx = (dy.array() * (S(1) - y.array().square())).matrix();
        } else {
          dx = dy;
        }
      }
    } else {
      host_primitives::for_each_2d(rows, cols, k);
    }
  }

  /// An LSTM step's [x | h_prev] and c_prev with resets, row by row.
  template <class S>
  void for_each(std::size_t n, const lstm_step_input_kernel<S>& k) const {
    const std::size_t K = k.I + k.H;
    const std::size_t B = K == 0 ? 0 : n / K;
    for (std::size_t b = 0; b < B; ++b) {
      S* xh = k.xh + b * K;
      std::copy_n(k.x + b * k.ldx, k.I, xh);
      S* c = k.c_reset + b * k.H;
      if (k.resets != nullptr && k.resets[b] != 0) {
        std::fill_n(xh + k.I, k.H, S(0));
        std::fill_n(c, k.H, S(0));
      } else {
        std::copy_n(k.h_prev + b * k.ld_prev, k.H, xh + k.I);
        std::copy_n(k.c_prev + b * k.ld_prev, k.H, c);
      }
    }
  }

  /// An LSTM step's cell update over B = n / H rows (lstm_kernels.hpp), in SIMD packets.
  template <class S>
  void for_each(std::size_t n, const lstm_step_pointwise_kernel<S>& k) const {
    if (n == 0)
      return;
    lstm_cell_outputs<S> out;
    out.c = k.c;
    out.ld_c = k.ld_out;
    out.h = k.h;
    out.ld_h = k.ld_out;
    lstm_cell_rows(n / k.H, k.H, k.gates, 4 * k.H, k.bias, k.c_prev, k.H, out);
  }

  /// An unroll's cell update at step t (lstm_kernels.hpp), in SIMD packets: c goes straight to
  /// step t+1's incoming c (or the end state), h is copied to step t+1's incoming h, then the
  /// rows that start an episode at t+1 are zeroed.
  template <class S>
  void for_each(std::size_t n, const lstm_forward_step_kernel<S>& k) const {
    if (n == 0)
      return;
    const std::size_t B = k.B, H = k.H, row = k.t * B;
    const bool last = k.t + 1 == k.steps;
    lstm_cell_outputs<S> out;
    out.keep_gates = true;
    out.tanh_c = k.tanh_c + row * H;
    out.ld_tanh_c = H;
    out.h = k.h + row * H;
    out.ld_h = H;
    if (!last) {
      out.c = k.c_prev + (row + B) * H;
      out.ld_c = H;
    } else if (k.end_state != nullptr) {
      out.c = k.end_state + k.end_col + H;
      out.ld_c = k.ld_end;
    }
    lstm_cell_rows(B, H, k.gates + row * 4 * H, 4 * H, k.bias, k.c_prev + row * H, H, out);
    if (!last) {
      S* h_next = k.h_prev + (row + B) * H;
      S* c_next = k.c_prev + (row + B) * H;
      std::copy_n(out.h, B * H, h_next);
      for (std::size_t b = 0; b < B; ++b) {
        if (k.dones[row + B + b] != 0) {
          std::fill_n(h_next + b * H, H, S(0));
          std::fill_n(c_next + b * H, H, S(0));
        }
      }
    } else if (k.end_state != nullptr) {
      for (std::size_t b = 0; b < B; ++b)
        std::copy_n(out.h + b * H, H, k.end_state + b * k.ld_end + k.end_col);
    }
  }

  /// An unroll's cell backward at step t, row by row: whether step t+1 carries its gradients
  /// back is one test per row, so that the loop over the units vectorises.
  template <class S>
  SEEDRL_VECTORIZE_LOOPS void for_each(std::size_t, const lstm_backward_step_kernel<S>& k) const {
    for (std::size_t b = 0; b < k.B; ++b) {
      const std::size_t row = k.t * k.B + b;
      const bool carry = k.t + 1 < k.steps ? k.dones[row + k.B] == 0 : k.end_carry;
      if (carry)
        lstm_backward_row<S, true>(k, b, row);
      else
        lstm_backward_row<S, false>(k, b, row);
    }
  }

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

 protected:
  /// Row-major views with a row stride, as the primitives' pointers and `ld`s describe them.
  template <class S>
  using map = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                         Eigen::OuterStride<>>;
  template <class S>
  using cmap = Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          0, Eigen::OuterStride<>>;

  template <class S>
  using vector_map = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, 1>>;
  template <class S>
  using vector_cmap = Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, 1>>;

 private:
  /// One row of lstm_backward_step_kernel, with or without step t+1's gradients.
  template <class S, bool Carry>
  SEEDRL_VECTORIZE_LOOPS static void lstm_backward_row(const lstm_backward_step_kernel<S>& k,
                                                       std::size_t b, std::size_t row) {
    const std::size_t H = k.H;
    const S* dy = k.dy + row * k.ld_dy;
    const S* a = k.gates + row * 4 * H;
    const S* tanh_c = k.tanh_c + row * H;
    const S* c_prev = k.c_prev + row * H;
    const S* dh_next = k.dh_next + b * H;
    S* dc_next = k.dc_next + b * H;
    S* z = k.dz + row * 4 * H;
    for (std::size_t j = 0; j < H; ++j) {
      const S dh = Carry ? dy[j] + dh_next[j] : dy[j];
      const S dc = Carry ? dc_next[j] : S(0);
      const auto g = lstm_unit_grad<S>(a[j], a[H + j], a[2 * H + j], a[3 * H + j], tanh_c[j],
                                       c_prev[j], dh, dc);
      z[j] = g.dzi;
      z[H + j] = g.dzf;
      z[2 * H + j] = g.dzg;
      z[3 * H + j] = g.dzo;
      dc_next[j] = g.dc_prev;
    }
  }

  template <class Act>
  static constexpr bool eigen_activation =
      std::is_same_v<Act, relu_activation> || std::is_same_v<Act, tanh_activation> ||
      std::is_same_v<Act, identity_activation>;
};

}  // namespace seedrl::detail
