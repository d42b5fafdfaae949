#pragma once
/// \file
/// `backend_small_conv_torso`: the small conv stack (3x3 stride-1 convolutions, each followed by
/// ReLU, zero padding as configured; seedrl/net/parts/small_conv.hpp) as
/// `backend_pixel_lstm_trainer` runs it on a ComputeBackend, with the interface described in
/// nature_cnn_torso.hpp: the backend's conv2d primitives, ReLUs as for_each bodies. Parameters
/// in the CPU stack's order: for each convolution W [O, C, 3, 3] then b [O].

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/net/small_conv_lstm_agent_config.hpp"
#include "seedrl/train/detail/mlp_lstm_kernels.hpp"
#include "seedrl/train/detail/nature_cnn_torso.hpp"
#include "seedrl/train/detail/pixel_lstm_kernels.hpp"

namespace seedrl::detail {

/// The small conv stack on a backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S>
class backend_small_conv_torso {
  template <class T>
  using buffer = typename Backend::template buffer<T>;

 public:
  using config_type = small_conv_torso_config;

  /// The torso for channels x height x width images; throws std::invalid_argument (its message
  /// starting with `who`) where the CPU stack does (no convolution, negative padding, an image
  /// too small for the 3x3 kernels) and on non-positive or int-overflowing channel counts.
  backend_small_conv_torso(Backend& backend, const small_conv_config& config, std::size_t channels,
                           std::size_t height, std::size_t width, const std::string& who)
      : backend_(&backend) {
    constexpr auto int_max = static_cast<std::size_t>(std::numeric_limits<int>::max());
    if (config.channels.empty() || config.padding < 0)
      throw std::invalid_argument(who +
                                  ": the small conv stack needs at least one convolution "
                                  "and padding >= 0");
    if (channels > int_max || height > int_max || width > int_max ||
        static_cast<std::size_t>(config.padding) > int_max / 4)
      throw std::invalid_argument(who + ": an image extent or the padding exceeds INT_MAX");
    const auto pad = static_cast<std::size_t>(config.padding);
    std::size_t c = channels, h = height, w = width, at = 0;
    for (const std::ptrdiff_t o : config.channels) {
      if (o <= 0 || static_cast<std::size_t>(o) > int_max)
        throw std::invalid_argument(who + ": convolution channels must be positive");
      if (h + 2 * pad < 3 || w + 2 * pad < 3) {
        throw std::invalid_argument(
            who + ": a " + std::to_string(height) + "x" + std::to_string(width) +
            " image is too small for " + std::to_string(config.channels.size()) +
            " 3x3 convolutions with padding " + std::to_string(config.padding));
      }
      layer L;
      L.shape.in_channels = static_cast<int>(c);
      L.shape.input_height = static_cast<int>(h);
      L.shape.input_width = static_cast<int>(w);
      L.shape.out_channels = static_cast<int>(o);
      L.shape.kernel_h = L.shape.kernel_w = 3;
      L.shape.padding_h = L.shape.padding_w = static_cast<int>(pad);
      L.in_size = c * h * w;
      c = static_cast<std::size_t>(o);
      h = static_cast<std::size_t>(L.shape.output_height());
      w = static_cast<std::size_t>(L.shape.output_width());
      L.out_size = c * h * w;
      L.w = at;
      at += c * static_cast<std::size_t>(L.shape.in_channels) * 9;
      L.b = at;
      at += c;
      layers_.push_back(L);
    }
    num_parameters_ = at;
    act_.resize(layers_.size());
  }

  std::size_t num_parameters() const noexcept { return num_parameters_; }
  std::size_t output_size() const noexcept { return layers_.back().out_size; }
  std::size_t max_batch() const noexcept {
    std::size_t widest = 1;
    for (const layer& L : layers_) {
      const std::size_t taps = static_cast<std::size_t>(L.shape.in_channels) * 9;
      widest = std::max({widest, L.in_size, L.out_size, taps});
    }
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) / widest;
  }

  /// Sizes the activations for N images; reallocates only to grow.
  void reserve(std::size_t N) {
    std::size_t d_in = 0, d_out = 0;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      grow(act_[l], N * layers_[l].out_size);
      d_out = std::max(d_out, layers_[l].out_size);
      if (l > 0)
        d_in = std::max(d_in, layers_[l].in_size);
    }
    grow(d_pre_, N * d_out);
    grow(d_in_, N * d_in);
  }

  /// The features of input [N, C*H*W] (kept, with the activations, for `backward`).
  const S* forward(const S* params, const S* input, std::size_t N) {
    input_ = input;
    const S* in = input;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const layer& L = layers_[l];
      backend_->conv2d_forward(L.at(N), in, params + L.w, params + L.b, act_[l].data());
      backend_->for_each(N * L.out_size, relu_kernel<S>{act_[l].data()});
      in = act_[l].data();
    }
    return act_.back().data();
  }

  /// Adds the parameter gradients into grads from d_features [N, output_size()]; needs the
  /// last `forward` on the same N. The input (pixels) gets no gradient.
  void backward(const S* params, S* grads, const S* d_features, std::size_t N) {
    const S* dy = d_features;
    for (std::size_t l = layers_.size(); l-- > 0;) {
      const layer& L = layers_[l];
      backend_->for_each(N * L.out_size,
                         relu_backward_kernel<S>{dy, L.out_size, act_[l].data(), L.out_size,
                                                 d_pre_.data(), L.out_size});
      const S* in = l == 0 ? input_ : act_[l - 1].data();
      // d_in_ may be what dy pointed at: the ReLU backward above has read it into d_pre_.
      backend_->conv2d_backward(L.at(N), in, params + L.w, d_pre_.data(),
                                l == 0 ? nullptr : d_in_.data(), grads + L.w, grads + L.b);
      dy = d_in_.data();
    }
  }

 private:
  struct layer {
    conv2d_shape shape;  ///< batch set per call
    std::size_t in_size = 0, out_size = 0, w = 0, b = 0;
    conv2d_shape at(std::size_t N) const {
      conv2d_shape s = shape;
      s.batch = static_cast<int>(N);
      return s;
    }
  };

  template <class Buffer>
  void grow(Buffer& b, std::size_t n) {
    if (b.size() < n)
      b = backend_->template allocate<S>(n);
  }

  Backend* backend_;
  std::vector<layer> layers_;
  std::size_t num_parameters_ = 0;
  const S* input_ = nullptr;
  std::vector<buffer<S>> act_;  ///< [N, out_size] each convolution's output after ReLU
  buffer<S> d_pre_;             ///< gradient w.r.t. a convolution's output before its ReLU
  buffer<S> d_in_;              ///< gradient w.r.t. a later convolution's input
};

template <class Backend, class S>
struct backend_torso<Backend, S, small_conv_torso_config> {
  using type = backend_small_conv_torso<Backend, S>;
};

}  // namespace seedrl::detail
