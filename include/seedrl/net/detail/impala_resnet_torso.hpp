#pragma once
/// \file
/// `backend_impala_resnet_torso`: the IMPALA ResNet (seedrl/net/impala_resnet.hpp) as
/// `backend_pixel_lstm_trainer` runs it on a ComputeBackend, with the interface described in
/// conv_relu_stack.hpp. Each stack: conv 3x3 padding 1 (the backend's conv2d primitive), max
/// pool 3x3 stride 2 padding 1 recording argmaxes, then residual blocks z' = z + conv_b(relu(
/// conv_a(relu(z)))); a ReLU after the last stack. Parameters in the CPU torso's order: per
/// stack its convolution, then the two convolutions of each block, each W [O, C, 3, 3] then
/// b [O].
///
/// The pooling is backend/detail/max_pool2d_kernels.hpp (host_backend runs it as row loops).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/backend/detail/max_pool2d_kernels.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/conv_stack.hpp"
#include "seedrl/net/detail/conv_relu_stack.hpp"
#include "seedrl/net/detail/pytorch_default_init.hpp"
#include "seedrl/net/impala_resnet_config.hpp"

namespace seedrl::detail {

/// A ReLU's backward, dx = y > 0 ? dy : 0 (the dense layers' kernel).
template <class S>
using relu_backward_body = activation_backward_kernel<S, relu_activation>;

/// The IMPALA ResNet on a backend; see the file comment.
template <ComputeBackend Backend, std::floating_point S>
class backend_impala_resnet_torso {
  template <class T>
  using buffer = typename Backend::template buffer<T>;

 public:
  using config_type = impala_resnet_config;

  /// The torso for channels x height x width images; throws std::invalid_argument (its message
  /// starting with `who`) as the CPU torso would refuse the config.
  backend_impala_resnet_torso(Backend& backend, const impala_resnet_config& config,
                              std::size_t channels, std::size_t height, std::size_t width,
                              const std::string& who)
      : backend_(&backend), input_size_(channels * height * width) {
    if (config.channels.empty() || config.blocks_per_stack < 0) {
      throw std::invalid_argument(
          who + ": the ResNet needs at least one stack and blocks_per_stack >= 0");
    }
    std::size_t c = channels, h = height, w = width, at = 0;
    const auto conv3x3 = [&](std::size_t in, std::size_t out, std::size_t hh, std::size_t ww) {
      conv_layer c3;
      c3.shape.in_channels = static_cast<int>(in);
      c3.shape.input_height = static_cast<int>(hh);
      c3.shape.input_width = static_cast<int>(ww);
      c3.shape.out_channels = static_cast<int>(out);
      c3.shape.kernel_h = c3.shape.kernel_w = 3;
      c3.shape.padding_h = c3.shape.padding_w = 1;
      c3.w = at;
      at += out * in * 9;
      c3.b = at;
      at += out;
      return c3;
    };
    for (const std::ptrdiff_t out_channels : config.channels) {
      if (out_channels <= 0)
        throw std::invalid_argument(who + ": ResNet stack channels must be positive");
      const auto out = static_cast<std::size_t>(out_channels);
      stack s;
      s.in_size = c * h * w;
      s.conv = conv3x3(c, out, h, w);
      s.C = out;
      s.H = h;
      s.W = w;
      s.OH = (h + 2 - 3) / 2 + 1;  // 3x3, stride 2, padding 1
      s.OW = (w + 2 - 3) / 2 + 1;
      for (std::ptrdiff_t k = 0; k < 2 * config.blocks_per_stack; ++k)
        s.blocks.push_back(conv3x3(out, out, s.OH, s.OW));
      c = out;
      h = s.OH;
      w = s.OW;
      stacks_.push_back(std::move(s));
    }
    num_parameters_ = at;
  }

  std::size_t num_parameters() const noexcept { return num_parameters_; }
  std::size_t output_size() const noexcept { return stacks_.back().pooled_size(); }

  /// Draws the parameters into host memory (num_parameters() values) as the CPU torso does:
  /// per stack its convolution, then the block convolutions in order, each W then b uniform
  /// in +-1/sqrt(C*KH*KW) (`conv2d::init`).
  void init(random_generator& rng, S* params) const {
    const auto draw = [&](const conv_layer& L) {
      const auto fan_in = static_cast<std::size_t>(L.shape.in_channels) *
                          static_cast<std::size_t>(L.shape.kernel_h * L.shape.kernel_w);
      pytorch_default_fill(rng, params + L.w,
                           L.b + static_cast<std::size_t>(L.shape.out_channels) - L.w, fan_in);
    };
    for (const stack& s : stacks_) {
      draw(s.conv);
      for (const conv_layer& L : s.blocks)
        draw(L);
    }
  }
  std::size_t max_batch() const noexcept {
    std::size_t widest = std::max<std::size_t>(input_size_, 1);
    for (const stack& s : stacks_)
      widest = std::max({widest, s.in_size, s.conv_size(),
                         static_cast<std::size_t>(s.conv.shape.in_channels) * 9});
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) / widest;
  }

