#pragma once
/// \file
/// `small_conv<S>`: a few 3x3 stride-1 convolutions, each followed by ReLU, for low-resolution
/// images (MinAtar's 10x10xC, grid worlds), on NCHW batches (one image per row, as `conv2d`),
/// any number of input channels. The output is the last convolution's activations flattened
/// in NCHW order. Models seedrl::FeatureStack (seedrl/net/parts/torso.hpp); as a torso it goes
/// under a dense layer: `small_conv_torso<S>` (seedrl/net/parts/dense_torso.hpp).
///
/// Parameters: each convolution's W [O, C*3*3] then b [O], first first; each initialised as
/// `conv2d::init` (PyTorch's default) in order.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/conv2d.hpp"
#include "seedrl/net/parts/torso.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Output channels of each 3x3 convolution, and the zero padding on each side of each (0: a
/// 10x10 image shrinks to 8x8 then 6x6; 1: it stays 10x10).
struct small_conv_config {
  std::vector<std::ptrdiff_t> channels{16, 32};
  std::ptrdiff_t padding = 0;
};

/// The small conv stack; see the file comment.
template <std::floating_point S>
class small_conv {
 public:
  /// A stack for images of `channels` x `height` x `width`.
  small_conv(const small_conv_config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
             std::ptrdiff_t width) {
    if (config.channels.empty() || config.padding < 0 || channels <= 0 || height <= 0 ||
        width <= 0) {
      throw std::invalid_argument(
          "seedrl::small_conv: needs at least one convolution, padding >= 0 and a positive "
          "image shape");
    }
    std::ptrdiff_t c = channels, h = height, w = width;
    for (std::ptrdiff_t out : config.channels) {
      if (h + 2 * config.padding < 3 || w + 2 * config.padding < 3) {
        throw std::invalid_argument(
            "seedrl::small_conv: a " + std::to_string(height) + "x" + std::to_string(width) +
            " image is too small for " + std::to_string(config.channels.size()) +
            " 3x3 convolutions with padding " + std::to_string(config.padding));
      }
      convs_.emplace_back(conv2d_config{.in_channels = c,
                                        .input_height = h,
                                        .input_width = w,
                                        .out_channels = out,
                                        .kernel_h = 3,
                                        .kernel_w = 3,
                                        .padding_h = config.padding,
                                        .padding_w = config.padding});
      c = out;
      h = convs_.back().output_height();
      w = convs_.back().output_width();
    }
  }

  std::ptrdiff_t input_size() const noexcept { return convs_.front().input_size(); }
  std::ptrdiff_t output_size() const noexcept { return convs_.back().output_size(); }

  std::size_t num_parameters() const noexcept {
    std::size_t n = 0;
    for (const auto& c : convs_)
      n += c.num_parameters();
    return n;
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

  /// Inference: features for x ([N, input_size()]) in a buffer of its own, valid until the
  /// next `infer`. Does not disturb what `forward` kept.
  const_matrix_view<S> infer(const_matrix_view<S> x) { return run(x, step_); }

  /// Training forward: as `infer`, and keeps x (the caller keeps it alive) and the activations.
  const_matrix_view<S> forward(const_matrix_view<S> x) {
    x_ = x.data();
    x_stride_ = x.outerStride();
    rows_ = x.rows();
    return run(x, train_);
  }

  /// Adds parameter gradients given dy = d loss / d output of the last `forward`; dy is used
  /// as scratch. No input gradient: the input is pixels.
  void backward(matrix_view<S> dy) {
    if (x_ == nullptr)
      throw std::logic_error("seedrl::small_conv::backward: call forward first");
    const std::ptrdiff_t N = rows_;
    const auto L = static_cast<std::ptrdiff_t>(convs_.size());
    auto& b = train_;
    grow(b.grad[0], N * max_size());
    grow(b.grad[1], N * max_size());
    // d: gradient w.r.t. layer l's output (after ReLU), in dy for the last layer.
    S* d = dy.data();
    std::ptrdiff_t d_stride = dy.outerStride();
    for (std::ptrdiff_t l = L - 1; l >= 0; --l) {
      const auto& c = convs_[static_cast<std::size_t>(l)];
      auto dl = view(d, N, c.output_size(), d_stride);
      relu_backward(cview(b.act[static_cast<std::size_t>(l)].data(), N, c.output_size()), dl);
      if (l == 0) {
        convs_[0].backward_params(cview(x_, N, input_size(), x_stride_), cview(dl), b.workspace);
      } else {
        const auto& below = convs_[static_cast<std::size_t>(l - 1)];
        S* next = b.grad[static_cast<std::size_t>(l % 2)].data();
        auto dx = view(next, N, below.output_size());
        convs_[static_cast<std::size_t>(l)].backward(
            cview(b.act[static_cast<std::size_t>(l - 1)].data(), N, below.output_size()), cview(dl),
            dx, b.workspace);
        d = next;
        d_stride = below.output_size();
      }
    }
  }

 private:
  struct buffers {
    std::vector<std::vector<S>> act;  // each layer's output after ReLU
    std::vector<S> grad[2];           // backward scratch, alternating
    std::vector<S> workspace;         // conv2d scratch
  };

  std::ptrdiff_t max_size() const noexcept {
    std::ptrdiff_t m = 0;
    for (const auto& c : convs_)
      m = std::max(m, c.output_size());
    return m;
  }

  const_matrix_view<S> run(const_matrix_view<S> x, buffers& b) {
    const std::ptrdiff_t N = x.rows();
    std::size_t ws = 0;
    for (const auto& c : convs_)
      ws = std::max(ws, c.workspace_size(N));
    if (b.workspace.size() < ws)
      b.workspace.resize(ws);
    b.act.resize(convs_.size());
    const S* in = x.data();
    std::ptrdiff_t stride = x.outerStride();
    for (std::size_t l = 0; l < convs_.size(); ++l) {
      const auto& c = convs_[l];
      grow(b.act[l], N * c.output_size());
      auto y = view(b.act[l].data(), N, c.output_size());
      c.forward(cview(in, N, c.input_size(), stride), y, b.workspace);
      relu_forward(y);
      in = y.data();
      stride = c.output_size();
    }
    return cview(b.act.back().data(), N, output_size());
  }

  static void grow(std::vector<S>& v, std::ptrdiff_t n) {
    if (v.size() < static_cast<std::size_t>(n))
      v.resize(static_cast<std::size_t>(n));
  }

  std::vector<conv2d<S>> convs_;
  buffers step_, train_;
  const S* x_ = nullptr;
  std::ptrdiff_t x_stride_ = 0, rows_ = 0;
};

static_assert(FeatureStack<small_conv<float>, float>);

}  // namespace seedrl
