#pragma once
/// \file
/// Internals of the optimizers in `seedrl/optim/`:
///   1. the per-element Adam and RMSProp updates, `SEEDRL_HOST_DEVICE` so that the CPU
///      optimizers and a fused CUDA kernel run the same arithmetic;
///   2. host-only helpers that turn hyperparameters and the step number into the per-step
///      coefficients those updates take (computed once per step in double, like PyTorch's Python
///      floats, then rounded to the scalar type);
///   3. host-only (de)serialisation of optimizer state, shared by every optimizer.
///
/// The arithmetic follows PyTorch's single-tensor implementations operation by operation (see
/// tools/gen_optim_fixture.py for the reference rules), including its choice of where epsilon
/// goes and the order of the products, so double results agree with torch to rounding.

#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/core/config.hpp"

namespace seedrl::detail {

// ---------------------------------------------------------------------------------------------
// 1. Per-element updates (host and device)

/// Adam's per-step scalars for step t (1-based), already rounded to S.
template <std::floating_point S>
struct adam_coefficients {
  S lerp_weight;            ///< 1 - beta1: m moves this fraction of the way towards g
  S beta2;                  ///< decay of the second moment
  S one_minus_beta2;        ///< weight of g^2 in the second moment
  S step_size;              ///< lr / (1 - beta1^t)
  S bias_correction2_sqrt;  ///< sqrt(1 - beta2^t)
  S epsilon;                ///< added after the second-moment bias correction, as in PyTorch
};

/// One Adam update of one element:
///   m = lerp(m, g, 1 - beta1)            (= beta1*m + (1-beta1)*g, PyTorch's exp_avg.lerp_)
///   v = beta2*v + (1-beta2)*g*g
///   p = p - step_size * m / (sqrt(v) / sqrt(1-beta2^t) + eps)
/// The lerp is written as ATen's (two forms, picked by the weight) so that rounding matches
/// torch; with beta1 = 0 the weight is 1 and m becomes g exactly.
template <std::floating_point S>
SEEDRL_HOST_DEVICE void adam_update(const adam_coefficients<S>& k, S& param, S& m, S& v, S grad) {
  const S w = k.lerp_weight;
  m = (w < S(0.5)) ? m + w * (grad - m) : grad - (grad - m) * (S(1) - w);
  v = v * k.beta2 + k.one_minus_beta2 * grad * grad;
  const S denom = std::sqrt(v) / k.bias_correction2_sqrt + k.epsilon;
  param = param - k.step_size * m / denom;
}

/// RMSProp's per-step scalars, already rounded to S.
template <std::floating_point S>
struct rmsprop_coefficients {
  S decay;            ///< alpha: decay of the mean square
  S one_minus_decay;  ///< weight of g^2 in the mean square
  S epsilon;          ///< added to sqrt(mean square), outside the root, as in PyTorch
  S momentum;         ///< decay of the momentum buffer (only read by the momentum update)
  S learning_rate;    ///< the scheduled learning rate of this step
};

/// One RMSProp update of one element, without momentum:
///   v = alpha*v + (1-alpha)*g*g;  p = p - lr * g / (sqrt(v) + eps)
template <std::floating_point S>
SEEDRL_HOST_DEVICE void rmsprop_update(const rmsprop_coefficients<S>& k, S& param, S& v, S grad) {
  v = v * k.decay + k.one_minus_decay * grad * grad;
  const S avg = std::sqrt(v) + k.epsilon;
  param = param - k.learning_rate * grad / avg;
}

/// One RMSProp update of one element, with momentum:
///   v = alpha*v + (1-alpha)*g*g;  buf = momentum*buf + g / (sqrt(v) + eps);  p = p - lr * buf
template <std::floating_point S>
SEEDRL_HOST_DEVICE void rmsprop_momentum_update(const rmsprop_coefficients<S>& k, S& param, S& v,
                                                S& buf, S grad) {
  v = v * k.decay + k.one_minus_decay * grad * grad;
  const S avg = std::sqrt(v) + k.epsilon;
  buf = buf * k.momentum + grad / avg;
  param = param - k.learning_rate * buf;
}

// ---------------------------------------------------------------------------------------------
// 2. Per-step coefficients (host)

/// Adam's scalars for step `t` (1-based) at learning rate `lr`; the bias corrections are formed
/// in double as PyTorch forms them (`1 - beta ** step` on Python floats).
template <std::floating_point S>
adam_coefficients<S> make_adam_coefficients(double beta1, double beta2, double epsilon, double lr,
                                            std::int64_t t) {
  const double td = static_cast<double>(t);
  const double bias_correction1 = 1.0 - std::pow(beta1, td);
  const double bias_correction2 = 1.0 - std::pow(beta2, td);
  return {static_cast<S>(1.0 - beta1),
          static_cast<S>(beta2),
          static_cast<S>(1.0 - beta2),
          static_cast<S>(lr / bias_correction1),
          static_cast<S>(std::sqrt(bias_correction2)),
          static_cast<S>(epsilon)};
}

/// RMSProp's scalars at learning rate `lr`.
template <std::floating_point S>
rmsprop_coefficients<S> make_rmsprop_coefficients(double decay, double momentum, double epsilon,
                                                  double lr) {
  return {static_cast<S>(decay), static_cast<S>(1.0 - decay), static_cast<S>(epsilon),
          static_cast<S>(momentum), static_cast<S>(lr)};
}

// ---------------------------------------------------------------------------------------------
// 3. State (de)serialisation (host)
//
// Format version 1, every integer and scalar little-endian whatever the host, so a checkpoint
// moves between machines:
//   offset  size  field
//        0     8  magic "SEEDRLOS" (seedrl optimizer state)
//        8     4  u32 format version (1)
//       12     4  u32 optimizer kind (optimizer_kind below)
//       16     4  u32 scalar size in bytes (4 float, 8 double)
//       20     4  u32 number of state arrays (Adam: m, v; RMSProp: v [, momentum buffer])
//       24     8  i64 step count
//       32     8  u64 element count n (of each array)
//       40  a*n*s  the arrays, one after another, IEEE-754 binary32/binary64
//      end     8  u64 FNV-1a 64-bit hash of every byte before it
// The hyperparameters are not stored: they come from the config the optimizer is built with, so
// a run can resume with, say, a different learning rate.

/// The optimizer a saved state belongs to. New optimizers take new numbers; never reuse one.
enum class optimizer_kind : std::uint32_t { adam = 1, rmsprop = 2 };

/// A name for messages.
inline const char* optimizer_kind_name(std::uint32_t kind) {
  switch (kind) {
    case static_cast<std::uint32_t>(optimizer_kind::adam):
      return "adam";
    case static_cast<std::uint32_t>(optimizer_kind::rmsprop):
      return "rmsprop";
    default:
      return "unknown";
  }
}

inline constexpr char optimizer_state_magic[8] = {'S', 'E', 'E', 'D', 'R', 'L', 'O', 'S'};
inline constexpr std::uint32_t optimizer_state_version = 1;
inline constexpr std::size_t optimizer_state_header_size = 40;
inline constexpr std::size_t optimizer_state_trailer_size = 8;

/// The unsigned integer with the bits of S.
template <std::floating_point S>
using scalar_bits_t = std::conditional_t<sizeof(S) == 4, std::uint32_t, std::uint64_t>;

template <std::floating_point S>
inline constexpr bool serialisable_scalar = std::numeric_limits<S>::is_iec559 &&
                                            (sizeof(S) == 4 || sizeof(S) == 8);

inline const char* scalar_name(std::size_t size) {
  return size == 4 ? "float" : size == 8 ? "double" : "unsupported";
}

/// FNV-1a, 64 bit: catches flipped or overwritten bytes, which the header checks cannot.
inline std::uint64_t fnv1a64(std::span<const std::byte> bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const std::byte b : bytes) {
    h ^= static_cast<std::uint64_t>(b);
    h *= 1099511628211ULL;
  }
  return h;
}

