#pragma once
/// \file
/// `mlp_torso<S, Act>`: fully connected layers of the given widths, each followed by the
/// activation `Act` (`relu_activation`, the default, `tanh_activation` or your own;
/// activation_math.hpp), over flat feature vectors. Models seedrl::Torso
/// (seedrl/net/parts/torso.hpp). Parameters: each layer's W [out, in] row-major then b [out],
/// first layer first; each layer initialised as `linear::init` in order: PyTorch's default, or
/// orthogonal with a gain (sqrt(2) unless told; seedrl/net/init_scheme.hpp) when the options
/// ask. With `towers = 2` it is two such MLPs side by side on the same input, sharing nothing
/// (the first's parameters, then the second's), whose outputs are the first then the second
/// half of each output row: the value and policy networks of an agent whose heads read one
/// tower each (agent_options::value_features: the value head reads the first). The layers are
/// `detail::dense_stack`, run here on the host's primitives: the same code the backend trainers run
/// (`backend_mlp_torso`), with host_backend's GEMM (detail::host_sgemm_primitives: oneDNN's sgemm
/// from 16 rows; Eigen below, and where seedrl has no oneDNN).

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/backend/detail/host_sgemm_primitives.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/init_scheme.hpp"
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
  /// 1, or 2 for two independent MLPs of these widths side by side (see the file comment).
  std::ptrdiff_t towers = 1;
};

/// The MLP torso; see the file comment.
template <std::floating_point S, Activation<S> Act = relu_activation>
class mlp_torso {
  using backend_type = detail::host_sgemm_primitives;
  using stack_type = detail::dense_stack<S, Act>;

 public:
  explicit mlp_torso(mlp_torso_options options)
      : options_(std::move(options)), stack_(checked_stack(options_)) {}

  const mlp_torso_options& options() const noexcept { return options_; }
  std::ptrdiff_t input_size() const noexcept { return options_.input_size; }
  std::ptrdiff_t output_size() const noexcept {
    return options_.towers * static_cast<std::ptrdiff_t>(tower_width());
  }
  feature_layout input_layout() const noexcept { return feature_layout::vector; }

  std::size_t num_parameters() const noexcept { return towers() * stack_.num_parameters(); }
  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }
  void init(random_generator& rng) {
    const bool orthogonal = options_.init == init_scheme::orthogonal;
    const auto gain = static_cast<S>(orthogonal ? options_.orthogonal_gain : 1.0);
    for (std::size_t t = 0; t < towers(); ++t) {
      std::ptrdiff_t in = options_.input_size;
      for (std::size_t k = 0; k < stack_.num_layers(); ++k) {
        const auto out = static_cast<std::ptrdiff_t>(stack_.width(k));
        init_linear_parameters(rng, tower_params(t) + stack_.weight_offset(k), out, in,
                               options_.init, gain);
        in = out;
      }
    }
  }

  void infer(const_matrix_view<S> x, matrix_view<S> y) {
    for (std::size_t t = 0; t < towers(); ++t)
      stack_.forward(step_primitives_, step_[t], tower_params(t), x.data(), view_stride(x),
                     view_rows(x), y.data() + t * tower_width(), view_stride(y));
  }

  void forward(const_matrix_view<S> x, matrix_view<S> y) {
    x_ = x.data();
    x_stride_ = view_stride(x);
    y_ = y.data();
    y_stride_ = view_stride(y);
    rows_ = view_rows(x);
    for (std::size_t t = 0; t < towers(); ++t)
      stack_.forward(train_primitives_, train_[t], tower_params(t), x_, x_stride_, rows_,
                     y.data() + t * tower_width(), y_stride_);
  }

  void backward(matrix_view<S> dy) {
    if (x_ == nullptr)
      throw std::logic_error("seedrl::mlp_torso::backward: call forward first");
    for (std::size_t t = 0; t < towers(); ++t)
      stack_.backward(train_primitives_, train_[t], tower_params(t),
                      grads_ + t * stack_.num_parameters(), x_, x_stride_, rows_,
                      y_ + t * tower_width(), y_stride_, dy.data() + t * tower_width(),
                      view_stride(dy));
  }

 private:
  std::size_t towers() const noexcept { return static_cast<std::size_t>(options_.towers); }
  std::size_t tower_width() const noexcept { return stack_.output_size(); }
  S* tower_params(std::size_t t) const noexcept { return params_ + t * stack_.num_parameters(); }

  static stack_type checked_stack(const mlp_torso_options& o) {
    if (o.towers != 1 && o.towers != 2)
      throw std::invalid_argument("seedrl::mlp_torso: towers must be 1 or 2, not " +
                                  std::to_string(o.towers));
    if (o.input_size <= 0 || o.widths.empty() ||
        std::any_of(o.widths.begin(), o.widths.end(), [](std::ptrdiff_t w) { return w <= 0; })) {
      throw std::invalid_argument(
          "seedrl::mlp_torso: input_size must be positive and widths a non-empty list of "
          "positive sizes");
    }
    return stack_type(static_cast<std::size_t>(o.input_size),
                      std::vector<std::size_t>(o.widths.begin(), o.widths.end()),
                      "seedrl::mlp_torso");
  }

  mlp_torso_options options_;
  stack_type stack_;
  S* params_ = nullptr;
  S* grads_ = nullptr;
  // One pair of work arrays per tower, and the primitives of each use (they keep scratch).
  std::array<typename stack_type::template workspace<backend_type>, 2> step_, train_;
  backend_type step_primitives_, train_primitives_;
  const S* x_ = nullptr;
  const S* y_ = nullptr;
  std::size_t x_stride_ = 0, y_stride_ = 0, rows_ = 0;
};

static_assert(Torso<mlp_torso<float>, float>);

}  // namespace seedrl
