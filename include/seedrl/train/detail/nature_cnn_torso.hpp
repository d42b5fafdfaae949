#pragma once
/// \file
/// `backend_nature_cnn_torso`: the Nature CNN (three convolutions with ReLU, as
/// seedrl/net/nature_cnn.hpp) as `backend_pixel_lstm_trainer` runs it on a ComputeBackend. The
/// convolutions are the backend's conv2d primitives (cuDNN on a GPU built with it, im2col +
/// GEMM on the CPU); the ReLUs are for_each bodies. Parameters in the CPU torso's order: for
/// each convolution W [O, C, KH, KW] then b [O].
///
/// A backend torso (this one and `backend_impala_resnet_torso`) is what the pixel trainer asks
/// of its torso: `num_parameters()`, `output_size()` (features per image), `max_batch()` (the
/// most images whose tensors fit int indexing), `reserve(N)`, `forward(params, input, N)`
/// returning the features [N, output_size()] (and keeping what backward needs) and
/// `backward(params, grads, d_features, N)` adding the parameter gradients into `grads`.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/train/detail/mlp_lstm_kernels.hpp"
#include "seedrl/train/detail/pixel_lstm_kernels.hpp"

namespace seedrl::detail {

/// Which backend torso runs a torso config; specialised next to each torso.
template <class Backend, class S, class TorsoConfig>
struct backend_torso;

/// The Nature CNN on a backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S>
class backend_nature_cnn_torso {
  template <class T>
  using buffer = typename Backend::template buffer<T>;

 public:
  using config_type = nature_cnn_config;

  /// The torso for channels x height x width images; throws std::invalid_argument (its message
  /// starting with `who`) on non-positive channels or an image too small for the kernels.
  backend_nature_cnn_torso(Backend& backend, const nature_cnn_config& config, std::size_t channels,
                           std::size_t height, std::size_t width, const std::string& who)
      : backend_(&backend) {
    for (const std::ptrdiff_t c : config.channels) {
      if (c <= 0)
        throw std::invalid_argument(who + ": convolution channels must be positive");
    }
    constexpr int kernels[3] = {8, 4, 3}, strides[3] = {4, 2, 1};
    std::size_t c = channels, h = height, w = width, at = 0;
    for (std::size_t l = 0; l < 3; ++l) {
      if (h < static_cast<std::size_t>(kernels[l]) || w < static_cast<std::size_t>(kernels[l])) {
        throw std::invalid_argument(
            who + ": a " + std::to_string(height) + "x" + std::to_string(width) +
            " image is too small for the three convolutions (36x36 is the smallest that fits)");
      }
      layer& L = layers_[l];
      L.shape.in_channels = static_cast<int>(c);
      L.shape.input_height = static_cast<int>(h);
      L.shape.input_width = static_cast<int>(w);
      L.shape.out_channels = static_cast<int>(config.channels[l]);
      L.shape.kernel_h = L.shape.kernel_w = kernels[l];
      L.shape.stride_h = L.shape.stride_w = strides[l];
      L.in_size = c * h * w;
      c = static_cast<std::size_t>(config.channels[l]);
      h = static_cast<std::size_t>(L.shape.output_height());
      w = static_cast<std::size_t>(L.shape.output_width());
      L.out_size = c * h * w;
      L.w = at;
      at += c * static_cast<std::size_t>(L.shape.in_channels * kernels[l] * kernels[l]);
      L.b = at;
      at += c;
    }
    num_parameters_ = at;
  }

  std::size_t num_parameters() const noexcept { return num_parameters_; }
  std::size_t output_size() const noexcept { return layers_[2].out_size; }
  std::size_t max_batch() const noexcept {
    std::size_t widest = 1;
    for (const layer& L : layers_) {
      const std::size_t taps = static_cast<std::size_t>(L.shape.in_channels) *
                               static_cast<std::size_t>(L.shape.kernel_h * L.shape.kernel_w);
      widest = std::max({widest, L.in_size, L.out_size, taps});
    }
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) / widest;
  }

  /// Sizes the activations for N images; reallocates only to grow.
  void reserve(std::size_t N) {
    std::size_t d_in = 0, d_out = 0;
    for (std::size_t l = 0; l < 3; ++l) {
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
    for (std::size_t l = 0; l < 3; ++l) {
      const layer& L = layers_[l];
      backend_->conv2d_forward(L.at(N), in, params + L.w, params + L.b, act_[l].data());
      backend_->for_each(N * L.out_size, relu_kernel<S>{act_[l].data()});
      in = act_[l].data();
    }
    return act_[2].data();
  }

  /// Adds the parameter gradients into grads from d_features [N, output_size()]; needs the
  /// last `forward` on the same N. The input (pixels) gets no gradient.
  void backward(const S* params, S* grads, const S* d_features, std::size_t N) {
    const S* dy = d_features;
    for (std::size_t l = 3; l-- > 0;) {
      const layer& L = layers_[l];
      backend_->for_each(N * L.out_size,
                         relu_backward_kernel<S>{dy, L.out_size, act_[l].data(), L.out_size,
                                                 d_pre_.data(), L.out_size});
      const S* in = l == 0 ? input_ : act_[l - 1].data();
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
  layer layers_[3];
  std::size_t num_parameters_ = 0;
  const S* input_ = nullptr;
  buffer<S> act_[3];  ///< [N, out_size] each convolution's output after ReLU
  buffer<S> d_pre_;   ///< gradient w.r.t. a convolution's output before its ReLU
  buffer<S> d_in_;    ///< gradient w.r.t. conv 1 or 2's input
};

template <class Backend, class S>
struct backend_torso<Backend, S, nature_cnn_config> {
  using type = backend_nature_cnn_torso<Backend, S>;
};

}  // namespace seedrl::detail
