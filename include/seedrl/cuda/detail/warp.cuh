#pragma once
/// \file
/// Warp-level helpers shared by the kernels.

namespace seedrl::cuda::detail {

/// Sum of `v` over the 32 lanes of a full warp; every lane gets the total (butterfly).
template <class S>
__device__ __forceinline__ S warp_sum(S v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

/// Ceiling of a / b for positive ints.
__host__ __device__ constexpr int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

}  // namespace seedrl::cuda::detail
