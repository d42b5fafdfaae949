#pragma once
/// \file
/// The per-element pieces of the IMPALA loss (`seedrl/algo/impala_loss.hpp`) that are not
/// V-trace or categorical math, as `SEEDRL_HOST_DEVICE` functions without Eigen, so that the
/// loss's kernels (`impala_loss::compute`) run them on every backend.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// r clipped to [-max_abs, max_abs]; +infinity disables clipping. NaN stays NaN.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S impala_clip_reward(S reward, S max_abs) {
  return reward > max_abs ? max_abs : (reward < -max_abs ? -max_abs : reward);
}

/// gamma_t = discount * (1 - done_{t+1}): no bootstrapping across an episode end.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S impala_discount(S discount, std::uint8_t next_done) {
  return next_done != 0 ? S(0) : discount;
}

/// d baseline / d V_t = -baseline_cost * (vs_t - V_t) / N, with inv_n = 1 / N.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S impala_value_gradient(S baseline_cost, S vs, S value, S inv_n) {
  return -baseline_cost * (vs - value) * inv_n;
}

/// Host-side check of the truncation convention: truncated[i] nonzero requires dones[i]
/// nonzero (a truncation ends the episode; the protocol refuses the other case). Throws
/// std::invalid_argument naming `who` and the row (t = i / B, b = i % B).
inline void impala_check_truncated_done(const std::uint8_t* truncated, const std::uint8_t* dones,
                                        std::size_t rows, std::size_t B, const char* who) {
  for (std::size_t i = 0; i < rows; ++i) {
    if (truncated[i] != 0 && dones[i] == 0) {
      throw std::invalid_argument(std::string(who) + ": truncated[" + std::to_string(i) +
                                  "] (t = " + std::to_string(i / B) +
                                  ", b = " + std::to_string(i % B) +
                                  ") is set but dones is not: a truncation ends the episode");
    }
  }
}

}  // namespace seedrl::detail
