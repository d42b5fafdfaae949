#pragma once
/// \file
/// The Nature DQN convolutional torso (Mnih et al. 2015): conv 8x8 stride 4, conv 4x4
/// stride 2, conv 3x3 stride 1, each followed by ReLU, on NCHW batches (one image per row). The
/// output is the last convolution's activations flattened in NCHW order (PyTorch's
/// `flatten(1)`); the dense layer that follows belongs to `dense_torso` (`nature_cnn_torso`,
/// seedrl/net/parts/dense_torso.hpp). Models `FeatureStack` (seedrl/net/parts/torso.hpp) and
/// `PixelTorso` (pixel_lstm_agent.hpp).
///
/// It is the backend stack the GPU runs (`detail::backend_nature_cnn_torso`), on the host
/// (`backend_feature_stack`). Parameters: each convolution's W [O, C, KH, KW] then b [O], first
/// first, drawn as PyTorch's `Conv2d` draws them.

#include <concepts>
#include <cstddef>

#include "seedrl/net/detail/nature_cnn_torso.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/parts/backend_feature_stack.hpp"
#include "seedrl/net/parts/torso.hpp"

namespace seedrl {

/// The Nature CNN torso; see the file comment.
template <std::floating_point S>
class nature_cnn
    : public backend_feature_stack<detail::backend_nature_cnn_torso, nature_cnn_config, S> {
 public:
  using config_type = nature_cnn_config;

  /// A torso for images of `channels` x `height` x `width`; throws std::invalid_argument on an
  /// image smaller than 36x36 (the three kernels do not fit).
  nature_cnn(const nature_cnn_config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
             std::ptrdiff_t width)
      : backend_feature_stack<detail::backend_nature_cnn_torso, nature_cnn_config, S>(
            config, channels, height, width, "seedrl::nature_cnn") {}
};

static_assert(FeatureStack<nature_cnn<float>, float>);

}  // namespace seedrl
