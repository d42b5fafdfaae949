#pragma once
/// \file
/// The one 2-D convolution of the library below oneDNN and cuDNN: im2col + GEMM + col2im on
/// any backend's `for_each` and `gemm`. `host_backend`'s conv2d primitives (where oneDNN is
/// off, or for double) run it on detail::host_conv_primitives (which runs the
/// kernels below as row loops and the products in stack-sized tiles); `cuda::cuda_backend`
/// runs it when built without cuDNN. Semantics are those of the primitives (see
/// compute_backend.hpp): NCHW rows, weights [O, C, KH, KW], cross-correlation, zero padding;
/// images may sit `ld` elements apart (a strided batch view).
///
/// The im2col matrix of a chunk of n images is [K, n*P] row-major, K = C*KH*KW taps in
/// (c, kh, kw) order and P = OH*OW output positions per image: column i*P + p holds the patch
/// output position p of image i reads. Forward: Z = W col [O, n*P], then each image's [O, P]
/// block of Z plus the bias is its output row. Backward: G = dy in the same [O, n*P] layout;
/// dbias += the row sums of G, dW += G col^T, and dcol = W^T G folded back by col2im, a gather
/// (one call per input element, no atomics), so the result does not depend on the order
/// threads run in. Images are taken in chunks (see `conv2d_gemm_geometry::chunk`); the scratch
/// holds one chunk's patches and outputs.

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// Largest im2col chunk, in elements (64 MiB of float), unless one image needs more: the
/// chunking of a backend that runs one kernel over a whole chunk (the GPU).
inline constexpr std::size_t conv2d_gemm_chunk_elements = std::size_t{1} << 24;

/// Patch rows per chunk on the host: whole images, at least 128 output positions, so that the
/// GEMM reads the patches from cache right after im2col wrote them. Measured on the Nature CNN
/// (bench/bench_conv.cpp): 256 and 512 were about 5% and 12% slower, one image about the same.
inline constexpr std::size_t host_conv2d_chunk_rows = 128;

/// im2col for a chunk of n images: col [K, n*P] (see the file comment) from x [n, ld_x]
/// (C x H x W rows); taps outside the zero-padded image read 0. i = kidx * n*P + (n*P + p).
template <class S>
struct im2col_kernel {
  const S* x;
  std::size_t ld_x;
  S* col;
  std::size_t cols;  ///< n*P, the columns of this chunk
  std::size_t C, H, W;
  std::size_t KH, KW;
  std::size_t SH, SW;
  std::size_t PH, PW;
  std::size_t OH, OW;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t P = OH * OW;
    const std::size_t kidx = i / cols, column = i % cols;
    const std::size_t n = column / P, p = column % P;
    const std::size_t oh = p / OW, ow = p % OW;
    const std::size_t c = kidx / (KH * KW), kh = (kidx / KW) % KH, kw = kidx % KW;
    const std::size_t ih = oh * SH + kh, iw = ow * SW + kw;  // padded coordinates
    S v = S(0);
    if (ih >= PH && ih - PH < H && iw >= PW && iw - PW < W)
      v = x[n * ld_x + (c * H + (ih - PH)) * W + (iw - PW)];
    col[i] = v;
  }
};

/// col2im as a gather: dx[n, c, h, w] = the sum of the patch gradients dcol [K, n*P] of every
/// tap that read x[n, c, h, w], in (kh, kw) order; one element per call, so no two calls write
/// the same place. dx is [n, ld_dx]. i = n * C*H*W + (c*H + h)*W + w.
template <class S>
struct col2im_kernel {
  const S* dcol;
  std::size_t cols;  ///< n*P, the columns of this chunk
  S* dx;
  std::size_t ld_dx;
  std::size_t C, H, W;
  std::size_t KH, KW;
  std::size_t SH, SW;
  std::size_t PH, PW;
  std::size_t OH, OW;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t P = OH * OW, image = C * H * W;
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
        sum += dcol[((c * KH + kh) * KW + kw) * cols + n * P + oh * OW + ow];
      }
    }
    dx[n * ld_dx + rem] = sum;
  }
};

