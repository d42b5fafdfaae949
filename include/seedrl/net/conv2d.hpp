#pragma once
/// \file
/// A 2-D convolution layer (PyTorch's `Conv2d` with groups = 1, dilation = 1, zero padding)
/// for pixel networks: the Nature CNN's 8x8/4, 4x4/2 and 3x3/1 layers, IMPALA's 3x3 padding-1
/// layers.
///
/// Layout. A batch is one image per row, each image NCHW, i.e. channel-major: row n holds
/// `in_channels * input_height * input_width` elements, element (c, h, w) at
/// `(c * input_height + h) * input_width + w`; the output is laid out the same way with
/// `out_channels`, `output_height()`, `output_width()`. Actors send observations as HWC uint8
/// (frame stacks from the environment); this layer does not convert them: the caller (the pixel
/// network's input stage, before its first convolution) transposes HWC to CHW and scales to S.
/// Flattening the last convolution's output for a following `linear` costs nothing, since an
/// NCHW row already is PyTorch's `flatten(1)` order.
///
/// Parameters live in the owning network's flat buffer, bound with `bind`: the weights as
/// [out_channels, in_channels, kernel_h, kernel_w] row-major, then out_channels biases. That is
/// PyTorch's `weight` then `bias`, so a state dict maps onto the buffer one to one.
///
/// Computation: the library's one convolution below oneDNN (backend/detail/conv2d_gemm.hpp,
/// what `host_backend` and a CUDA build without cuDNN run too): im2col then one GEMM per chunk
/// of images (whole images, at least 128 patch rows, so that the GEMM reads the patches from
/// cache right after im2col wrote them), on detail::host_conv_primitives. Backward recomputes
/// the patches rather than keeping them.
///
/// Memory: forward and backward never allocate. The caller passes a workspace of at least
/// `workspace_size(batch)` elements (patches plus one chunk of outputs); its contents on entry
/// do not matter and on return are unspecified. Every product is cut into tiles whose packed
/// blocks fit under EIGEN_STACK_ALLOCATION_LIMIT (see `detail::gemm_stack_tiled`), so that
/// Eigen never mallocs its packing buffers.
///
/// With oneDNN (SEEDRL_HAS_DNNL), float layers run forward and backward on oneDNN's
/// convolutions instead (seedrl/detail/dnnl_conv2d.hpp), primitives kept per batch size and
/// their buffers in one arena per layer; the workspace is then unused, and oneDNN allocates a
/// few small blocks inside each call (`set_dnnl_convolutions(false)` restores the path above).
/// A layer is not for two threads at once with oneDNN either: a call that finds another in
/// flight takes the im2col path.

#include <concepts>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/backend/detail/conv2d_gemm.hpp"
#include "seedrl/backend/detail/host_conv_primitives.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/detail/dnnl_conv2d.hpp"
#include "seedrl/detail/eigen_core.hpp"
#include "seedrl/net/detail/pytorch_default_init.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// Geometry of a `conv2d`: input image shape, channels, kernel, stride and zero padding.
struct conv2d_config {
  std::ptrdiff_t in_channels = 0;
  std::ptrdiff_t input_height = 0;
  std::ptrdiff_t input_width = 0;
  std::ptrdiff_t out_channels = 0;
  std::ptrdiff_t kernel_h = 0;
  std::ptrdiff_t kernel_w = 0;
  std::ptrdiff_t stride_h = 1;
  std::ptrdiff_t stride_w = 1;
  /// Zeros added on each side (top and bottom, left and right), as PyTorch's `padding`.
  std::ptrdiff_t padding_h = 0;
  std::ptrdiff_t padding_w = 0;
};

/// 2-D convolution layer; see the file comment.
template <std::floating_point S>
class conv2d {
 public:
  conv2d() = default;
  explicit conv2d(const conv2d_config& config) : config_(config) {
    const auto& c = config;
    if (c.in_channels <= 0 || c.out_channels <= 0 || c.input_height <= 0 || c.input_width <= 0 ||
        c.kernel_h <= 0 || c.kernel_w <= 0) {
      throw std::invalid_argument(
          "seedrl::conv2d: in_channels, out_channels, input_height, input_width, kernel_h and "
          "kernel_w must be positive");
    }
    if (c.stride_h <= 0 || c.stride_w <= 0 || c.padding_h < 0 || c.padding_w < 0) {
      throw std::invalid_argument(
          "seedrl::conv2d: strides must be positive and paddings non-negative");
    }
    if (c.input_height + 2 * c.padding_h < c.kernel_h ||
        c.input_width + 2 * c.padding_w < c.kernel_w) {
      throw std::invalid_argument("seedrl::conv2d: the kernel (" + std::to_string(c.kernel_h) +
                                  "x" + std::to_string(c.kernel_w) +
                                  ") is larger than the padded input (" +
                                  std::to_string(c.input_height + 2 * c.padding_h) + "x" +
                                  std::to_string(c.input_width + 2 * c.padding_w) + ")");
    }
    oh_ = (c.input_height + 2 * c.padding_h - c.kernel_h) / c.stride_h + 1;
    ow_ = (c.input_width + 2 * c.padding_w - c.kernel_w) / c.stride_w + 1;
    shape_ = {.in_channels = narrow(c.in_channels, "in_channels"),
              .input_height = narrow(c.input_height, "input_height"),
              .input_width = narrow(c.input_width, "input_width"),
              .out_channels = narrow(c.out_channels, "out_channels"),
              .kernel_h = narrow(c.kernel_h, "kernel_h"),
              .kernel_w = narrow(c.kernel_w, "kernel_w"),
              .stride_h = narrow(c.stride_h, "stride_h"),
              .stride_w = narrow(c.stride_w, "stride_w"),
              .padding_h = narrow(c.padding_h, "padding_h"),
              .padding_w = narrow(c.padding_w, "padding_w")};
    detail::check_conv2d_shape(shape_, "seedrl::conv2d");
  }

