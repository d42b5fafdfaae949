#pragma once
/// \file
/// Batched one-step LSTM inference on the GPU, for seedrl's layout (`seedrl/net/lstm.hpp`):
/// layer weights W = [W_ih | W_hh] of [4H, I+H] row-major, bias [4H], PyTorch's gate order
/// (i, f, g, o), and an environment's state as rows holding h then c.
///
/// Three ways to run a step, chosen per batch size by `lstm_step_runner`:
///   - fused (B <= fused_max_batch): one launch does the input and recurrent products and the
///     gate nonlinearities with the state update. A warp owns one hidden unit j and a tile of up
///     to 8 batch rows: its lanes stride over the I+H inputs, reading the four weight rows of j
///     (coalesced) against the tile's [x, h] rows staged in shared memory, reduce by shuffles, and
///     the lane of each row applies `detail::lstm_unit`. Weights are read once per batch tile.
///   - gemm (larger B): cuBLAS GEMMs for the products and a separate pointwise kernel; at large
///     B the products are compute-bound and cuBLAS's tiling wins. It is also the baseline the
///     benchmark compares the fused kernel with.
///   - persistent (`lstm_persistent_steps`, small B, several steps): one cooperative launch runs
///     many steps; each block keeps its slice of W in shared memory across the steps and the
///     grid synchronises between steps, so weights are read from HBM once, not once per step.
/// Every path applies episode resets as the CPU layer does: where dones[b] is set, that row's
/// h and c are zero before the step.

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/cuda/blas.cuh"
#include "seedrl/cuda/detail/warp.cuh"
#include "seedrl/cuda/device.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/cuda/memory.cuh"
#include "seedrl/detail/lstm_math.hpp"

