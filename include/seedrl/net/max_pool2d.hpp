#pragma once
/// \file
/// 2-D max pooling (PyTorch's `MaxPool2d` with dilation 1 and floor rounding), as in IMPALA's
/// ResNet (3x3, stride 2, padding 1). Batches are NCHW rows, as for `conv2d`: row n holds
/// `channels * input_height * input_width` elements, each channel's plane row-major.
///
/// Padding acts as -infinity, not zero: a window's maximum is taken over its cells inside the
/// image only, so an all-negative window at the border keeps its negative maximum. A NaN in a
/// window wins it, and among equal maxima the first in row-major window order wins; both are
/// what PyTorch's CPU kernel does, so argmax indices (and where gradients go) match it exactly.
///
/// For training, `forward` records each output's argmax as an index into its input plane
/// (`ih * input_width + iw`, PyTorch's `return_indices` convention) in a caller-provided buffer,
/// and `backward` sends each output gradient to that element. Nothing is allocated.
///
/// Computation: the kernels of backend/detail/max_pool2d_kernels.hpp (the backend IMPALA
/// torso's pooling too), run by detail::host_conv_primitives as loops over planes.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/backend/detail/host_conv_primitives.hpp"
#include "seedrl/backend/detail/max_pool2d_kernels.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Geometry of a `max_pool2d`: input image shape, window, stride and padding.
struct max_pool2d_config {
  std::ptrdiff_t channels = 0;
  std::ptrdiff_t input_height = 0;
  std::ptrdiff_t input_width = 0;
  std::ptrdiff_t kernel_h = 0;
  std::ptrdiff_t kernel_w = 0;
  /// 0 means the kernel size, as PyTorch's `stride=None`.
  std::ptrdiff_t stride_h = 0;
  std::ptrdiff_t stride_w = 0;
  /// -infinity cells added on each side; at most half the kernel, as PyTorch requires (a
  /// window entirely in the padding would have no maximum).
  std::ptrdiff_t padding_h = 0;
  std::ptrdiff_t padding_w = 0;
};

/// Max pooling layer; see the file comment. It has no parameters.
template <std::floating_point S>
class max_pool2d {
 public:
  /// Type of the recorded argmax indices (plane offsets; planes are far below 2^31 elements).
  using index_type = std::int32_t;

  max_pool2d() = default;
  explicit max_pool2d(const max_pool2d_config& config) : config_(config) {
    auto& c = config_;
    if (c.stride_h == 0)
      c.stride_h = c.kernel_h;
    if (c.stride_w == 0)
      c.stride_w = c.kernel_w;
    if (c.channels <= 0 || c.input_height <= 0 || c.input_width <= 0 || c.kernel_h <= 0 ||
        c.kernel_w <= 0 || c.stride_h < 0 || c.stride_w < 0) {
      throw std::invalid_argument(
          "seedrl::max_pool2d: channels, input_height, input_width and kernel sizes must be "
          "positive, strides positive or 0 (= kernel)");
    }
    if (c.padding_h < 0 || c.padding_w < 0 || 2 * c.padding_h > c.kernel_h ||
        2 * c.padding_w > c.kernel_w) {
      throw std::invalid_argument(
          "seedrl::max_pool2d: padding must be between 0 and half the kernel size (got padding " +
          std::to_string(c.padding_h) + "x" + std::to_string(c.padding_w) + ", kernel " +
          std::to_string(c.kernel_h) + "x" + std::to_string(c.kernel_w) + ")");
    }
    if (c.input_height + 2 * c.padding_h < c.kernel_h ||
        c.input_width + 2 * c.padding_w < c.kernel_w) {
      throw std::invalid_argument("seedrl::max_pool2d: the kernel is larger than the padded input");
    }
    if (c.input_height * c.input_width > std::numeric_limits<index_type>::max()) {
      throw std::invalid_argument("seedrl::max_pool2d: input plane too large for int32 indices");
    }
    oh_ = (c.input_height + 2 * c.padding_h - c.kernel_h) / c.stride_h + 1;
    ow_ = (c.input_width + 2 * c.padding_w - c.kernel_w) / c.stride_w + 1;
  }

