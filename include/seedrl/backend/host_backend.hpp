#pragma once
/// \file
/// `host_backend`: the CPU model of `seedrl::ComputeBackend` (seedrl/backend/compute_backend.hpp).
/// Buffers are std::vector, `for_each` is a loop (Eigen expressions or row loops for the
/// kernels it knows: activations, sums, max pooling, the LSTM's cells, state rows), GEMMs are
/// oneDNN's sgemm or Eigen products, V-trace is the CPU scan of seedrl/algo/vtrace.hpp,
/// convolutions are oneDNN for float when SEEDRL_HAS_DNNL (seedrl/detail/dnnl_conv2d.hpp,
/// primitives kept per shape), otherwise im2col + GEMM (backend/detail/conv2d_gemm.hpp on
/// detail::host_conv_primitives). Every CPU agent (`actor_critic_agent`) runs on it, so do the
/// CPU tests' backend trainers, and it is the reference for the GPU backend's primitives.
/// Its GEMM is the CPU agents' (detail::host_sgemm_primitives: oneDNN's sgemm from 16 rows). The
/// convolutions' and the few-row products' scratch is kept between calls, so one object must not be
/// used by two threads at once.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/conv2d_gemm.hpp"
#include "seedrl/backend/detail/host_conv_primitives.hpp"
#include "seedrl/backend/detail/host_dense_primitives.hpp"
#include "seedrl/backend/detail/host_sgemm_primitives.hpp"
#include "seedrl/backend/detail/max_pool2d_kernels.hpp"
#include "seedrl/detail/dnnl_conv2d.hpp"

namespace seedrl {

/// Runs the ComputeBackend primitives on the calling thread; see the file comment. The ones
/// without Eigen (buffers, copies, for_each, V-trace, sums) are detail::host_primitives', the
/// GEMM detail::host_dense_primitives'.
class host_backend : public detail::host_sgemm_primitives {
 public:
  using detail::host_dense_primitives::for_each;

  /// Max pooling and its backward over whole images as loops over planes and output rows
  /// (detail::host_conv_primitives): the same bits as one call per
  /// element, several times faster.
  template <class S>
  void for_each(std::size_t n, const detail::max_pool_forward_kernel<S>& k) const {
    detail::host_conv_primitives{}.for_each(n, k);
  }
  template <class S>
  void for_each(std::size_t n, const detail::max_pool_backward_kernel<S>& k) const {
    detail::host_conv_primitives{}.for_each(n, k);
  }

  /// y = conv(x, w) + bias; see compute_backend.hpp.
  template <class S>
  void conv2d_forward(const conv2d_shape& shape, const S* x, const S* w, const S* bias,
                      S* y) const {
    detail::check_conv2d_shape(shape, "seedrl::host_backend::conv2d_forward");
#ifdef SEEDRL_DNNL_CONV
    if constexpr (std::is_same_v<S, float>) {
      if (shape.batch > 0 &&
          detail::dnnl_conv2d_forward(dnnl_conv_, dnnl_shape(shape), x, w, bias, y))
        return;
    }
#endif
    detail::conv2d_gemm_forward(detail::host_conv_primitives{}, conv_scratch<S>(), geometry(shape),
                                x, w, bias, y);
  }

  /// dw += d/dw, dbias += d/dbias, dx = d/dx (when not null); see compute_backend.hpp.
  template <class S>
  void conv2d_backward(const conv2d_shape& shape, const S* x, const S* w, const S* dy, S* dx, S* dw,
                       S* dbias) const {
    detail::check_conv2d_shape(shape, "seedrl::host_backend::conv2d_backward");
#ifdef SEEDRL_DNNL_CONV
    if constexpr (std::is_same_v<S, float>) {
      if (shape.batch > 0 &&
          detail::dnnl_conv2d_backward(dnnl_conv_, dnnl_shape(shape), x, w, dy, dx, dw, dbias))
        return;
    }
#endif
    detail::conv2d_gemm_backward(detail::host_conv_primitives{}, conv_scratch<S>(), geometry(shape),
                                 x, w, dy, dx, dw, dbias);
  }

  void synchronize() const noexcept {}

 private:
  static detail::conv2d_gemm_geometry geometry(const conv2d_shape& s) noexcept {
    return detail::conv2d_gemm_geometry(s, detail::host_conv2d_chunk_rows);
  }

#ifdef SEEDRL_DNNL_CONV
  static detail::dnnl_conv2d_shape dnnl_shape(const conv2d_shape& s) noexcept {
    const long in = static_cast<long>(s.in_channels) * s.input_height * s.input_width;
    const long out = static_cast<long>(s.out_channels) * s.output_height() * s.output_width();
    return {s.batch,    s.in_channels, s.input_height, s.input_width, s.out_channels, s.kernel_h,
            s.kernel_w, s.stride_h,    s.stride_w,     s.padding_h,   s.padding_w,    in,
            out};
  }
  mutable detail::dnnl_conv2d_cache dnnl_conv_;
#endif

  template <class S>
  detail::conv2d_gemm_scratch<std::vector<S>>& conv_scratch() const {
    if constexpr (std::is_same_v<S, float>) {
      return conv_float_;
    } else {
      static_assert(std::is_same_v<S, double>,
                    "seedrl: host_backend convolutions take float or double");
      return conv_double_;
    }
  }

  // Grown on demand; mutable so that the primitives stay const, as the other backends' are.
  mutable detail::conv2d_gemm_scratch<std::vector<float>> conv_float_;
  mutable detail::conv2d_gemm_scratch<std::vector<double>> conv_double_;
};

static_assert(ComputeBackend<host_backend>);

}  // namespace seedrl
