#pragma once
// Host-side entry points into the CUDA kernels for the GPU tests: plain C++ over std::vector,
// so that the Catch2 tests (test_cuda.cpp, compiled by the C++ compiler with the CPU backend and
// Eigen) and the kernels (gpu_runners.cu, compiled by nvcc without Eigen) stay in separate
// translation units. Each function copies its inputs to the device, runs, and copies back.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "seedrl/algo/impala_loss_config.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/algo/ppo_loss_config.hpp"
#include "seedrl/algo/r2d2_loss_config.hpp"
#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/detail/optimizer_math.hpp"
#include "seedrl/detail/vtrace_step.hpp"

namespace seedrl::test_gpu {

/// The single-step LSTM kernels under test.
enum class lstm_path { fused, gemm, runner };

/// One step of one layer; state rows [B, 2H] (h then c); returns the new state rows.
std::vector<float> lstm_step(lstm_path path, const std::vector<float>& weight,
                             const std::vector<float>& bias, int I, int H, int B,
                             const std::vector<float>& x, const std::vector<std::uint8_t>& dones,
                             const std::vector<float>& state);

/// `steps` steps in one persistent launch; x [steps, B, I], dones [steps, B]; state [B, 2H] is
/// updated and y [steps, B, H] filled. Returns false (and does nothing) when the persistent
/// kernel does not fit on this device.
bool lstm_persistent(const std::vector<float>& weight, const std::vector<float>& bias, int I, int H,
                     int B, int steps, const std::vector<float>& x,
                     const std::vector<std::uint8_t>& dones, std::vector<float>& state,
                     std::vector<float>& y);

/// detail::lstm_stack<float> (I inputs, H units, L layers) on cuda_backend: one step over state
/// rows `state` [B, 2LH] with `resets` [B] and input x_step [B, I] (the backend step), then an
/// unroll over x [T*B, I] with dones [T*B] from `start` [B, 2LH] and its backward from dy
/// [T*B, H] and d_end [B, 2LH]. Returns, concatenated: the step's new state, y [T*B, H], the
/// end state, the parameter gradients, dx [T*B, I] and d_start [B, 2LH].
std::vector<float> lstm_stack_run(int I, int H, int L, int T, int B,
                                  const std::vector<float>& params,
                                  const std::vector<float>& x_step,
                                  const std::vector<std::uint8_t>& resets,
                                  const std::vector<float>& state, const std::vector<float>& x,
                                  const std::vector<std::uint8_t>& dones,
                                  const std::vector<float>& start, const std::vector<float>& dy,
                                  const std::vector<float>& d_end);

/// V-trace on the device.
template <class S>
void vtrace(const detail::vtrace_coefficients<S>& k, int T, int B, const std::vector<S>& log_rhos,
            const std::vector<S>& discounts, const std::vector<S>& rewards,
            const std::vector<S>& values, const std::vector<S>& bootstrap, std::vector<S>& vs,
            std::vector<S>& pg_advantages);

/// One fused Adam step in place.
void adam_step(const detail::adam_coefficients<float>& k, std::vector<float>& params,
               std::vector<float>& m, std::vector<float>& v, const std::vector<float>& grads);

/// One fused RMSProp step in place; an empty `buf` means no momentum.
void rmsprop_step(const detail::rmsprop_coefficients<float>& k, std::vector<float>& params,
                  std::vector<float>& v, std::vector<float>& buf, const std::vector<float>& grads);

// --- cuda::cuda_backend's primitives (seedrl/cuda/cuda_backend.cuh) -------------------------

/// backend.gemm on device copies of a, b and c; returns c afterwards (the whole buffer, so
/// that elements outside the m x n block show whether they were left alone).
template <class S>
std::vector<S> backend_gemm(bool trans_a, bool trans_b, int m, int n, int k, S alpha,
                            const std::vector<S>& a, int lda, const std::vector<S>& b, int ldb,
                            S beta, const std::vector<S>& c, int ldc);

/// A for_each body for the backend test: y[i] = a * x[i] + (i % 7) * y[i]. The same functor runs
/// on host_backend (compiled by g++) and in cuda_backend's kernel (compiled by nvcc).
struct axpy_body {
  float a;
  const float* x;
  float* y;
  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    y[i] = a * x[i] + static_cast<float>(i % 7) * y[i];
  }
};