  /// Sizes the activations for N images; reallocates only to grow.
  void reserve(std::size_t N) {
    std::size_t conv_out = 0, pooled = 0;
    for (stack& s : stacks_) {
      const std::size_t P = s.pooled_size(), blocks = s.blocks.size() / 2;
      grow(s.argmax, N * P);
      s.z.resize(blocks + 1);
      s.r1.resize(blocks);
      s.r2.resize(blocks);
      for (auto& z : s.z)
        grow(z, N * P);
      for (std::size_t j = 0; j < blocks; ++j) {
        grow(s.r1[j], N * P);
        grow(s.r2[j], N * P);
      }
      conv_out = std::max(conv_out, s.conv_size());
      pooled = std::max(pooled, P);
    }
    grow(out_, N * output_size());
    grow(conv_out_, N * conv_out);  // forward: the convolution's output; backward: its gradient
    grow(dz_, N * pooled);
    grow(da_, N * pooled);
    grow(db_, N * pooled);
  }

  /// Sizes `infer`'s buffers for N images: one of the widest convolution output and two of
  /// the widest pooled image. Reallocates only to grow.
  void reserve_inference(std::size_t N) {
    std::size_t conv_out = 0, pooled = 0;
    for (const stack& s : stacks_) {
      conv_out = std::max(conv_out, s.conv_size());
      pooled = std::max(pooled, s.pooled_size());
    }
    grow(step_a_, N * conv_out);
    grow(step_z_, N * pooled);
    grow(step_u_, N * pooled);
  }

  /// Inference: the features of input [N, C*H*W] in a buffer valid until the next `infer`,
  /// keeping nothing for `backward` (no argmaxes, no block activations) and leaving what
  /// `forward` kept alone; needs `reserve_inference` for at least N.
  const S* infer(const S* params, const S* input, std::size_t N) {
    Backend& be = *backend_;
    const S* in = input;
    for (const stack& s : stacks_) {
      const std::size_t P = s.pooled_size(), blocks = s.blocks.size() / 2;
      be.conv2d_forward(s.conv.at(N), in, params + s.conv.w, params + s.conv.b, step_a_.data());
      be.for_each(N * P, max_pool_forward_kernel<S>{step_a_.data(), s.conv_size(), step_z_.data(),
                                                    P, nullptr, s.pool()});
      for (std::size_t j = 0; j < blocks; ++j) {
        const conv_layer& a = s.blocks[2 * j];
        const conv_layer& b = s.blocks[2 * j + 1];
        be.for_each(N * P, relu_copy_kernel<S>{step_z_.data(), step_a_.data()});
        be.conv2d_forward(a.at(N), step_a_.data(), params + a.w, params + a.b, step_u_.data());
        for_each_2d(be, N, P, activation_kernel<S, relu_activation>{step_u_.data(), P});
        be.conv2d_forward(b.at(N), step_u_.data(), params + b.w, params + b.b, step_a_.data());
        be.for_each(N * P, add_kernel<S>{step_a_.data(), step_z_.data()});
      }
      in = step_z_.data();
    }
    for_each_2d(be, N, output_size(),
                activation_kernel<S, relu_activation>{step_z_.data(), output_size()});
    return step_z_.data();
  }

  /// The features of input [N, C*H*W] (kept, with the activations, for `backward`).
  const S* forward(const S* params, const S* input, std::size_t N) {
    Backend& be = *backend_;
    input_ = input;
    const S* in = input;
    for (stack& s : stacks_) {
      const std::size_t P = s.pooled_size(), blocks = s.blocks.size() / 2;
      be.conv2d_forward(s.conv.at(N), in, params + s.conv.w, params + s.conv.b, conv_out_.data());
      be.for_each(N * P, max_pool_forward_kernel<S>{conv_out_.data(), s.conv_size(), s.z[0].data(),
                                                    P, s.argmax.data(), s.pool()});
      for (std::size_t j = 0; j < blocks; ++j) {
        const conv_layer& a = s.blocks[2 * j];
        const conv_layer& b = s.blocks[2 * j + 1];
        be.for_each(N * P, relu_copy_kernel<S>{s.z[j].data(), s.r1[j].data()});
        be.conv2d_forward(a.at(N), s.r1[j].data(), params + a.w, params + a.b, s.r2[j].data());
        for_each_2d(be, N, P, activation_kernel<S, relu_activation>{s.r2[j].data(), P});
        be.conv2d_forward(b.at(N), s.r2[j].data(), params + b.w, params + b.b, s.z[j + 1].data());
        be.for_each(N * P, add_kernel<S>{s.z[j].data(), s.z[j + 1].data()});
      }
      in = s.z[blocks].data();
    }
    be.for_each(N * output_size(), relu_copy_kernel<S>{in, out_.data()});
    return out_.data();
  }