namespace seedrl::cuda {

/// One LSTM layer's parameters in device memory (seedrl's layout; see the file comment).
template <class S>
struct lstm_layer_device {
  const S* weight = nullptr;  ///< [4H, I+H] row-major
  const S* bias = nullptr;    ///< [4H]
  int input_size = 0;         ///< I
  int hidden_size = 0;        ///< H
};

/// One step's operands, device pointers to rows of `batch` environments with row strides in
/// elements. The outputs must not alias the previous state (other blocks still read h_prev
/// while one writes h): keep two state buffers and swap them.
template <class S>
struct lstm_step_operands {
  int batch = 0;                        ///< B
  const S* x = nullptr;                 ///< [B, I]
  int x_stride = 0;                     ///< elements between rows of x
  const std::uint8_t* dones = nullptr;  ///< [B] or null: nonzero resets that row's state first
  const S* h_prev = nullptr;            ///< [B, H]
  const S* c_prev = nullptr;            ///< [B, H]
  int prev_stride = 0;                  ///< elements between rows of h_prev and c_prev
  S* h = nullptr;                       ///< [B, H] out
  S* c = nullptr;                       ///< [B, H] out
  int out_stride = 0;                   ///< elements between rows of h and c
};

namespace detail {

inline constexpr int lstm_fused_warps = 4;  ///< warps (hidden units) per block of the fused kernel

/// The fused step; see the file comment. Grid: (ceil(H / warps), ceil(B / BT)).
template <class S, int BT>
static __global__ void __launch_bounds__(lstm_fused_warps * 32)
    lstm_step_fused_kernel(lstm_layer_device<S> layer, lstm_step_operands<S> op) {
  static_assert(BT >= 1 && BT <= 32, "one lane finishes each row of the tile");
  extern __shared__ __align__(16) unsigned char lstm_smem[];
  S* xh = reinterpret_cast<S*>(lstm_smem);
  const int I = layer.input_size;
  const int H = layer.hidden_size;
  const int K = I + H;
  const int b0 = static_cast<int>(blockIdx.y) * BT;
  const int rows = min(BT, op.batch - b0);
  for (int idx = static_cast<int>(threadIdx.x); idx < BT * K; idx += static_cast<int>(blockDim.x)) {
    const int r = idx / K;
    const int k = idx - r * K;
    S v = S(0);
    if (r < rows) {
      const std::size_t b = static_cast<std::size_t>(b0 + r);
      const bool reset = op.dones != nullptr && op.dones[b] != 0;
      if (k < I) {
        v = op.x[b * op.x_stride + k];
      } else if (!reset) {
        v = op.h_prev[b * op.prev_stride + (k - I)];
      }
    }
    xh[idx] = v;
  }
  __syncthreads();

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int j = static_cast<int>(blockIdx.x) * lstm_fused_warps + warp;
  if (j >= H) {
    return;  // no barrier follows
  }
  S acc[4][BT];
#pragma unroll
  for (int g = 0; g < 4; ++g) {
#pragma unroll
    for (int r = 0; r < BT; ++r) {
      acc[g][r] = S(0);
    }
  }
  const S* w_i = layer.weight + static_cast<std::size_t>(j) * K;
  const S* w_f = layer.weight + static_cast<std::size_t>(H + j) * K;
  const S* w_g = layer.weight + static_cast<std::size_t>(2 * H + j) * K;
  const S* w_o = layer.weight + static_cast<std::size_t>(3 * H + j) * K;
  for (int k = lane; k < K; k += 32) {
    const S wi = w_i[k];
    const S wf = w_f[k];
    const S wg = w_g[k];
    const S wo = w_o[k];
#pragma unroll
    for (int r = 0; r < BT; ++r) {
      const S v = xh[r * K + k];
      acc[0][r] += wi * v;
      acc[1][r] += wf * v;
      acc[2][r] += wg * v;
      acc[3][r] += wo * v;
    }
  }
#pragma unroll
  for (int g = 0; g < 4; ++g) {
#pragma unroll
    for (int r = 0; r < BT; ++r) {
      acc[g][r] = warp_sum(acc[g][r]);
    }
  }
#pragma unroll
  for (int r = 0; r < BT; ++r) {
    if (lane == r && r < rows) {
      const std::size_t b = static_cast<std::size_t>(b0 + r);
      const bool reset = op.dones != nullptr && op.dones[b] != 0;
      const S c_prev = reset ? S(0) : op.c_prev[b * op.prev_stride + j];
      const auto u = seedrl::detail::lstm_unit(
          acc[0][r] + layer.bias[j], acc[1][r] + layer.bias[H + j],
          acc[2][r] + layer.bias[2 * H + j], acc[3][r] + layer.bias[3 * H + j], c_prev);
      op.c[b * op.out_stride + j] = u.c;
      op.h[b * op.out_stride + j] = u.h;
    }
  }
}

/// h_masked[b, :] = h_prev[b, :], or 0 where dones[b] is set: the recurrent GEMM's operand.
template <class S>
static __global__ void lstm_mask_hidden_kernel(lstm_step_operands<S> op, int H, S* h_masked) {
  const std::size_t n = static_cast<std::size_t>(op.batch) * H;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t b = i / H;
    const std::size_t j = i - b * H;
    const bool reset = op.dones != nullptr && op.dones[b] != 0;
    h_masked[i] = reset ? S(0) : op.h_prev[b * op.prev_stride + j];
  }
}

/// The separate pointwise kernel after the GEMMs: bias, nonlinearities and the state update
/// from pre-activations `gates` [B, 4H] (without bias).
template <class S>
static __global__ void lstm_pointwise_kernel(lstm_step_operands<S> op, const S* bias, int H,
                                             const S* gates) {
  const std::size_t n = static_cast<std::size_t>(op.batch) * H;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t b = i / H;
    const int j = static_cast<int>(i - b * H);
    const bool reset = op.dones != nullptr && op.dones[b] != 0;
    const S c_prev = reset ? S(0) : op.c_prev[b * op.prev_stride + j];
    const S* z = gates + b * 4 * H;
    const auto u = seedrl::detail::lstm_unit(z[j] + bias[j], z[H + j] + bias[H + j],
                                             z[2 * H + j] + bias[2 * H + j],
                                             z[3 * H + j] + bias[3 * H + j], c_prev);
    op.c[b * op.out_stride + j] = u.c;
    op.h[b * op.out_stride + j] = u.h;
  }
}

