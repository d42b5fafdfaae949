#pragma once
/// \file
/// `backend_feature_stack<Stack, Config, S>`: a convolutional stack written once against the
/// ComputeBackend primitives (a backend conv torso; net/detail/conv_relu_stack.hpp says what
/// one provides) as a CPU agent's FeatureStack (seedrl/net/parts/torso.hpp), run on
/// `host_backend`. The GPU trainer and inference step run the same stack on their backend, so
/// the convolutions, poolings and ReLUs a CPU learner trains are the ones a GPU learner runs.
/// `nature_cnn`, `small_conv` and `impala_resnet` are this adapter over their backend stacks.
///
/// `Stack<Backend, S>` is built as `Stack(Backend&, const Config&, channels, height, width,
/// who)` and provides the backend conv torso's members (`infer` and `reserve_inference`
/// included).
///
/// Each copy of the adapter (agents are copied: one for inference, one for training) builds
/// its own backends and stacks from the recipe, so copies share nothing but the parameter
/// binding, which a copy keeps until it is bound again. Inference and
/// training keep a stack and a backend each (a backend holds convolution scratch and oneDNN
/// primitives), so `infer` never disturbs what `forward` kept, and the two may run on
/// different threads. Inputs with a row stride (a block of a wider buffer) are copied to
/// contiguous rows first; the agents' own inputs are contiguous and are read in place.

#include <concepts>
#include <cstddef>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/detail/contiguous_rows.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// See the file comment.
template <template <class, class> class Stack, class Config, std::floating_point S>
class backend_feature_stack {
  using stack_type = Stack<host_backend, S>;

 public:
  /// The stack of `config` for channels x height x width images; throws std::invalid_argument
  /// (its message starting with `who`) on a non-positive image shape and where the stack
  /// refuses the config.
  backend_feature_stack(const Config& config, std::ptrdiff_t channels, std::ptrdiff_t height,
                        std::ptrdiff_t width, std::string who)
      : config_(config), channels_(channels), height_(height), width_(width), who_(std::move(who)) {
    constexpr std::ptrdiff_t int_max = std::numeric_limits<int>::max();
    if (channels <= 0 || height <= 0 || width <= 0 || channels > int_max || height > int_max ||
        width > int_max) {
      throw std::invalid_argument(who_ +
                                  ": the image shape must be positive and below INT_MAX (got " +
                                  std::to_string(channels) + "x" + std::to_string(height) + "x" +
                                  std::to_string(width) + ")");
    }
    build();
  }
  backend_feature_stack(const backend_feature_stack& other)
      : config_(other.config_),
        channels_(other.channels_),
        height_(other.height_),
        width_(other.width_),
        who_(other.who_),
        params_(other.params_),
        grads_(other.grads_) {
    build();
  }
  backend_feature_stack& operator=(const backend_feature_stack&) = delete;

  const Config& config() const noexcept { return config_; }
  std::ptrdiff_t input_size() const noexcept { return channels_ * height_ * width_; }
  std::ptrdiff_t output_size() const noexcept {
    return static_cast<std::ptrdiff_t>(parts_->train.output_size());
  }
  std::size_t num_parameters() const noexcept { return parts_->train.num_parameters(); }

  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }
  /// Draws the parameters as PyTorch's layers would (the stack's `init`, in layer order).
  void init(random_generator& rng) { parts_->train.init(rng, params_); }

  /// Inference: the features of x ([N, input_size()]), in a buffer of the adapter's own valid
  /// until the next `infer`. Does not disturb what `forward` kept.
  const_matrix_view<S> infer(const_matrix_view<S> x) {
    const std::size_t N = rows(x, "infer");
    parts_->step.reserve_inference(N);
    const S* features = parts_->step.infer(params_, detail::contiguous_rows(x, step_x_), N);
    return cview(features, static_cast<std::ptrdiff_t>(N), output_size());
  }

  /// Training forward: as `infer`, and keeps what `backward` needs (x itself where its rows
  /// are contiguous: the caller keeps it alive).
  const_matrix_view<S> forward(const_matrix_view<S> x) {
    const std::size_t N = rows(x, "forward");
    parts_->train.reserve(N);
    const S* features = parts_->train.forward(params_, detail::contiguous_rows(x, train_x_), N);
    rows_ = N;
    forwarded_ = true;
    return cview(features, static_cast<std::ptrdiff_t>(N), output_size());
  }

  /// Adds the parameter gradients given dy, d loss / d features of the last `forward`
  /// ([N, output_size()]). No input gradient: the input is pixels.
  void backward(matrix_view<S> dy) {
    if (!forwarded_)
      throw std::logic_error(who_ + "::backward: call forward first");
    if (static_cast<std::size_t>(dy.rows()) != rows_ || dy.cols() != output_size())
      throw std::invalid_argument(who_ + "::backward: dy is " + std::to_string(dy.rows()) + "x" +
                                  std::to_string(dy.cols()) + ", the last forward wrote " +
                                  std::to_string(rows_) + "x" + std::to_string(output_size()));
    const S* d = dy.data();
    if (dy.outerStride() != dy.cols()) {
      dy_copy_.resize(rows_ * static_cast<std::size_t>(dy.cols()));
      view(dy_copy_.data(), dy.rows(), dy.cols()) = dy;
      d = dy_copy_.data();
    }
    parts_->train.backward(params_, grads_, d, rows_);
  }

 private:
  /// The backends and the two stacks, behind one pointer: a stack keeps its backend's address.
  struct parts {
    host_backend step_backend, train_backend;
    stack_type step, train;
    parts(const Config& c, std::size_t ch, std::size_t h, std::size_t w, const std::string& who)
        : step(step_backend, c, ch, h, w, who), train(train_backend, c, ch, h, w, who) {}
  };

  void build() {
    parts_ = std::make_unique<parts>(config_, static_cast<std::size_t>(channels_),
                                     static_cast<std::size_t>(height_),
                                     static_cast<std::size_t>(width_), who_);
  }

  /// x's row count, after checking its width and that the stack's int indexing takes it.
  std::size_t rows(const_matrix_view<S> x, const char* fn) const {
    if (x.cols() != input_size())
      throw std::invalid_argument(
          who_ + "::" + fn + ": the batch has " + std::to_string(x.cols()) +
          " columns per image, expected C*H*W = " + std::to_string(input_size()));
    const auto N = static_cast<std::size_t>(x.rows());
    if (N > parts_->train.max_batch())
      throw std::length_error(who_ + "::" + fn + ": " + std::to_string(N) +
                              " images exceed what the stack's int indexing takes (" +
                              std::to_string(parts_->train.max_batch()) + ")");
    return N;
  }

  Config config_;
  std::ptrdiff_t channels_, height_, width_;
  std::string who_;
  S* params_ = nullptr;
  S* grads_ = nullptr;
  std::unique_ptr<parts> parts_;
  std::vector<S> step_x_, train_x_, dy_copy_;  ///< strided inputs and gradients, made contiguous
  std::size_t rows_ = 0;                       ///< of the last forward
  bool forwarded_ = false;
};

}  // namespace seedrl
