#pragma once
/// \file
/// The Nature DQN convolutional torso (Mnih et al. 2015): conv 8x8 stride 4, conv 4x4
/// stride 2, conv 3x3 stride 1, each followed by ReLU, on NCHW batches (one image per row, as
/// `conv2d`). The output is the last convolution's activations flattened in NCHW order
/// (PyTorch's `flatten(1)`); the dense layer that follows belongs to `dense_torso`
/// (`nature_cnn_torso`, seedrl/net/parts/dense_torso.hpp). Models `FeatureStack`
/// (seedrl/net/parts/torso.hpp) and `PixelTorso` (pixel_lstm_agent.hpp).

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/conv2d.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// The Nature CNN torso; see the file comment.
template <std::floating_point S>
class nature_cnn {
 public:
  using config_type = nature_cnn_config;

  /// A torso for images of `channels` x `height` x `width`.
  nature_cnn(const nature_cnn_config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
             std::ptrdiff_t width) {
    constexpr std::ptrdiff_t kernels[3] = {8, 4, 3}, strides[3] = {4, 2, 1};
    std::ptrdiff_t c = channels, h = height, w = width;
    for (std::size_t l = 0; l < 3; ++l) {
      if (h < kernels[l] || w < kernels[l]) {
        throw std::invalid_argument("seedrl::nature_cnn: a " + std::to_string(height) + "x" +
                                    std::to_string(width) +
                                    " image is too small for the three convolutions (36x36 is "
                                    "the smallest that fits)");
      }
      convs_[l] = conv2d<S>(conv2d_config{.in_channels = c,
                                          .input_height = h,
                                          .input_width = w,
                                          .out_channels = config.channels[l],
                                          .kernel_h = kernels[l],
                                          .kernel_w = kernels[l],
                                          .stride_h = strides[l],
                                          .stride_w = strides[l]});
      c = config.channels[l];
      h = convs_[l].output_height();
      w = convs_[l].output_width();
    }
  }

  std::ptrdiff_t input_size() const noexcept { return convs_[0].input_size(); }
  std::ptrdiff_t output_size() const noexcept { return convs_[2].output_size(); }

  std::size_t num_parameters() const noexcept {
    return convs_[0].num_parameters() + convs_[1].num_parameters() + convs_[2].num_parameters();
  }
  void bind(S* params, S* grads) noexcept {
    for (auto& c : convs_) {
      c.bind(params, grads);
      params += c.num_parameters();
      grads += c.num_parameters();
    }
  }
  void init(random_generator& rng) {
    for (auto& c : convs_)
      c.init(rng);
  }

  /// Inference: the torso's output for x ([N, input_size()]), in a buffer of its own that
  /// stays valid until the next `infer`. Does not disturb what `forward` kept.
  const_matrix_view<S> infer(const_matrix_view<S> x) { return run(x, step_); }

  /// Training forward: as `infer`, and keeps x (the caller keeps it alive) and the
  /// activations for `backward`.
  const_matrix_view<S> forward(const_matrix_view<S> x) {
    x_ = x.data();
    rows_ = x.rows();
    return run(x, train_);
  }

  /// Accumulates parameter gradients given dy, d loss / d output of the last `forward`
  /// ([N, output_size()]); dy is used as scratch. No input gradient: the input is pixels.
  void backward(matrix_view<S> dy) {
    const std::ptrdiff_t N = rows_;
    if (x_ == nullptr)
      throw std::logic_error("seedrl::nature_cnn::backward: call forward first");
    auto& a = train_.act;
    grow(train_.grad[0], N * convs_[1].output_size());
    grow(train_.grad[1], N * convs_[0].output_size());
    relu_backward(cview(a[2].data(), N, convs_[2].output_size()), dy);
    auto d1 = view(train_.grad[0].data(), N, convs_[1].output_size());
    convs_[2].backward(cview(a[1].data(), N, convs_[1].output_size()), cview(dy), d1,
                       train_.workspace);
    relu_backward(cview(a[1].data(), N, convs_[1].output_size()), d1);
    auto d0 = view(train_.grad[1].data(), N, convs_[0].output_size());
    convs_[1].backward(cview(a[0].data(), N, convs_[0].output_size()), cview(d1), d0,
                       train_.workspace);
    relu_backward(cview(a[0].data(), N, convs_[0].output_size()), d0);
    convs_[0].backward_params(cview(x_, N, input_size()), cview(d0), train_.workspace);
  }

 private:
  struct buffers {
    std::array<std::vector<S>, 3> act;   // each layer's output after ReLU
    std::array<std::vector<S>, 2> grad;  // backward scratch
    std::vector<S> workspace;            // conv2d scratch
  };

  const_matrix_view<S> run(const_matrix_view<S> x, buffers& b) {
    const std::ptrdiff_t N = x.rows();
    std::size_t ws = 0;
    for (const auto& c : convs_)
      ws = std::max(ws, c.workspace_size(N));
    if (b.workspace.size() < ws)
      b.workspace.resize(ws);
    const S* in = x.data();
    std::ptrdiff_t stride = x.outerStride();
    for (std::size_t l = 0; l < 3; ++l) {
      const auto& c = convs_[l];
      grow(b.act[l], N * c.output_size());
      auto y = view(b.act[l].data(), N, c.output_size());
      c.forward(cview(in, N, c.input_size(), stride), y, b.workspace);
      relu_forward(y);
      in = y.data();
      stride = c.output_size();
    }
    return cview(b.act[2].data(), N, output_size());
  }

  static void grow(std::vector<S>& v, std::ptrdiff_t n) {
    if (v.size() < static_cast<std::size_t>(n))
      v.resize(static_cast<std::size_t>(n));
  }

  std::array<conv2d<S>, 3> convs_;
  buffers step_, train_;
  const S* x_ = nullptr;
  std::ptrdiff_t rows_ = 0;
};

}  // namespace seedrl
