#pragma once
/// \file
/// `dense_torso<S, Features, Act>`: a convolutional FeatureStack (seedrl/net/parts/torso.hpp)
/// over C x H x W images, then a dense layer with the activation `Act` (`relu_activation`, the
/// default and SEED RL's choice, or `tanh_activation`; activation.hpp). Models
/// seedrl::Torso. Parameters: the stack's, then the dense W [D, F] row-major and b [D]; the stack
/// is initialised first, then the dense layer (`linear::init`).
///
/// Ready torsos:
///   - `nature_cnn_torso<S>`: the Nature DQN convolutions (seedrl/net/nature_cnn.hpp);
///   - `impala_resnet_torso<S>`: the IMPALA ResNet stacks (seedrl/net/impala_resnet.hpp);
///   - `small_conv_torso<S>`: 3x3 convolutions for small images (seedrl/net/parts/small_conv.hpp).

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/detail/gemm_tiled.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/impala_resnet.hpp"
#include "seedrl/net/linear.hpp"
#include "seedrl/net/nature_cnn.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/parts/small_conv.hpp"
#include "seedrl/net/parts/torso.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// The dense layer over the features.
struct dense_torso_options {
  std::ptrdiff_t size = 512;  ///< outputs of the dense layer
};

/// A feature stack plus a dense layer; see the file comment.
template <std::floating_point S, FeatureStack<S> Features, Activation<S> Act = relu_activation>
class dense_torso {
 public:
  dense_torso(Features features, dense_torso_options options)
      : features_(std::move(features)), options_(options) {
    if (options_.size <= 0)
      throw std::invalid_argument("seedrl::dense_torso: the dense size must be positive");
    dense_ = linear<S>(features_.output_size(), options_.size);
  }

  const Features& features() const noexcept { return features_; }
  std::ptrdiff_t input_size() const noexcept { return features_.input_size(); }
  std::ptrdiff_t output_size() const noexcept { return options_.size; }
  feature_layout input_layout() const noexcept { return feature_layout::image; }

  std::size_t num_parameters() const noexcept {
    return features_.num_parameters() + dense_.num_parameters();
  }
  void bind(S* params, S* grads) noexcept {
    features_.bind(params, grads);
    const std::size_t n = features_.num_parameters();
    dense_.bind(params + n, grads + n);
  }
  void init(random_generator& rng) {
    features_.init(rng);
    dense_.init(rng);
  }

  void infer(const_matrix_view<S> x, matrix_view<S> y) { apply_dense(features_.infer(x), y); }

  void forward(const_matrix_view<S> x, matrix_view<S> y) {
    const auto f = features_.forward(x);
    features_data_ = f.data();
    rows_ = f.rows();
    y_ = y.data();
    y_stride_ = y.outerStride();
    apply_dense(f, y);
  }

  void backward(matrix_view<S> dy) {
    if (features_data_ == nullptr)
      throw std::logic_error("seedrl::dense_torso::backward: call forward first");
    const std::ptrdiff_t N = rows_, F = features_.output_size();
    activation_backward<Act>(cview(y_, N, options_.size, y_stride_), dy);
    const auto features = cview(features_data_, N, F);
    dense_.backward_params(features, cview(dy));
    if (d_features_.size() < static_cast<std::size_t>(N * F))
      d_features_.resize(static_cast<std::size_t>(N * F));
    auto d_features = view(d_features_.data(), N, F);
    dense_.backward_input(cview(dy), d_features);
    features_.backward(d_features);
  }

 private:
  void apply_dense(const_matrix_view<S> features, matrix_view<S> y) const {
    // linear::forward's plain product would let Eigen malloc its packing buffers at these
    // sizes (3136 x 512); the tiled product keeps inference off the heap.
    detail::gemm_stack_tiled(y, features, dense_.weight().transpose(), false);
    y.rowwise() += dense_.bias();
    activation_forward<Act>(y);
  }

  Features features_;
  dense_torso_options options_;
  linear<S> dense_;
  std::vector<S> d_features_;
  const S* features_data_ = nullptr;
  const S* y_ = nullptr;
  std::ptrdiff_t y_stride_ = 0, rows_ = 0;
};

/// The Nature CNN with its dense layer (512 and ReLU in the paper).
template <std::floating_point S, class Act = relu_activation>
using nature_cnn_torso = dense_torso<S, nature_cnn<S>, Act>;

/// The IMPALA ResNet with its dense layer (256 and ReLU in the paper).
template <std::floating_point S, class Act = relu_activation>
using impala_resnet_torso = dense_torso<S, impala_resnet<S>, Act>;

/// The small conv stack with a dense layer.
template <std::floating_point S, class Act = relu_activation>
using small_conv_torso = dense_torso<S, small_conv<S>, Act>;

static_assert(Torso<nature_cnn_torso<float>, float>);
static_assert(Torso<impala_resnet_torso<double>, double>);
static_assert(Torso<small_conv_torso<float>, float>);

}  // namespace seedrl
