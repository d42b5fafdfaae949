#pragma once
/// \file
/// The per-element bodies of `backend_agent_step` (seedrl/train/agent_step.hpp), the one-step
/// inference of a backend agent over a per-slot state table: widening uint8 frames, gathering and
/// scattering state rows by environment slot, and the frame history's shift. Like mlp_lstm_kernels.hpp, each is a trivially copyable functor of sizes,
/// scalars and backend pointers whose `operator()` is `SEEDRL_HOST_DEVICE`, run by a
/// ComputeBackend's for_each.

#include <cstddef>
#include <cstdint>

#include "seedrl/core/config.hpp"

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
