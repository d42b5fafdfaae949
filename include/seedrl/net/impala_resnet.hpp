#pragma once
/// \file
/// The IMPALA ResNet torso (Espeholt et al. 2018, "deep" network), on NCHW batches (one image
/// per row). Each stack: conv 3x3 padding 1, max pool 3x3 stride 2 padding 1, then residual
/// blocks of (ReLU, conv 3x3, ReLU, conv 3x3) plus the skip; after the last stack a ReLU. The
/// output is flattened in NCHW order; the dense layer that follows belongs to `dense_torso`
/// (`impala_resnet_torso`, seedrl/net/parts/dense_torso.hpp). Models `FeatureStack`
/// (seedrl/net/parts/torso.hpp) and `PixelTorso` (pixel_lstm_agent.hpp).
///
/// It is the backend stack the GPU runs (`detail::backend_impala_resnet_torso`), on the host
/// (`backend_feature_stack`). Parameters: per stack its convolution, then the two convolutions
/// of each block, each W [O, C, 3, 3] then b [O], drawn as PyTorch's `Conv2d` draws them.
///
/// Training keeps every block's input and both ReLU outputs; at 84x84 that is about 0.25 M
/// floats per image, so a 20 x 32 unroll holds about 0.7 GB of activations. Inference keeps
/// three buffers of the widest activation.

#include <concepts>
#include <cstddef>

#include "seedrl/net/detail/impala_resnet_torso.hpp"
#include "seedrl/net/impala_resnet_config.hpp"
#include "seedrl/net/parts/backend_feature_stack.hpp"
#include "seedrl/net/parts/torso.hpp"

namespace seedrl {

/// The IMPALA ResNet torso; see the file comment.
template <std::floating_point S>
class impala_resnet
    : public backend_feature_stack<detail::backend_impala_resnet_torso, impala_resnet_config, S> {
 public:
  using config_type = impala_resnet_config;

  /// A torso for images of `channels` x `height` x `width`; throws std::invalid_argument
  /// without a stack, on a negative blocks_per_stack or non-positive channels.
  impala_resnet(const impala_resnet_config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
                std::ptrdiff_t width)
      : backend_feature_stack<detail::backend_impala_resnet_torso, impala_resnet_config, S>(
            config, channels, height, width, "seedrl::impala_resnet") {}
};

static_assert(FeatureStack<impala_resnet<float>, float>);

}  // namespace seedrl
