#pragma once
/// \file
/// SEED's IMPALA loss on the GPU (the formulas are in `seedrl/algo/impala_loss.hpp`):
///   1. per row (t, b) of steps 0..T-1: log pi(a_t) by `log_prob`, log rho, the clipped reward
///      and the discount (`detail::impala_clip_reward`, `detail::impala_discount`);
///   2. V-trace (`vtrace.cuh`), cut where step t+1 was a time-limit truncation (`truncated`);
///   3. per row: the logits' gradient by `log_prob_entropy_gradient` (log-softmax, entropy and
///      policy gradient in one pass), the value gradient by `detail::impala_value_gradient`, and
///      the row's three loss terms; step T's gradient rows are zeroed;
///   4. one block sums the terms in double, in a fixed order (deterministic, no atomics).
/// The per-element functions are the ones the CPU loss runs; only the order of the final sums
/// differs (the CPU sums rows in order), so terms agree to double rounding of float inputs.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "seedrl/algo/loss.hpp"
#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/cuda/detail/launch.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/cuda/memory.cuh"
#include "seedrl/cuda/vtrace.cuh"
#include "seedrl/detail/impala_math.hpp"
#include "seedrl/detail/vtrace_step.hpp"
#include "seedrl/net/categorical.hpp"

namespace seedrl::cuda {

/// The loss's scalars as the kernels take them; build from an `impala_loss_config` with
/// `max_abs_reward` = +inf when reward clipping is off and `vtrace` from
/// `seedrl::detail::make_vtrace_coefficients`.
template <class S>
struct impala_loss_coefficients {
  S discount;
  S baseline_cost;
  S entropy_cost;
  S max_abs_reward;
  seedrl::detail::vtrace_coefficients<S> vtrace;
};

/// Device pointers of a batch and its gradients: the backend-neutral operands of
/// seedrl/backend/compute_backend.hpp, here holding device pointers.
template <class S>
using impala_loss_operands = seedrl::impala_loss_operands<S>;

namespace detail {

template <class S>
static __global__ void impala_prepare_kernel(impala_loss_coefficients<S> k,
                                             impala_loss_operands<S> op, S* target_log_probs,
                                             S* log_rhos, S* discounts, S* rewards) {
  const std::size_t n = static_cast<std::size_t>(op.T) * op.B;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const S* row = op.logits + i * op.A;
    const S lp = seedrl::log_prob(row, op.A, static_cast<int>(op.actions[i]));
    target_log_probs[i] = lp;
    log_rhos[i] = lp - op.behaviour_log_probs[i];
    rewards[i] = seedrl::detail::impala_clip_reward(op.rewards[i + op.B], k.max_abs_reward);
    discounts[i] = seedrl::detail::impala_discount(k.discount, op.dones[i + op.B]);
  }
}

template <class S>
static __global__ void impala_gradient_kernel(impala_loss_coefficients<S> k,
                                              impala_loss_operands<S> op, const S* target_log_probs,
                                              const S* vs, const S* pg_advantages,
                                              double* row_terms) {
  const std::size_t n = static_cast<std::size_t>(op.T) * op.B;
  const std::size_t steps = n + op.B;
  const S inv_n = S(1) / static_cast<S>(n);
  const S entropy_coef = -k.entropy_cost * inv_n;
  for (std::size_t i = global_index(); i < steps; i += grid_stride()) {
    S* grad_row = op.grad_logits + i * op.A;
    if (i >= n) {  // step T: the bootstrap enters only through vs and pg_adv
      for (int a = 0; a < op.A; ++a) {
        grad_row[a] = S(0);
      }
      op.grad_values[i] = S(0);
      continue;
    }
    const S h = seedrl::log_prob_entropy_gradient(
        op.logits + i * op.A, op.A, static_cast<int>(op.actions[i]), -pg_advantages[i] * inv_n,
        entropy_coef, grad_row);
    const S value = op.values[i];
    op.grad_values[i] = seedrl::detail::impala_value_gradient(k.baseline_cost, vs[i], value, inv_n);
    const double err = static_cast<double>(vs[i]) - static_cast<double>(value);
    row_terms[i] = static_cast<double>(target_log_probs[i]) * pg_advantages[i];
    row_terms[n + i] = err * err;
    row_terms[2 * n + i] = h;
  }
}

inline constexpr int impala_sum_threads = 512;

/// sums[c] = sum of row_terms[c*n .. c*n+n) for c = 0, 1, 2, in one block: each thread sums a
/// strided subset in order, then a fixed tree combines them, so the result never varies.
/// (A template so that translation units that include this header without calling it do not
/// get an unused static function.)
template <class Acc>
static __global__ void __launch_bounds__(impala_sum_threads)
    impala_sum_kernel(const Acc* row_terms, std::size_t n, Acc* sums) {
  __shared__ Acc partial[impala_sum_threads];
  for (int c = 0; c < 3; ++c) {
    Acc s = Acc(0);
    for (std::size_t i = threadIdx.x; i < n; i += impala_sum_threads) {
      s += row_terms[c * n + i];
    }
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int half = impala_sum_threads / 2; half > 0; half /= 2) {
      if (static_cast<int>(threadIdx.x) < half) {
        partial[threadIdx.x] += partial[threadIdx.x + half];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      sums[c] = partial[0];
    }
    __syncthreads();
  }
}

}  // namespace detail

