#pragma once
/// \file
/// The per-element bodies of the LSTM stack (seedrl/net/detail/lstm_stack.hpp): trivially
/// copyable functors of sizes, scalars and backend pointers whose `operator()` is
/// `SEEDRL_HOST_DEVICE`, run by a ComputeBackend's `for_each` (a kernel launch on a GPU). Their
/// arithmetic is detail::lstm_unit and detail::lstm_unit_grad (seedrl/detail/lstm_math.hpp).
/// The host runs the forward ones as vectorised Eigen expressions over whole rows
/// (detail::host_dense_primitives), which is most of an inference step's time at small H.
///
/// Matrices are row-major with row strides in elements (`ld`). An unroll of `steps` steps over
/// B environments is time-major: row t * B + b is step t of environment b. A state row holds
/// (h, c) per layer; `col` is where one layer's h starts, its c right after.

#include <cstddef>
#include <cstdint>

#include "seedrl/core/config.hpp"
#include "seedrl/detail/lstm_math.hpp"

namespace seedrl::detail {

/// One step's GEMM operand xh [B, I + H] = [x | h_prev] and c_reset [B, H] = c_prev, with h and
/// c zero where resets[b] (null: none); i = b * (I + H) + k.
template <class S>
struct lstm_step_input_kernel {
  const S* x;
  std::size_t ldx;
  const S* h_prev;  ///< h of row b at h_prev[b * ld_prev], c right after it (c_prev)
  const S* c_prev;
  std::size_t ld_prev;
  const std::uint8_t* resets;
  S* xh;
  S* c_reset;
  std::size_t I;
  std::size_t H;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t K = I + H;
    const std::size_t b = i / K, k = i % K;
    if (k < I) {
      xh[i] = x[b * ldx + k];
      return;
    }
    const std::size_t j = k - I;
    const bool reset = resets != nullptr && resets[b] != 0;
    xh[i] = reset ? S(0) : h_prev[b * ld_prev + j];
    c_reset[b * H + j] = reset ? S(0) : c_prev[b * ld_prev + j];
  }
};

/// One step's cell update for B rows; i = b * H + j. `gates` [B, 4H] holds the pre-activations
/// without the bias (scratch: its contents afterwards are unspecified), c_prev [B, H] the
/// incoming c after resets; the new h and c go to h [B, ld_out] and c [B, ld_out].
template <class S>
struct lstm_step_pointwise_kernel {
  S* gates;
  const S* bias;
  const S* c_prev;
  S* h;
  S* c;
  std::size_t ld_out;
  std::size_t H;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t b = i / H, j = i % H;
    const S* z = gates + b * 4 * H;
    const auto u =
        lstm_unit<S>(z[j] + bias[j], z[H + j] + bias[H + j], z[2 * H + j] + bias[2 * H + j],
                     z[3 * H + j] + bias[3 * H + j], c_prev[b * H + j]);
    h[b * ld_out + j] = u.h;
    c[b * ld_out + j] = u.c;
  }
};

/// (h, c) [B, H] each from the state rows `state` [B, ld] (h at column col, c after it), zero
/// where resets[b] (null: none) or when `state` is null; i = b * H + j. Starts an unroll's
/// layer, and splits the gradient w.r.t. the end state.
template <class S>
struct lstm_state_split_kernel {
  const S* state;
  std::size_t ld;
  std::size_t col;
  const std::uint8_t* resets;
  S* h;
  S* c;
  std::size_t H;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t b = i / H, j = i % H;
    const bool zero = state == nullptr || (resets != nullptr && resets[b] != 0);
    h[i] = zero ? S(0) : state[b * ld + col + j];
    c[i] = zero ? S(0) : state[b * ld + col + H + j];
  }
};

/// The inverse: state rows [B, ld] (h at column col, c after it) from h and c [B, H], zero
/// where resets[b] (null: none); i = b * H + j. The gradient w.r.t. the start state.
template <class S>
struct lstm_state_merge_kernel {
  const S* h;
  const S* c;
  const std::uint8_t* resets;
  S* state;
  std::size_t ld;
  std::size_t col;
  std::size_t H;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t b = i / H, j = i % H;
    const bool zero = resets != nullptr && resets[b] != 0;
    state[b * ld + col + j] = zero ? S(0) : h[i];
    state[b * ld + col + H + j] = zero ? S(0) : c[i];
  }
};

/// One layer's cell update at step t of an unroll for B environments; i = b * H + j. `gates`
/// [rows, 4H] holds the pre-activations without the bias and receives the activated gates
/// (what backward reads); `c_prev`, `h_prev`, `tanh_c` and `h` are [rows, H]. Step t+1's
/// incoming state is written here, zero where that step starts an episode (dones [rows]); after
/// the last step, the outgoing (h, c) go to `end_state` rows (ld_end, h at end_col) when given.
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
  S* end_state = nullptr;
  std::size_t ld_end = 0;
  std::size_t end_col = 0;

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
    } else if (end_state != nullptr) {
      end_state[b * ld_end + end_col + j] = u.h;
      end_state[b * ld_end + end_col + H + j] = u.c;
    }
  }
};

/// Back-propagates one layer through step t for B environments; i = b * H + j. `dy` [rows,
/// ld_dy] is the gradient w.r.t. this layer's h from above, `dh_next` [B, H] = dz_{t+1} W_hh and
/// `dc_next` [B, H] the gradients w.r.t. this step's outgoing h and c through step t+1, which
/// count only when t+1 exists and does not start an episode (no gradient crosses a reset), or,
/// after the last step, when `end_carry` (they then hold the gradient w.r.t. the end state).
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
  bool end_carry = false;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const { cell(i / H, i % H); }

  /// Unit j of environment b (the host runs these in row loops).
  SEEDRL_HOST_DEVICE void cell(std::size_t b, std::size_t j) const {
    const std::size_t i = b * H + j;
    const std::size_t row = t * B + b;
    const bool carry = t + 1 < steps ? dones[row + B] == 0 : end_carry;
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

}  // namespace seedrl::detail
