#pragma once
/// \file
/// V-trace on the GPU as a batch-parallel reverse scan (cuda_backend's `vtrace` primitive): one
/// thread per column b walks t from T-1 down to 0, carrying (V_{t+1}, acc_{t+1}) in registers and
/// running `detail::vtrace_step` (`seedrl/detail/vtrace_step.hpp`), the function the CPU `vtrace()`
/// runs, cut at time-limit truncations by `detail::vtrace_cut` as on the CPU. Arrays are time-major
/// [T][B] as on the CPU, so consecutive threads read consecutive addresses of each row: every input
/// is read once and every output written once, which makes the kernel bandwidth-bound by design (7
/// arrays of T*B scalars move).

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/cuda/detail/launch.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/detail/vtrace_step.hpp"

namespace seedrl::cuda {

/// Device pointers of one V-trace problem: the backend-neutral operands of
/// seedrl/backend/compute_backend.hpp ([T*B] arrays time-major, bootstrap [B]).
template <class S>
using vtrace_operands = seedrl::vtrace_operands<S>;

namespace detail {

template <class S>
static __global__ void vtrace_kernel(seedrl::detail::vtrace_coefficients<S> k,
                                     vtrace_operands<S> op) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= op.B) {
    return;
  }
  // Outputs never alias inputs (as on the CPU), so the loads of row t-1 may be issued before
  // the stores of row t: each thread keeps the next row's four inputs in flight while it
  // computes the current one, which the bandwidth-bound scan needs to fill the memory pipes.
  const S* __restrict__ log_rhos = op.log_rhos;
  const S* __restrict__ discounts = op.discounts;
  const S* __restrict__ rewards = op.rewards;
  const S* __restrict__ values = op.values;
  const std::uint8_t* __restrict__ truncated = op.truncated;
  S* __restrict__ vs = op.vs;
  S* __restrict__ pg = op.pg_advantages;
  const std::size_t stride = static_cast<std::size_t>(op.B);
  std::size_t i = static_cast<std::size_t>(op.T - 1) * stride + b;
  S next_value = op.bootstrap[b];
  S next_acc = S(0);
  S lr = log_rhos[i];
  S disc = discounts[i];
  S rew = rewards[i];
  S value = values[i];
  std::uint8_t cut = truncated != nullptr ? truncated[i] : std::uint8_t(0);
  for (int t = op.T - 1; t >= 0; --t) {
    S lr_next = S(0);
    S disc_next = S(0);
    S rew_next = S(0);
    S value_next = S(0);
    std::uint8_t cut_next = 0;
    if (t > 0) {
      const std::size_t j = i - stride;
      lr_next = log_rhos[j];
      disc_next = discounts[j];
      rew_next = rewards[j];
      value_next = values[j];
      cut_next = truncated != nullptr ? truncated[j] : std::uint8_t(0);
    }
    const auto r = seedrl::detail::vtrace_cut(
        seedrl::detail::vtrace_step(k, lr, disc, rew, value, next_value, next_acc), cut);
    vs[i] = seedrl::detail::vtrace_target(value, r.acc);
    pg[i] = r.pg_advantage;
    next_value = value;
    next_acc = r.acc;
    lr = lr_next;
    disc = disc_next;
    rew = rew_next;
    value = value_next;
    cut = cut_next;
    i -= stride;  // wraps below 0 after t = 0, when it is no longer used
  }
}

}  // namespace detail

/// Computes vs and pg_advantages; `k` comes from `seedrl::detail::make_vtrace_coefficients`
/// (`seedrl/algo/vtrace.hpp`), which validates the parameters on the host. Asynchronous.
template <class S>
void vtrace(const seedrl::detail::vtrace_coefficients<S>& k, const vtrace_operands<S>& op,
            cudaStream_t stream = nullptr) {
  if (op.T <= 0 || op.B <= 0) {
    return;
  }
  constexpr int threads = 128;
  const unsigned int blocks = static_cast<unsigned int>((op.B + threads - 1) / threads);
  detail::vtrace_kernel<S><<<blocks, threads, 0, stream>>>(k, op);
  check_launch("vtrace_kernel");
}

}  // namespace seedrl::cuda
