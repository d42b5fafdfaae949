#pragma once
/// \file
/// `nature_cnn<S>`: names the Nature DQN convolutional stack (Mnih et al. 2015) for
/// `pixel_lstm_agent` (`nature_cnn_lstm_agent<S>`): conv 8x8 stride 4, conv 4x4 stride 2,
/// conv 3x3 stride 1, each followed by ReLU, on CHW images, the output flattened in CHW order
/// (PyTorch's `flatten(1)`). The stack itself is `detail::backend_nature_cnn_torso`
/// (net/detail/nature_cnn_torso.hpp), which the pixel torso runs on any backend.
/// Parameters: each convolution's W [O, C, KH, KW] then b [O], first first, drawn as
/// PyTorch's `Conv2d` draws them.

#include <concepts>

#include "seedrl/net/detail/nature_cnn_torso.hpp"
#include "seedrl/net/nature_cnn_config.hpp"

namespace seedrl {

/// See the file comment.
template <std::floating_point S>
struct nature_cnn {
  using config_type = nature_cnn_config;
};

}  // namespace seedrl
