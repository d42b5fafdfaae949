#pragma once
/// \file
/// `small_conv<S>`: a few 3x3 stride-1 convolutions, each followed by ReLU, for low-resolution
/// images (MinAtar's 10x10xC, grid worlds), any number of input channels: a `conv_stack`
/// (seedrl/net/parts/conv_stack.hpp) of that shape. Models seedrl::FeatureStack; as a torso it
/// goes under a dense layer: `small_conv_torso<S>` (seedrl/net/parts/dense_torso.hpp).

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/net/conv2d.hpp"
#include "seedrl/net/parts/conv_stack.hpp"
#include "seedrl/net/parts/small_conv_config.hpp"
#include "seedrl/net/parts/torso.hpp"

namespace seedrl {

/// The small conv stack; see the file comment.
template <std::floating_point S>
class small_conv : public conv_stack<S> {
 public:
  /// A stack for images of `channels` x `height` x `width`.
  small_conv(const small_conv_config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
             std::ptrdiff_t width)
      : conv_stack<S>(layers(config, channels, height, width)) {}

 private:
  static std::vector<conv2d_config> layers(const small_conv_config& config, std::ptrdiff_t channels,
                                           std::ptrdiff_t height, std::ptrdiff_t width) {
    if (config.channels.empty() || config.padding < 0 || channels <= 0 || height <= 0 ||
        width <= 0) {
      throw std::invalid_argument(
          "seedrl::small_conv: needs at least one convolution, padding >= 0 and a positive "
          "image shape");
    }
    std::vector<conv2d_config> out;
    std::ptrdiff_t c = channels, h = height, w = width;
    for (std::ptrdiff_t o : config.channels) {
      if (h + 2 * config.padding < 3 || w + 2 * config.padding < 3) {
        throw std::invalid_argument(
            "seedrl::small_conv: a " + std::to_string(height) + "x" + std::to_string(width) +
            " image is too small for " + std::to_string(config.channels.size()) +
            " 3x3 convolutions with padding " + std::to_string(config.padding));
      }
      out.push_back(conv2d_config{.in_channels = c,
                                  .input_height = h,
                                  .input_width = w,
                                  .out_channels = o,
                                  .kernel_h = 3,
                                  .kernel_w = 3,
                                  .padding_h = config.padding,
                                  .padding_w = config.padding});
      c = o;
      h += 2 * config.padding - 2;
      w += 2 * config.padding - 2;
    }
    return out;
  }
};

static_assert(FeatureStack<small_conv<float>, float>);

}  // namespace seedrl
