#pragma once
// A user's own convolutional stack for the pixel agents, written once against the
// ComputeBackend primitives and plugged in through `seedrl::backend_conv_stack`
// (seedrl/net/conv_stack.hpp): one 3x3 convolution (no padding, stride 1) followed by tanh.
// Nothing in the library knows it; `pixel_lstm_agent<S, tiny_conv<S>>` runs it on the CPU,
// `pixel_lstm_recipe<tiny_conv_config>` trains it through the recipe trainer. Parameters:
// W [O, C, 3, 3] then b [O]. No Eigen: nvcc compiles it.
#include <algorithm>
#include <array>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/conv_stack.hpp"

namespace seedrl_test {

/// The stack's shape, with what a pixel agent's description needs of it.
struct tiny_conv_config {
  std::ptrdiff_t out_channels = 3;

  static constexpr std::string_view agent_name = "tiny_conv_lstm_agent";
  std::string describe_fields() const { return " tiny_out=" + std::to_string(out_channels); }
  static constexpr std::array<std::string_view, 1> field_keys{"tiny_out"};
};

/// Sets a field `describe_fields` wrote (what a checkpoint reader passes to the parser).
inline bool set_tiny_conv_field(tiny_conv_config& c, std::string_view key, std::string_view v) {
  if (key != "tiny_out")
    return false;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), c.out_channels);
  return r.ec == std::errc() && r.ptr == v.data() + v.size() && c.out_channels > 0;
}

/// The stack (see the file comment).
template <class Backend, class S>
class tiny_conv_stack {
  using tanh_fwd = seedrl::detail::activation_kernel<S, seedrl::tanh_activation>;
  using tanh_bwd = seedrl::detail::activation_backward_kernel<S, seedrl::tanh_activation>;

 public:
  tiny_conv_stack(Backend& b, const tiny_conv_config& c, std::size_t channels, std::size_t height,
                  std::size_t width, const std::string& who)
      : b_(&b) {
    if (c.out_channels <= 0 || height < 3 || width < 3)
      throw std::invalid_argument(who +
                                  ": the tiny conv stack needs out_channels > 0 and "
                                  "images of at least 3x3");
    shape_.in_channels = static_cast<int>(channels);
    shape_.input_height = static_cast<int>(height);
    shape_.input_width = static_cast<int>(width);
    shape_.out_channels = static_cast<int>(c.out_channels);
    shape_.kernel_h = shape_.kernel_w = 3;
    in_ = channels * height * width;
    out_ = static_cast<std::size_t>(c.out_channels) *
           static_cast<std::size_t>(shape_.output_height() * shape_.output_width());
    w_ = static_cast<std::size_t>(c.out_channels) * channels * 9;
  }

  std::size_t num_parameters() const { return w_ + static_cast<std::size_t>(shape_.out_channels); }
  std::size_t output_size() const { return out_; }
  std::size_t max_batch() const {
    return static_cast<std::size_t>(std::numeric_limits<int>::max()) /
           std::max({in_, out_, static_cast<std::size_t>(shape_.in_channels) * 9});
  }
  void init(seedrl::random_generator& rng, S* params) const {
    for (std::size_t i = 0; i < num_parameters(); ++i)
      params[i] = static_cast<S>(rng.uniform(-0.3, 0.3));
  }
  void reserve(std::size_t N) {
    reserve_inference(N);
    if (d_.size() < N * out_)
      d_ = b_->template allocate<S>(N * out_);
  }
  void reserve_inference(std::size_t N) {
    if (y_.size() < N * out_)
      y_ = b_->template allocate<S>(N * out_);
  }
  const S* infer(const S* params, const S* input, std::size_t N) { return run(params, input, N); }
  const S* forward(const S* params, const S* input, std::size_t N) {
    input_ = input;
    return run(params, input, N);
  }
  void backward(const S* params, S* grads, const S* d_features, std::size_t N) {
    seedrl::for_each_2d(*b_, N, out_, tanh_bwd{d_features, out_, y_.data(), out_, d_.data(), out_});
    b_->conv2d_backward(at(N), input_, params, d_.data(), static_cast<S*>(nullptr), grads,
                        grads + w_);  // the pixels get no gradient
  }

 private:
  seedrl::conv2d_shape at(std::size_t N) const {
    seedrl::conv2d_shape s = shape_;
    s.batch = static_cast<int>(N);
    return s;
  }
  const S* run(const S* params, const S* input, std::size_t N) {
    b_->conv2d_forward(at(N), input, params, params + w_, y_.data());
    seedrl::for_each_2d(*b_, N, out_, tanh_fwd{y_.data(), out_});
    return y_.data();
  }

  Backend* b_;
  seedrl::conv2d_shape shape_;
  std::size_t in_ = 0, out_ = 0, w_ = 0;
  const S* input_ = nullptr;
  typename Backend::template buffer<S> y_, d_;
};

/// The name pixel_lstm_agent takes for it.
template <std::floating_point S>
struct tiny_conv {
  using config_type = tiny_conv_config;
};

}  // namespace seedrl_test

template <class Backend, class S>
struct seedrl::backend_conv_stack<Backend, S, seedrl_test::tiny_conv_config> {
  using type = seedrl_test::tiny_conv_stack<Backend, S>;
};