template <std::unsigned_integral U>
void put_le(std::vector<std::byte>& out, U value) {
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFFu));
  }
}

template <std::unsigned_integral U>
U get_le(const std::byte* in) {
  U value = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    value |= static_cast<U>(static_cast<U>(in[i]) << (8 * i));
  }
  return value;
}

/// Serialises `arrays` (all of the same length) with the header above.
template <std::floating_point S>
std::vector<std::byte> save_optimizer_state(optimizer_kind kind, std::int64_t step_count,
                                            std::span<const std::span<const S>> arrays) {
  static_assert(serialisable_scalar<S>, "seedrl: optimizer state supports float and double");
  const std::size_t n = arrays.empty() ? 0 : arrays[0].size();
  std::vector<std::byte> out;
  out.reserve(optimizer_state_header_size + arrays.size() * n * sizeof(S) +
              optimizer_state_trailer_size);
  for (const char c : optimizer_state_magic) {
    out.push_back(static_cast<std::byte>(c));
  }
  put_le<std::uint32_t>(out, optimizer_state_version);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(kind));
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(sizeof(S)));
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(arrays.size()));
  put_le<std::uint64_t>(out, static_cast<std::uint64_t>(step_count));
  put_le<std::uint64_t>(out, static_cast<std::uint64_t>(n));
  for (const std::span<const S> a : arrays) {
    if (a.size() != n) {
      throw std::logic_error("seedrl: optimizer state arrays differ in length (internal error)");
    }
    if constexpr (std::endian::native == std::endian::little) {
      const std::size_t at = out.size();
      out.resize(at + a.size_bytes());
      if (!a.empty()) {
        std::memcpy(out.data() + at, a.data(), a.size_bytes());
      }
    } else {
      for (const S x : a) {
        put_le<scalar_bits_t<S>>(out, std::bit_cast<scalar_bits_t<S>>(x));
      }
    }
  }
  put_le<std::uint64_t>(out, fnv1a64(out));
  return out;
}

