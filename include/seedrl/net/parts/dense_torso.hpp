#pragma once
/// \file
/// `dense_torso<S, Features, Act>`: a convolutional FeatureStack (seedrl/net/parts/torso.hpp)
/// over C x H x W images, then a dense layer with the activation `Act` (`relu_activation`, the
/// default and SEED RL's choice, or `tanh_activation`; activation.hpp). Models
/// seedrl::Torso. Parameters: the stack's, then the dense W [D, F] row-major and b [D]; the stack
/// is initialised first, then the dense layer (PyTorch's default). The dense layer is
/// `detail::dense_stack`, the code the backend pixel torso runs, here on the host's primitives
/// with its forward product in stack-sized tiles (detail::host_tiled_primitives), so that
/// inference stays off the heap at 3136 x 512.
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

#include "seedrl/backend/detail/host_tiled_primitives.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/impala_resnet.hpp"
#include "seedrl/net/init_scheme.hpp"
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
  using backend_type = detail::host_tiled_primitives;
  using stack_type = detail::dense_stack<S, Act>;

 public:
  dense_torso(Features features, dense_torso_options options)
      : features_(std::move(features)), options_(options) {
    if (options_.size <= 0)
      throw std::invalid_argument("seedrl::dense_torso: the dense size must be positive");
    dense_ = stack_type(static_cast<std::size_t>(features_.output_size()),
                        {static_cast<std::size_t>(options_.size)}, "seedrl::dense_torso");
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
    dense_params_ = params + n;
    dense_grads_ = grads + n;
  }
  void init(random_generator& rng) {
    features_.init(rng);
    init_linear_parameters(rng, dense_params_, options_.size, features_.output_size(),
                           init_scheme::pytorch_default, S(1));
  }

  void infer(const_matrix_view<S> x, matrix_view<S> y) {
    const auto f = features_.infer(x);
    dense_.forward(backend_type{}, step_ws_, dense_params_, f.data(), view_stride(f), view_rows(f),
                   y.data(), view_stride(y));
  }

  void forward(const_matrix_view<S> x, matrix_view<S> y) {
    const auto f = features_.forward(x);
    features_data_ = f.data();
    features_stride_ = view_stride(f);
    rows_ = view_rows(f);
    y_ = y.data();
    y_stride_ = view_stride(y);
    dense_.forward(backend_type{}, train_ws_, dense_params_, features_data_, features_stride_,
                   rows_, y.data(), y_stride_);
  }

  void backward(matrix_view<S> dy) {
    if (features_data_ == nullptr)
      throw std::logic_error("seedrl::dense_torso::backward: call forward first");
    const std::size_t F = dense_.input_size();
    if (d_features_.size() < rows_ * F)
      d_features_.resize(rows_ * F);
    dense_.backward(backend_type{}, train_ws_, dense_params_, dense_grads_, features_data_,
                    features_stride_, rows_, y_, y_stride_, dy.data(), view_stride(dy),
                    d_features_.data(), F, S(0));
    features_.backward(view(d_features_.data(), static_cast<std::ptrdiff_t>(rows_),
                            static_cast<std::ptrdiff_t>(F)));
  }

 private:
  Features features_;
  dense_torso_options options_;
  stack_type dense_;
  S* dense_params_ = nullptr;
  S* dense_grads_ = nullptr;
  // Inference's and training's work arrays (a ReLU backward's scratch), kept apart so that
  // infer never disturbs what forward kept.
  typename stack_type::template workspace<backend_type> step_ws_, train_ws_;
  std::vector<S> d_features_;
  const S* features_data_ = nullptr;
  const S* y_ = nullptr;
  std::size_t features_stride_ = 0, y_stride_ = 0, rows_ = 0;
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
