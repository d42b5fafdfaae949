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

/// One row (fixed t, every b) of the backward scan, as loops over b with no branches inside
/// that GCC and Clang vectorise; whether acc_{t+1} exists (`Carried`, false at t = T-1 where it
/// is 0) and whether flags exist (`Cut`) are template parameters.
///
/// rho_t = exp(log_rho_t) is formed here, with `fast_exp` (seedrl/detail/fast_exp.hpp: its
/// clamp in a loop of its own, then its arithmetic in the loop that clips rho): a separate exp pass
/// over the batch (Eigen's) cost as much as the rest of the scan at small B, and std::exp would
/// keep the loop scalar. `rho_pg` receives rho_t and holds pg_t on return; `acc` receives acc_t;
/// with `Carried`, `next_acc` holds acc_{t+1} on entry and vs_{t+1} on return (row t was its last
/// reader). Every pointer is `__restrict`: `vtrace_scan` has checked that no output overlaps an
/// input or the other output, and rows t and t+1 of `vs` are disjoint. Without that promise GCC
/// guards the vector loop with run-time alias checks over eight arrays and runs it scalar.
///
/// Two selects sit in their own loops, because in the step's loop GCC turns them into branches
/// it cannot vectorise without AVX-512's masked arithmetic (FP operations may trap, so it will
/// not compute both arms unconditionally):
/// - min(1, rho_t), the trace clip: multiplied by lambda, its constant arm folds (1 * lambda),
///   which moves the multiplication by rho into the other arm. It is formed first, into `acc`
///   (free until the step writes acc_t), and the step takes it from there.
/// - the truncation cut: the step's arithmetic, used only where the flag is 0, would sink into
///   that arm. The step is stored, then the cut zeroes the flagged elements.
/// The results are those of `vtrace_step_from_rho` and `vtrace_cut`, bit for bit.
template <std::floating_point S, bool Carried, bool Cut>
void vtrace_row(const vtrace_coefficients<S> k, std::size_t B, const S* __restrict log_rho,
                const S* __restrict discount, const S* __restrict reward, const S* __restrict value,
                const S* __restrict next_value, const std::uint8_t* __restrict truncated,
                S* __restrict rho_pg, S* __restrict acc, S* __restrict next_acc) {
  for (std::size_t b = 0; b < B; ++b) {
    rho_pg[b] = fast_exp_clamp(log_rho[b]);
  }
  for (std::size_t b = 0; b < B; ++b) {
    const S rho = fast_exp_clamped(rho_pg[b]);
    rho_pg[b] = rho;
    acc[b] = vtrace_clip(S(1), rho);
  }
  for (std::size_t b = 0; b < B; ++b) {
    const S carried = Carried ? next_acc[b] : S(0);
    const auto step = vtrace_step_from_clips(k, rho_pg[b], acc[b], discount[b], reward[b], value[b],
                                             next_value[b], carried);
    acc[b] = step.acc;
    rho_pg[b] = step.pg_advantage;
    if constexpr (Carried) {
      next_acc[b] = vtrace_target(next_value[b], carried);
    }
  }
  if constexpr (Cut) {
    for (std::size_t b = 0; b < B; ++b) {
      const auto step = vtrace_cut(vtrace_step_result<S>{acc[b], rho_pg[b]}, truncated[b]);
      acc[b] = step.acc;
      rho_pg[b] = step.pg_advantage;
    }
  }
}

/// Every row of the scan, t = T-1 down to 0.
template <std::floating_point S, bool Cut>
void vtrace_rows(const vtrace_coefficients<S>& k, std::size_t T, std::size_t B, const S* log_rhos,
                 const S* discounts, const S* rewards, const S* values, const S* bootstrap,
                 const std::uint8_t* truncated, S* vs, S* pg) {
  const auto flags = [truncated](std::size_t row) { return Cut ? truncated + row : nullptr; };
  std::size_t row = (T - 1) * B;
  vtrace_row<S, false, Cut>(k, B, log_rhos + row, discounts + row, rewards + row, values + row,
                            bootstrap, flags(row), pg + row, vs + row, nullptr);
  while (row != 0) {
    const std::size_t next = row;
    row -= B;
    vtrace_row<S, true, Cut>(k, B, log_rhos + row, discounts + row, rewards + row, values + row,
                             values + next, flags(row), pg + row, vs + row, vs + next);
  }
  for (std::size_t b = 0; b < B; ++b) {
    vs[b] = vtrace_target(values[b], vs[b]);
  }
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
    vtrace_rows<S, false>(k, T, B, log_rhos.data(), discounts.data(), rewards.data(), values.data(),
                          bootstrap_value.data(), nullptr, vs.data(), pg_advantages.data());
  } else {
    vtrace_rows<S, true>(k, T, B, log_rhos.data(), discounts.data(), rewards.data(), values.data(),
                         bootstrap_value.data(), cut, vs.data(), pg_advantages.data());
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
