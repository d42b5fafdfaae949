#pragma once
/// \file
/// Launch shapes for the grid-stride elementwise kernels.

#include <cstddef>

namespace seedrl::cuda::detail {

inline constexpr int elementwise_threads = 256;  ///< threads per block of elementwise kernels

/// Blocks for a grid-stride loop over n elements (at least 1, at most 65535 * 4).
inline unsigned int elementwise_blocks(std::size_t n) {
  const std::size_t blocks = (n + elementwise_threads - 1) / elementwise_threads;
  const std::size_t cap = 65535u * 4u;
  return static_cast<unsigned int>(blocks == 0 ? 1 : (blocks < cap ? blocks : cap));
}

/// The first index of this thread and the grid's stride, for grid-stride loops.
__device__ __forceinline__ std::size_t global_index() {
  return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

}  // namespace seedrl::cuda::detail
