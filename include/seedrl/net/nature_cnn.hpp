#pragma once
/// \file
/// The Nature DQN convolutional torso (Mnih et al. 2015): conv 8x8 stride 4, conv 4x4
/// stride 2, conv 3x3 stride 1, each followed by ReLU (a `conv_stack` of that shape), on NCHW
/// batches (one image per row, as `conv2d`). The output is the last convolution's activations
/// flattened in NCHW order (PyTorch's `flatten(1)`); the dense layer that follows belongs to
/// `dense_torso` (`nature_cnn_torso`, seedrl/net/parts/dense_torso.hpp). Models `FeatureStack`
/// (seedrl/net/parts/torso.hpp) and `PixelTorso` (pixel_lstm_agent.hpp).

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/net/conv2d.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/parts/conv_stack.hpp"

namespace seedrl {

/// The Nature CNN torso; see the file comment.
template <std::floating_point S>
class nature_cnn : public conv_stack<S> {
 public:
  using config_type = nature_cnn_config;

  /// A torso for images of `channels` x `height` x `width`.
  nature_cnn(const nature_cnn_config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
             std::ptrdiff_t width)
      : conv_stack<S>(layers(config, channels, height, width)) {}

 private:
  static std::vector<conv2d_config> layers(const nature_cnn_config& config, std::ptrdiff_t channels,
                                           std::ptrdiff_t height, std::ptrdiff_t width) {
    constexpr std::ptrdiff_t kernels[3] = {8, 4, 3}, strides[3] = {4, 2, 1};
    std::vector<conv2d_config> out;
    std::ptrdiff_t c = channels, h = height, w = width;
    for (std::size_t l = 0; l < 3; ++l) {
      if (h < kernels[l] || w < kernels[l]) {
        throw std::invalid_argument("seedrl::nature_cnn: a " + std::to_string(height) + "x" +
                                    std::to_string(width) +
                                    " image is too small for the three convolutions (36x36 is "
                                    "the smallest that fits)");
      }
      out.push_back(conv2d_config{.in_channels = c,
                                  .input_height = h,
                                  .input_width = w,
                                  .out_channels = config.channels[l],
                                  .kernel_h = kernels[l],
                                  .kernel_w = kernels[l],
                                  .stride_h = strides[l],
                                  .stride_w = strides[l]});
      c = config.channels[l];
      h = (h - kernels[l]) / strides[l] + 1;
      w = (w - kernels[l]) / strides[l] + 1;
    }
    return out;
  }
};

}  // namespace seedrl
