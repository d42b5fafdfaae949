#pragma once
/// \file
/// Fused Adam and RMSProp updates on the GPU: one kernel reads each parameter, its gradient and
/// its state once and writes them once, running `detail::adam_update` /
/// `detail::rmsprop_update` / `detail::rmsprop_momentum_update`
/// (`seedrl/detail/optimizer_math.hpp`), the functions the CPU optimizers run. The per-step
/// coefficients come from the same host helpers (`detail::make_adam_coefficients`, ...), so a
/// step on the GPU is the CPU's step up to rounding of the fused multiply-adds.

#include <cuda_runtime.h>

#include <cstddef>

#include "seedrl/cuda/detail/launch.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/detail/optimizer_math.hpp"

namespace seedrl::cuda {

namespace detail {

template <class S>
static __global__ void adam_kernel(seedrl::detail::adam_coefficients<S> k, std::size_t n, S* params,
                                   S* m, S* v, const S* grads) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    S p = params[i];
    S mi = m[i];
    S vi = v[i];
    seedrl::detail::adam_update(k, p, mi, vi, grads[i]);
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
  }
}

template <class S>
static __global__ void rmsprop_kernel(seedrl::detail::rmsprop_coefficients<S> k, std::size_t n,
                                      S* params, S* v, S* momentum_buffer, const S* grads) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    S p = params[i];
    S vi = v[i];
    if (momentum_buffer != nullptr) {
      S buf = momentum_buffer[i];
      seedrl::detail::rmsprop_momentum_update(k, p, vi, buf, grads[i]);
      momentum_buffer[i] = buf;
    } else {
      seedrl::detail::rmsprop_update(k, p, vi, grads[i]);
    }
    params[i] = p;
    v[i] = vi;
  }
}

}  // namespace detail

/// One Adam step over n device elements; `k` for this step from
/// `seedrl::detail::make_adam_coefficients<S>(beta1, beta2, eps, lr, t)`. Asynchronous.
template <class S>
void adam_step(const seedrl::detail::adam_coefficients<S>& k, std::size_t n, S* params, S* m, S* v,
               const S* grads, cudaStream_t stream = nullptr) {
  if (n == 0) {
    return;
  }
  detail::adam_kernel<S><<<detail::elementwise_blocks(n), detail::elementwise_threads, 0, stream>>>(
      k, n, params, m, v, grads);
  check_launch("adam_kernel");
}

/// One RMSProp step over n device elements; `momentum_buffer` null runs the update without
/// momentum (as the CPU optimizer does when its momentum is 0). Asynchronous.
template <class S>
void rmsprop_step(const seedrl::detail::rmsprop_coefficients<S>& k, std::size_t n, S* params, S* v,
                  S* momentum_buffer, const S* grads, cudaStream_t stream = nullptr) {
  if (n == 0) {
    return;
  }
  detail::rmsprop_kernel<S>
      <<<detail::elementwise_blocks(n), detail::elementwise_threads, 0, stream>>>(
          k, n, params, v, momentum_buffer, grads);
  check_launch("rmsprop_kernel");
}

}  // namespace seedrl::cuda
