#pragma once
/// \file
/// 2-D convolution through cuDNN, forward and backward, in the layout of the backends' conv2d
/// primitives (`seedrl/backend/compute_backend.hpp`): NCHW images, weights [O, C, KH, KW]
/// (PyTorch's and cuDNN's KCRS) then O biases, cross-correlation (PyTorch's convolution), zero
/// padding, no dilation, one group. Backward accumulates into the weight and bias gradients,
/// as the host's does, and overwrites the input gradient. Available when seedrl::cuda was built
/// with cuDNN (SEEDRL_HAS_CUDNN); host-only code, so a C++ translation unit may include it. Uses
/// cuDNN's classic convolution API (cudnnConvolutionForward and friends), present in cuDNN 8 and 9.

#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/cuda/error.cuh"
#include "seedrl/cuda/memory.cuh"

namespace seedrl::cuda {

/// Throws `cuda_error` naming `call` when `status` is not CUDNN_STATUS_SUCCESS.
inline void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw cuda_error(std::string("seedrl: ") + call + " failed: " + cudnnGetErrorString(status));
  }
}

/// Sizes of one convolution: the backend's (seedrl/backend/compute_backend.hpp).
using conv2d_shape = seedrl::conv2d_shape;

namespace detail {

template <class S>
constexpr cudnnDataType_t cudnn_type() {
  static_assert(sizeof(S) == 4 || sizeof(S) == 8,
                "seedrl: cuDNN convolutions take float or double");
  return sizeof(S) == 4 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

}  // namespace detail

/// A convolution's cuDNN descriptors, chosen algorithms and workspace, for one shape. Not
/// copyable; the cuDNN handle is owned and bound to `stream`.
template <class S>
class cudnn_conv2d {
 public:
  cudnn_conv2d(const conv2d_shape& shape, cudaStream_t stream = nullptr) : shape_(shape) {
    SEEDRL_CUDA_CHECK(cudnnCreate(&handle_));
    SEEDRL_CUDA_CHECK(cudnnSetStream(handle_, stream));
    SEEDRL_CUDA_CHECK(cudnnCreateTensorDescriptor(&x_desc_));
    SEEDRL_CUDA_CHECK(cudnnCreateTensorDescriptor(&y_desc_));
    SEEDRL_CUDA_CHECK(cudnnCreateTensorDescriptor(&bias_desc_));
    SEEDRL_CUDA_CHECK(cudnnCreateFilterDescriptor(&w_desc_));
    SEEDRL_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&conv_desc_));
    constexpr cudnnDataType_t type = detail::cudnn_type<S>();
    SEEDRL_CUDA_CHECK(cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NCHW, type, shape.batch,
                                                 shape.in_channels, shape.input_height,
                                                 shape.input_width));
    SEEDRL_CUDA_CHECK(cudnnSetFilter4dDescriptor(w_desc_, type, CUDNN_TENSOR_NCHW,
                                                 shape.out_channels, shape.in_channels,
                                                 shape.kernel_h, shape.kernel_w));
    SEEDRL_CUDA_CHECK(cudnnSetConvolution2dDescriptor(conv_desc_, shape.padding_h, shape.padding_w,
                                                      shape.stride_h, shape.stride_w, 1, 1,
                                                      CUDNN_CROSS_CORRELATION, type));
    // Plain FMA arithmetic: cuDNN's default lets float convolutions use TF32 tensor cores on
    // sm_80+, whose 10-bit mantissa would not match the host's convolution to float tolerance.
    SEEDRL_CUDA_CHECK(cudnnSetConvolutionMathType(conv_desc_, CUDNN_FMA_MATH));
    SEEDRL_CUDA_CHECK(
        cudnnGetConvolution2dForwardOutputDim(conv_desc_, x_desc_, w_desc_, &n_, &o_, &oh_, &ow_));
    SEEDRL_CUDA_CHECK(
        cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NCHW, type, n_, o_, oh_, ow_));
    SEEDRL_CUDA_CHECK(cudnnSetTensor4dDescriptor(bias_desc_, CUDNN_TENSOR_NCHW, type, 1, o_, 1, 1));
    choose_algorithms();
  }
  cudnn_conv2d(const cudnn_conv2d&) = delete;
  cudnn_conv2d& operator=(const cudnn_conv2d&) = delete;
  ~cudnn_conv2d() {
    (void)cudnnDestroyConvolutionDescriptor(conv_desc_);
    (void)cudnnDestroyFilterDescriptor(w_desc_);
    (void)cudnnDestroyTensorDescriptor(bias_desc_);
    (void)cudnnDestroyTensorDescriptor(y_desc_);
    (void)cudnnDestroyTensorDescriptor(x_desc_);
    (void)cudnnDestroy(handle_);
  }

  /// The shape this convolution was made for.
  const conv2d_shape& shape() const noexcept { return shape_; }
  int output_height() const noexcept { return oh_; }
  int output_width() const noexcept { return ow_; }
  /// Elements of y: N * O * OH * OW.
  std::size_t output_elements() const noexcept {
    return static_cast<std::size_t>(n_) * o_ * oh_ * ow_;
  }

  /// y = conv(x, w) + bias; device pointers; asynchronous.
  void forward(const S* x, const S* w, const S* bias, S* y) {
    const S one = S(1);
    const S zero = S(0);
    SEEDRL_CUDA_CHECK(cudnnConvolutionForward(handle_, &one, x_desc_, x, w_desc_, w, conv_desc_,
                                              fwd_algo_, workspace_.data(), workspace_.size(),
                                              &zero, y_desc_, y));
    SEEDRL_CUDA_CHECK(cudnnAddTensor(handle_, &one, bias_desc_, bias, &one, y_desc_, y));
  }

  /// dw += d/dw, dbias += d/dbias and (dx non-null) dx = d/dx, from dy at the input x.
  void backward(const S* x, const S* w, const S* dy, S* dx, S* dw, S* dbias) {
    const S one = S(1);
    const S zero = S(0);
    SEEDRL_CUDA_CHECK(cudnnConvolutionBackwardFilter(handle_, &one, x_desc_, x, y_desc_, dy,
                                                     conv_desc_, filter_algo_, workspace_.data(),
                                                     workspace_.size(), &one, w_desc_, dw));
    SEEDRL_CUDA_CHECK(
        cudnnConvolutionBackwardBias(handle_, &one, y_desc_, dy, &one, bias_desc_, dbias));
    if (dx != nullptr) {
      SEEDRL_CUDA_CHECK(cudnnConvolutionBackwardData(handle_, &one, w_desc_, w, y_desc_, dy,
                                                     conv_desc_, data_algo_, workspace_.data(),
                                                     workspace_.size(), &zero, x_desc_, dx));
    }
  }

 private:
  // cuDNN's heuristics rank the algorithms; the first that is supported is taken, and one
  // workspace large enough for the three is kept.
  void choose_algorithms() {
    int count = 0;
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    SEEDRL_CUDA_CHECK(
        cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_desc_, w_desc_, conv_desc_, y_desc_,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, fwd));
    fwd_algo_ = first_supported(fwd, count, "cudnnGetConvolutionForwardAlgorithm_v7").algo;
    cudnnConvolutionBwdFilterAlgoPerf_t filt[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    SEEDRL_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle_, x_desc_, y_desc_, conv_desc_, w_desc_, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
        &count, filt));
    filter_algo_ =
        first_supported(filt, count, "cudnnGetConvolutionBackwardFilterAlgorithm_v7").algo;
    cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    SEEDRL_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle_, w_desc_, y_desc_, conv_desc_, x_desc_, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
        &count, data));
    data_algo_ = first_supported(data, count, "cudnnGetConvolutionBackwardDataAlgorithm_v7").algo;
    std::size_t a = 0;
    std::size_t b = 0;
    std::size_t c = 0;
    SEEDRL_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle_, x_desc_, w_desc_, conv_desc_,
                                                              y_desc_, fwd_algo_, &a));
    SEEDRL_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle_, x_desc_, y_desc_, conv_desc_, w_desc_, filter_algo_, &b));
    SEEDRL_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle_, w_desc_, y_desc_, conv_desc_, x_desc_, data_algo_, &c));
    const std::size_t bytes = std::max(a, std::max(b, c));
    workspace_ = device_buffer<unsigned char>(bytes);
  }

  // Prefers an algorithm ranked for plain FMA math (the descriptor's), so that no tensor-core
  // variant is picked and then run in a math mode it was not ranked for.
  template <class Perf>
  static const Perf& first_supported(const Perf* perf, int count, const char* call) {
    for (int i = 0; i < count; ++i) {
      if (perf[i].status == CUDNN_STATUS_SUCCESS &&
          (perf[i].mathType == CUDNN_FMA_MATH || perf[i].mathType == CUDNN_DEFAULT_MATH)) {
        return perf[i];
      }
    }
    for (int i = 0; i < count; ++i) {
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        return perf[i];
      }
    }
    throw cuda_error(std::string("seedrl: ") + call + " found no supported algorithm");
  }

  conv2d_shape shape_;
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_desc_ = nullptr;
  cudnnTensorDescriptor_t y_desc_ = nullptr;
  cudnnTensorDescriptor_t bias_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  int n_ = 0;
  int o_ = 0;
  int oh_ = 0;
  int ow_ = 0;
  cudnnConvolutionFwdAlgo_t fwd_algo_{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo_{};
  cudnnConvolutionBwdDataAlgo_t data_algo_{};
  device_buffer<unsigned char> workspace_;
};

}  // namespace seedrl::cuda