/// Blocks for a grid-stride loop over n elements.
inline unsigned int grid_for(std::size_t n, int threads) {
  const std::size_t blocks = (n + static_cast<std::size_t>(threads) - 1) / threads;
  return static_cast<unsigned int>(blocks < 65535 ? (blocks == 0 ? 1 : blocks) : 65535);
}

template <class S, int BT>
void launch_lstm_fused(const lstm_layer_device<S>& layer, const lstm_step_operands<S>& op,
                       cudaStream_t stream) {
  const int K = layer.input_size + layer.hidden_size;
  const std::size_t smem = static_cast<std::size_t>(BT) * K * sizeof(S);
  if (smem > 48 * 1024) {
    SEEDRL_CUDA_CHECK(cudaFuncSetAttribute(lstm_step_fused_kernel<S, BT>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem)));
  }
  const dim3 grid(static_cast<unsigned int>(ceil_div(layer.hidden_size, lstm_fused_warps)),
                  static_cast<unsigned int>(ceil_div(op.batch, BT)));
  lstm_step_fused_kernel<S, BT><<<grid, lstm_fused_warps * 32, smem, stream>>>(layer, op);
  check_launch("lstm_step_fused_kernel");
}

}  // namespace detail

/// One fused step (see the file comment); asynchronous on `stream`.
template <class S>
void lstm_step_fused(const lstm_layer_device<S>& layer, const lstm_step_operands<S>& op,
                     cudaStream_t stream = nullptr) {
  if (op.batch <= 0) {
    return;
  }
  // A tile no larger than the batch: at B = 1 a warp does one row, not eight with seven empty.
  if (op.batch == 1) {
    detail::launch_lstm_fused<S, 1>(layer, op, stream);
  } else if (op.batch == 2) {
    detail::launch_lstm_fused<S, 2>(layer, op, stream);
  } else if (op.batch <= 4) {
    detail::launch_lstm_fused<S, 4>(layer, op, stream);
  } else {
    detail::launch_lstm_fused<S, 8>(layer, op, stream);
  }
}

/// Scratch for `lstm_step_gemm`: B*4H pre-activations and B*H masked hidden state.
template <class S>
std::size_t lstm_step_gemm_workspace(int batch, int hidden_size) {
  return static_cast<std::size_t>(batch) * 5 * hidden_size;
}

/// One step as two cuBLAS GEMMs (x W_ih^T, then + h W_hh^T) and a separate pointwise kernel;
/// `workspace` holds lstm_step_gemm_workspace(B, H) elements. Asynchronous on the handle's
/// stream, which must be `stream`.
template <class S>
void lstm_step_gemm(cublasHandle_t blas, const lstm_layer_device<S>& layer,
                    const lstm_step_operands<S>& op, S* workspace, cudaStream_t stream = nullptr) {
  if (op.batch <= 0) {
    return;
  }
  const int B = op.batch;
  const int I = layer.input_size;
  const int H = layer.hidden_size;
  const int K = I + H;
  S* gates = workspace;
  S* h_masked = workspace + static_cast<std::size_t>(B) * 4 * H;
  constexpr int threads = 256;
  detail::lstm_mask_hidden_kernel<S>
      <<<detail::grid_for(static_cast<std::size_t>(B) * H, threads), threads, 0, stream>>>(
          op, H, h_masked);
  check_launch("lstm_mask_hidden_kernel");
  // gates[B, 4H] = x[B, I] * W_ih^T, W_ih = W[:, :I] (row stride K).
  gemm_row_major(blas, false, true, B, 4 * H, I, S(1), op.x, op.x_stride, layer.weight, K, S(0),
                 gates, 4 * H);
  // gates += h_masked[B, H] * W_hh^T, W_hh = W[:, I:].
  gemm_row_major(blas, false, true, B, 4 * H, H, S(1), h_masked, H, layer.weight + I, K, S(1),
                 gates, 4 * H);
  detail::lstm_pointwise_kernel<S>
      <<<detail::grid_for(static_cast<std::size_t>(B) * H, threads), threads, 0, stream>>>(
          op, layer.bias, H, gates);
  check_launch("lstm_pointwise_kernel");
}

