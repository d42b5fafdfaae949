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

/// Marks a host loop GCC 12 should vectorise at -O2: it does not unless its cheapest cost model
/// allows (it does not allow the max pooling's or the LSTM cell backward's row loops); the
/// functions marked with this ask for its dynamic model. Clang vectorises at -O2 anyway.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(__INTEL_LLVM_COMPILER)
#define SEEDRL_VECTORIZE_LOOPS \
  __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
/// As SEEDRL_VECTORIZE_LOOPS, for loops whose float compares select values (a clamp): GCC keeps
/// them as branches while a compare may raise a floating-point exception flag, which no seedrl
/// code reads. 6.5x faster for the replay's narrowing of frames.
#define SEEDRL_VECTORIZE_SELECTS \
  __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic", "no-trapping-math")))
#else
#define SEEDRL_VECTORIZE_LOOPS
#define SEEDRL_VECTORIZE_SELECTS
#endif