  const conv2d_config& config() const noexcept { return config_; }
  std::ptrdiff_t output_height() const noexcept { return oh_; }
  std::ptrdiff_t output_width() const noexcept { return ow_; }
  /// Elements of one input image, C*H*W: the width of a batch row of x.
  std::ptrdiff_t input_size() const noexcept {
    return config_.in_channels * config_.input_height * config_.input_width;
  }
  /// Elements of one output image, O*OH*OW: the width of a batch row of y.
  std::ptrdiff_t output_size() const noexcept { return config_.out_channels * oh_ * ow_; }
  /// Rows of the im2col matrix: C*KH*KW, the fan-in of one output element.
  std::ptrdiff_t patch_size() const noexcept {
    return config_.in_channels * config_.kernel_h * config_.kernel_w;
  }
  /// How many images one im2col + GEMM pass covers (the last chunk of a batch may be smaller).
  std::ptrdiff_t images_per_chunk() const noexcept {
    return static_cast<std::ptrdiff_t>(geometry(0).chunk());
  }

  /// Elements of scratch that forward and backward need for a batch of `batch` images.
  std::size_t workspace_size(std::ptrdiff_t batch) const noexcept {
    if (batch <= 0)
      return 0;
    const auto g = geometry(batch);
    return g.col_elements() + g.z_elements();
  }

  /// Parameters this layer takes from the flat buffer: O*C*KH*KW weights, then O biases.
  std::size_t num_parameters() const noexcept {
    return static_cast<std::size_t>(config_.out_channels * (patch_size() + 1));
  }

  /// Points the layer at its slice of the parameter and gradient buffers.
  void bind(S* params, S* grads) noexcept {
    params_ = params;
    grads_ = grads;
  }

  /// PyTorch's default (kaiming-uniform with a = sqrt(5)): weights and biases uniform in
  /// +-1/sqrt(C*KH*KW), scaled by `gain`.
  void init(random_generator& rng, S gain = S(1)) {
    detail::pytorch_default_fill(rng, params_, num_parameters(),
                                 static_cast<std::size_t>(patch_size()), static_cast<double>(gain));
  }

  /// The O biases (after the weights) and their gradients.
  Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, 1>> bias() const {
    return {params_ + config_.out_channels * patch_size(), config_.out_channels};
  }
  Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, 1>> bias_grad() {
    return {grads_ + config_.out_channels * patch_size(), config_.out_channels};
  }

  /// y = conv(x) + b for a batch: x is [N, input_size()], y is [N, output_size()] (NCHW rows),
  /// `workspace` at least `workspace_size(N)` elements. None of the three may overlap.
  void forward(const_matrix_view<S> x, matrix_view<S> y, std::span<S> workspace) const {
    const std::ptrdiff_t n = x.rows();
    check_cols("forward", "x", x.cols(), input_size());
    check_cols("forward", "y", y.cols(), output_size());
    check_rows("forward", "y", y.rows(), n);
    check_workspace("forward", workspace.size(), n);
#ifdef SEEDRL_DNNL_CONV
    if constexpr (std::is_same_v<S, float>) {
      if (n > 0 &&
          detail::dnnl_conv2d_forward(dnnl_, dnnl_shape(n, x.outerStride(), y.outerStride()),
                                      x.data(), params_, bias().data(), y.data()))
        return;
    }
#endif
    const auto g = geometry(n);
    detail::conv2d_gemm_forward(detail::host_conv_primitives{}, g, workspace.data(),
                                workspace.data() + g.col_elements(), x.data(), stride(x), params_,
                                bias().data(), y.data(), stride(y));
  }

