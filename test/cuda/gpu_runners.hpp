#pragma once
// Host-side entry points into the CUDA kernels for the GPU tests: plain C++ over std::vector,
// so that the Catch2 tests (test_cuda.cpp, compiled by the C++ compiler with the CPU backend and
// Eigen) and the kernels (gpu_runners.cu, compiled by nvcc without Eigen) stay in separate
// translation units. Each function copies its inputs to the device, runs, and copies back.

#include <cstdint>
#include <vector>

#include "seedrl/algo/loss.hpp"
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

/// The pointwise backward step; dc is updated to d/dc_prev, dz [rows, 4H] is written.
void lstm_backward_pointwise(int rows, int H, const std::vector<float>& gates,
                             const std::vector<float>& tanh_c, const std::vector<float>& c_prev,
                             const std::vector<float>& dh, std::vector<float>& dc,
                             std::vector<float>& dz);

/// V-trace on the device.
template <class S>
void vtrace(const detail::vtrace_coefficients<S>& k, int T, int B, const std::vector<S>& log_rhos,
            const std::vector<S>& discounts, const std::vector<S>& rewards,
            const std::vector<S>& values, const std::vector<S>& bootstrap, std::vector<S>& vs,
            std::vector<S>& pg_advantages);

/// The IMPALA loss's scalars (see seedrl/cuda/impala_loss.cuh).
struct impala_scalars {
  float discount, baseline_cost, entropy_cost, max_abs_reward;
  detail::vtrace_coefficients<float> vtrace;
};

/// The IMPALA loss on the device; gradients written to grad_logits / grad_values.
loss_terms impala_loss(const impala_scalars& k, int T, int B, int A,
                       const std::vector<float>& logits, const std::vector<float>& values,
                       const std::vector<std::int32_t>& actions,
                       const std::vector<float>& behaviour_log_probs,
                       const std::vector<float>& rewards, const std::vector<std::uint8_t>& dones,
                       std::vector<float>& grad_logits, std::vector<float>& grad_values);

/// One fused Adam step in place.
void adam_step(const detail::adam_coefficients<float>& k, std::vector<float>& params,
               std::vector<float>& m, std::vector<float>& v, const std::vector<float>& grads);

/// One fused RMSProp step in place; an empty `buf` means no momentum.
void rmsprop_step(const detail::rmsprop_coefficients<float>& k, std::vector<float>& params,
                  std::vector<float>& v, std::vector<float>& buf, const std::vector<float>& grads);

}  // namespace seedrl::test_gpu
