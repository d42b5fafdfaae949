#pragma once
/// \file
/// The per-element bodies of `backend_agent_step` (seedrl/train/agent_step.hpp), the one-step
/// inference of a backend agent over a per-slot state table: widening uint8 frames, gathering and
/// scattering state rows by environment slot, the LSTM cell update of one step, and the frame
/// history's shift. Like mlp_lstm_kernels.hpp, each is a trivially copyable functor of sizes,
/// scalars and backend pointers whose `operator()` is `SEEDRL_HOST_DEVICE`, run by a
/// ComputeBackend's for_each.

#include <cstddef>
#include <cstdint>

#include "seedrl/core/config.hpp"
#include "seedrl/detail/lstm_math.hpp"

namespace seedrl::detail {

/// dst[i] = src[i] as S: uint8 frames widened (exactly) for the first layer.
template <class S>
struct widen_kernel {
  const std::uint8_t* src;
  S* dst;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const { dst[i] = static_cast<S>(src[i]); }
};

/// rows[r, k] = table[slots[r], k] over B rows of `width`; i = r * width + k.
template <class S>
struct gather_rows_kernel {
  const S* table;
  const std::uint32_t* slots;
  std::size_t width;
  S* rows;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t r = i / width, k = i % width;
    rows[i] = table[static_cast<std::size_t>(slots[r]) * width + k];
  }
};

/// table[slots[r], k] = rows[r, k] over B rows of `width` (slots distinct); i = r * width + k.
template <class S>
struct scatter_rows_kernel {
  const S* rows;
  const std::uint32_t* slots;
  std::size_t width;
  S* table;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t r = i / width, k = i % width;
    table[static_cast<std::size_t>(slots[r]) * width + k] = rows[i];
  }
};

/// dst[r * ld_dst + k] = src[r * ld_src + k] over rows x `width`; i = r * width + k.
template <class S>
struct copy_block_kernel {
  const S* src;
  std::size_t ld_src;
  S* dst;
  std::size_t ld_dst;
  std::size_t width;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t r = i / width, k = i % width;
    dst[r * ld_dst + k] = src[r * ld_src + k];
  }
};

/// One LSTM step's cell update for B rows; i = b * H + j. `gates` [B, 4H] holds the
/// pre-activations without the bias; (h_prev is not read: the products are done) c_prev
/// [B, ld_prev], the new h and c go to h [B, ld_out] and c [B, ld_out].
template <class S>
struct lstm_step_pointwise_kernel {
  const S* gates;
  const S* bias;
  const S* c_prev;
  std::size_t ld_prev;
  S* h;
  S* c;
  std::size_t ld_out;
  std::size_t H;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t b = i / H, j = i % H;
    const S* z = gates + b * 4 * H;
    const auto u =
        lstm_unit<S>(z[j] + bias[j], z[H + j] + bias[H + j], z[2 * H + j] + bias[2 * H + j],
                     z[3 * H + j] + bias[3 * H + j], c_prev[b * ld_prev + j]);
    h[b * ld_out + j] = u.h;
    c[b * ld_out + j] = u.c;
  }
};

/// The frame history after one step, as frame_stacked keeps it: the depth-1 previous frames,
/// oldest first, each of F elements in the frame's own layout. Row r's new history is its old
/// one (columns [0, (D-1)*F) of `before` [B, state_width], zero where resets[r]) shifted by one
/// frame, with the step's observation obs [B, F] last; i = r * (D-1) * F + e.
template <class S>
struct frame_history_step_kernel {
  const S* before;
  std::size_t state_width;
  const std::uint8_t* resets;
  const S* obs;
  std::size_t F;
  std::size_t slots;  ///< D - 1 (> 0)
  S* next;
  std::size_t ld_next;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = slots * F;
    const std::size_t r = i / n, e = i % n;
    const std::size_t k = e / F, fe = e % F;
    S v = S(0);
    if (k + 1 == slots)
      v = obs[r * F + fe];
    else if (resets[r] == 0)
      v = before[r * state_width + (k + 1) * F + fe];
    next[r * ld_next + e] = v;
  }
};

}  // namespace seedrl::detail
