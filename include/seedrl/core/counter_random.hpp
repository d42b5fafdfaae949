#pragma once
/// \file
/// A counter-based random generator: the uniform for (seed, counter, row) is a pure function of
/// the three, so a GPU kernel drawing one number per row of a batch and the CPU reference that
/// checks it draw the same numbers, in any order and on any number of threads. It is SplitMix64's
/// finaliser (Steele, Lea and Flood 2014) over a mix of the three words: each word goes through
/// the finaliser before the next is added, so neighbouring counters or rows give unrelated
/// outputs. Plain integer arithmetic, `SEEDRL_HOST_DEVICE`: the same bits on host and device.
///
/// `counter_categorical` samples one row of logits by inverse CDF with such a uniform: the
/// on-device action sampler of the CUDA inference engine, and its CPU reference.

#include <cmath>
#include <cstdint>

#include "seedrl/core/config.hpp"

namespace seedrl {

/// SplitMix64's output function: a bijection of 64-bit words with good avalanche.
SEEDRL_HOST_DEVICE std::uint64_t splitmix64_mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// 64 random bits for (seed, counter, row).
SEEDRL_HOST_DEVICE std::uint64_t counter_bits(std::uint64_t seed, std::uint64_t counter,
                                              std::uint64_t row) {
  return splitmix64_mix(splitmix64_mix(splitmix64_mix(seed) ^ counter) ^ row);
}

/// A uniform double in [0, 1) with 53 random bits for (seed, counter, row).
SEEDRL_HOST_DEVICE double counter_uniform(std::uint64_t seed, std::uint64_t counter,
                                          std::uint64_t row) {
  return static_cast<double>(counter_bits(seed, counter, row) >> 11) * 0x1.0p-53;
}

/// The action of one row of A logits for the uniform u in [0, 1): the first i whose cumulative
/// softmax weight exceeds u (weights exp(z_i - max z), summed in double, so a float row and its
/// reference agree whenever exp agrees to the last bit); the last action when rounding leaves
/// u at or above the total. Writes log softmax of the action to `log_prob`.
template <class S>
SEEDRL_HOST_DEVICE int counter_categorical(const S* logits, int A, double u, S* log_prob) {
  S m = logits[0];
  for (int i = 1; i < A; ++i)
    m = logits[i] > m ? logits[i] : m;
  double total = 0.0;
  for (int i = 0; i < A; ++i)
    total += std::exp(static_cast<double>(logits[i] - m));
  const double target = u * total;
  double cum = 0.0;
  int action = A - 1;
  for (int i = 0; i < A; ++i) {
    cum += std::exp(static_cast<double>(logits[i] - m));
    if (target < cum) {
      action = i;
      break;
    }
  }
  *log_prob = static_cast<S>(static_cast<double>(logits[action] - m) - std::log(total));
  return action;
}

}  // namespace seedrl
