#pragma once
/// \file
/// A 2-D convolution as im2col + GEMM + col2im on any backend's `for_each` and `gemm`: how
/// `host_backend` runs the ComputeBackend's conv2d primitives, and what `cuda::cuda_backend`
/// falls back to when it was built without cuDNN. Semantics are those of the primitives (see
/// compute_backend.hpp): NCHW rows, weights [O, C, KH, KW], cross-correlation, zero padding.
///
/// The im2col matrix of n images is [n*P, K] row-major, P = OH*OW output positions per image
/// and K = C*KH*KW taps in (c, kh, kw) order: row i*P + p holds the patch output position p of
/// image i reads. Forward: Z = col W^T [n*P, O], then y = Z^T per image plus the bias.
/// Backward: G = dy in the same [n*P, O] layout; dbias += ones^T G, dW += G^T col, and
/// dcol = G W folded back by col2im, a gather (one call per input element, no atomics), so the
/// result does not depend on the order threads run in. Images are taken in chunks so that the
/// scratch stays under `conv2d_gemm_chunk_elements` (or one image's patches, if larger).

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// Largest im2col chunk, in elements (64 MiB of float), unless one image needs more.
inline constexpr std::size_t conv2d_gemm_chunk_elements = std::size_t{1} << 24;

/// im2col for n images: col [n*P, K] (see the file comment) from x [n, ld_x] (C x H x W rows);
/// taps outside the zero-padded image read 0. i = (n*P + p) * K + kidx.
template <class S>
struct im2col_kernel {
  const S* x;
  std::size_t ld_x;
  S* col;
  std::size_t C, H, W;
  std::size_t KH, KW;
  std::size_t SH, SW;
  std::size_t PH, PW;
  std::size_t OH, OW;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t K = C * KH * KW, P = OH * OW;
    const std::size_t row = i / K, kidx = i % K;
    const std::size_t n = row / P, p = row % P;
    const std::size_t oh = p / OW, ow = p % OW;
    const std::size_t c = kidx / (KH * KW), kh = (kidx / KW) % KH, kw = kidx % KW;
    const std::size_t ih = oh * SH + kh, iw = ow * SW + kw;  // padded coordinates
    S v = S(0);
    if (ih >= PH && ih - PH < H && iw >= PW && iw - PW < W)
      v = x[n * ld_x + (c * H + (ih - PH)) * W + (iw - PW)];
    col[i] = v;
  }
};

/// col2im as a gather: dx[n, c, h, w] = the sum of the patch gradients dcol [n*P, K] of every
/// tap that read x[n, c, h, w], in (kh, kw) order; one element per call, so no two calls write
/// the same place. dx is [n, C*H*W]. i = n * C*H*W + (c*H + h)*W + w.
template <class S>
struct col2im_kernel {
  const S* dcol;
  S* dx;
  std::size_t C, H, W;
  std::size_t KH, KW;
  std::size_t SH, SW;
  std::size_t PH, PW;
  std::size_t OH, OW;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t K = C * KH * KW, P = OH * OW, image = C * H * W;
    const std::size_t n = i / image, rem = i % image;
    const std::size_t c = rem / (H * W), h = (rem / W) % H, w = rem % W;
    const std::size_t ph = h + PH, pw = w + PW;  // padded coordinates
    S sum = S(0);
    for (std::size_t kh = 0; kh < KH && kh <= ph; ++kh) {
      const std::size_t dh = ph - kh;
      if (dh % SH != 0 || dh / SH >= OH)
        continue;
      const std::size_t oh = dh / SH;
      for (std::size_t kw = 0; kw < KW && kw <= pw; ++kw) {
        const std::size_t dw = pw - kw;
        if (dw % SW != 0 || dw / SW >= OW)
          continue;
        const std::size_t ow = dw / SW;
        sum += dcol[(n * P + oh * OW + ow) * K + (c * KH + kh) * KW + kw];
      }
    }
    dx[i] = sum;
  }
};

/// y[n, o, p] = z[n*P + p, o] + bias[o]: the GEMM layout back to NCHW rows [n, O*P].
/// i = n * O*P + o*P + p.
template <class S>
struct conv_output_kernel {
  const S* z;
  const S* bias;
  S* y;
  std::size_t O;
  std::size_t P;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = i / (O * P), rem = i % (O * P);
    const std::size_t o = rem / P, p = rem % P;
    y[i] = z[(n * P + p) * O + o] + bias[o];
  }
};

