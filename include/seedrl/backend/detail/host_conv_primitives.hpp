#pragma once
/// \file
/// `detail::host_conv_primitives`: the host primitives the GEMM convolution
/// (backend/detail/conv2d_gemm.hpp) and max pooling (max_pool2d_kernels.hpp) run on, for
/// `host_backend`'s conv2d primitives and its max pooling. The convolution's kernels are one call
/// per element, with a division or six per call; here they run as loops over rows (im2col and
/// col2im copy and add runs along an output row, the layout changes and the bias gradient are Eigen
/// block expressions), with the same values. Every product is cut into stack-sized tiles
/// (detail::gemm_stack_tiled), so that a convolution never mallocs.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "seedrl/backend/detail/conv2d_gemm.hpp"
#include "seedrl/backend/detail/host_tiled_primitives.hpp"
#include "seedrl/backend/detail/max_pool2d_kernels.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/detail/eigen_core.hpp"
#include "seedrl/detail/gemm_tiled.hpp"

namespace seedrl::detail {

/// See the file comment.
class host_conv_primitives : public host_tiled_primitives {
 public:
  using host_tiled_primitives::for_each;

  /// Row-major C[m, n] = op(A) op(B) (beta 0) or C += op(A) op(B) (beta 1), in tiles; any
  /// other alpha or beta as host_dense_primitives::gemm.
  template <class S>
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, S alpha, const S* a, int lda,
            const S* b, int ldb, S beta, S* c, int ldc) const {
    if (alpha != S(1) || (beta != S(0) && beta != S(1)) || m <= 0 || n <= 0 || k <= 0) {
      host_dense_primitives::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    check_gemm_strides(trans_a, trans_b, m, n, k, lda, ldb, ldc);
    map<S> C(c, m, n, Eigen::OuterStride<>(ldc));
    const cmap<S> A(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
    const cmap<S> B(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
    const bool accumulate = beta == S(1);
    if (trans_a && trans_b)
      gemm_stack_tiled(C, A.transpose(), B.transpose(), accumulate);
    else if (trans_a)
      gemm_stack_tiled(C, A.transpose(), B, accumulate);
    else if (trans_b)
      gemm_stack_tiled(C, A, B.transpose(), accumulate);
    else
      gemm_stack_tiled(C, A, B, accumulate);
  }

  /// im2col over whole images: per image, tap row and output row, zeros, a run read from the
  /// input row (contiguous at stride 1), zeros.
  template <class S>
  void for_each(std::size_t n, const im2col_kernel<S>& k) const {
    const std::size_t K = k.C * k.KH * k.KW, P = k.OH * k.OW;
    if (n == 0 || n != K * k.cols || k.cols % P != 0) {
      host_primitives::for_each(n, k);
      return;
    }
    const auto geo = signed_geometry(k);
    for (std::size_t img = 0; img < k.cols / P; ++img) {
      const S* x = k.x + img * k.ld_x;
      S* col = k.col + img * P;
      for (std::ptrdiff_t c = 0; c < geo.C; ++c) {
        for (std::ptrdiff_t kh = 0; kh < geo.KH; ++kh) {
          for (std::ptrdiff_t kw = 0; kw < geo.KW; ++kw) {
            S* row = col + static_cast<std::size_t>((c * geo.KH + kh) * geo.KW + kw) * k.cols;
            const std::ptrdiff_t dw = kw - geo.PW;  // input column = ow * SW + dw
            const auto [lo, hi] = geo.inside(dw);
            for (std::ptrdiff_t oh = 0; oh < geo.OH; ++oh) {
              S* d = row + oh * geo.OW;
              const std::ptrdiff_t ih = oh * geo.SH - geo.PH + kh;
              if (ih < 0 || ih >= geo.H) {
                std::fill(d, d + geo.OW, S(0));
                continue;
              }
              const S* src = x + (c * geo.H + ih) * geo.W;
              std::fill(d, d + lo, S(0));
              if (geo.SW == 1) {
                std::copy(src + lo + dw, src + hi + dw, d + lo);
              } else {
                for (std::ptrdiff_t ow = lo; ow < hi; ++ow)
                  d[ow] = src[ow * geo.SW + dw];
              }
              std::fill(d + hi, d + geo.OW, S(0));
            }
          }
        }
      }
    }
  }

  /// col2im over whole images: each image's gradient cleared, then every tap row's patch
  /// gradients added back where they were read from.
  template <class S>
  void for_each(std::size_t n, const col2im_kernel<S>& k) const {
    const std::size_t image = k.C * k.H * k.W, P = k.OH * k.OW;
    if (n == 0 || k.cols % P != 0 || n != image * (k.cols / P)) {
      host_primitives::for_each(n, k);
      return;
    }
    const auto geo = signed_geometry(k);
    for (std::size_t img = 0; img < k.cols / P; ++img) {
      S* dx = k.dx + img * k.ld_dx;
      const S* col = k.dcol + img * P;
      std::fill(dx, dx + image, S(0));
      for (std::ptrdiff_t c = 0; c < geo.C; ++c) {
        for (std::ptrdiff_t kh = 0; kh < geo.KH; ++kh) {
          for (std::ptrdiff_t kw = 0; kw < geo.KW; ++kw) {
            const S* row = col + static_cast<std::size_t>((c * geo.KH + kh) * geo.KW + kw) * k.cols;
            const std::ptrdiff_t dw = kw - geo.PW;
            const auto [lo, hi] = geo.inside(dw);
            for (std::ptrdiff_t oh = 0; oh < geo.OH; ++oh) {
              const std::ptrdiff_t ih = oh * geo.SH - geo.PH + kh;
              if (ih < 0 || ih >= geo.H)
                continue;
              const S* d = row + oh * geo.OW;
              S* dst = dx + (c * geo.H + ih) * geo.W;
              for (std::ptrdiff_t ow = lo; ow < hi; ++ow)
                dst[ow * geo.SW + dw] += d[ow];
            }
          }
        }
      }
    }
  }

  /// The GEMM layout back to NCHW: per image, its [O, P] block of z plus the bias.
  template <class S>
  void for_each(std::size_t n, const conv_output_kernel<S>& k) const {
    const std::size_t image = k.O * k.P;
    if (n == 0 || n % image != 0 || n / image * k.P != k.cols) {
      host_primitives::for_each(n, k);
      return;
    }
    const auto O = static_cast<Eigen::Index>(k.O), P = static_cast<Eigen::Index>(k.P);
    const cmap<S> z(k.z, O, static_cast<Eigen::Index>(k.cols),
                    Eigen::OuterStride<>(static_cast<Eigen::Index>(k.cols)));
    const Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, 1>> bias(k.bias, O);
    for (std::size_t img = 0; img < n / image; ++img) {
      map<S>(k.y + img * k.ld_y, O, P, Eigen::OuterStride<>(P)) =
          z.middleCols(static_cast<Eigen::Index>(img) * P, P).colwise() + bias;
    }
  }

  /// An NCHW output gradient in the GEMM layout: per image, its [O, P] block of g.
  template <class S>
  void for_each(std::size_t n, const conv_output_gradient_kernel<S>& k) const {
    if (n == 0 || k.P == 0 || n != k.O * k.cols || k.cols % k.P != 0) {
      host_primitives::for_each(n, k);
      return;
    }
    const auto O = static_cast<Eigen::Index>(k.O), P = static_cast<Eigen::Index>(k.P);
    map<S> g(k.g, O, static_cast<Eigen::Index>(k.cols),
             Eigen::OuterStride<>(static_cast<Eigen::Index>(k.cols)));
    for (std::size_t img = 0; img < k.cols / k.P; ++img) {
      g.middleCols(static_cast<Eigen::Index>(img) * P, P) =
          cmap<S>(k.dy + img * k.ld_dy, O, P, Eigen::OuterStride<>(P));
    }
  }

  /// The bias gradient as Eigen's row sums.
  template <class S>
  void for_each(std::size_t n, const conv_bias_gradient_kernel<S>& k) const {
    if (n == 0 || k.cols == 0)
      return;
    const auto O = static_cast<Eigen::Index>(n), cols = static_cast<Eigen::Index>(k.cols);
    Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, 1>>(k.out, O) +=
        cmap<S>(k.g, O, cols, Eigen::OuterStride<>(cols)).rowwise().sum();
  }

  /// Max pooling over whole images. Per plane and output row, each tap of the window (in
  /// window order) is taken for the whole row of outputs whose window holds it inside the
  /// image: the kernel's comparisons and selects per output, in its order, so the same bits,
  /// but independent across the row, so they vectorise. One chain of nine dependent selects
  /// per output, as the kernel runs, took about 5x as long on IMPALA's poolings.
  template <class S>
  SEEDRL_VECTORIZE_LOOPS void for_each(std::size_t n, const max_pool_forward_kernel<S>& k) const {
    const max_pool2d_geometry& g = k.g;
    if (n == 0 || n % g.out_size() != 0 || g.OW > max_pool_row) {
      host_primitives::for_each(n, k);
      return;
    }
    const auto i = [](std::size_t v) { return static_cast<std::ptrdiff_t>(v); };
    const std::ptrdiff_t H = i(g.H), W = i(g.W), OH = i(g.OH), OW = i(g.OW), SW = i(g.SW),
                         PW = i(g.PW);
    S best_value[max_pool_row];
    std::int32_t best[max_pool_row];
    for (std::size_t img = 0; img < n / g.out_size(); ++img) {
      for (std::size_t c = 0; c < g.C; ++c) {
        const S* in = k.x + img * k.ld_x + c * g.H * g.W;
        const std::size_t first = img * g.out_size() + c * g.OH * g.OW;  // kernel index
        S* out = k.y + img * k.ld_y + c * g.OH * g.OW;
        for (std::ptrdiff_t oh = 0; oh < OH; ++oh) {
          const std::ptrdiff_t h0 = oh * i(g.SH) - i(g.PH);
          const std::ptrdiff_t h_lo = std::max<std::ptrdiff_t>(h0, 0);
          const std::ptrdiff_t h_hi = std::min(h0 + i(g.KH), H);
          // The kernel's start: -infinity at the window's first cell inside the image.
          for (std::ptrdiff_t ow = 0; ow < OW; ++ow) {
            best_value[ow] = -std::numeric_limits<S>::infinity();
            best[ow] =
                static_cast<std::int32_t>(h_lo * W + std::max<std::ptrdiff_t>(ow * SW - PW, 0));
          }
          for (std::ptrdiff_t ih = h_lo; ih < h_hi; ++ih) {
            for (std::ptrdiff_t kw = 0; kw < i(g.KW); ++kw) {
              // Outputs whose tap kw reads input column ow * SW + offset inside [0, W).
              const std::ptrdiff_t offset = kw - PW;
              const std::ptrdiff_t lo = offset >= 0 ? 0 : std::min(OW, (-offset + SW - 1) / SW);
              const std::ptrdiff_t hi =
                  offset >= W ? lo : std::max(lo, std::min(OW, (W - offset + SW - 1) / SW));
              const S* row = in + ih * W;
              const auto base = static_cast<std::int32_t>(ih * W);
              if (SW == 2)
                take_taps<2>(row, 2, offset, base, lo, hi, best_value, best);
              else if (SW == 1)
                take_taps<1>(row, 1, offset, base, lo, hi, best_value, best);
              else
                take_taps<0>(row, SW, offset, base, lo, hi, best_value, best);
            }
          }
          std::copy(best_value, best_value + OW, out + oh * OW);
          if (k.argmax != nullptr)
            std::copy(best, best + OW, k.argmax + first + static_cast<std::size_t>(oh * OW));
        }
      }
    }
  }

  /// Max pooling's backward over whole images as a scatter: each image's gradient cleared,
  /// then every output gradient added to its argmax, in output order.
  template <class S>
  void for_each(std::size_t n, const max_pool_backward_kernel<S>& k) const {
    const max_pool2d_geometry& g = k.g;
    if (n == 0 || n % g.in_size() != 0) {
      host_primitives::for_each(n, k);
      return;
    }
    const std::size_t plane_in = g.H * g.W, plane_out = g.OH * g.OW;
    for (std::size_t img = 0; img < n / g.in_size(); ++img) {
      S* dx = k.dx + img * k.ld_dx;
      std::fill(dx, dx + g.in_size(), S(0));
      const S* dy = k.dy + img * k.ld_dy;
      const std::int32_t* idx = k.argmax + img * g.out_size();
      for (std::size_t c = 0; c < g.C; ++c) {
        S* plane = dx + c * plane_in;
        for (std::size_t o = c * plane_out; o < (c + 1) * plane_out; ++o)
          plane[idx[o]] += dy[o];
      }
    }
  }

 private:
  /// Widest output row the pooling's row loop takes (its row buffers are on the stack).
  static constexpr std::size_t max_pool_row = 1024;

  /// One tap for outputs [lo, hi) of a row: the pooling kernel's compare and selects (a NaN
  /// wins, else a strictly greater value). Output ow reads row[ow * step + offset], outputs
  /// `Stride` apart (0: `stride`, known at run time only).
  template <std::ptrdiff_t Stride, class S>
  SEEDRL_VECTORIZE_LOOPS static void take_taps(const S* row, std::ptrdiff_t stride,
                                               std::ptrdiff_t offset, std::int32_t base,
                                               std::ptrdiff_t lo, std::ptrdiff_t hi, S* best_value,
                                               std::int32_t* best) noexcept {
    const std::ptrdiff_t step = Stride != 0 ? Stride : stride;
    for (std::ptrdiff_t ow = lo; ow < hi; ++ow) {
      const std::ptrdiff_t at = ow * step + offset;
      const S v = row[at];
      const bool take = (v > best_value[ow]) | (v != v);  // v != v: NaN
      best_value[ow] = take ? v : best_value[ow];
      best[ow] = take ? base + static_cast<std::int32_t>(at) : best[ow];
    }
  }

  /// A kernel's sizes as signed integers, for the row loops' index arithmetic.
  struct geometry {
    std::ptrdiff_t C, H, W, KH, KW, SH, SW, PH, PW, OH, OW;
    struct columns {
      std::ptrdiff_t lo, hi;
    };
    /// The output columns [lo, hi) whose input column ow * SW + offset is inside the image.
    columns inside(std::ptrdiff_t offset) const noexcept {
      const std::ptrdiff_t lo = first_at_or_past(offset);
      return {lo, std::max(lo, first_at_or_past(offset - W))};
    }
    /// The first output column (clamped to [0, OW]) with ow * SW + offset >= 0.
    std::ptrdiff_t first_at_or_past(std::ptrdiff_t offset) const noexcept {
      return offset >= 0 ? 0 : std::min(OW, (-offset + SW - 1) / SW);
    }
  };
  template <class Kernel>
  static geometry signed_geometry(const Kernel& k) noexcept {
    const auto i = [](std::size_t v) { return static_cast<std::ptrdiff_t>(v); };
    return {i(k.C),  i(k.H),  i(k.W),  i(k.KH), i(k.KW), i(k.SH),
            i(k.SW), i(k.PH), i(k.PW), i(k.OH), i(k.OW)};
  }
};

}  // namespace seedrl::detail
