#pragma once
// The convolution shapes the benchmarks time (bench_conv, vs_libtorch): the Nature CNN's and
// the IMPALA ResNet's on 84x84x4 frame stacks, batch unset.

#include <vector>

#include "seedrl/backend/compute_backend.hpp"

namespace seedrl_bench {

/// A square convolution: in (C, H, W), out channels, kernel, stride, padding.
inline seedrl::conv2d_shape conv_shape(int c, int h, int w, int o, int k, int stride, int padding) {
  seedrl::conv2d_shape s;
  s.in_channels = c;
  s.input_height = h;
  s.input_width = w;
  s.out_channels = o;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.padding_h = s.padding_w = padding;
  return s;
}

/// Nature CNN (Mnih et al. 2015): 32x8x8/4, 64x4x4/2, 64x3x3/1.
inline std::vector<seedrl::conv2d_shape> nature_cnn_shapes() {
  return {conv_shape(4, 84, 84, 32, 8, 4, 0), conv_shape(32, 20, 20, 64, 4, 2, 0),
          conv_shape(64, 9, 9, 64, 3, 1, 0)};
}

/// IMPALA ResNet: per stack (16, 32, 32 channels) a 3x3 padding-1 convolution, a 3x3 stride-2
/// padding-1 max pool, then two residual blocks of two 3x3 convolutions.
inline std::vector<seedrl::conv2d_shape> impala_resnet_shapes() {
  std::vector<seedrl::conv2d_shape> out;
  int c = 4, h = 84, w = 84;
  for (const int o : {16, 32, 32}) {
    out.push_back(conv_shape(c, h, w, o, 3, 1, 1));
    h = (h + 1) / 2;  // the max pool
    w = (w + 1) / 2;
    for (int k = 0; k < 4; ++k)
      out.push_back(conv_shape(o, h, w, o, 3, 1, 1));
    c = o;
  }
  return out;
}

}  // namespace seedrl_bench