// ---------------------------------------------------------------------------------------------
// Persistent small-batch variant

namespace detail {

inline constexpr int lstm_persistent_warps = 8;
inline constexpr int lstm_persistent_tile = 8;

/// Launch shape of the persistent kernel: `units` hidden units per block, `blocks` blocks.
struct lstm_persistent_shape {
  int units = 0;
  int blocks = 0;
  std::size_t shared_bytes = 0;
};

/// Operands of `lstm_persistent_kernel`.
template <class S>
struct lstm_persistent_operands {
  int steps = 0;                        ///< n
  int batch = 0;                        ///< B
  int units = 0;                        ///< hidden units per block
  const S* x = nullptr;                 ///< [n, B, I], dense
  const std::uint8_t* dones = nullptr;  ///< [n, B] or null
  S* state = nullptr;                   ///< [B, state_stride]: h at column 0, c at column H
  int state_stride = 0;
  S* y = nullptr;          ///< [n, B, H] or null: h after each step
  S* h_buffers = nullptr;  ///< [2, B, H] scratch: h of step t lives in buffer t % 2
};

/// See the file comment. Shared memory: the block's 4*units weight rows, then B rows of [x, h].
template <class S>
static __global__ void __launch_bounds__(lstm_persistent_warps * 32)
    lstm_persistent_kernel(lstm_layer_device<S> layer, lstm_persistent_operands<S> op) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  extern __shared__ __align__(16) unsigned char lstm_smem[];
  const int I = layer.input_size;
  const int H = layer.hidden_size;
  const int K = I + H;
  const int U = op.units;
  const int B = op.batch;
  const int j0 = static_cast<int>(blockIdx.x) * U;
  const int units_here = min(U, H - j0);
  S* w_s = reinterpret_cast<S*>(lstm_smem);             // [4][U][K]
  S* xh_s = w_s + static_cast<std::size_t>(4) * U * K;  // [B][K]
  const int tid = static_cast<int>(threadIdx.x);
  const int nthreads = static_cast<int>(blockDim.x);

  // Load this block's weight rows once: row (g, u) is W row g*H + j0 + u.
  for (int idx = tid; idx < 4 * U * K; idx += nthreads) {
    const int row = idx / K;
    const int k = idx - row * K;
    const int g = row / U;
    const int u = row - g * U;
    w_s[idx] =
        u < units_here ? layer.weight[static_cast<std::size_t>(g * H + j0 + u) * K + k] : S(0);
  }