/// y[n, o, p] = z[o, n*P + p] + bias[o]: the GEMM layout [O, cols] back to NCHW rows
/// [n, ld_y]. i = n * O*P + o*P + p.
template <class S>
struct conv_output_kernel {
  const S* z;
  std::size_t cols;
  const S* bias;
  S* y;
  std::size_t ld_y;
  std::size_t O;
  std::size_t P;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = i / (O * P), rem = i % (O * P);
    const std::size_t o = rem / P, p = rem % P;
    y[n * ld_y + rem] = z[o * cols + n * P + p] + bias[o];
  }
};

/// g[o, n*P + p] = dy[n, o*P + p]: an output gradient (NCHW rows [n, ld_dy]) in the GEMM
/// layout [O, cols]. i = o * cols + n*P + p.
template <class S>
struct conv_output_gradient_kernel {
  const S* dy;
  std::size_t ld_dy;
  S* g;
  std::size_t cols;
  std::size_t O;
  std::size_t P;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t o = i / cols, column = i % cols;
    const std::size_t n = column / P, p = column % P;
    g[i] = dy[n * ld_dy + o * P + p];
  }
};

/// out[o] += the sum of row o of g [O, cols]: the bias gradient; one call per row, summed in
/// column order.
template <class S>
struct conv_bias_gradient_kernel {
  const S* g;
  std::size_t cols;
  S* out;