/// What `parse_optimizer_state` read: the step count and `array_count` arrays of equal length.
template <std::floating_point S>
struct parsed_optimizer_state {
  std::int64_t step_count = 0;
  std::vector<std::vector<S>> arrays;
};

/// Reads and checks a state written by `save_optimizer_state`, for an optimizer of `kind` over S
/// that keeps `array_count` arrays (`arrays_hint` names them for the message). Throws
/// `std::invalid_argument` naming the first problem; never touches the caller's state, which the
/// caller then replaces with the result (so a failed load changes nothing).
template <std::floating_point S>
parsed_optimizer_state<S> parse_optimizer_state(std::span<const std::byte> bytes,
                                                optimizer_kind kind, std::uint32_t array_count,
                                                const char* arrays_hint) {
  static_assert(serialisable_scalar<S>, "seedrl: optimizer state supports float and double");
  const std::string who = std::string("seedrl: ") +
                          optimizer_kind_name(static_cast<std::uint32_t>(kind)) + "::load_state: ";
  const auto fail = [&who](const std::string& what) { throw std::invalid_argument(who + what); };

  if (bytes.size() >= sizeof(optimizer_state_magic) &&
      std::memcmp(bytes.data(), optimizer_state_magic, sizeof(optimizer_state_magic)) != 0) {
    fail("not a seedrl optimizer state (the first 8 bytes are not \"SEEDRLOS\")");
  }
  if (bytes.size() < optimizer_state_header_size + optimizer_state_trailer_size) {
    fail("state is truncated: " + std::to_string(bytes.size()) + " bytes, but the header and " +
         "checksum alone take " +
         std::to_string(optimizer_state_header_size + optimizer_state_trailer_size));
  }
  const std::byte* p = bytes.data();
  const auto version = get_le<std::uint32_t>(p + 8);
  const auto saved_kind = get_le<std::uint32_t>(p + 12);
  const auto scalar_size = get_le<std::uint32_t>(p + 16);
  const auto saved_arrays = get_le<std::uint32_t>(p + 20);
  const auto step_count = static_cast<std::int64_t>(get_le<std::uint64_t>(p + 24));
  const auto n = get_le<std::uint64_t>(p + 32);

  if (version != optimizer_state_version) {
    fail("state format version " + std::to_string(version) + " is not supported (this build " +
         "reads version " + std::to_string(optimizer_state_version) + ")");
  }
  if (saved_kind != static_cast<std::uint32_t>(kind)) {
    fail(std::string("state was saved by a different optimizer (") +
         optimizer_kind_name(saved_kind) + ", kind " + std::to_string(saved_kind) + "), not " +
         optimizer_kind_name(static_cast<std::uint32_t>(kind)));
  }
  if (scalar_size != sizeof(S)) {
    fail("state holds " + std::to_string(scalar_size) + "-byte scalars (" +
         scalar_name(scalar_size) + ") but this optimizer uses " + std::to_string(sizeof(S)) +
         "-byte scalars (" + scalar_name(sizeof(S)) + "); load it into an optimizer of the " +
         "scalar type it was saved from");
  }
  if (saved_arrays != array_count) {
    fail("state holds " + std::to_string(saved_arrays) + " array(s) but this optimizer keeps " +
         std::to_string(array_count) + " (" + arrays_hint +
         "); was it saved with a different configuration?");
  }
  if (step_count < 0) {
    fail("state has a negative step count (" + std::to_string(step_count) + ")");
  }
  if (step_count == 0 && n != 0) {
    fail("state has 0 steps but " + std::to_string(n) +
         " elements (state is sized by the first step)");
  }
  const std::uint64_t payload_limit =
      (std::numeric_limits<std::uint64_t>::max() - optimizer_state_header_size -
       optimizer_state_trailer_size) /
      (static_cast<std::uint64_t>(sizeof(S)) * (array_count == 0 ? 1 : array_count));
  if (n > payload_limit) {
    fail("state claims an impossible element count (" + std::to_string(n) + ")");
  }
  const std::uint64_t expected = optimizer_state_header_size +
                                 static_cast<std::uint64_t>(array_count) * n * sizeof(S) +
                                 optimizer_state_trailer_size;
  if (bytes.size() < expected) {
    fail("state is truncated: " + std::to_string(bytes.size()) + " bytes, but " +
         std::to_string(array_count) + " array(s) of " + std::to_string(n) + " " +
         scalar_name(sizeof(S)) + " need " + std::to_string(expected));
  }
  if (bytes.size() > expected) {
    fail("state has " + std::to_string(bytes.size() - expected) +
         " unexpected trailing bytes (expected exactly " + std::to_string(expected) + ")");
  }
  const std::size_t body = static_cast<std::size_t>(expected) - optimizer_state_trailer_size;
  if (fnv1a64(bytes.first(body)) != get_le<std::uint64_t>(p + body)) {
    fail("state is corrupted (checksum mismatch)");
  }

  parsed_optimizer_state<S> out;
  out.step_count = step_count;
  out.arrays.resize(array_count);
  const std::byte* data = p + optimizer_state_header_size;
  for (std::vector<S>& a : out.arrays) {
    a.resize(static_cast<std::size_t>(n));
    if constexpr (std::endian::native == std::endian::little) {
      if (n != 0) {
        std::memcpy(a.data(), data, a.size() * sizeof(S));
      }
    } else {
      for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = std::bit_cast<S>(get_le<scalar_bits_t<S>>(data + i * sizeof(S)));
      }
    }
    data += a.size() * sizeof(S);
  }
  return out;
}

}  // namespace seedrl::detail
