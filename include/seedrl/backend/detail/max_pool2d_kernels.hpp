#pragma once
/// \file
/// Max pooling (PyTorch's `MaxPool2d`, dilation 1, floor rounding) as `for_each` kernels over
/// NCHW image rows, the one implementation of max pooling (the IMPALA ResNet's, on every
/// backend). Padding acts as -infinity (a
/// window's maximum is over its cells inside the image), a NaN wins its window (the last NaN in
/// window order), and among equal maxima the first in row-major window order wins: PyTorch's
/// CPU kernel, so argmaxes (and where gradients go) match it. An argmax is an index into its
/// input plane, `ih * W + iw`.
///
/// Any backend runs them one element per call; detail::host_conv_primitives runs them as loops
/// over planes, the backward as a scatter in output order, which is the order the gather below
/// sums in, so the bits agree.

#include <cstddef>
#include <cstdint>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// Sizes of one max pooling: C planes of H x W in, OH x OW out; window, stride and padding.
struct max_pool2d_geometry {
  std::size_t C, H, W, OH, OW, KH, KW, SH, SW, PH, PW;

  SEEDRL_HOST_DEVICE std::size_t in_size() const noexcept { return C * H * W; }
  SEEDRL_HOST_DEVICE std::size_t out_size() const noexcept { return C * OH * OW; }
};

/// y = the window maxima of x, and each one's argmax when `argmax` is not null. x is
/// [n, ld_x], y [n, ld_y], argmax [n, out_size()]. i = n * out_size() + (c*OH + oh)*OW + ow.
template <class S>
struct max_pool_forward_kernel {
  const S* x;
  std::size_t ld_x;
  S* y;
  std::size_t ld_y;
  std::int32_t* argmax;
  max_pool2d_geometry g;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = i / g.out_size(), rem = i % g.out_size();
    const std::size_t c = rem / (g.OH * g.OW), p = rem % (g.OH * g.OW);
    const std::size_t oh = p / g.OW, ow = p % g.OW;
    const S* in = x + n * ld_x + c * g.H * g.W;
    // Window [oh*SH - PH, oh*SH - PH + KH) clipped to the image, in unsigned arithmetic.
    const std::size_t h0 = oh * g.SH, w0 = ow * g.SW;  // padded coordinates
    const std::size_t h_lo = h0 > g.PH ? h0 - g.PH : 0, w_lo = w0 > g.PW ? w0 - g.PW : 0;
    const std::size_t h_hi = h0 + g.KH - g.PH < g.H ? h0 + g.KH - g.PH : g.H;
    const std::size_t w_hi = w0 + g.KW - g.PW < g.W ? w0 + g.KW - g.PW : g.W;
    // Starting from the first cell picks what starting from -infinity picks (the window is
    // never empty, and a -infinity or NaN first cell is kept or replaced alike).
    std::size_t best = h_lo * g.W + w_lo;
    S best_value = in[best];
    for (std::size_t ih = h_lo; ih < h_hi; ++ih) {
      for (std::size_t iw = w_lo; iw < w_hi; ++iw) {
        const S v = in[ih * g.W + iw];
        if (v > best_value || v != v) {  // v != v: NaN
          best_value = v;
          best = ih * g.W + iw;
        }
      }
    }
    y[n * ld_y + rem] = best_value;
    if (argmax != nullptr)
      argmax[i] = static_cast<std::int32_t>(best);
  }
};

/// Max pooling's backward as a gather: dx[n, c, ih, iw] = the sum, in output order, of
/// dy[n, c, oh, ow] over the outputs whose window holds (ih, iw) and whose argmax it is. dy is
/// [n, ld_dy], argmax [n, out_size()], dx [n, ld_dx]. i = n * in_size() + (c*H + ih)*W + iw.
template <class S>
struct max_pool_backward_kernel {
  const S* dy;
  std::size_t ld_dy;
  const std::int32_t* argmax;
  S* dx;
  std::size_t ld_dx;
  max_pool2d_geometry g;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = i / g.in_size(), rem = i % g.in_size();
    const std::size_t c = rem / (g.H * g.W), at = rem % (g.H * g.W);
    const std::size_t ih = at / g.W, iw = at % g.W;
    const std::size_t ph = ih + g.PH, pw = iw + g.PW;  // padded coordinates
    // Outputs oh with oh*SH <= ph < oh*SH + KH.
    const std::size_t oh_lo = ph + 1 > g.KH ? (ph + 1 - g.KH + g.SH - 1) / g.SH : 0;
    const std::size_t ow_lo = pw + 1 > g.KW ? (pw + 1 - g.KW + g.SW - 1) / g.SW : 0;
    const std::size_t oh_hi = ph / g.SH + 1 < g.OH ? ph / g.SH + 1 : g.OH;
    const std::size_t ow_hi = pw / g.SW + 1 < g.OW ? pw / g.SW + 1 : g.OW;
    const std::size_t base = c * g.OH * g.OW;
    S sum = S(0);
    for (std::size_t oh = oh_lo; oh < oh_hi; ++oh) {
      for (std::size_t ow = ow_lo; ow < ow_hi; ++ow) {
        const std::size_t o = base + oh * g.OW + ow;
        if (static_cast<std::size_t>(argmax[n * g.out_size() + o]) == at)
          sum += dy[n * ld_dy + o];
      }
    }
    dx[n * ld_dx + rem] = sum;
  }
};

}  // namespace seedrl::detail
