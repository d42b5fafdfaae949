#pragma once
/// \file
/// A small, seedable, portable random generator. The standard distributions are not
/// specified bit-for-bit across standard libraries, so seeded runs use this instead and give
/// the same numbers with every compiler.

#include <cmath>
#include <cstdint>

namespace seedrl {

/// xoshiro256** (Blackman and Vigna), seeded through splitmix64 so that nearby seeds give
/// unrelated streams. Satisfies std::uniform_random_bit_generator.
class random_generator {
 public:
  using result_type = std::uint64_t;

  explicit random_generator(std::uint64_t seed = 0) noexcept { this->seed(seed); }

  /// Restarts the stream from `seed`.
  void seed(std::uint64_t seed) noexcept {
    for (auto& word : s_) {
      word = splitmix64(seed);
    }
  }

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return ~result_type{0}; }

  result_type operator()() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

  /// Uniform in [low, high).
  double uniform(double low, double high) noexcept { return low + (high - low) * uniform(); }

  /// A standard normal draw by Box-Muller, from exactly two 64-bit draws (the sine partner is
  /// dropped, so the generator needs no cached state and `seed` restarts everything). The same
  /// seed gives the same draws with a given C library; std::log and std::cos need not be
  /// correctly rounded, so another libm may differ in the last bits. |result| <= 8.58, the
  /// radius at the smallest u1 = 2^-53.
  double normal() noexcept {
    const double u1 = 1.0 - uniform();  // in (0, 1], so the log is finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2);
  }

  /// Uniform integer in [0, n), n > 0, without modulo bias: draws under the smallest
  /// all-ones mask covering n - 1 are rejected when >= n (fewer than half on average).
  std::uint64_t below(std::uint64_t n) noexcept {
    std::uint64_t mask = n - 1;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    std::uint64_t x = (*this)() & mask;
    while (x >= n) {
      x = (*this)() & mask;
    }
    return x;
  }

  /// A well-mixed seed for the `index`-th child stream of `seed` (e.g. one per environment).
  static std::uint64_t derive(std::uint64_t seed, std::uint64_t index) noexcept {
    std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ULL * (index + 1));
    return splitmix64(x);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

  static std::uint64_t splitmix64(std::uint64_t& x) noexcept {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  std::uint64_t s_[4]{};
};

}  // namespace seedrl
