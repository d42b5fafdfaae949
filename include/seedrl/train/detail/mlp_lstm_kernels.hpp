#pragma once
/// \file
/// The per-element bodies of `backend_agent_trainer` (seedrl/train/agent_trainer.hpp):
/// small trivially copyable functors that a ComputeBackend runs with `for_each(n, f)`, a loop on
/// the CPU and a kernel launch on a GPU. Each holds only sizes, scalars and backend pointers, and
/// its `operator()` is `SEEDRL_HOST_DEVICE` and calls only device-safe code (the shared
/// SEEDRL_HOST_DEVICE math of activation_math.hpp and optimizer_math.hpp; the LSTM's are
/// seedrl/backend/detail/lstm_kernels.hpp).
///
/// Matrices are row-major; `ld` is a row stride in elements. A time-major unroll of `steps`
/// steps over B environments has row t * B + b for step t of environment b.

#include <cstddef>
#include <cstdint>

#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/detail/optimizer_math.hpp"
#include "seedrl/net/activation_math.hpp"

namespace seedrl::detail {

/// Writes the reward (clipped to +-max_abs_reward when `clip`) and the previous action into
/// columns [first_col, first_col + 1 + action_inputs) of the core input; i = r * (1 + cols) + k.
/// The previous action is a one-hot over `action_inputs` actions (prev_actions), or, with
/// `prev_continuous` set, its `action_inputs` values (row r's at prev_continuous[r * cols]).
/// A row with `dones` (an episode start) gets zeros in all of them, as in actor_critic_agent.
template <class S>
struct reward_action_inputs_kernel {
  S* core_in;
  std::size_t ld;
  std::size_t first_col;
  std::size_t action_inputs;
  const S* rewards;
  const std::uint8_t* dones;
  const std::int32_t* prev_actions;
  bool clip;
  double max_abs_reward;
  const S* prev_continuous = nullptr;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t cols = 1 + action_inputs;
    const std::size_t r = i / cols, k = i % cols;
    S* row = core_in + r * ld + first_col;
    if (dones[r] != 0) {
      row[k] = S(0);
    } else if (k == 0) {
      double x = static_cast<double>(rewards[r]);  // clamped in double, as the CPU agent does
      if (clip)
        x = x < -max_abs_reward ? -max_abs_reward : (max_abs_reward < x ? max_abs_reward : x);
      row[0] = static_cast<S>(x);
    } else if (prev_continuous != nullptr) {
      row[k] = prev_continuous[r * action_inputs + (k - 1)];
    } else {
      row[k] = prev_actions[r] == static_cast<std::int32_t>(k - 1) ? S(1) : S(0);
    }
  }
};

/// x[i] *= factor.
template <class S>
struct scale_kernel {
  S* x;
  S factor;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const { x[i] *= factor; }
};

/// One Adam update per element (seedrl::adam's arithmetic).
template <class S>
struct adam_step_kernel {
  adam_coefficients<S> k;
  S* params;
  const S* grads;
  S* m;
  S* v;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    adam_update<S>(k, params[i], m[i], v[i], grads[i]);
  }
};

/// One RMSProp update per element without momentum (seedrl::rmsprop's arithmetic).
template <class S>
struct rmsprop_step_kernel {
  rmsprop_coefficients<S> k;
  S* params;
  const S* grads;
  S* v;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    rmsprop_update<S>(k, params[i], v[i], grads[i]);
  }
};

/// One RMSProp update per element with momentum (seedrl::rmsprop's arithmetic).
template <class S>
struct rmsprop_momentum_step_kernel {
  rmsprop_coefficients<S> k;
  S* params;
  const S* grads;
  S* v;
  S* momentum_buffer;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    rmsprop_momentum_update<S>(k, params[i], v[i], momentum_buffer[i], grads[i]);
  }
};

}  // namespace seedrl::detail
