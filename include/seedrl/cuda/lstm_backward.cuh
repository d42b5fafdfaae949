#pragma once
/// \file
/// The pointwise part of the LSTM's backward pass on the GPU, for one step of one layer: from
/// the activated gates, tanh(c), c_prev and the incoming gradients dh and dc, the gate
/// pre-activation gradients dz [N, 4H] and dc_prev, through `detail::lstm_unit_grad`
/// (`seedrl/detail/lstm_math.hpp`), the function the CPU `lstm::backward_unroll` runs. The
/// products with W (dxh = dz W, dW += dz^T xh) are GEMMs: `gemm_row_major` in blas.cuh.

#include <cuda_runtime.h>

#include <cstddef>

#include "seedrl/cuda/detail/launch.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/detail/lstm_math.hpp"

namespace seedrl::cuda {

/// Device pointers for `lstm_backward_pointwise`; rows are dense (N rows of H or 4H).
template <class S>
struct lstm_backward_operands {
  int rows = 0;               ///< N (e.g. B for one step)
  int hidden_size = 0;        ///< H
  const S* gates = nullptr;   ///< [N, 4H] activated i, f, g, o
  const S* tanh_c = nullptr;  ///< [N, H]
  const S* c_prev = nullptr;  ///< [N, H]
  const S* dh = nullptr;      ///< [N, H] d loss / d h (from above and from step t+1)
  S* dc = nullptr;            ///< [N, H] in: d loss / d c from step t+1; out: d loss / d c_prev
  S* dz = nullptr;            ///< [N, 4H] out: d loss / d gate pre-activations
};

namespace detail {

template <class S>
static __global__ void lstm_backward_pointwise_kernel(lstm_backward_operands<S> op) {
  const int H = op.hidden_size;
  const std::size_t n = static_cast<std::size_t>(op.rows) * H;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const std::size_t r = i / H;
    const std::size_t j = i - r * H;
    const S* a = op.gates + r * 4 * H;
    const auto g = seedrl::detail::lstm_unit_grad(a[j], a[H + j], a[2 * H + j], a[3 * H + j],
                                                  op.tanh_c[i], op.c_prev[i], op.dh[i], op.dc[i]);
    S* z = op.dz + r * 4 * H;
    z[j] = g.dzi;
    z[H + j] = g.dzf;
    z[2 * H + j] = g.dzg;
    z[3 * H + j] = g.dzo;
    op.dc[i] = g.dc_prev;
  }
}

}  // namespace detail

/// Runs the pointwise backward step; asynchronous.
template <class S>
void lstm_backward_pointwise(const lstm_backward_operands<S>& op, cudaStream_t stream = nullptr) {
  const std::size_t n = static_cast<std::size_t>(op.rows) * op.hidden_size;
  if (n == 0) {
    return;
  }
  detail::lstm_backward_pointwise_kernel<S>
      <<<detail::elementwise_blocks(n), detail::elementwise_threads, 0, stream>>>(op);
  check_launch("lstm_backward_pointwise_kernel");
}

}  // namespace seedrl::cuda