/// g[n*P + p, o] = dy[n, o*P + p]: an output gradient (NCHW rows) in the GEMM layout.
/// i = (n*P + p) * O + o.
template <class S>
struct conv_output_gradient_kernel {
  const S* dy;
  S* g;
  std::size_t O;
  std::size_t P;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t row = i / O, o = i % O;
    const std::size_t n = row / P, p = row % P;
    g[i] = dy[n * O * P + o * P + p];
  }
};

/// Throws std::invalid_argument (naming `who`) unless `s` describes a convolution whose
/// tensors and GEMMs fit int-sized indexing, as cuBLAS and cuDNN take them.
inline void check_conv2d_shape(const conv2d_shape& s, const char* who) {
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(std::string(who) + ": " + what);
  };
  if (s.batch < 0 || s.in_channels <= 0 || s.input_height <= 0 || s.input_width <= 0 ||
      s.out_channels <= 0 || s.kernel_h <= 0 || s.kernel_w <= 0 || s.stride_h <= 0 ||
      s.stride_w <= 0 || s.padding_h < 0 || s.padding_w < 0) {
    fail("sizes, kernel and strides must be positive, padding and batch non-negative");
  }
  if (s.output_height() <= 0 || s.output_width() <= 0) {
    fail("a " + std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) +
         " kernel does not fit a " + std::to_string(s.input_height) + "x" +
         std::to_string(s.input_width) + " image padded by " + std::to_string(s.padding_h) + "x" +
         std::to_string(s.padding_w));
  }
  constexpr auto int_max = static_cast<std::size_t>(std::numeric_limits<int>::max());
  if (conv2d_shape::output_extent(s.input_height, s.padding_h, s.kernel_h, s.stride_h) >=
          static_cast<long long>(int_max) ||
      conv2d_shape::output_extent(s.input_width, s.padding_w, s.kernel_w, s.stride_w) >=
          static_cast<long long>(int_max))
    fail("the output extent exceeds INT_MAX");
  // Saturating products: three int factors can overflow even 64 bits.
  const auto mul = [](std::size_t a, int b) {
    const auto ub = static_cast<std::size_t>(b);
    return ub != 0 && a > std::numeric_limits<std::size_t>::max() / ub
               ? std::numeric_limits<std::size_t>::max()
               : a * ub;
  };
  const std::size_t in =
      mul(mul(static_cast<std::size_t>(s.in_channels), s.input_height), s.input_width);
  const std::size_t out =
      mul(mul(static_cast<std::size_t>(s.out_channels), s.output_height()), s.output_width());
  const std::size_t taps =
      mul(mul(static_cast<std::size_t>(s.in_channels), s.kernel_h), s.kernel_w);
  const std::size_t per_image = in > out ? (in > taps ? in : taps) : (out > taps ? out : taps);
  if (per_image > int_max / (s.batch > 0 ? static_cast<std::size_t>(s.batch) : 1))
    fail("the batch's tensors exceed INT_MAX elements");
}

/// Scratch of the GEMM convolution, grown on demand: patches, the GEMM-layout output and a
/// row of ones (bias gradients as GEMMs).
template <class Buffer>
struct conv2d_gemm_scratch {
  Buffer col, z, ones;
};

/// Sizes of one convolution in the kernels' terms.
struct conv2d_gemm_geometry {
  std::size_t N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW;
  explicit conv2d_gemm_geometry(const conv2d_shape& s)
      : N(static_cast<std::size_t>(s.batch)),
        C(static_cast<std::size_t>(s.in_channels)),
        H(static_cast<std::size_t>(s.input_height)),
        W(static_cast<std::size_t>(s.input_width)),
        O(static_cast<std::size_t>(s.out_channels)),
        KH(static_cast<std::size_t>(s.kernel_h)),
        KW(static_cast<std::size_t>(s.kernel_w)),
        SH(static_cast<std::size_t>(s.stride_h)),
        SW(static_cast<std::size_t>(s.stride_w)),
        PH(static_cast<std::size_t>(s.padding_h)),
        PW(static_cast<std::size_t>(s.padding_w)),
        OH(static_cast<std::size_t>(s.output_height())),
        OW(static_cast<std::size_t>(s.output_width())) {}
  std::size_t K() const noexcept { return C * KH * KW; }
  std::size_t P() const noexcept { return OH * OW; }
  std::size_t in_size() const noexcept { return C * H * W; }
  std::size_t out_size() const noexcept { return O * OH * OW; }
  /// Images per chunk (see the file comment).
  std::size_t chunk() const noexcept {
    const std::size_t per_image = P() * (K() > O ? K() : O);
    const std::size_t c = conv2d_gemm_chunk_elements / per_image;
    return c == 0 ? 1 : (c < N ? c : N);
  }
  template <class S>
  im2col_kernel<S> im2col(const S* x, S* col) const {
    return {x, in_size(), col, C, H, W, KH, KW, SH, SW, PH, PW, OH, OW};
  }
};