  SEEDRL_HOST_DEVICE void operator()(std::size_t o) const {
    S sum = S(0);
    for (std::size_t j = 0; j < cols; ++j)
      sum += g[o * cols + j];
    out[o] += sum;
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

/// Sizes of one convolution in the kernels' terms, and its chunking.
struct conv2d_gemm_geometry {
  std::size_t N, C, H, W, O, KH, KW, SH, SW, PH, PW, OH, OW;
  /// Patch rows one chunk holds at least (whole images); 0: as many images as fit
  /// conv2d_gemm_chunk_elements (at least one).
  std::size_t min_chunk_rows;

  explicit conv2d_gemm_geometry(const conv2d_shape& s, std::size_t min_rows = 0)
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
        OW(static_cast<std::size_t>(s.output_width())),
        min_chunk_rows(min_rows) {}
  std::size_t K() const noexcept { return C * KH * KW; }
  std::size_t P() const noexcept { return OH * OW; }
  std::size_t in_size() const noexcept { return C * H * W; }
  std::size_t out_size() const noexcept { return O * OH * OW; }
  /// Images per chunk (the last chunk of a batch may be smaller), at most N unless N is 0.
  std::size_t chunk() const noexcept {
    std::size_t c = 0;
    if (min_chunk_rows > 0) {
      c = (min_chunk_rows + P() - 1) / P();
    } else {
      const std::size_t per_image = P() * (K() > O ? K() : O);
      c = conv2d_gemm_chunk_elements / per_image;
    }
    c = c == 0 ? 1 : c;
    return N > 0 && c > N ? N : c;
  }
  /// Scratch elements one chunk needs: its patches, then its GEMM-layout outputs.
  std::size_t col_elements() const noexcept { return chunk() * P() * K(); }
  std::size_t z_elements() const noexcept { return chunk() * P() * O; }
  template <class S>
  im2col_kernel<S> im2col(const S* x, std::size_t ld_x, S* col, std::size_t n) const {
    return {x, ld_x, col, n * P(), C, H, W, KH, KW, SH, SW, PH, PW, OH, OW};
  }
  template <class S>
  col2im_kernel<S> col2im(const S* dcol, S* dx, std::size_t ld_dx, std::size_t n) const {
    return {dcol, n * P(), dx, ld_dx, C, H, W, KH, KW, SH, SW, PH, PW, OH, OW};
  }
};

/// y = conv(x, w) + bias for the whole batch, x [N, ld_x], y [N, ld_y]; `col` and `z` hold
/// g.col_elements() and g.z_elements(). See the file comment.
template <class Backend, class S>
void conv2d_gemm_forward(const Backend& be, const conv2d_gemm_geometry& g, S* col, S* z, const S* x,
                         std::size_t ld_x, const S* w, const S* bias, S* y, std::size_t ld_y) {
  const int K = static_cast<int>(g.K()), O = static_cast<int>(g.O);
  for (std::size_t n0 = 0; n0 < g.N; n0 += g.chunk()) {
    const std::size_t n = g.N - n0 < g.chunk() ? g.N - n0 : g.chunk(), cols = n * g.P();
    const int c = static_cast<int>(cols);
    be.for_each(g.K() * cols, g.im2col(x + n0 * ld_x, ld_x, col, n));
    be.gemm(false, false, O, c, K, S(1), w, K, col, c, S(0), z, c);
    be.for_each(n * g.out_size(),
                conv_output_kernel<S>{z, cols, bias, y + n0 * ld_y, ld_y, g.O, g.P()});
  }
}

/// dw += d/dw, dbias += d/dbias and (dx non-null) dx = d/dx from dy at the input x; dy
/// [N, ld_dy], dx [N, ld_dx]; scratch as for the forward. See the file comment.
template <class Backend, class S>
void conv2d_gemm_backward(const Backend& be, const conv2d_gemm_geometry& g, S* col, S* z,
                          const S* x, std::size_t ld_x, const S* w, const S* dy, std::size_t ld_dy,
                          S* dx, std::size_t ld_dx, S* dw, S* dbias) {
  const int K = static_cast<int>(g.K()), O = static_cast<int>(g.O);
  for (std::size_t n0 = 0; n0 < g.N; n0 += g.chunk()) {
    const std::size_t n = g.N - n0 < g.chunk() ? g.N - n0 : g.chunk(), cols = n * g.P();
    const int c = static_cast<int>(cols);
    be.for_each(g.O * cols,
                conv_output_gradient_kernel<S>{dy + n0 * ld_dy, ld_dy, z, cols, g.O, g.P()});
    be.for_each(g.O, conv_bias_gradient_kernel<S>{z, cols, dbias});
    be.for_each(g.K() * cols, g.im2col(x + n0 * ld_x, ld_x, col, n));
    be.gemm(false, true, O, K, c, S(1), z, c, col, c, S(1), dw, K);
    if (dx != nullptr) {
      // The patches are spent: col takes d/d patches, folded back by col2im.
      be.gemm(true, false, K, c, O, S(1), w, K, z, c, S(0), col, c);
      be.for_each(n * g.in_size(), g.col2im(col, dx + n0 * ld_dx, ld_dx, n));
    }
  }
}

/// A backend's own scratch for the convolution, grown on demand (`Buffer` from its
/// `allocate`): patches and GEMM-layout outputs.
template <class Buffer>
struct conv2d_gemm_scratch {
  Buffer col, z;
};

/// Grows the scratch for one chunk of `g`.
template <class Backend, class Buffer>
void reserve_conv2d_gemm(const Backend& be, conv2d_gemm_scratch<Buffer>& s,
                         const conv2d_gemm_geometry& g) {
  using T = std::remove_cv_t<std::remove_pointer_t<decltype(s.col.data())>>;
  if (s.col.size() < g.col_elements())
    s.col = be.template allocate<T>(g.col_elements());
  if (s.z.size() < g.z_elements())
    s.z = be.template allocate<T>(g.z_elements());
}

/// The conv2d_forward primitive (contiguous rows) on a backend's own scratch.
template <class Backend, class Buffer, class S>
void conv2d_gemm_forward(const Backend& be, conv2d_gemm_scratch<Buffer>& scratch,
                         const conv2d_gemm_geometry& g, const S* x, const S* w, const S* bias,
                         S* y) {
  if (g.N == 0)
    return;
  reserve_conv2d_gemm(be, scratch, g);
  conv2d_gemm_forward(be, g, scratch.col.data(), scratch.z.data(), x, g.in_size(), w, bias, y,
                      g.out_size());
}

/// The conv2d_backward primitive (contiguous rows) on a backend's own scratch.
template <class Backend, class Buffer, class S>
void conv2d_gemm_backward(const Backend& be, conv2d_gemm_scratch<Buffer>& scratch,
                          const conv2d_gemm_geometry& g, const S* x, const S* w, const S* dy, S* dx,
                          S* dw, S* dbias) {
  if (g.N == 0)
    return;
  reserve_conv2d_gemm(be, scratch, g);
  conv2d_gemm_backward(be, g, scratch.col.data(), scratch.z.data(), x, g.in_size(), w, dy,
                       g.out_size(), dx, g.in_size(), dw, dbias);
}

}  // namespace seedrl::detail
