#pragma once
/// \file
/// The per-element bodies of `backend_agent_trainer` (seedrl/train/agent_trainer.hpp):
/// small trivially copyable functors that a ComputeBackend runs with `for_each(n, f)`, a loop on
/// the CPU and a kernel launch on a GPU. Each holds only sizes, scalars and backend pointers, and
/// its `operator()` is `SEEDRL_HOST_DEVICE` and calls only device-safe code (the shared
/// SEEDRL_HOST_DEVICE math of lstm_math.hpp, activation_math.hpp and optimizer_math.hpp).
///
/// Matrices are row-major; `ld` is a row stride in elements. A time-major unroll of `steps`
/// steps over B environments has row t * B + b for step t of environment b.

#include <cstddef>
#include <cstdint>

#include "seedrl/backend/detail/dense_kernels.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/detail/lstm_math.hpp"
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

/// Step 0's incoming (h, c) of one LSTM layer from the start state [B, state_width] (h at column
/// `h_col`, c right after it), zero where dones[b] (row b of step 0); i = b * H + j.
template <class S>
struct lstm_start_state_kernel {
  const S* start_state;
  std::size_t state_width;
  std::size_t h_col;
  const std::uint8_t* dones;
  S* h_prev;
  S* c_prev;
  std::size_t H;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t b = i / H, j = i % H;
    const bool reset = dones[b] != 0;
    const S* row = start_state + b * state_width + h_col;
    h_prev[i] = reset ? S(0) : row[j];
    c_prev[i] = reset ? S(0) : row[H + j];
  }
};

/// One LSTM layer's cell update at step t for B environments; i = b * H + j. `gates` [rows, 4H]
/// holds the pre-activations without the bias and receives the activated gates (what backward
/// reads); `c_prev`, `h_prev`, `tanh_c` and `h` are [rows, H]. Step t+1's incoming state is
/// written here, zero where that step starts an episode.
template <class S>
struct lstm_forward_step_kernel {
  S* gates;
  const S* bias;
  const std::uint8_t* dones;
  S* c_prev;
  S* h_prev;
  S* tanh_c;
  S* h;
  std::size_t H;
  std::size_t B;
  std::size_t t;
  std::size_t steps;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t b = i / H, j = i % H;
    const std::size_t row = t * B + b;
    S* z = gates + row * 4 * H;
    const auto u =
        lstm_unit<S>(z[j] + bias[j], z[H + j] + bias[H + j], z[2 * H + j] + bias[2 * H + j],
                     z[3 * H + j] + bias[3 * H + j], c_prev[row * H + j]);
    z[j] = u.i;
    z[H + j] = u.f;
    z[2 * H + j] = u.g;
    z[3 * H + j] = u.o;
    tanh_c[row * H + j] = u.tanh_c;
    h[row * H + j] = u.h;
    if (t + 1 < steps) {
      const std::size_t next = row + B;
      const bool reset = dones[next] != 0;
      h_prev[next * H + j] = reset ? S(0) : u.h;
      c_prev[next * H + j] = reset ? S(0) : u.c;
    }
  }
};

/// Back-propagates one LSTM layer through step t for B environments; i = b * H + j. `dy` [rows,
/// ld_dy] is the gradient w.r.t. this layer's h from above, `dh_next` [B, H] = dz_{t+1} W_hh and
/// `dc_next` [B, H] the gradients w.r.t. this step's outgoing h and c through step t+1, which
/// count only when t+1 exists and does not start an episode (no gradient crosses a reset).
/// Writes dz_t (gate pre-activation gradients) and dc_next for step t-1.
template <class S>
struct lstm_backward_step_kernel {
  const S* dy;
  std::size_t ld_dy;
  const S* gates;
  const S* tanh_c;
  const S* c_prev;
  const std::uint8_t* dones;
  const S* dh_next;
  S* dc_next;
  S* dz;
  std::size_t H;
  std::size_t B;
  std::size_t t;
  std::size_t steps;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t b = i / H, j = i % H;
    const std::size_t row = t * B + b;
    const bool carry = t + 1 < steps && dones[row + B] == 0;
    const S dh = dy[row * ld_dy + j] + (carry ? dh_next[i] : S(0));
    const S dc = carry ? dc_next[i] : S(0);
    const S* a = gates + row * 4 * H;
    const auto g = lstm_unit_grad<S>(a[j], a[H + j], a[2 * H + j], a[3 * H + j],
                                     tanh_c[row * H + j], c_prev[row * H + j], dh, dc);
    S* z = dz + row * 4 * H;
    z[j] = g.dzi;
    z[H + j] = g.dzf;
    z[2 * H + j] = g.dzg;
    z[3 * H + j] = g.dzo;
    dc_next[i] = g.dc_prev;
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