/// Scratch the GPU loss keeps between calls (grown on demand).
template <class S>
class impala_loss_workspace {
 public:
  /// Grows the buffers for n = T*B rows.
  void reserve(std::size_t n) {
    if (rows_.size() < 6 * n) {
      rows_ = device_buffer<S>(6 * n);
      terms_ = device_buffer<double>(3 * n + 3);
    }
  }
  S* rows(std::size_t n, int which) { return rows_.data() + static_cast<std::size_t>(which) * n; }
  double* terms() { return terms_.data(); }

 private:
  device_buffer<S> rows_;
  device_buffer<double> terms_;
};

/// Runs the loss on device data and returns its terms (synchronises `stream` to read them).
/// The caller validates shapes and actions on the host (as `seedrl::impala_loss` does); the
/// kernels trust them.
template <class S>
loss_terms impala_loss_forward_backward(const impala_loss_coefficients<S>& k,
                                        const impala_loss_operands<S>& op,
                                        impala_loss_workspace<S>& ws,
                                        cudaStream_t stream = nullptr) {
  const std::size_t n = static_cast<std::size_t>(op.T) * op.B;
  if (n == 0) {
    return {};
  }
  ws.reserve(n);
  S* target_log_probs = ws.rows(n, 0);
  S* log_rhos = ws.rows(n, 1);
  S* discounts = ws.rows(n, 2);
  S* rewards = ws.rows(n, 3);
  S* vs = ws.rows(n, 4);
  S* pg = ws.rows(n, 5);
  detail::impala_prepare_kernel<S>
      <<<detail::elementwise_blocks(n), detail::elementwise_threads, 0, stream>>>(
          k, op, target_log_probs, log_rhos, discounts, rewards);
  check_launch("impala_prepare_kernel");
  vtrace_operands<S> v;
  v.T = op.T;
  v.B = op.B;
  v.log_rhos = log_rhos;
  v.discounts = discounts;
  v.rewards = rewards;
  v.values = op.values;
  v.bootstrap = op.values + n;
  v.truncated = op.truncated + op.B;  // transition t is cut where step t+1 was truncated
  v.vs = vs;
  v.pg_advantages = pg;
  vtrace(k.vtrace, v, stream);
  double* terms = ws.terms();
  detail::impala_gradient_kernel<S>
      <<<detail::elementwise_blocks(n + op.B), detail::elementwise_threads, 0, stream>>>(
          k, op, target_log_probs, vs, pg, terms);
  check_launch("impala_gradient_kernel");
  detail::impala_sum_kernel<double>
      <<<1, detail::impala_sum_threads, 0, stream>>>(terms, n, terms + 3 * n);
  check_launch("impala_sum_kernel");
  double sums[3] = {};
  SEEDRL_CUDA_CHECK(
      cudaMemcpyAsync(sums, terms + 3 * n, sizeof(sums), cudaMemcpyDeviceToHost, stream));
  SEEDRL_CUDA_CHECK(cudaStreamSynchronize(stream));
  const double dn = static_cast<double>(n);
  loss_terms out;
  out.policy = -sums[0] / dn;
  out.baseline = static_cast<double>(k.baseline_cost) * 0.5 * sums[1] / dn;
  out.entropy = -static_cast<double>(k.entropy_cost) * sums[2] / dn;
  out.policy_entropy = sums[2] / dn;
  out.total = out.policy + out.baseline + out.entropy;
  return out;
}

}  // namespace seedrl::cuda
