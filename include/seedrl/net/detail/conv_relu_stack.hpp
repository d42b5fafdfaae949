#pragma once
/// \file
/// `backend_conv_relu_stack`: convolutions, each followed by ReLU, on a ComputeBackend, given
/// their shapes: what the Nature CNN and the small conv stack are on the backend (each of those
/// torsos only checks its config and lays out its shapes). The convolutions are the backend's
/// conv2d primitives (cuDNN on a GPU built with it, im2col + GEMM on the CPU); the ReLUs are
/// for_each bodies. Parameters in the CPU stacks' order: for each convolution W [O, C, KH, KW]
/// then b [O].
///
/// It provides what a conv stack provides (seedrl/net/conv_stack.hpp), as
/// `backend_impala_resnet_torso` does.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/detail/pytorch_default_init.hpp"

namespace seedrl::detail {

/// Convolutions with ReLU on a backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S>
class backend_conv_relu_stack {
  template <class T>
  using buffer = typename Backend::template buffer<T>;

 public:
  /// The stack of `shapes` (batch unset), each one's input the previous one's output; the
  /// torsos check their configs before they get here.
  backend_conv_relu_stack(Backend& backend, const std::vector<conv2d_shape>& shapes)
      : backend_(&backend) {
    if (shapes.empty())
      throw std::invalid_argument("seedrl::detail::backend_conv_relu_stack: no convolution");
    std::size_t at = 0;
    for (const conv2d_shape& shape : shapes) {
      layer L;
      L.shape = shape;
      const auto c = static_cast<std::size_t>(shape.in_channels);
      const auto o = static_cast<std::size_t>(shape.out_channels);
      L.in_size = c * static_cast<std::size_t>(shape.input_height) *
                  static_cast<std::size_t>(shape.input_width);
      L.out_size = o * static_cast<std::size_t>(shape.output_height()) *
                   static_cast<std::size_t>(shape.output_width());
      L.w = at;
      at += o * c * static_cast<std::size_t>(shape.kernel_h * shape.kernel_w);
      L.b = at;
      at += o;
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
      const std::size_t taps = static_cast<std::size_t>(L.shape.in_channels) *
                               static_cast<std::size_t>(L.shape.kernel_h * L.shape.kernel_w);
      widest = std::max({widest, L.in_size, L.out_size, taps});
    }
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) / widest;
  }

  /// Draws the parameters into host memory (num_parameters() values) as the CPU stacks do:
  /// per convolution, in order, W then b uniform in +-1/sqrt(C*KH*KW) (`conv2d::init`).
  void init(random_generator& rng, S* params) const {
    for (const layer& L : layers_)
      pytorch_default_fill(rng, params + L.w, L.b + L.out_channels() - L.w, L.fan_in());
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

  /// Sizes `infer`'s buffers (the activations, not the gradients) for N images.
  void reserve_inference(std::size_t N) {
    for (std::size_t l = 0; l < layers_.size(); ++l)
      grow(act_[l], N * layers_[l].out_size);
  }

  /// Inference: the features of input [N, C*H*W], in a buffer valid until the next `infer`;
  /// needs `reserve_inference` for at least N. It writes the activations `forward` keeps:
  /// call it on an instance of its own.
  const S* infer(const S* params, const S* input, std::size_t N) { return run(params, input, N); }

  /// The features of input [N, C*H*W] (kept, with the activations, for `backward`).
  const S* forward(const S* params, const S* input, std::size_t N) {
    input_ = input;
    return run(params, input, N);
  }

  /// Adds the parameter gradients into grads from d_features [N, output_size()]; needs the
  /// last `forward` on the same N. The input (pixels) gets no gradient.
  void backward(const S* params, S* grads, const S* d_features, std::size_t N) {
    const S* dy = d_features;
    for (std::size_t l = layers_.size(); l-- > 0;) {
      const layer& L = layers_[l];
      for_each_2d(*backend_, N, L.out_size,
                  activation_backward_kernel<S, relu_activation>{
                      dy, L.out_size, act_[l].data(), L.out_size, d_pre_.data(), L.out_size});
      const S* in = l == 0 ? input_ : act_[l - 1].data();
      // d_in_ may be what dy pointed at: the ReLU backward above has read it into d_pre_.
      backend_->conv2d_backward(L.at(N), in, params + L.w, d_pre_.data(),
                                l == 0 ? nullptr : d_in_.data(), grads + L.w, grads + L.b);
      dy = d_in_.data();
    }
  }

 private:
  /// Each convolution and its ReLU into act_ (sized by the caller); the last one's output.
  const S* run(const S* params, const S* input, std::size_t N) {
    const S* in = input;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const layer& L = layers_[l];
      backend_->conv2d_forward(L.at(N), in, params + L.w, params + L.b, act_[l].data());
      for_each_2d(*backend_, N, L.out_size,
                  activation_kernel<S, relu_activation>{act_[l].data(), L.out_size});
      in = act_[l].data();
    }
    return act_.back().data();
  }

  struct layer {
    conv2d_shape shape;  ///< batch set per call
    std::size_t in_size = 0, out_size = 0, w = 0, b = 0;
    std::size_t out_channels() const noexcept {
      return static_cast<std::size_t>(shape.out_channels);
    }
    std::size_t fan_in() const noexcept {
      return static_cast<std::size_t>(shape.in_channels) *
             static_cast<std::size_t>(shape.kernel_h) * static_cast<std::size_t>(shape.kernel_w);
    }
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

}  // namespace seedrl::detail
