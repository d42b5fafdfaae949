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
/// Computation: im2col then one GEMM per chunk of images (Eigen). For a chunk of `b` images the
/// patches form a [C*KH*KW, b*OH*OW] matrix and the output is W [O, C*KH*KW] times it; chunks
/// are small (whole images, at least 128 columns) so that the GEMM reads the patches from cache
/// right after im2col wrote them. Backward recomputes the patches rather than keeping them.
///
/// Memory: forward and backward never allocate. The caller passes a workspace of at least
/// `workspace_size(batch)` elements (patches plus one chunk of outputs); its contents on entry
/// do not matter and on return are unspecified. Eigen's GEMM allocates its packing buffers on
/// the heap once they exceed EIGEN_STACK_ALLOCATION_LIMIT, so every product here is cut into
/// tiles whose packed blocks fit under that limit (see `detail::gemm_stack_tiled`).
///
/// With oneDNN (SEEDRL_HAS_DNNL), float layers run forward and backward on oneDNN's
/// convolutions instead (seedrl/detail/dnnl_conv2d.hpp), primitives kept per batch size and
/// their buffers in one arena per layer; the workspace is then unused, and oneDNN allocates a
/// few small blocks inside each call (`set_dnnl_convolutions(false)` restores the path above).
/// A layer is not for two threads at once with oneDNN either: a call that finds another in
/// flight takes the im2col path.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/core/random.hpp"
#include "seedrl/detail/dnnl_conv2d.hpp"
#include "seedrl/detail/eigen_core.hpp"
#include "seedrl/detail/gemm_tiled.hpp"
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
    // At least 128 patch columns per chunk (whole images): the GEMM's tiles are about that
    // wide anyway, and the patch matrix stays in L2. Measured on the Nature CNN
    // (bench/bench_conv.cpp): 256 and 512 columns were about 5% and 12% slower, one image per
    // chunk about the same.
    chunk_ = std::max<std::ptrdiff_t>(1, (128 + oh_ * ow_ - 1) / (oh_ * ow_));
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
  std::ptrdiff_t images_per_chunk() const noexcept { return chunk_; }

  /// Elements of scratch that forward and backward need for a batch of `batch` images.
  std::size_t workspace_size(std::ptrdiff_t batch) const noexcept {
    const std::ptrdiff_t b = std::clamp<std::ptrdiff_t>(batch, 0, chunk_);
    return static_cast<std::size_t>((patch_size() + config_.out_channels) * b * oh_ * ow_);
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
    const double bound = static_cast<double>(gain) / std::sqrt(static_cast<double>(patch_size()));
    for (std::size_t i = 0; i < num_parameters(); ++i) {
      params_[i] = static_cast<S>(rng.uniform(-bound, bound));
    }
  }

  /// Weights as [O, C*KH*KW]: row o is output channel o's kernel, in (c, kh, kw) order.
  const_matrix_view<S> weight() const { return cview(params_, config_.out_channels, patch_size()); }
  matrix_view<S> weight_grad() { return view(grads_, config_.out_channels, patch_size()); }
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
    const std::ptrdiff_t p = oh_ * ow_, o = config_.out_channels, k = patch_size();
    const auto w = weight();
    const auto b = bias();
    for (std::ptrdiff_t n0 = 0; n0 < n; n0 += chunk_) {
      const std::ptrdiff_t nb = std::min(chunk_, n - n0), cols = nb * p;
      auto col = view(workspace.data(), k, cols);
      auto out = view(workspace.data() + k * cols, o, cols);
      for (std::ptrdiff_t i = 0; i < nb; ++i)
        im2col(x.data() + (n0 + i) * x.outerStride(), col.data() + i * p, cols);
      detail::gemm_stack_tiled(out, w, col, false);
      // The GEMM gives [O, nb*P]; each image wants its own [O, P] block. Add the bias on the way.
      for (std::ptrdiff_t i = 0; i < nb; ++i) {
        view(y.data() + (n0 + i) * y.outerStride(), o, p) = out.middleCols(i * p, p).colwise() + b;
      }
    }
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
    const std::ptrdiff_t p = oh_ * ow_, o = config_.out_channels, k = patch_size();
    auto wg = weight_grad();
    auto bg = bias_grad();
    const auto w = weight();
    for (std::ptrdiff_t n0 = 0; n0 < n; n0 += chunk_) {
      const std::ptrdiff_t nb = std::min(chunk_, n - n0), cols = nb * p;
      auto col = view(workspace.data(), k, cols);
      auto g = view(workspace.data() + k * cols, o, cols);
      for (std::ptrdiff_t i = 0; i < nb; ++i)
        g.middleCols(i * p, p) = cview(dy.data() + (n0 + i) * dy.outerStride(), o, p);
      bg += g.rowwise().sum();
      for (std::ptrdiff_t i = 0; i < nb; ++i)
        im2col(x.data() + (n0 + i) * x.outerStride(), col.data() + i * p, cols);
      detail::gemm_stack_tiled(wg, g, col.transpose(), true);
      if (dx == nullptr)
        continue;
      // The patches are spent: their buffer takes d loss / d patches, folded back by col2im.
      detail::gemm_stack_tiled(col, w.transpose(), g, false);
      for (std::ptrdiff_t i = 0; i < nb; ++i)
        col2im(col.data() + i * p, cols, dx->data() + (n0 + i) * dx->outerStride());
    }
  }

  /// Writes one image's patches into columns [0, OH*OW) of a row-major [C*KH*KW, ld] matrix.
  void im2col(const S* img, S* col, std::ptrdiff_t ld) const {
    const auto& c = config_;
    const std::ptrdiff_t H = c.input_height, W = c.input_width;
    for (std::ptrdiff_t ch = 0; ch < c.in_channels; ++ch) {
      for (std::ptrdiff_t kh = 0; kh < c.kernel_h; ++kh) {
        for (std::ptrdiff_t kw = 0; kw < c.kernel_w; ++kw) {
          S* row = col + ((ch * c.kernel_h + kh) * c.kernel_w + kw) * ld;
          const std::ptrdiff_t dw = kw - c.padding_w;  // input column = ow * stride_w + dw
          const std::ptrdiff_t lo = first_inside(dw, c.stride_w);
          const std::ptrdiff_t hi = std::max(lo, first_inside(dw - W, c.stride_w));
          for (std::ptrdiff_t y = 0; y < oh_; ++y) {
            S* d = row + y * ow_;
            const std::ptrdiff_t ih = y * c.stride_h - c.padding_h + kh;
            if (ih < 0 || ih >= H) {
              std::fill(d, d + ow_, S(0));
              continue;
            }
            const S* src = img + (ch * H + ih) * W;
            std::fill(d, d + lo, S(0));
            if (c.stride_w == 1) {
              std::copy(src + lo + dw, src + hi + dw, d + lo);
            } else {
              for (std::ptrdiff_t x = lo; x < hi; ++x)
                d[x] = src[x * c.stride_w + dw];
            }
            std::fill(d + hi, d + ow_, S(0));
          }
        }
      }
    }
  }

  /// Overwrites one image's input gradient with the sum of its patch gradients (im2col's
  /// adjoint): columns [0, OH*OW) of a row-major [C*KH*KW, ld] matrix.
  void col2im(const S* col, std::ptrdiff_t ld, S* img) const {
    const auto& c = config_;
    const std::ptrdiff_t H = c.input_height, W = c.input_width;
    std::fill(img, img + input_size(), S(0));
    for (std::ptrdiff_t ch = 0; ch < c.in_channels; ++ch) {
      for (std::ptrdiff_t kh = 0; kh < c.kernel_h; ++kh) {
        for (std::ptrdiff_t kw = 0; kw < c.kernel_w; ++kw) {
          const S* row = col + ((ch * c.kernel_h + kh) * c.kernel_w + kw) * ld;
          const std::ptrdiff_t dw = kw - c.padding_w;
          const std::ptrdiff_t lo = first_inside(dw, c.stride_w);
          const std::ptrdiff_t hi = std::max(lo, first_inside(dw - W, c.stride_w));
          for (std::ptrdiff_t y = 0; y < oh_; ++y) {
            const std::ptrdiff_t ih = y * c.stride_h - c.padding_h + kh;
            if (ih < 0 || ih >= H)
              continue;
            const S* d = row + y * ow_;
            S* dst = img + (ch * H + ih) * W;
            for (std::ptrdiff_t x = lo; x < hi; ++x)
              dst[x * c.stride_w + dw] += d[x];
          }
        }
      }
    }
  }

  /// The first output column x (clamped to [0, OW]) with x * stride + offset >= 0, i.e. the
  /// first whose input column is inside the image (offset = dw) or past it (offset = dw - W).
  std::ptrdiff_t first_inside(std::ptrdiff_t offset, std::ptrdiff_t stride) const noexcept {
    if (offset >= 0)
      return 0;
    return std::min(ow_, (-offset + stride - 1) / stride);
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
  std::ptrdiff_t oh_ = 0;
  std::ptrdiff_t ow_ = 0;
  std::ptrdiff_t chunk_ = 1;
  S* params_ = nullptr;
  S* grads_ = nullptr;
};

}  // namespace seedrl
