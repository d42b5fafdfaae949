#pragma once
/// \file
/// The per-element bodies that `backend_pixel_lstm_trainer` (seedrl/train/pixel_lstm_trainer.hpp)
/// adds to those of `backend_mlp_lstm_trainer` (mlp_lstm_kernels.hpp): rebuilding frame stacks,
/// im2col, the convolution's bias + ReLU and its backward, and col2im. Like those, each is a
/// trivially copyable functor holding only sizes, scalars and backend pointers, whose
/// `operator()` is `SEEDRL_HOST_DEVICE` and device-safe, run by a ComputeBackend's
/// `for_each(n, f)`.
///
/// Images are NCHW rows (one image per row, `ld` elements apart). The im2col matrix of a
/// convolution over N images is [N*P, K] row-major, P = OH*OW output positions per image and
/// K = C*KH*KW taps in (c, kh, kw) order: row n*P + p holds the patch output position p of image
/// n reads. Its forward GEMM gives Z = col W^T [N*P, O]; the backward reads the gradient in the
/// same [N*P, O] layout.

#include <cstddef>
#include <cstdint>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// The torso's input for every step of an unroll, as `frame_stacked::forward_unroll` and then
/// `pixel_lstm_agent` (scale, HWC to CHW) build it: x [N, Cin*Ha*Wa] (CHW, times `scale`) from
/// the unroll's single frames obs [N, F] and the start state's depth-1 history frames (columns
/// [0, (D-1)*F) of a start state row, oldest first). Frame slot k of step t's stack holds the
/// frame of step s = t - (D-1) + k: the unroll's if s >= 0, the start state's slot s + D - 1
/// otherwise, and zero when a step in (s, t] (from step 0 on) starts an episode, since the
/// history is zeroed there. i = r * (D*F) + e, e the index in the agent's CHW input.
template <class S>
struct frame_stack_input_kernel {
  S* x;
  const S* obs;
  const S* start_state;
  std::size_t state_width;
  const std::uint8_t* dones;
  std::size_t B;
  std::size_t D;               ///< frames per stack
  std::size_t frame_channels;  ///< channels of one frame
  std::size_t frame_pixels;    ///< height * width of one frame
  bool stack_channels_last;    ///< frame_stack_config::channels_last
  std::size_t input_channels;  ///< the agent's channels
  std::size_t input_pixels;    ///< the agent's height * width
  bool input_channels_last;    ///< pixel_lstm_agent_config::channels_last
  S scale;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t F = frame_channels * frame_pixels, row_size = D * F;
    const std::size_t r = i / row_size, e = i % row_size;
    // The element of the stack (as frame_stacked lays it out) that lands at CHW index e.
    std::size_t j = e;
    if (input_channels_last && input_channels > 1)
      j = (e % input_pixels) * input_channels + e / input_pixels;
    // Its frame slot k and index fe inside that frame (in the frame's own layout).
    std::size_t k = 0, fe = 0;
    if (stack_channels_last && frame_channels > 1) {
      const std::size_t p = j / (D * frame_channels), rem = j % (D * frame_channels);
      k = rem / frame_channels;
      fe = p * frame_channels + rem % frame_channels;
    } else {
      k = j / F;
      fe = j % F;
    }
    const std::size_t t = r / B, b = r % B;
    S v = S(0);
    if (k + 1 == D) {
      v = obs[r * F + fe];
    } else {
      // Step s = t + k + 1 - D, as a signed offset: back = D - 1 - k steps before t.
      const std::size_t back = D - 1 - k;
      const std::size_t first = t >= back ? t - back + 1 : 0;  // first step that could reset
      bool visible = true;
      for (std::size_t u = first; u <= t; ++u)
        visible = visible && dones[u * B + b] == 0;
      if (visible) {
        v = t >= back ? obs[((t - back) * B + b) * F + fe]
                      : start_state[b * state_width + (D - 1 - (back - t)) * F + fe];
      }
    }
    x[i] = v * scale;
  }
};

/// im2col for N images: col [N*P, K] (see the file comment) from x [N, ld_x] (C x H x W rows);
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

/// A convolution's output from its GEMM: y[n, o, p] = max(z[n*P + p, o] + bias[o], 0), y
/// [N, O*P] NCHW rows, z [N*P, O]. A NaN stays NaN (as bias_relu_kernel). i = n * O*P + o*P + p.
template <class S>
struct conv_bias_relu_kernel {
  const S* z;
  const S* bias;
  S* y;
  std::size_t O;
  std::size_t P;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = i / (O * P), rem = i % (O * P);
    const std::size_t o = rem / P, p = rem % P;
    const S v = z[(n * P + p) * O + o] + bias[o];
    y[i] = v < S(0) ? S(0) : v;
  }
};

/// The gradient w.r.t. a convolution's pre-activation in the GEMM layout: g[n*P + p, o] =
/// dy[n, o*P + p] where the ReLU's output y[n, o*P + p] > 0, else 0; dy and y are NCHW rows
/// (dy `ld_dy` apart, y contiguous). i = (n*P + p) * O + o.
template <class S>
struct conv_relu_backward_kernel {
  const S* dy;
  std::size_t ld_dy;
  const S* y;
  S* g;
  std::size_t O;
  std::size_t P;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t row = i / O, o = i % O;
    const std::size_t n = row / P, p = row % P;
    const std::size_t at = o * P + p;
    g[i] = y[n * O * P + at] > S(0) ? dy[n * ld_dy + at] : S(0);
  }
};

/// col2im as a gather: dx[n, c, h, w] = the sum of the patch gradients dcol [N*P, K] of every
/// tap that read x[n, c, h, w], in (kh, kw) order (as conv2d's col2im adds them); one element
/// per call, so no two calls write the same place. dx is [N, C*H*W]. i = n * C*H*W + (c*H + h)*W
/// + w.
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

}  // namespace seedrl::detail