  const int warp = tid / 32;
  const int lane = tid % 32;
  const int tiles = ceil_div(B, lstm_persistent_tile);
  for (int t = 0; t < op.steps; ++t) {
    const std::uint8_t* dones =
        op.dones != nullptr ? op.dones + static_cast<std::size_t>(t) * B : nullptr;
    const S* x = op.x + static_cast<std::size_t>(t) * B * I;
    // h_{t-1}: the state at t = 0, else the buffer step t-1 wrote. It was written by other
    // blocks, so it is read through L2 (__ldcg), never from a possibly stale L1 line.
    const S* h_prev =
        t == 0 ? op.state : op.h_buffers + static_cast<std::size_t>((t - 1) % 2) * B * H;
    const int h_stride = t == 0 ? op.state_stride : H;
    S* h_out = op.h_buffers + static_cast<std::size_t>(t % 2) * B * H;
    for (int idx = tid; idx < B * K; idx += nthreads) {
      const int r = idx / K;
      const int k = idx - r * K;
      const bool reset = dones != nullptr && dones[r] != 0;
      S v = S(0);
      if (k < I) {
        v = x[static_cast<std::size_t>(r) * I + k];
      } else if (!reset) {
        v = __ldcg(h_prev + static_cast<std::size_t>(r) * h_stride + (k - I));
      }
      xh_s[idx] = v;
    }
    __syncthreads();
    for (int item = warp; item < units_here * tiles; item += lstm_persistent_warps) {
      const int u = item / tiles;
      const int b0 = (item - u * tiles) * lstm_persistent_tile;
      const int rows = min(lstm_persistent_tile, B - b0);
      S acc[4][lstm_persistent_tile];
#pragma unroll
      for (int g = 0; g < 4; ++g) {
#pragma unroll
        for (int r = 0; r < lstm_persistent_tile; ++r) {
          acc[g][r] = S(0);
        }
      }
      for (int k = lane; k < K; k += 32) {
        S w[4];
#pragma unroll
        for (int g = 0; g < 4; ++g) {
          w[g] = w_s[static_cast<std::size_t>(g * U + u) * K + k];
        }
#pragma unroll
        for (int r = 0; r < lstm_persistent_tile; ++r) {
          const S v = r < rows ? xh_s[(b0 + r) * K + k] : S(0);
#pragma unroll
          for (int g = 0; g < 4; ++g) {
            acc[g][r] += w[g] * v;
          }
        }
      }
#pragma unroll
      for (int g = 0; g < 4; ++g) {
#pragma unroll
        for (int r = 0; r < lstm_persistent_tile; ++r) {
          acc[g][r] = warp_sum(acc[g][r]);
        }
      }
      const int j = j0 + u;
#pragma unroll
      for (int r = 0; r < lstm_persistent_tile; ++r) {
        if (lane == r && r < rows) {
          const int b = b0 + r;
          const bool reset = dones != nullptr && dones[b] != 0;
          // c of unit j is read and written only by this lane, so it stays in the state.
          S* c = op.state + static_cast<std::size_t>(b) * op.state_stride + H + j;
          const auto res =
              seedrl::detail::lstm_unit(acc[0][r] + layer.bias[j], acc[1][r] + layer.bias[H + j],
                                        acc[2][r] + layer.bias[2 * H + j],
                                        acc[3][r] + layer.bias[3 * H + j], reset ? S(0) : *c);
          *c = res.c;
          __stcg(h_out + static_cast<std::size_t>(b) * H + j, res.h);
          if (op.y != nullptr) {
            op.y[(static_cast<std::size_t>(t) * B + b) * H + j] = res.h;
          }
        }
      }
    }
    grid.sync();  // every block's h_t is written before any block reads it as h_prev
  }
  // Everyone has read the state's h (at t = 0, before the first grid.sync): write the last h.
  if (op.steps > 0) {
    const S* h_last = op.h_buffers + static_cast<std::size_t>((op.steps - 1) % 2) * B * H;
    for (int idx = tid; idx < B * units_here; idx += nthreads) {
      const int b = idx / units_here;
      const int j = j0 + (idx - b * units_here);
      op.state[static_cast<std::size_t>(b) * op.state_stride + j] =
          __ldcg(h_last + static_cast<std::size_t>(b) * H + j);
    }
  }
}

}  // namespace detail

/// How the persistent kernel would be launched for (B, I, H) on `device`, or blocks == 0 when
/// it cannot run there (no cooperative launch, or the weight slices and the [x, h] rows do not
/// fit in shared memory next to each other at one block per SM).
template <class S>
detail::lstm_persistent_shape lstm_persistent_plan(int batch, int input_size, int hidden_size,
                                                   const device_info& device) {
  detail::lstm_persistent_shape shape;
  if (!device.cooperative_launch || batch <= 0 || hidden_size <= 0) {
    return shape;
  }
  const int K = input_size + hidden_size;
  const int units = detail::ceil_div(hidden_size, device.multiprocessors);
  const std::size_t bytes =
      (static_cast<std::size_t>(4) * units * K + static_cast<std::size_t>(batch) * K) * sizeof(S);
  if (bytes > device.shared_per_block_optin) {
    return shape;
  }
  shape.units = units;
  shape.blocks = detail::ceil_div(hidden_size, units);
  shape.shared_bytes = bytes;
  return shape;
}