  /// The configuration, with zero strides replaced by the kernel size.
  const max_pool2d_config& config() const noexcept { return config_; }
  std::ptrdiff_t output_height() const noexcept { return oh_; }
  std::ptrdiff_t output_width() const noexcept { return ow_; }
  /// Elements of one input image, C*H*W.
  std::ptrdiff_t input_size() const noexcept {
    return config_.channels * config_.input_height * config_.input_width;
  }
  /// Elements of one output image, C*OH*OW; also the argmax indices one image needs.
  std::ptrdiff_t output_size() const noexcept { return config_.channels * oh_ * ow_; }

  /// Inference: y ([N, output_size()]) = the window maxima of x ([N, input_size()]).
  void forward(const_matrix_view<S> x, matrix_view<S> y) const {
    check("forward", x.rows(), x.cols(), y.rows(), y.cols(), nullptr);
    run_forward(x, y, nullptr);
  }

  /// Training: as `forward`, also writing each output's argmax (index into its input plane) to
  /// `argmax`, which holds at least N * output_size() elements, in y's element order.
  void forward(const_matrix_view<S> x, matrix_view<S> y, std::span<index_type> argmax) const {
    const std::size_t n = argmax.size();
    check("forward", x.rows(), x.cols(), y.rows(), y.cols(), &n);
    run_forward(x, y, argmax.data());
  }

  /// Overwrites dx ([N, input_size()]) with d loss / d x: each element of dy ([N, output_size()])
  /// is added to the input element `argmax` recorded for it; all other elements get zero.
  void backward(const_matrix_view<S> dy, std::span<const index_type> argmax,
                matrix_view<S> dx) const {
    const std::size_t n = argmax.size();
    check("backward", dx.rows(), dx.cols(), dy.rows(), dy.cols(), &n);
    detail::host_conv_primitives{}.for_each(
        static_cast<std::size_t>(dx.rows() * input_size()),
        detail::max_pool_backward_kernel<S>{dy.data(), stride(dy), argmax.data(), dx.data(),
                                            stride(dx), geometry()});
  }

 private:
  void run_forward(const_matrix_view<S> x, matrix_view<S> y, index_type* argmax) const {
    detail::host_conv_primitives{}.for_each(
        static_cast<std::size_t>(x.rows() * output_size()),
        detail::max_pool_forward_kernel<S>{x.data(), stride(x), y.data(), stride(y), argmax,
                                           geometry()});
  }

  detail::max_pool2d_geometry geometry() const noexcept {
    const auto z = [](std::ptrdiff_t v) { return static_cast<std::size_t>(v); };
    const auto& c = config_;
    return {z(c.channels), z(c.input_height), z(c.input_width), z(oh_),
            z(ow_),        z(c.kernel_h),     z(c.kernel_w),    z(c.stride_h),
            z(c.stride_w), z(c.padding_h),    z(c.padding_w)};
  }
  template <class View>
  static std::size_t stride(const View& v) noexcept {
    return static_cast<std::size_t>(v.outerStride());
  }

  /// Rows and widths of the input-side and output-side batches, and the argmax buffer's size.
  void check(const char* fn, std::ptrdiff_t in_rows, std::ptrdiff_t in_cols,
             std::ptrdiff_t out_rows, std::ptrdiff_t out_cols, const std::size_t* indices) const {
    // Built only on failure: inference calls this every step and must not allocate.
    const auto where = [fn] { return std::string("seedrl::max_pool2d::") + fn + ": "; };
    if (in_cols != input_size()) {
      throw std::invalid_argument(
          where() + "the input-side batch has " + std::to_string(in_cols) +
          " columns per image, expected C*H*W = " + std::to_string(input_size()));
    }
    if (out_cols != output_size()) {
      throw std::invalid_argument(
          where() + "the output-side batch has " + std::to_string(out_cols) +
          " columns per image, expected C*OH*OW = " + std::to_string(output_size()));
    }
    if (in_rows != out_rows) {
      throw std::invalid_argument(where() + "input-side and output-side batches have " +
                                  std::to_string(in_rows) + " and " + std::to_string(out_rows) +
                                  " rows");
    }
    if (indices && *indices < static_cast<std::size_t>(out_rows * output_size())) {
      throw std::invalid_argument(where() + "argmax has " + std::to_string(*indices) +
                                  " elements, the batch needs " +
                                  std::to_string(out_rows * output_size()));
    }
  }

  max_pool2d_config config_{};
  std::ptrdiff_t oh_ = 0;
  std::ptrdiff_t ow_ = 0;
};

}  // namespace seedrl
