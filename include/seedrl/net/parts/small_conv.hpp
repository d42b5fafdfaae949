#pragma once
/// \file
/// `small_conv<S>`: a few 3x3 stride-1 convolutions, each followed by ReLU, for low-resolution
/// images (MinAtar's 10x10xC, grid worlds), any number of input channels. Models
/// seedrl::FeatureStack; as a torso it goes under a dense layer: `small_conv_torso<S>`
/// (seedrl/net/parts/dense_torso.hpp).
///
/// It is the backend stack the GPU runs (`detail::backend_small_conv_torso`), on the host
/// (`backend_feature_stack`). Parameters: each convolution's W [O, C, 3, 3] then b [O], first
/// first, drawn as PyTorch's `Conv2d` draws them.

#include <concepts>
#include <cstddef>

#include "seedrl/net/detail/small_conv_torso.hpp"
#include "seedrl/net/parts/backend_feature_stack.hpp"
#include "seedrl/net/parts/small_conv_config.hpp"
#include "seedrl/net/parts/torso.hpp"

namespace seedrl {

/// The small conv stack; see the file comment.
template <std::floating_point S>
class small_conv
    : public backend_feature_stack<detail::backend_small_conv_torso, small_conv_config, S> {
 public:
  /// A stack for images of `channels` x `height` x `width`; throws std::invalid_argument
  /// without a convolution, on a negative padding or an image too small for the kernels.
  small_conv(const small_conv_config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
             std::ptrdiff_t width)
      : backend_feature_stack<detail::backend_small_conv_torso, small_conv_config, S>(
            config, channels, height, width, "seedrl::small_conv") {}
};

static_assert(FeatureStack<small_conv<float>, float>);

}  // namespace seedrl