/// Runs `steps` consecutive steps of one layer for `batch` environments in one cooperative
/// launch (see the file comment). x [steps, B, I] and dones [steps, B] (or null) are dense;
/// `state` [B, state_stride] holds h at column 0 and c at column H and is updated in place;
/// y [steps, B, H] (or null) gets h after each step; `h_buffers` is 2*B*H scratch. Throws
/// std::invalid_argument when lstm_persistent_plan says it cannot run on this device.
template <class S>
void lstm_persistent_steps(const lstm_layer_device<S>& layer, int steps, int batch,
                           const std::type_identity_t<S>* x, const std::uint8_t* dones,
                           std::type_identity_t<S>* state, int state_stride,
                           std::type_identity_t<S>* y, std::type_identity_t<S>* h_buffers,
                           const device_info& device, cudaStream_t stream = nullptr) {
  const auto shape = lstm_persistent_plan<S>(batch, layer.input_size, layer.hidden_size, device);
  if (shape.blocks == 0) {
    throw std::invalid_argument(
        "seedrl::cuda::lstm_persistent_steps: B = " + std::to_string(batch) +
        ", H = " + std::to_string(layer.hidden_size) + " does not fit on " + device.name +
        " (check lstm_persistent_plan first and use lstm_step_fused instead)");
  }
  SEEDRL_CUDA_CHECK(cudaFuncSetAttribute(detail::lstm_persistent_kernel<S>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(shape.shared_bytes)));
  int per_sm = 0;
  SEEDRL_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, detail::lstm_persistent_kernel<S>, detail::lstm_persistent_warps * 32,
      shape.shared_bytes));
  if (per_sm * device.multiprocessors < shape.blocks) {
    throw std::invalid_argument(
        "seedrl::cuda::lstm_persistent_steps: " + std::to_string(shape.blocks) +
        " blocks cannot all be resident on " + device.name + " (use lstm_step_fused instead)");
  }
  detail::lstm_persistent_operands<S> op;
  op.steps = steps;
  op.batch = batch;
  op.units = shape.units;
  op.x = x;
  op.dones = dones;
  op.state = state;
  op.state_stride = state_stride;
  op.y = y;
  op.h_buffers = h_buffers;
  lstm_layer_device<S> layer_arg = layer;
  void* args[] = {&layer_arg, &op};
  SEEDRL_CUDA_CHECK(cudaLaunchCooperativeKernel(
      reinterpret_cast<const void*>(detail::lstm_persistent_kernel<S>), dim3(shape.blocks),
      dim3(detail::lstm_persistent_warps * 32), args, shape.shared_bytes, stream));
}

// ---------------------------------------------------------------------------------------------
// The per-batch-size choice

/// Which single-step kernel runs a batch.
enum class lstm_step_path { fused, gemm };

/// Largest batch the fused kernel takes; above it the products are compute-bound and cuBLAS's
/// tiled GEMMs are faster than re-reading the weights per 8-row tile. To be tuned on the device
/// (bench/gpu/bench_lstm_step reports both at every B).
inline constexpr int lstm_fused_max_batch = 256;

/// The path `lstm_step_runner` takes for `batch` rows.
constexpr lstm_step_path choose_lstm_step_path(int batch) {
  return batch <= lstm_fused_max_batch ? lstm_step_path::fused : lstm_step_path::gemm;
}

/// Runs single steps, choosing the kernel per batch size; owns the cuBLAS handle and the GEMM
/// path's workspace (grown on demand, so steady state allocates nothing).
template <class S>
class lstm_step_runner {
 public:
  explicit lstm_step_runner(cudaStream_t stream = nullptr) : stream_(stream), blas_(stream) {}

  /// One step; asynchronous on the runner's stream. Returns the path it took.
  lstm_step_path step(const lstm_layer_device<S>& layer, const lstm_step_operands<S>& op) {
    const lstm_step_path path = choose_lstm_step_path(op.batch);
    if (path == lstm_step_path::fused) {
      lstm_step_fused(layer, op, stream_);
    } else {
      const std::size_t need = lstm_step_gemm_workspace<S>(op.batch, layer.hidden_size);
      if (workspace_.size() < need) {
        workspace_ = device_buffer<S>(need);
      }
      lstm_step_gemm(blas_.get(), layer, op, workspace_.data(), stream_);
    }
    return path;
  }

 private:
  cudaStream_t stream_;
  blas_handle blas_;
  device_buffer<S> workspace_;
};

}  // namespace seedrl::cuda
