#pragma once
/// \file
/// The per-element bodies of `backend_agent_step` (seedrl/train/agent_step.hpp), the one-step
/// inference of a backend agent over a per-slot state table: widening uint8 frames, gathering and
/// scattering state rows by environment slot (the frame history's shift is
/// frame_stack_kernels.hpp). Each is a trivially copyable functor of sizes, scalars and backend
/// pointers whose `operator()` is `SEEDRL_HOST_DEVICE`, run by a ComputeBackend's for_each;
/// `detail::host_primitives` runs the gather and the scatter as row copies.

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

}  // namespace seedrl::detail
