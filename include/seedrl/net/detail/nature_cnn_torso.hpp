#pragma once
/// \file
/// `backend_nature_cnn_torso`: the Nature CNN (three convolutions with ReLU, as
/// seedrl/net/nature_cnn.hpp) as `backend_pixel_lstm_trainer` runs it on a ComputeBackend: a
/// `backend_conv_relu_stack` (conv_relu_stack.hpp, which also states what a backend torso
/// provides) of 8x8/4, 4x4/2 and 3x3/1 convolutions.

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/net/conv_stack.hpp"
#include "seedrl/net/detail/conv_relu_stack.hpp"
#include "seedrl/net/nature_cnn_config.hpp"

namespace seedrl::detail {

/// The Nature CNN on a backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S>
class backend_nature_cnn_torso : public backend_conv_relu_stack<Backend, S> {
 public:
  using config_type = nature_cnn_config;

  /// The torso for channels x height x width images; throws std::invalid_argument (its message
  /// starting with `who`) on non-positive channels or an image too small for the kernels.
  backend_nature_cnn_torso(Backend& backend, const nature_cnn_config& config, std::size_t channels,
                           std::size_t height, std::size_t width, const std::string& who)
      : backend_conv_relu_stack<Backend, S>(backend, shapes(config, channels, height, width, who)) {
  }

 private:
  static std::vector<conv2d_shape> shapes(const nature_cnn_config& config, std::size_t channels,
                                          std::size_t height, std::size_t width,
                                          const std::string& who) {
    for (const std::ptrdiff_t c : config.channels) {
      if (c <= 0)
        throw std::invalid_argument(who + ": convolution channels must be positive");
    }
    constexpr int kernels[3] = {8, 4, 3}, strides[3] = {4, 2, 1};
    std::vector<conv2d_shape> out;
    std::size_t c = channels, h = height, w = width;
    for (std::size_t l = 0; l < 3; ++l) {
      if (h < static_cast<std::size_t>(kernels[l]) || w < static_cast<std::size_t>(kernels[l])) {
        throw std::invalid_argument(
            who + ": a " + std::to_string(height) + "x" + std::to_string(width) +
            " image is too small for the three convolutions (36x36 is the smallest that fits)");
      }
      conv2d_shape s;
      s.in_channels = static_cast<int>(c);
      s.input_height = static_cast<int>(h);
      s.input_width = static_cast<int>(w);
      s.out_channels = static_cast<int>(config.channels[l]);
      s.kernel_h = s.kernel_w = kernels[l];
      s.stride_h = s.stride_w = strides[l];
      c = static_cast<std::size_t>(s.out_channels);
      h = static_cast<std::size_t>(s.output_height());
      w = static_cast<std::size_t>(s.output_width());
      out.push_back(s);
    }
    return out;
  }
};

}  // namespace seedrl::detail

template <class Backend, class S>
struct seedrl::backend_conv_stack<Backend, S, seedrl::nature_cnn_config> {
  using type = seedrl::detail::backend_nature_cnn_torso<Backend, S>;
};