/// Grows the scratch for one chunk of `g`.
template <class Backend, class Buffer>
void reserve_conv2d_gemm(const Backend& be, conv2d_gemm_scratch<Buffer>& s,
                         const conv2d_gemm_geometry& g) {
  using T = std::remove_cv_t<std::remove_pointer_t<decltype(s.col.data())>>;
  const std::size_t rows = g.chunk() * g.P();
  if (s.col.size() < rows * g.K())
    s.col = be.template allocate<T>(rows * g.K());
  if (s.z.size() < rows * g.O)
    s.z = be.template allocate<T>(rows * g.O);
  if (s.ones.size() < rows) {
    s.ones = be.template allocate<T>(rows);
    be.fill(s.ones.data(), rows, T(1));
  }
}

/// y = conv(x, w) + bias for the whole batch; see the file comment.
template <class Backend, class Buffer, class S>
void conv2d_gemm_forward(const Backend& be, conv2d_gemm_scratch<Buffer>& scratch,
                         const conv2d_shape& shape, const S* x, const S* w, const S* bias, S* y) {
  const conv2d_gemm_geometry g(shape);
  if (g.N == 0)
    return;
  reserve_conv2d_gemm(be, scratch, g);
  const int K = static_cast<int>(g.K()), O = static_cast<int>(g.O);
  for (std::size_t n0 = 0; n0 < g.N; n0 += g.chunk()) {
    const std::size_t n = g.N - n0 < g.chunk() ? g.N - n0 : g.chunk();
    S* col = scratch.col.data();
    S* z = scratch.z.data();
    be.for_each(n * g.P() * g.K(), g.im2col(x + n0 * g.in_size(), col));
    be.gemm(false, true, static_cast<int>(n * g.P()), O, K, S(1), col, K, w, K, S(0), z, O);
    be.for_each(n * g.out_size(),
                conv_output_kernel<S>{z, bias, y + n0 * g.out_size(), g.O, g.P()});
  }
}

/// dw += d/dw, dbias += d/dbias and (dx non-null) dx = d/dx from dy at the input x; see the
/// file comment.
template <class Backend, class Buffer, class S>
void conv2d_gemm_backward(const Backend& be, conv2d_gemm_scratch<Buffer>& scratch,
                          const conv2d_shape& shape, const S* x, const S* w, const S* dy, S* dx,
                          S* dw, S* dbias) {
  const conv2d_gemm_geometry g(shape);
  if (g.N == 0)
    return;
  reserve_conv2d_gemm(be, scratch, g);
  const int K = static_cast<int>(g.K()), O = static_cast<int>(g.O);
  for (std::size_t n0 = 0; n0 < g.N; n0 += g.chunk()) {
    const std::size_t n = g.N - n0 < g.chunk() ? g.N - n0 : g.chunk();
    const int rows = static_cast<int>(n * g.P());
    S* col = scratch.col.data();
    S* z = scratch.z.data();
    be.for_each(n * g.out_size(),
                conv_output_gradient_kernel<S>{dy + n0 * g.out_size(), z, g.O, g.P()});
    be.gemm(false, false, 1, O, rows, S(1), scratch.ones.data(), rows, z, O, S(1), dbias, O);
    be.for_each(n * g.P() * g.K(), g.im2col(x + n0 * g.in_size(), col));
    be.gemm(true, false, O, K, rows, S(1), z, O, col, K, S(1), dw, K);
    if (dx != nullptr) {
      // The patches are spent: col takes d/d patches, folded back by col2im.
      be.gemm(false, false, rows, K, O, S(1), z, O, w, K, S(0), col, K);
      be.for_each(n * g.in_size(), col2im_kernel<S>{col, dx + n0 * g.in_size(), g.C, g.H, g.W, g.KH,
                                                    g.KW, g.SH, g.SW, g.PH, g.PW, g.OH, g.OW});
    }
  }
}

}  // namespace seedrl::detail
