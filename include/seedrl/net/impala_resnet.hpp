#pragma once
/// \file
/// The IMPALA ResNet torso (Espeholt et al. 2018, "deep" network), on NCHW batches (one image
/// per row, as `conv2d`). Each stack: conv 3x3 padding 1, max pool 3x3 stride 2 padding 1,
/// then residual blocks of (ReLU, conv 3x3, ReLU, conv 3x3) plus the skip; after the last
/// stack a ReLU. The output is flattened in NCHW order; the dense layer that follows belongs to
/// `dense_torso` (`impala_resnet_torso`, seedrl/net/parts/dense_torso.hpp). Models
/// `FeatureStack` (seedrl/net/parts/torso.hpp) and `PixelTorso` (pixel_lstm_agent.hpp).
///
/// Training keeps every block's input and both ReLU outputs; at 84x84 that is about 0.25 M
/// floats per image, so a 20 x 32 unroll holds about 0.7 GB of activations.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/conv2d.hpp"
#include "seedrl/net/impala_resnet_config.hpp"
#include "seedrl/net/max_pool2d.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// The IMPALA ResNet torso; see the file comment.
template <std::floating_point S>
class impala_resnet {
 public:
  using config_type = impala_resnet_config;

  /// A torso for images of `channels` x `height` x `width`.
  impala_resnet(const impala_resnet_config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
                std::ptrdiff_t width) {
    if (config.channels.empty() || config.blocks_per_stack < 0 || channels <= 0 || height <= 0 ||
        width <= 0) {
      throw std::invalid_argument(
          "seedrl::impala_resnet: needs at least one stack, blocks_per_stack >= 0 and a "
          "positive image shape");
    }
    std::ptrdiff_t c = channels, h = height, w = width;
    for (std::ptrdiff_t out : config.channels) {
      stack s;
      s.conv = conv2d<S>(conv3x3(c, out, h, w));
      s.pool = max_pool2d<S>(max_pool2d_config{.channels = out,
                                               .input_height = h,
                                               .input_width = w,
                                               .kernel_h = 3,
                                               .kernel_w = 3,
                                               .stride_h = 2,
                                               .stride_w = 2,
                                               .padding_h = 1,
                                               .padding_w = 1});
      h = s.pool.output_height();
      w = s.pool.output_width();
      for (std::ptrdiff_t k = 0; k < 2 * config.blocks_per_stack; ++k)
        s.block_convs.emplace_back(conv3x3(out, out, h, w));
      stacks_.push_back(std::move(s));
      c = out;
    }
    input_size_ = channels * height * width;
  }

  std::ptrdiff_t input_size() const noexcept { return input_size_; }
  std::ptrdiff_t output_size() const noexcept { return stacks_.back().pool.output_size(); }

  std::size_t num_parameters() const noexcept {
    std::size_t n = 0;
    for (const auto& s : stacks_) {
      n += s.conv.num_parameters();
      for (const auto& c : s.block_convs)
        n += c.num_parameters();
    }
    return n;
  }
  void bind(S* params, S* grads) noexcept {
    const auto take = [&](conv2d<S>& c) {
      c.bind(params, grads);
      params += c.num_parameters();
      grads += c.num_parameters();
    };
    for (auto& s : stacks_) {
      take(s.conv);
      for (auto& c : s.block_convs)
        take(c);
    }
  }
  void init(random_generator& rng) {
    for (auto& s : stacks_) {
      s.conv.init(rng);
      for (auto& c : s.block_convs)
        c.init(rng);
    }
  }

  /// Inference: the torso's output for x ([N, input_size()]), in a buffer of its own valid
  /// until the next `infer`. Keeps only two ping-pong buffers per block, not the activations.
  const_matrix_view<S> infer(const_matrix_view<S> x) {
    const std::ptrdiff_t N = x.rows();
    reserve_workspace(step_workspace_, N);
    grow(step_a_, N * max_size());
    grow(step_b_, N * max_size());
    grow(step_c_, N * max_size());
    const S* in = x.data();
    std::ptrdiff_t stride = x.outerStride();
    for (const auto& s : stacks_) {
      auto conv_out = view(step_a_.data(), N, s.conv.output_size());
      s.conv.forward(cview(in, N, s.conv.input_size(), stride), conv_out, step_workspace_);
      const std::ptrdiff_t P = s.pool.output_size();
      auto z = view(step_b_.data(), N, P);
      s.pool.forward(cview(conv_out), z);
      for (std::size_t k = 0; k < s.block_convs.size(); k += 2) {
        auto r = view(step_a_.data(), N, P);
        r = z.cwiseMax(S(0));
        auto u = view(step_c_.data(), N, P);
        s.block_convs[k].forward(cview(r), u, step_workspace_);
        relu_forward(u);
        s.block_convs[k + 1].forward(cview(u), r, step_workspace_);
        z += r;
      }
      in = z.data();
      stride = P;
    }
    auto out = view(step_b_.data(), N, output_size());
    relu_forward(out);
    return cview(out);
  }