  /// Backpropagates `dy` ([N, output_size()], d loss / d y at the forward's input `x`):
  /// accumulates d loss / d weights and biases into the gradient buffer and overwrites `dx`
  /// ([N, input_size()]) with d loss / d x. `workspace` as for `forward`; no two overlap.
  void backward(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S> dx,
                std::span<S> workspace) {
    check_cols("backward", "dx", dx.cols(), input_size());
    check_rows("backward", "dx", dx.rows(), x.rows());
    backward_impl(x, dy, &dx, workspace);
  }

  /// `backward` without d loss / d x, for a first layer whose input is the observation: skips
  /// the input-gradient GEMM and col2im.
  void backward_params(const_matrix_view<S> x, const_matrix_view<S> dy, std::span<S> workspace) {
    backward_impl(x, dy, nullptr, workspace);
  }

 private:
  void backward_impl(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S>* dx,
                     std::span<S> workspace) {
    const std::ptrdiff_t n = x.rows();
    check_cols("backward", "x", x.cols(), input_size());
    check_cols("backward", "dy", dy.cols(), output_size());
    check_rows("backward", "dy", dy.rows(), n);
    check_workspace("backward", workspace.size(), n);
#ifdef SEEDRL_DNNL_CONV
    // oneDNN's key has one row stride for x and dx; a dx laid out otherwise takes im2col.
    if constexpr (std::is_same_v<S, float>) {
      if (n > 0 && (dx == nullptr || dx->outerStride() == x.outerStride()) &&
          detail::dnnl_conv2d_backward(
              dnnl_, dnnl_shape(n, x.outerStride(), dy.outerStride()), x.data(), params_, dy.data(),
              dx == nullptr ? nullptr : dx->data(), grads_, bias_grad().data()))
        return;
    }
#endif
    const auto g = geometry(n);
    detail::conv2d_gemm_backward(detail::host_conv_primitives{}, g, workspace.data(),
                                 workspace.data() + g.col_elements(), x.data(), stride(x), params_,
                                 dy.data(), stride(dy), dx == nullptr ? nullptr : dx->data(),
                                 dx == nullptr ? 0 : stride(*dx), grads_, bias_grad().data());
  }

  /// The convolution of a batch of n images, chunked as the host runs it.
  detail::conv2d_gemm_geometry geometry(std::ptrdiff_t n) const noexcept {
    detail::conv2d_gemm_geometry g(shape_, detail::host_conv2d_chunk_rows);
    g.N = static_cast<std::size_t>(n);  // chunks keep each GEMM int-sized, not the batch
    return g;
  }
  template <class View>
  static std::size_t stride(const View& v) noexcept {
    return static_cast<std::size_t>(v.outerStride());
  }
  static int narrow(std::ptrdiff_t v, const char* name) {
    if (v > std::numeric_limits<int>::max())
      throw std::invalid_argument(std::string("seedrl::conv2d: ") + name + " exceeds INT_MAX");
    return static_cast<int>(v);
  }

  static void check_cols(const char* fn, const char* what, std::ptrdiff_t got,
                         std::ptrdiff_t want) {
    if (got != want) {
      throw std::invalid_argument(std::string("seedrl::conv2d::") + fn + ": " + what + " has " +
                                  std::to_string(got) + " columns per image, expected " +
                                  std::to_string(want));
    }
  }
  static void check_rows(const char* fn, const char* what, std::ptrdiff_t got,
                         std::ptrdiff_t want) {
    if (got != want) {
      throw std::invalid_argument(std::string("seedrl::conv2d::") + fn + ": " + what + " has " +
                                  std::to_string(got) + " rows (images), x has " +
                                  std::to_string(want));
    }
  }
  void check_workspace(const char* fn, std::size_t got, std::ptrdiff_t batch) const {
    if (got < workspace_size(batch)) {
      throw std::invalid_argument(
          std::string("seedrl::conv2d::") + fn + ": workspace has " + std::to_string(got) +
          " elements, a batch of " + std::to_string(batch) +
          " needs workspace_size() = " + std::to_string(workspace_size(batch)));
    }
  }

#ifdef SEEDRL_DNNL_CONV
  detail::dnnl_conv2d_shape dnnl_shape(std::ptrdiff_t n, std::ptrdiff_t ld_x,
                                       std::ptrdiff_t ld_y) const noexcept {
    const auto& c = config_;
    return {n,          c.in_channels, c.input_height, c.input_width, c.out_channels, c.kernel_h,
            c.kernel_w, c.stride_h,    c.stride_w,     c.padding_h,   c.padding_w,    ld_x,
            ld_y};
  }
  mutable detail::dnnl_conv2d_cache dnnl_;  // primitives per batch size; copies start empty
#endif

  conv2d_config config_{};
  conv2d_shape shape_{};  ///< config_ without a batch
  std::ptrdiff_t oh_ = 0;
  std::ptrdiff_t ow_ = 0;
  S* params_ = nullptr;
  S* grads_ = nullptr;
};

}  // namespace seedrl
