#pragma once
/// \file
/// `conv_stack<S>`: convolutions (`conv2d`), each followed by ReLU, on NCHW batches (one image
/// per row). The output is the last convolution's activations flattened in NCHW order
/// (PyTorch's `flatten(1)`). Models seedrl::FeatureStack (seedrl/net/parts/torso.hpp); the
/// Nature CNN (seedrl/net/nature_cnn.hpp) and `small_conv` (seedrl/net/parts/small_conv.hpp)
/// are conv stacks with fixed shapes.
///
/// Parameters: each convolution's W [O, C*KH*KW] then b [O], first first; each initialised as
/// `conv2d::init` (PyTorch's default) in order.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/conv2d.hpp"
#include "seedrl/net/parts/torso.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Convolutions with ReLU; see the file comment.
template <std::floating_point S>
class conv_stack {
 public:
  /// One convolution per entry; each must read what the one before writes.
  explicit conv_stack(const std::vector<conv2d_config>& layers) {
    if (layers.empty())
      throw std::invalid_argument("seedrl::conv_stack: needs at least one convolution");
    for (const auto& c : layers) {
      if (!convs_.empty()) {
        const auto& below = convs_.back();
        if (c.in_channels != below.config().out_channels ||
            c.input_height != below.output_height() || c.input_width != below.output_width()) {
          throw std::invalid_argument(
              "seedrl::conv_stack: a convolution does not read what the one before it writes");
        }
      }
      convs_.emplace_back(c);
    }
  }

  /// The convolutions, first first.
  const std::vector<conv2d<S>>& layers() const noexcept { return convs_; }
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

  /// Inference: the output for x ([N, input_size()]), in a buffer of its own that stays valid
  /// until the next `infer`. Does not disturb what `forward` kept.
  const_matrix_view<S> infer(const_matrix_view<S> x) { return run(x, step_); }

  /// Training forward: as `infer`, and keeps x (the caller keeps it alive) and the
  /// activations for `backward`.
  const_matrix_view<S> forward(const_matrix_view<S> x) {
    x_ = x.data();
    x_stride_ = x.outerStride();
    rows_ = x.rows();
    return run(x, train_);
  }

  /// Accumulates parameter gradients given dy, d loss / d output of the last `forward`
  /// ([N, output_size()]); dy is used as scratch. No input gradient: the input is pixels.
  void backward(matrix_view<S> dy) {
    if (x_ == nullptr)
      throw std::logic_error("seedrl::conv_stack::backward: call forward first");
    const std::ptrdiff_t N = rows_;
    auto& b = train_;
    // d: gradient w.r.t. layer l's output (after ReLU); dy for the last layer, then the two
    // scratch buffers in turn.
    S* d = dy.data();
    std::ptrdiff_t d_stride = dy.outerStride();
    for (std::size_t l = convs_.size(); l-- > 0;) {
      const auto& c = convs_[l];
      auto dl = view(d, N, c.output_size(), d_stride);
      relu_backward(cview(b.act[l].data(), N, c.output_size()), dl);
      if (l == 0) {
        convs_[0].backward_params(cview(x_, N, input_size(), x_stride_), cview(dl), b.workspace);
        break;
      }
      const std::ptrdiff_t below = convs_[l - 1].output_size();
      auto& next = b.grad[l % 2];
      grow(next, N * below);
      auto dx = view(next.data(), N, below);
      convs_[l].backward(cview(b.act[l - 1].data(), N, below), cview(dl), dx, b.workspace);
      d = next.data();
      d_stride = below;
    }
  }

 private:
  struct buffers {
    std::vector<std::vector<S>> act;  // each layer's output after ReLU
    std::vector<S> grad[2];           // backward scratch, alternating
    std::vector<S> workspace;         // conv2d scratch
  };

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

static_assert(FeatureStack<conv_stack<float>, float>);

}  // namespace seedrl
