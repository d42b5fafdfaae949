#pragma once
/// \file
/// `fast_exp(x)`: e^x for float and double in branch-free arithmetic that GCC and Clang
/// vectorise inside a loop (std::exp is a library call per element, so a loop around it runs
/// scalar). Used where an exp sits in a row loop that must vectorise with the rest of its work
/// (V-trace's importance weights, seedrl/algo/vtrace.hpp).
///
/// The method is the textbook one: x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2,
/// ln2 split in two (Cody and Waite) so that n ln2 is exact; e^r by its Taylor series to the
/// degree whose remainder is below half an ulp on that interval (7 for float: 0.35^8/8! ~ 5e-9,
/// 13 for double: 0.35^14/14! ~ 4e-18); then times 2^n, formed in the exponent bits as two
/// factors 2^(n1) 2^(n - n1) so that results in the subnormal range and the overflow to
/// infinity come out as std::exp's do. Every step is a multiply, an add, a min/max-like select
/// or an integer add and shift, all of which the compilers' vectorisers take.
///
/// Accuracy (test_fast_exp.cpp, against std::exp over a sweep of the whole range): within 2 ulp
/// for normal results; +inf above the largest finite result, 0 below the smallest subnormal,
/// NaN for NaN, exactly 1 at 0.

#include <bit>
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace seedrl::detail {

/// The constants of `fast_exp` for one floating-point type.
template <std::floating_point S>
struct fast_exp_traits;

template <>
struct fast_exp_traits<float> {
  using bits = std::uint32_t;
  static constexpr int degree = 7;
  static constexpr int mantissa_bits = 23;
  static constexpr bits exponent_bias = 127;
  // Past these, e^x is +inf and 0 for every float; the clamp keeps n, and the exponents built
  // from its halves, in range.
  static constexpr float lowest = -104.0f, highest = 89.0f;
  static constexpr float log2e = 1.44269504088896341f;
  static constexpr float ln2_hi = 0.693359375f;  // 355/512: n * ln2_hi is exact
  static constexpr float ln2_lo = -2.12194440e-4f;
  static constexpr float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
};

template <>
struct fast_exp_traits<double> {
  using bits = std::uint64_t;
  static constexpr int degree = 13;
  static constexpr int mantissa_bits = 52;
  static constexpr bits exponent_bias = 1023;
  static constexpr double lowest = -746.0, highest = 710.0;
  static constexpr double log2e = 1.44269504088896340736;
  static constexpr double ln2_hi = 6.93147180369123816490e-01;  // 32 bits: n * ln2_hi exact
  static constexpr double ln2_lo = 1.90821492927058770002e-10;
  static constexpr double round_magic = 6755399441055744.0;  // 1.5 * 2^52
};

/// 2^k for an integer-valued k held in `k_plus_magic` = k + round_magic, with k + bias in
/// (0, 2 * bias]: the integer sits in the low mantissa bits, so subtracting the magic's bits
/// recovers it without a float-to-int conversion (which x86 lacks for 64-bit lanes before
/// AVX-512).
template <std::floating_point S>
inline S fast_exp_pow2(S k_plus_magic) {
  using tr = fast_exp_traits<S>;
  using U = typename tr::bits;
  const U k = std::bit_cast<U>(k_plus_magic) - std::bit_cast<U>(tr::round_magic);  // mod 2^w
  return std::bit_cast<S>(static_cast<U>((k + tr::exponent_bias) << tr::mantissa_bits));
}

/// 1/k!, rounded once to S (computed in long double at compile time).
template <std::floating_point S>
constexpr S fast_exp_coefficient(int k) {
  long double f = 1.0L;
  for (int i = 2; i <= k; ++i)
    f *= static_cast<long double>(i);
  return static_cast<S>(1.0L / f);
}

/// sum_{k <= Degree} r^k / k! by Horner's rule from p = 1/Degree!, written out at compile time: a
/// loop here would be an inner loop, which GCC does not vectorise the caller's loop around.
template <std::floating_point S, int Degree, int K = Degree>
inline S fast_exp_series(S r, S p) {
  if constexpr (K == 0) {
    return p;
  } else {
    constexpr S c = fast_exp_coefficient<S>(K - 1);
    return fast_exp_series<S, Degree, K - 1>(r, p * r + c);
  }
}

/// x limited to the range where fast_exp_clamped computes e^x: past it, e^x is +inf or 0 in S
/// and the limits give the same. A NaN passes through (comparisons with NaN are false).
template <std::floating_point S>
inline S fast_exp_clamp(S x) {
  using tr = fast_exp_traits<S>;
  const S c = x < tr::lowest ? tr::lowest : x;
  return c > tr::highest ? tr::highest : c;
}

/// e^c for c = fast_exp_clamp(x), all arithmetic and no select: a NaN is carried to the result
/// (no float-to-int conversion, which a NaN would make undefined).
///
/// The clamp is a function of its own because a loop that vectorises must run it in a loop of
/// its own: in one loop with the arithmetic, GCC folds the arithmetic for the constant arms and
/// sinks the rest into the third, and that branch keeps the loop scalar (as vtrace_columns's
/// selects, seedrl/algo/vtrace.hpp).
template <std::floating_point S>
inline S fast_exp_clamped(S c) {
  using tr = fast_exp_traits<S>;
  const S n_magic = c * tr::log2e + tr::round_magic;
  const S n = n_magic - tr::round_magic;  // round(c / ln2), exact
  const S r = (c - n * tr::ln2_hi) - n * tr::ln2_lo;
  constexpr S top = fast_exp_coefficient<S>(tr::degree);
  const S p = fast_exp_series<S, tr::degree>(r, top);
  // 2^n as 2^n1 2^(n - n1), n1 = round(n / 2): each factor a normal number.
  const S half_magic = n * S(0.5) + tr::round_magic;
  const S n1 = half_magic - tr::round_magic;
  const S n2 = n - n1;
  return p * fast_exp_pow2(half_magic) * fast_exp_pow2(n2 + tr::round_magic);
}

/// e^x; see the file comment. In a loop that must vectorise, clamp in a loop of its own and
/// call fast_exp_clamped in the next (see there).
template <std::floating_point S>
inline S fast_exp(S x) {
  return fast_exp_clamped(fast_exp_clamp(x));
}

}  // namespace seedrl::detail
