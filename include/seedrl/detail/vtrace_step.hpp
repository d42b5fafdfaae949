#pragma once
/// \file
/// One backward step of the V-trace recursion for one (t, b) element, shared by the CPU
/// backend (`seedrl/algo/vtrace.hpp`) and the CUDA kernel so both run the same arithmetic.
///
/// With rho_t = exp(log_rho_t), at time t (scanning t = T-1 down to 0) and for one column b:
///   delta_t = min(rho_bar, rho_t) * (r_t + gamma_t * V_{t+1} - V_t)
///   c_t     = lambda * min(1, rho_t)
///   acc_t   = delta_t + gamma_t * c_t * acc_{t+1}                 (acc_T = 0)
///   vs_t    = V_t + acc_t
///   pg_t    = min(pg_rho_bar, rho_t) * (r_t + gamma_t * vs_{t+1} - V_t)
/// where V_T = vs_T = bootstrap. Because acc_T = 0, vs_{t+1} = V_{t+1} + acc_{t+1} holds at
/// t + 1 = T too, so a step only needs (V_{t+1}, acc_{t+1}) carried from the step after it.
/// The order of the products follows SEED RL's vtrace.py (c_t = min(1, rho_t) * lambda, then
/// gamma_t * c_t * acc_{t+1}).
///
/// Time-limit truncation (`vtrace_cut`): when transition t ended its episode at a time limit,
/// its target r_t + gamma V(s_{t+1}) is unknown, since the final observation s_{t+1} was
/// replaced by the reset. Such a step is left out: acc_t = 0 (so vs_t = V_t) and pg_t = 0, and
/// step t-1 then sees (V_t, 0), exactly what it would see if the unroll ended at t. Every
/// backend applies the cut through the same function, so the semantics cannot drift.

#include <cmath>
#include <concepts>
#include <cstdint>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

/// The V-trace parameters as plain scalars a kernel can take by value: "no clipping" is
/// +infinity, since min(+inf, rho) == rho for every rho, including +inf.
template <std::floating_point S>
struct vtrace_coefficients {
  S rho_bar;     ///< clips rho in delta_t (the value targets)
  S pg_rho_bar;  ///< clips rho in the policy-gradient advantage
  S lambda;      ///< scales c_t: 1 gives n-step targets, 0 one-step TD
};

/// `threshold` if it is below `rho`, else `rho`; a NaN rho stays NaN (comparisons with NaN are
/// false), so bad inputs show up in the outputs instead of being clipped away.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S vtrace_clip(S threshold, S rho) {
  return threshold < rho ? threshold : rho;
}

/// What one step produces: acc_t (carried to step t-1) and the policy-gradient advantage.
/// vs_t is `value + acc`, formed by the caller with `vtrace_target`.
template <std::floating_point S>
struct vtrace_step_result {
  S acc;           ///< vs_t - V_t, as accumulated
  S pg_advantage;  ///< min(pg_rho_bar, rho_t) * (r_t + gamma_t vs_{t+1} - V_t)
};

/// One step at (t, b) from rho_t and its trace clip `trace_rho` = vtrace_clip(1, rho_t), which
/// the CPU scan forms in a loop of its own (see `detail::vtrace_columns`); `next_value` and
/// `next_acc` are V_{t+1} and acc_{t+1} (bootstrap and 0 at t = T-1).
template <std::floating_point S>
SEEDRL_HOST_DEVICE vtrace_step_result<S> vtrace_step_from_clips(const vtrace_coefficients<S>& k,
                                                                S rho, S trace_rho, S discount,
                                                                S reward, S value, S next_value,
                                                                S next_acc) {
  const S delta = vtrace_clip(k.rho_bar, rho) * (reward + discount * next_value - value);
  const S c = trace_rho * k.lambda;
  const S acc = delta + discount * c * next_acc;
  const S next_vs = next_value + next_acc;
  const S pg = vtrace_clip(k.pg_rho_bar, rho) * (reward + discount * next_vs - value);
  return {acc, pg};
}

/// One step at (t, b) from rho_t = exp(log rho_t); `next_value` and `next_acc` are V_{t+1} and
/// acc_{t+1} (bootstrap and 0 at t = T-1).
template <std::floating_point S>
SEEDRL_HOST_DEVICE vtrace_step_result<S> vtrace_step_from_rho(const vtrace_coefficients<S>& k,
                                                              S rho, S discount, S reward, S value,
                                                              S next_value, S next_acc) {
  return vtrace_step_from_clips(k, rho, vtrace_clip(S(1), rho), discount, reward, value, next_value,
                                next_acc);
}

/// One step of the reverse scan from log rho; see `vtrace_step_from_rho`.
template <std::floating_point S>
SEEDRL_HOST_DEVICE vtrace_step_result<S> vtrace_step(const vtrace_coefficients<S>& k, S log_rho,
                                                     S discount, S reward, S value, S next_value,
                                                     S next_acc) {
  using std::exp;
  return vtrace_step_from_rho(k, exp(log_rho), discount, reward, value, next_value, next_acc);
}

/// `step` unchanged when `truncated` is 0; otherwise acc_t = 0 and pg_t = 0: transition t ended
/// its episode at a time limit and is left out of the targets and the loss (see the file
/// comment). The step is computed first and then selected, so a row of them vectorises.
template <std::floating_point S>
SEEDRL_HOST_DEVICE vtrace_step_result<S> vtrace_cut(vtrace_step_result<S> step,
                                                    std::uint8_t truncated) {
  // One select per member: Clang does not vectorise a select between whole structs.
  const bool cut = truncated != 0;
  return {cut ? S(0) : step.acc, cut ? S(0) : step.pg_advantage};
}

/// vs_t = V_t + acc_t; a function so that every backend forms it the same way.
template <std::floating_point S>
SEEDRL_HOST_DEVICE S vtrace_target(S value, S acc) {
  return value + acc;
}

}  // namespace seedrl::detail