  /// Adds the parameter gradients into grads from d_features [N, output_size()]; needs the
  /// last `forward` on the same N. The input (pixels) gets no gradient.
  void backward(const S* params, S* grads, const S* d_features, std::size_t N) {
    Backend& be = *backend_;
    const std::size_t F = output_size();
    for_each_2d(be, N, F, relu_backward_body<S>{d_features, F, out_.data(), F, dz_.data(), F});
    for (std::size_t si = stacks_.size(); si-- > 0;) {
      stack& s = stacks_[si];
      const std::size_t P = s.pooled_size(), blocks = s.blocks.size() / 2;
      for (std::size_t j = blocks; j-- > 0;) {
        // z' = z + conv_b(relu(conv_a(relu(z)))): the skip passes dz through unchanged.
        const conv_layer& a = s.blocks[2 * j];
        const conv_layer& b = s.blocks[2 * j + 1];
        be.conv2d_backward(b.at(N), s.r2[j].data(), params + b.w, dz_.data(), da_.data(),
                           grads + b.w, grads + b.b);
        for_each_2d(be, N, P,
                    relu_backward_body<S>{da_.data(), P, s.r2[j].data(), P, da_.data(), P});
        be.conv2d_backward(a.at(N), s.r1[j].data(), params + a.w, da_.data(), db_.data(),
                           grads + a.w, grads + a.b);
        for_each_2d(be, N, P,
                    relu_backward_body<S>{db_.data(), P, s.r1[j].data(), P, db_.data(), P});
        be.for_each(N * P, add_kernel<S>{db_.data(), dz_.data()});
      }
      be.for_each(N * s.conv_size(),
                  max_pool_backward_kernel<S>{dz_.data(), s.pooled_size(), s.argmax.data(),
                                              conv_out_.data(), s.conv_size(), s.pool()});
      const S* in = si == 0 ? input_ : stacks_[si - 1].z.back().data();
      // Its input gradient is the previous stack's output gradient: straight into dz_.
      be.conv2d_backward(s.conv.at(N), in, params + s.conv.w, conv_out_.data(),
                         si == 0 ? nullptr : dz_.data(), grads + s.conv.w, grads + s.conv.b);
    }
  }

 private:
  struct conv_layer {
    conv2d_shape shape;  ///< batch set per call
    std::size_t w = 0, b = 0;
    conv2d_shape at(std::size_t N) const {
      conv2d_shape s = shape;
      s.batch = static_cast<int>(N);
      return s;
    }
  };
  struct stack {
    conv_layer conv;
    std::vector<conv_layer> blocks;   ///< two per residual block
    std::size_t in_size = 0;          ///< elements of the stack's input image
    std::size_t C = 0, H = 0, W = 0;  ///< the convolution's output (the pool's input)
    std::size_t OH = 0, OW = 0;       ///< the pool's output
    std::size_t conv_size() const noexcept { return C * H * W; }
    std::size_t pooled_size() const noexcept { return C * OH * OW; }
    /// IMPALA's pooling: 3x3, stride 2, padding 1.
    max_pool2d_geometry pool() const noexcept { return {C, H, W, OH, OW, 3, 3, 2, 2, 1, 1}; }
    buffer<std::int32_t> argmax;       ///< [N, pooled_size()]
    std::vector<buffer<S>> z, r1, r2;  ///< z[0] the pool's output; block j: z[j] -> z[j+1]
  };

  template <class Buffer>
  void grow(Buffer& b, std::size_t n) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(b.data())>>;
    if (b.size() < n)
      b = backend_->template allocate<T>(n);
  }

  Backend* backend_;
  std::vector<stack> stacks_;
  std::size_t input_size_ = 0;
  std::size_t num_parameters_ = 0;
  const S* input_ = nullptr;
  buffer<S> out_;                       ///< [N, output_size()] after the final ReLU
  buffer<S> conv_out_;                  ///< a stack convolution's output, then its gradient
  buffer<S> dz_, da_, db_;              ///< a stack output's gradient, then a block's two
  buffer<S> step_a_, step_z_, step_u_;  ///< inference: a convolution's output, z, a block's middle
};

}  // namespace seedrl::detail

template <class Backend, class S>
struct seedrl::backend_conv_stack<Backend, S, seedrl::impala_resnet_config> {
  using type = seedrl::detail::backend_impala_resnet_torso<Backend, S>;
};
