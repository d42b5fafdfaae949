#pragma once
/// \file
/// `backend_small_conv_torso`: the small conv stack (3x3 stride-1 convolutions, each followed by
/// ReLU, zero padding as configured; small_conv_lstm_agent.hpp) as
/// `backend_pixel_lstm_trainer` runs it on a ComputeBackend: a `backend_conv_relu_stack`
/// (conv_relu_stack.hpp, which also states what a backend torso provides) of those shapes.

#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/net/conv_stack.hpp"
#include "seedrl/net/detail/conv_relu_stack.hpp"
#include "seedrl/net/small_conv_lstm_agent_config.hpp"

namespace seedrl::detail {

/// The small conv stack on a backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S>
class backend_small_conv_torso : public backend_conv_relu_stack<Backend, S> {
 public:
  using config_type = small_conv_torso_config;

  /// The torso for channels x height x width images; throws std::invalid_argument (its message
  /// starting with `who`) where the CPU stack does (no convolution, negative padding, an image
  /// too small for the 3x3 kernels) and on non-positive or int-overflowing channel counts.
  backend_small_conv_torso(Backend& backend, const small_conv_config& config, std::size_t channels,
                           std::size_t height, std::size_t width, const std::string& who)
      : backend_conv_relu_stack<Backend, S>(backend, shapes(config, channels, height, width, who)) {
  }

 private:
  static std::vector<conv2d_shape> shapes(const small_conv_config& config, std::size_t channels,
                                          std::size_t height, std::size_t width,
                                          const std::string& who) {
    constexpr auto int_max = static_cast<std::size_t>(std::numeric_limits<int>::max());
    if (config.channels.empty() || config.padding < 0)
      throw std::invalid_argument(who +
                                  ": the small conv stack needs at least one convolution "
                                  "and padding >= 0");
    if (channels > int_max || height > int_max || width > int_max ||
        static_cast<std::size_t>(config.padding) > int_max / 4)
      throw std::invalid_argument(who + ": an image extent or the padding exceeds INT_MAX");
    const auto pad = static_cast<std::size_t>(config.padding);
    std::vector<conv2d_shape> out;
    std::size_t c = channels, h = height, w = width;
    for (const std::ptrdiff_t o : config.channels) {
      if (o <= 0 || static_cast<std::size_t>(o) > int_max)
        throw std::invalid_argument(who + ": convolution channels must be positive");
      if (h + 2 * pad < 3 || w + 2 * pad < 3) {
        throw std::invalid_argument(
            who + ": a " + std::to_string(height) + "x" + std::to_string(width) +
            " image is too small for " + std::to_string(config.channels.size()) +
            " 3x3 convolutions with padding " + std::to_string(config.padding));
      }
      conv2d_shape s;
      s.in_channels = static_cast<int>(c);
      s.input_height = static_cast<int>(h);
      s.input_width = static_cast<int>(w);
      s.out_channels = static_cast<int>(o);
      s.kernel_h = s.kernel_w = 3;
      s.padding_h = s.padding_w = static_cast<int>(pad);
      c = static_cast<std::size_t>(o);
      h = static_cast<std::size_t>(s.output_height());
      w = static_cast<std::size_t>(s.output_width());
      out.push_back(s);
    }
    return out;
  }
};

}  // namespace seedrl::detail

template <class Backend, class S>
struct seedrl::backend_conv_stack<Backend, S, seedrl::small_conv_torso_config> {
  using type = seedrl::detail::backend_small_conv_torso<Backend, S>;
};
