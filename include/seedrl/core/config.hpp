#pragma once
/// \file
/// Portability macros shared by every header, including those compiled by nvcc.

/// Marks per-element math that the CPU backend and the CUDA kernels share, so that the CPU
/// tests exercise exactly the arithmetic the kernels run.
#if defined(__CUDACC__)
#define SEEDRL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SEEDRL_HOST_DEVICE inline
#endif