/// backend.for_each(x.size(), axpy_body{a, x, y}) on device copies; returns y.
std::vector<float> backend_for_each_axpy(float a, const std::vector<float>& x,
                                         const std::vector<float>& y);

/// allocate(n) (must be zeros), fill [offset, offset + count) with `value`, then copy that
/// buffer into a second one allocated by the backend; returns the copy.
template <class T>
std::vector<T> backend_fill(std::size_t n, std::size_t offset, std::size_t count, T value);

/// backend.sum_of_squares(x) on a device copy.
template <class S>
double backend_sum_of_squares(const std::vector<S>& x);

/// backend.sums(x, arrays, n) on a device copy of x (arrays * n values).
std::vector<double> backend_sums(const std::vector<double>& x, std::size_t arrays, std::size_t n);

/// A loss batch as host arrays, for `backend_impala_loss`, `backend_ppo_loss` and
/// `backend_r2d2_loss`; empty proximal_logits / old_values mean none (PPO only), as in
/// seedrl::ppo_batch; the target network's outputs and importance weights are R2D2's.
struct loss_arrays {
  int T = 0, B = 0, A = 0;
  std::vector<float> logits, values, behaviour_log_probs, rewards, proximal_logits, old_values;
  std::vector<float> target_logits, target_values, importance_weights;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> dones, truncated;
};

/// impala_loss<float>(config).compute on cuda_backend, on device copies; gradients (NaN-filled
/// first) written back.
loss_terms backend_impala_loss(const impala_loss_config<float>& config, const loss_arrays& batch,
                               std::vector<float>& grad_logits, std::vector<float>& grad_values);

/// ppo_loss<float>(config).compute on cuda_backend, likewise.
loss_terms backend_ppo_loss(const ppo_loss_config<float>& config, const loss_arrays& batch,
                            std::vector<float>& grad_logits, std::vector<float>& grad_values);

/// r2d2_loss<float>(config).compute on cuda_backend, likewise; the sequences' priorities too.
loss_terms backend_r2d2_loss(const r2d2_loss_config<float>& config, const loss_arrays& batch,
                             std::vector<float>& grad_logits, std::vector<float>& grad_values,
                             std::vector<double>& priorities);

/// What cuda_backend's convolutions give in `backend_conv2d`.
template <class S>
struct conv2d_run {
  std::vector<S> y, dx, dw, dbias;       ///< forward, then backward with dx
  std::vector<S> dw_no_dx, dbias_no_dx;  ///< a second backward, dx == nullptr
};

/// On one cuda_backend and device copies of the inputs (sizes from `shape`):
/// conv2d_forward into a NaN-filled y; conv2d_backward into a NaN-filled dx and into dw / dbias
/// holding dw0 / dbias0; then conv2d_backward with dx == nullptr into fresh copies of dw0 /
/// dbias0. Returns what the device buffers hold afterwards.
template <class S>
conv2d_run<S> backend_conv2d(const conv2d_shape& shape, const std::vector<S>& x,
                             const std::vector<S>& w, const std::vector<S>& bias,
                             const std::vector<S>& dy, const std::vector<S>& dw0,
                             const std::vector<S>& dbias0);

/// Whether cuda_backend's conv2d_forward and conv2d_backward (with and without dx) all throw
/// std::invalid_argument for `shape` (given one-element device buffers).
bool backend_conv2d_refuses(const conv2d_shape& shape);

}  // namespace seedrl::test_gpu
