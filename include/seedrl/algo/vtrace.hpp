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

#include "seedrl/detail/eigen_core.hpp"
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

  for (std::size_t t = T; t-- > 0;) {
    const std::size_t row = t * B;
    const bool last = t + 1 == T;
    // V_{t+1} and acc_{t+1}: the bootstrap and 0 after the last step.
    const S* next_values = last ? bootstrap_value.data() : values.data() + row + B;
    S* next_acc = last ? nullptr : vs.data() + row + B;
    // rho for the whole row with Eigen's vectorised exp (a scalar exp per element would cost
    // more than the rest of the scan); pg_advantages' row holds it until the step overwrites it.
    S* rho = pg_advantages.data() + row;
    Eigen::Map<Eigen::Array<S, 1, Eigen::Dynamic>>(rho, static_cast<Eigen::Index>(B)) =
        Eigen::Map<const Eigen::Array<S, 1, Eigen::Dynamic>>(log_rhos.data() + row,
                                                             static_cast<Eigen::Index>(B))
            .exp();
    // Two loops rather than `last ? 0 : next_acc[b]` inside one: a conditional load keeps the
    // compiler from vectorising the row.
    // Likewise without truncation flags the row runs the plain step, so results stay bit for
    // bit those of the scan before truncation existed.
    const auto scan_row = [&](auto next_acc_at, auto cut_at) {
      for (std::size_t b = 0; b < B; ++b) {
        const auto step =
            cut_at(b, vtrace_step_from_rho(k, rho[b], discounts[row + b], rewards[row + b],
                                           values[row + b], next_values[b], next_acc_at(b)));
        vs[row + b] = step.acc;
        pg_advantages[row + b] = step.pg_advantage;
      }
    };
    const auto zero_acc = [](std::size_t) { return S(0); };
    const auto carried_acc = [next_acc](std::size_t b) { return next_acc[b]; };
    const auto keep = [](std::size_t, vtrace_step_result<S> r) { return r; };
    const auto cut_row = [cut, row](std::size_t b, vtrace_step_result<S> r) {
      return vtrace_cut(r, cut[row + b]);
    };
    if (cut == nullptr) {
      if (last) {
        scan_row(zero_acc, keep);
      } else {
        scan_row(carried_acc, keep);
      }
    } else if (last) {
      scan_row(zero_acc, cut_row);
    } else {
      scan_row(carried_acc, cut_row);
    }
    if (!last) {
      // Row t no longer needs acc_{t+1}: turn row t+1 into the targets.
      for (std::size_t b = 0; b < B; ++b) {
        next_acc[b] = vtrace_target(next_values[b], next_acc[b]);
      }
    }
  }
  for (std::size_t b = 0; b < B; ++b) {
    vs[b] = vtrace_target(values[b], vs[b]);
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
