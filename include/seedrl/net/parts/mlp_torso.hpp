#pragma once
/// \file
/// `mlp_torso<S, Act>`: fully connected layers of the given widths, each followed by the
/// activation `Act` (`relu_activation`, the default, or `tanh_activation`; activation.hpp), over
/// flat feature vectors. Models seedrl::Torso (seedrl/net/parts/torso.hpp). Parameters: each
/// layer's W [out, in] row-major then b [out], first layer first; each layer initialised as
/// `linear::init` in order: PyTorch's default, or orthogonal with a gain (sqrt(2) unless told;
/// seedrl/net/init_scheme.hpp) when the options ask.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/linear.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/parts/torso.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Shape of an `mlp_torso`.
struct mlp_torso_options {
  std::ptrdiff_t input_size = 0;               ///< features per observation row
  std::vector<std::ptrdiff_t> widths{64, 64};  ///< one layer per entry, each followed by Act
  /// PyTorch's default (the default), or orthogonal weights x `orthogonal_gain` and zero biases.
  init_scheme init = init_scheme::pytorch_default;
  double orthogonal_gain = orthogonal_hidden_gain;
};

/// The MLP torso; see the file comment.
template <std::floating_point S, Activation<S> Act = relu_activation>
class mlp_torso {
 public:
  explicit mlp_torso(mlp_torso_options options) : options_(std::move(options)) {
    if (options_.input_size <= 0 || options_.widths.empty() ||
        std::any_of(options_.widths.begin(), options_.widths.end(),
                    [](std::ptrdiff_t w) { return w <= 0; })) {
      throw std::invalid_argument(
          "seedrl::mlp_torso: input_size must be positive and widths a non-empty list of "
          "positive sizes");
    }
    std::ptrdiff_t in = options_.input_size;
    for (std::ptrdiff_t w : options_.widths) {
      layers_.emplace_back(in, w);
      in = w;
    }
  }

  const mlp_torso_options& options() const noexcept { return options_; }
  std::ptrdiff_t input_size() const noexcept { return options_.input_size; }
  std::ptrdiff_t output_size() const noexcept { return options_.widths.back(); }
  feature_layout input_layout() const noexcept { return feature_layout::vector; }

  std::size_t num_parameters() const noexcept {
    std::size_t n = 0;
    for (const auto& l : layers_)
      n += l.num_parameters();
    return n;
  }
  void bind(S* params, S* grads) noexcept {
    for (auto& l : layers_) {
      l.bind(params, grads);
      params += l.num_parameters();
      grads += l.num_parameters();
    }
  }
  void init(random_generator& rng) {
    const bool orthogonal = options_.init == init_scheme::orthogonal;
    for (auto& l : layers_)
      l.init(rng, options_.init, static_cast<S>(orthogonal ? options_.orthogonal_gain : 1.0));
  }

  void infer(const_matrix_view<S> x, matrix_view<S> y) { run(x, y, step_hidden_); }

  void forward(const_matrix_view<S> x, matrix_view<S> y) {
    x_ = x.data();
    x_stride_ = x.outerStride();
    y_ = y.data();
    y_stride_ = y.outerStride();
    rows_ = x.rows();
    run(x, y, train_hidden_);
  }

  void backward(matrix_view<S> dy) {
    const std::ptrdiff_t N = rows_;
    if (x_ == nullptr)
      throw std::logic_error("seedrl::mlp_torso::backward: call forward first");
    const auto last = static_cast<std::ptrdiff_t>(layers_.size()) - 1;
    const std::ptrdiff_t widest = *std::max_element(options_.widths.begin(), options_.widths.end());
    grow(d_a_, N * widest);
    grow(d_b_, N * widest);
    S* d = d_a_.data();
    S* d_next = d_b_.data();
    view(d, N, output_size()) = dy;
    for (std::ptrdiff_t k = last; k >= 0; --k) {
      auto& layer = layers_[static_cast<std::size_t>(k)];
      auto dk = view(d, N, layer.out_features());
      Act::backward(output(k, N), dk);
      const auto input = k == 0 ? cview(x_, N, input_size(), x_stride_) : output(k - 1, N);
      layer.backward_params(input, cview(dk));
      if (k > 0) {
        layer.backward_input(cview(dk), view(d_next, N, layer.in_features()));
        std::swap(d, d_next);
      }
    }
  }

 private:
  /// Output of layer k of the last `forward`: a hidden buffer, or y for the last layer.
  const_matrix_view<S> output(std::ptrdiff_t k, std::ptrdiff_t N) const {
    const std::ptrdiff_t w = layers_[static_cast<std::size_t>(k)].out_features();
    if (k == static_cast<std::ptrdiff_t>(layers_.size()) - 1)
      return cview(y_, N, w, y_stride_);
    return cview(train_hidden_[static_cast<std::size_t>(k)].data(), N, w);
  }

  /// Every layer; all but the last write to `hidden`, the last to y.
  void run(const_matrix_view<S> x, matrix_view<S> y, std::vector<std::vector<S>>& hidden) const {
    const std::ptrdiff_t N = x.rows();
    const auto last = static_cast<std::ptrdiff_t>(layers_.size()) - 1;
    hidden.resize(layers_.size() - 1);
    const S* in = x.data();
    std::ptrdiff_t in_width = x.cols(), in_stride = x.outerStride();
    for (std::ptrdiff_t k = 0; k <= last; ++k) {
      const auto& layer = layers_[static_cast<std::size_t>(k)];
      S* out = y.data();
      std::ptrdiff_t stride = y.outerStride();
      if (k < last) {
        grow(hidden[static_cast<std::size_t>(k)], N * layer.out_features());
        out = hidden[static_cast<std::size_t>(k)].data();
        stride = layer.out_features();
      }
      auto out_view = view(out, N, layer.out_features(), stride);
      layer.forward(cview<S>(in, N, in_width, in_stride), out_view);
      Act::forward(out_view);
      in = out;
      in_width = layer.out_features();
      in_stride = stride;
    }
  }

  static void grow(std::vector<S>& v, std::ptrdiff_t n) {
    if (v.size() < static_cast<std::size_t>(n))
      v.resize(static_cast<std::size_t>(n));
  }

  mlp_torso_options options_;
  std::vector<linear<S>> layers_;
  std::vector<std::vector<S>> step_hidden_, train_hidden_;
  std::vector<S> d_a_, d_b_;
  const S* x_ = nullptr;
  const S* y_ = nullptr;
  std::ptrdiff_t x_stride_ = 0, y_stride_ = 0, rows_ = 0;
};

static_assert(Torso<mlp_torso<float>, float>);

}  // namespace seedrl