  /// Training forward: as `infer`, and keeps x (the caller keeps it alive) and every
  /// activation `backward` needs.
  const_matrix_view<S> forward(const_matrix_view<S> x) {
    const std::ptrdiff_t N = x.rows();
    x_ = x.data();
    rows_ = N;
    reserve_workspace(train_workspace_, N);
    const S* in = x.data();
    std::ptrdiff_t stride = x.outerStride();
    for (auto& s : stacks_) {
      const std::ptrdiff_t P = s.pool.output_size();
      grow(s.conv_out, N * s.conv.output_size());
      s.argmax.resize(static_cast<std::size_t>(N * P));
      // z[0] is the pool's output; block j turns z[j] into z[j+1].
      const std::size_t blocks = s.block_convs.size() / 2;
      s.z.resize(blocks + 1);
      s.r1.resize(blocks);
      s.r2.resize(blocks);
      auto conv_out = view(s.conv_out.data(), N, s.conv.output_size());
      s.conv.forward(cview(in, N, s.conv.input_size(), stride), conv_out, train_workspace_);
      grow(s.z[0], N * P);
      s.pool.forward(cview(conv_out), view(s.z[0].data(), N, P), s.argmax);
      for (std::size_t j = 0; j < blocks; ++j) {
        grow(s.r1[j], N * P);
        grow(s.r2[j], N * P);
        grow(s.z[j + 1], N * P);
        const auto z = cview(s.z[j].data(), N, P);
        auto r1 = view(s.r1[j].data(), N, P), r2 = view(s.r2[j].data(), N, P),
             z_next = view(s.z[j + 1].data(), N, P);
        r1 = z.cwiseMax(S(0));
        s.block_convs[2 * j].forward(cview(r1), r2, train_workspace_);
        relu_forward(r2);
        s.block_convs[2 * j + 1].forward(cview(r2), z_next, train_workspace_);
        z_next += z;
      }
      in = s.z[blocks].data();
      stride = P;
    }
    grow(train_out_, N * output_size());
    auto out = view(train_out_.data(), N, output_size());
    out = cview(in, N, output_size()).cwiseMax(S(0));
    return cview(out);
  }

  /// Accumulates parameter gradients given dy, d loss / d output of the last `forward`
  /// ([N, output_size()]); dy is used as scratch. No input gradient: the input is pixels.
  void backward(matrix_view<S> dy) {
    const std::ptrdiff_t N = rows_;
    if (x_ == nullptr)
      throw std::logic_error("seedrl::impala_resnet::backward: call forward first");
    grow(grad_z_, N * max_size());
    grow(grad_a_, N * max_size());
    grow(grad_b_, N * max_size());
    relu_backward(cview(train_out_.data(), N, output_size()), dy);
    const S* dz_in = dy.data();  // d loss / d (last stack's output)
    for (std::size_t si = stacks_.size(); si-- > 0;) {
      auto& s = stacks_[si];
      const std::ptrdiff_t P = s.pool.output_size();
      const std::size_t blocks = s.block_convs.size() / 2;
      auto dz = view(grad_z_.data(), N, P);
      dz = cview(dz_in, N, P);
      for (std::size_t j = blocks; j-- > 0;) {
        // z_next = z + conv_b(relu(conv_a(relu(z)))): the skip passes dz through unchanged.
        auto da = view(grad_a_.data(), N, P), db = view(grad_b_.data(), N, P);
        const auto r1 = cview(s.r1[j].data(), N, P), r2 = cview(s.r2[j].data(), N, P);
        s.block_convs[2 * j + 1].backward(r2, cview(dz), da, train_workspace_);
        relu_backward(r2, da);
        s.block_convs[2 * j].backward(r1, cview(da), db, train_workspace_);
        relu_backward(r1, db);
        dz += db;
      }
      auto d_conv = view(grad_a_.data(), N, s.conv.output_size());
      s.pool.backward(cview(dz), s.argmax, d_conv);
      const S* in = si == 0 ? x_ : stacks_[si - 1].z.back().data();
      const auto x = cview(in, N, s.conv.input_size());
      if (si == 0) {
        s.conv.backward_params(x, cview(d_conv), train_workspace_);
      } else {
        auto dx = view(grad_b_.data(), N, s.conv.input_size());
        s.conv.backward(x, cview(d_conv), dx, train_workspace_);
        dz_in = dx.data();
      }
    }
  }

 private:
  struct stack {
    conv2d<S> conv;
    max_pool2d<S> pool;
    std::vector<conv2d<S>> block_convs;  // two per residual block
    // training activations
    std::vector<S> conv_out;
    std::vector<typename max_pool2d<S>::index_type> argmax;
    std::vector<std::vector<S>> z, r1, r2;
  };

  static conv2d_config conv3x3(std::ptrdiff_t in, std::ptrdiff_t out, std::ptrdiff_t h,
                               std::ptrdiff_t w) {
    return {.in_channels = in,
            .input_height = h,
            .input_width = w,
            .out_channels = out,
            .kernel_h = 3,
            .kernel_w = 3,
            .padding_h = 1,
            .padding_w = 1};
  }

  /// The widest activation (per image) anywhere in the torso.
  std::ptrdiff_t max_size() const noexcept {
    std::ptrdiff_t m = input_size_;
    for (const auto& s : stacks_)
      m = std::max(m, s.conv.output_size());
    return m;
  }

  void reserve_workspace(std::vector<S>& ws, std::ptrdiff_t N) const {
    std::size_t n = 0;
    for (const auto& s : stacks_) {
      n = std::max(n, s.conv.workspace_size(N));
      for (const auto& c : s.block_convs)
        n = std::max(n, c.workspace_size(N));
    }
    if (ws.size() < n)
      ws.resize(n);
  }

  static void grow(std::vector<S>& v, std::ptrdiff_t n) {
    if (v.size() < static_cast<std::size_t>(n))
      v.resize(static_cast<std::size_t>(n));
  }

  std::vector<stack> stacks_;
  std::ptrdiff_t input_size_ = 0;
  std::vector<S> step_a_, step_b_, step_c_, step_workspace_;
  std::vector<S> train_out_, train_workspace_, grad_z_, grad_a_, grad_b_;
  const S* x_ = nullptr;
  std::ptrdiff_t rows_ = 0;
};

}  // namespace seedrl
