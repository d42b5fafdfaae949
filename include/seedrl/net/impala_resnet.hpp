#pragma once
/// \file
/// `impala_resnet<S>`: names the IMPALA ResNet stack (Espeholt et al. 2018, "deep" network) for
/// `pixel_lstm_agent` (`impala_resnet_lstm_agent<S>`). Each stack: conv 3x3 padding 1, max pool
/// 3x3 stride 2 padding 1, then residual blocks of (ReLU, conv 3x3, ReLU, conv 3x3) plus the
/// skip; after the last stack a ReLU; the output flattened in CHW order. The stack itself is
/// `detail::backend_impala_resnet_torso` (net/detail/impala_resnet_torso.hpp), which the pixel
/// torso runs on any backend. Parameters: per stack its convolution, then the two convolutions
/// of each block, each W [O, C, 3, 3] then b [O], drawn as PyTorch's `Conv2d` draws them.
///
/// Training keeps every block's input and both ReLU outputs; at 84x84 that is about 0.25 M
/// floats per image, so a 20 x 32 unroll holds about 0.7 GB of activations. Inference keeps
/// three buffers of the widest activation.

#include <concepts>

#include "seedrl/net/detail/impala_resnet_torso.hpp"
#include "seedrl/net/impala_resnet_config.hpp"

namespace seedrl {

/// See the file comment.
template <std::floating_point S>
struct impala_resnet {
  using config_type = impala_resnet_config;
};

}  // namespace seedrl
