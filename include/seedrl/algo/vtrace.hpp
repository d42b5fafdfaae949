#pragma once
/// \file
/// V-trace off-policy value targets and policy-gradient advantages (Espeholt et al. 2018,
/// "IMPALA", section 4), as SEED RL's `vtrace.from_importance_weights` computes them; the
/// recursion is spelled out in `seedrl/detail/vtrace_step.hpp`.
///
/// Arrays are time-major [T][B] flattened (index t * B + b); `bootstrap_value` is [B], the
/// value estimate at time T. Targets and advantages are outputs only: no gradient flows
/// through them (SEED wraps them in tf.stop_gradient).

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "seedrl/detail/fast_exp.hpp"
#include "seedrl/detail/vtrace_step.hpp"

namespace seedrl {

/// V-trace's knobs; an empty threshold means no clipping (SEED's `None`).
template <std::floating_point S>
struct vtrace_params {
  /// rho-bar: clips importance weights in the value targets vs.
  std::optional<S> clip_rho_threshold = S(1);
  /// clips importance weights in the policy-gradient advantages.
  std::optional<S> clip_pg_rho_threshold = S(1);
  /// Mixes one-step (0) and n-step (1) targets through c_t = lambda * min(1, rho_t).
  S lambda = S(1);
};

namespace detail {

/// Whether two arrays share any byte; std::less gives a total order even for pointers into
/// different arrays, where the built-in < is unspecified.
template <class A, class B>
bool spans_overlap(std::span<A> a, std::span<B> b) {
  if (a.empty() || b.empty()) {
    return false;
  }
  const auto* a_begin = reinterpret_cast<const unsigned char*>(a.data());
  const auto* b_begin = reinterpret_cast<const unsigned char*>(b.data());
  const auto* a_end = a_begin + a.size_bytes();
  const auto* b_end = b_begin + b.size_bytes();
  const std::less<const unsigned char*> less;
  return less(a_begin, b_end) && less(b_begin, a_end);
}

/// Validates `params` and turns them into the scalars the step function takes.
template <std::floating_point S>
vtrace_coefficients<S> make_vtrace_coefficients(const vtrace_params<S>& params, const char* who) {
  const auto threshold = [who](const std::optional<S>& t, const char* name) {
    if (!t) {
      return std::numeric_limits<S>::infinity();
    }
    if (!(*t > S(0))) {
      throw std::invalid_argument(std::string(who) + ": " + name + " must be positive, got " +
                                  std::to_string(*t) + " (use std::nullopt for no clipping)");
    }
    return *t;
  };
  if (!(params.lambda >= S(0) && params.lambda <= S(1))) {
    throw std::invalid_argument(std::string(who) + ": lambda must be in [0, 1], got " +
                                std::to_string(params.lambda));
  }
  return {threshold(params.clip_rho_threshold, "clip_rho_threshold"),
          threshold(params.clip_pg_rho_threshold, "clip_pg_rho_threshold"), params.lambda};
}

/// The backward scan over columns [b0, b0 + K) of the batch, every t from T-1 down to 0, with
/// acc_{t+1} and V_{t+1} carried in K-element arrays. K is a compile-time constant, so each loop
/// over the K columns becomes a fixed run of vector instructions with no loop control: at small
/// B, the per-row loops of a row-at-a-time scan (setup, remainder, alias and trip-count checks
/// for every one of T rows) cost more than the arithmetic. K = 1 runs the columns left over.
///
/// rho_t = exp(log_rho_t) is formed here with `fast_exp` (seedrl/detail/fast_exp.hpp), since
/// std::exp is a call per element and a separate exp pass over the batch costs a second trip
/// through memory.
///
/// Three selects sit in loops of their own, because in a loop with arithmetic GCC turns them into
/// branches it cannot vectorise without AVX-512's masked arithmetic (FP operations may trap, so it
/// will not compute both arms unconditionally):
/// - the clamp of log rho that fast_exp starts with (see fast_exp_clamped);
/// - min(1, rho_t), the trace clip: multiplied by lambda, its constant arm folds (1 * lambda),
///   which moves the multiplication by rho into the other arm. It is formed in the exp's loop,
///   and the step takes it from there.
/// - the truncation cut: the step's arithmetic, used only where the flag is 0, would sink into
///   that arm. The step is stored, then the cut zeroes the flagged elements.
/// The results are those of `vtrace_step_from_rho` (with fast_exp's rho) and `vtrace_cut`, bit
/// for bit. Every pointer is `__restrict`: `vtrace_scan` has checked that no output overlaps an
/// input or the other output.
template <std::floating_point S, bool Cut, std::size_t K>
void vtrace_columns(const vtrace_coefficients<S> k, std::size_t T, std::size_t B, std::size_t b0,
                    const S* __restrict log_rhos, const S* __restrict discounts,
                    const S* __restrict rewards, const S* __restrict values,
                    const S* __restrict bootstrap, const std::uint8_t* __restrict truncated,
                    S* __restrict vs, S* __restrict pg) {
  S next_value[K], carried[K], rho[K], trace[K], acc[K], adv[K];
  for (std::size_t j = 0; j < K; ++j) {
    next_value[j] = bootstrap[b0 + j];
    carried[j] = S(0);
  }
  for (std::size_t t = T; t-- > 0;) {
    const std::size_t row = t * B + b0;
    for (std::size_t j = 0; j < K; ++j)
      rho[j] = fast_exp_clamp(log_rhos[row + j]);
    for (std::size_t j = 0; j < K; ++j) {
      rho[j] = fast_exp_clamped(rho[j]);
      trace[j] = vtrace_clip(S(1), rho[j]);
    }
    for (std::size_t j = 0; j < K; ++j) {
      const auto step =
          vtrace_step_from_clips(k, rho[j], trace[j], discounts[row + j], rewards[row + j],
                                 values[row + j], next_value[j], carried[j]);
      acc[j] = step.acc;
      adv[j] = step.pg_advantage;
    }
    if constexpr (Cut) {
      for (std::size_t j = 0; j < K; ++j) {
        const auto step = vtrace_cut(vtrace_step_result<S>{acc[j], adv[j]}, truncated[row + j]);
        acc[j] = step.acc;
        adv[j] = step.pg_advantage;
      }
    }
    for (std::size_t j = 0; j < K; ++j) {
      next_value[j] = values[row + j];
      vs[row + j] = vtrace_target(next_value[j], acc[j]);
      pg[row + j] = adv[j];
      carried[j] = acc[j];
    }
  }
}

/// Every column of the scan: blocks of 256 bytes of S while they fit, then one block of 128,
/// then one column at a time for the rest. Both block widths were measured best on AVX-512 and
/// AVX2 builds (docs/performance.md); narrower blocks ran several times slower under GCC 12.
template <std::floating_point S, bool Cut>
void vtrace_blocks(const vtrace_coefficients<S>& k, std::size_t T, std::size_t B, const S* log_rhos,
                   const S* discounts, const S* rewards, const S* values, const S* bootstrap,
                   const std::uint8_t* truncated, S* vs, S* pg) {
  constexpr std::size_t wide = 256 / sizeof(S), narrow = 128 / sizeof(S);
  std::size_t b0 = 0;
  for (; b0 + wide <= B; b0 += wide)
    vtrace_columns<S, Cut, wide>(k, T, B, b0, log_rhos, discounts, rewards, values, bootstrap,
                                 truncated, vs, pg);
  for (; b0 + narrow <= B; b0 += narrow)
    vtrace_columns<S, Cut, narrow>(k, T, B, b0, log_rhos, discounts, rewards, values, bootstrap,
                                   truncated, vs, pg);
  for (; b0 < B; ++b0)
    vtrace_columns<S, Cut, 1>(k, T, B, b0, log_rhos, discounts, rewards, values, bootstrap,
                              truncated, vs, pg);
}

/// The scan behind both `seedrl::vtrace` overloads; `truncated` null means no truncation.
template <std::floating_point S>
void vtrace_scan(const char* who, std::size_t T, std::size_t B, std::span<const S> log_rhos,
                 std::span<const S> discounts, std::span<const S> rewards,
                 std::span<const S> values, std::span<const S> bootstrap_value,
                 const std::span<const std::uint8_t>* truncated, const vtrace_params<S>& params,
                 std::span<S> vs, std::span<S> pg_advantages) {
  if (B != 0 && T > std::numeric_limits<std::size_t>::max() / B) {
    throw std::invalid_argument(std::string(who) + ": T * B overflows std::size_t");
  }
  const std::size_t n = T * B;
  const auto check = [&](std::size_t size, std::size_t expected, const char* name,
                         const char* shape) {
    if (size != expected) {
      throw std::invalid_argument(std::string(who) + ": " + name + " holds " +
                                  std::to_string(size) + " values, expected " + shape + " = " +
                                  std::to_string(expected) + " (T = " + std::to_string(T) +
                                  ", B = " + std::to_string(B) + ")");
    }
  };
  check(log_rhos.size(), n, "log_rhos", "T * B");
  check(discounts.size(), n, "discounts", "T * B");
  check(rewards.size(), n, "rewards", "T * B");
  check(values.size(), n, "values", "T * B");
  check(bootstrap_value.size(), B, "bootstrap_value", "B");
  check(vs.size(), n, "vs", "T * B");
  check(pg_advantages.size(), n, "pg_advantages", "T * B");
  if (truncated != nullptr) {
    check(truncated->size(), n, "truncated", "T * B");
  }
  const std::uint8_t* cut = truncated != nullptr ? truncated->data() : nullptr;
  const std::span<const S> inputs[] = {log_rhos, discounts, rewards, values, bootstrap_value};
  const auto outputs_clear = [&](std::span<const S> out, const char* name) {
    for (const auto& in : inputs) {
      if (spans_overlap(out, in)) {
        throw std::invalid_argument(std::string(who) + ": output " + name +
                                    " overlaps an input; pass separate arrays");
      }
    }
  };
  outputs_clear(vs, "vs");
  outputs_clear(pg_advantages, "pg_advantages");
  if (truncated != nullptr &&
      (spans_overlap(vs, *truncated) || spans_overlap(pg_advantages, *truncated))) {
    throw std::invalid_argument(std::string(who) + ": an output overlaps truncated");
  }
  if (spans_overlap(vs, pg_advantages)) {
    throw std::invalid_argument(std::string(who) + ": vs and pg_advantages overlap");
  }
  const vtrace_coefficients<S> k = make_vtrace_coefficients(params, who);
  if (n == 0) {
    return;
  }

  if (cut == nullptr) {
    vtrace_blocks<S, false>(k, T, B, log_rhos.data(), discounts.data(), rewards.data(),
                            values.data(), bootstrap_value.data(), nullptr, vs.data(),
                            pg_advantages.data());
  } else {
    vtrace_blocks<S, true>(k, T, B, log_rhos.data(), discounts.data(), rewards.data(),
                           values.data(), bootstrap_value.data(), cut, vs.data(),
                           pg_advantages.data());
  }
}

}  // namespace detail

/// Computes vs (value targets) and pg_advantages, both [T*B], from log importance weights
/// log(pi(a_t) / mu(a_t)) and the other [T*B] inputs plus bootstrap_value [B].
///
/// `truncated` [T*B], indexed like the other arrays: nonzero where transition t ended its
/// episode at a time limit (the IMPALA loss passes its batch's truncated[t+1]). Such a step is
/// left out: vs_t = V_t and pg_t = 0, and the recursion restarts there as at an unroll end
/// (see `seedrl/detail/vtrace_step.hpp`); its discount does not matter. All zeros gives, bit
/// for bit, the overload without `truncated`.
///
/// Throws std::invalid_argument, before writing anything, when a size is not T*B (or B for
/// bootstrap_value), when a threshold is not positive or lambda is outside [0, 1], or when an
/// output overlaps an input or the other output (the scan keeps partial sums in `vs`).
///
/// Arrays are spans of `S` deduced from `params`, so std::vector arguments convert; the scan
/// runs over t backwards with b innermost, reading and writing whole contiguous rows, and
/// allocates nothing: row t+1 of `vs` holds acc_{t+1} until row t has used it.
template <std::floating_point S>
void vtrace(std::size_t T, std::size_t B, std::span<const std::type_identity_t<S>> log_rhos,
            std::span<const std::type_identity_t<S>> discounts,
            std::span<const std::type_identity_t<S>> rewards,
            std::span<const std::type_identity_t<S>> values,
            std::span<const std::type_identity_t<S>> bootstrap_value,
            std::span<const std::uint8_t> truncated, const vtrace_params<S>& params,
            std::span<std::type_identity_t<S>> vs,
            std::span<std::type_identity_t<S>> pg_advantages) {
  detail::vtrace_scan<S>("seedrl::vtrace", T, B, log_rhos, discounts, rewards, values,
                         bootstrap_value, &truncated, params, vs, pg_advantages);
}

/// V-trace without truncation: the overload above with every `truncated` flag 0.
template <std::floating_point S>
void vtrace(std::size_t T, std::size_t B, std::span<const std::type_identity_t<S>> log_rhos,
            std::span<const std::type_identity_t<S>> discounts,
            std::span<const std::type_identity_t<S>> rewards,
            std::span<const std::type_identity_t<S>> values,
            std::span<const std::type_identity_t<S>> bootstrap_value,
            const vtrace_params<S>& params, std::span<std::type_identity_t<S>> vs,
            std::span<std::type_identity_t<S>> pg_advantages) {
  detail::vtrace_scan<S>("seedrl::vtrace", T, B, log_rhos, discounts, rewards, values,
                         bootstrap_value, nullptr, params, vs, pg_advantages);
}

}  // namespace seedrl
