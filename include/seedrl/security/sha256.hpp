#pragma once
/// \file
/// SHA-256 (FIPS 180-4), incremental and one-shot: the hash under seedrl's HMAC-SHA256 for the
/// authenticated actor link (docs/security.md).
///
/// Our own small implementation rather than OpenSSL so that consumers of the header-only
/// library take on no new dependency; the tests check it against the FIPS 180-4 examples and,
/// through HMAC, against RFC 4231. It hashes a few hundred bytes per connection, so it is
/// written for clarity, not speed. Not constant time in the message length (nothing here is
/// secret about lengths), and constant time in the message contents (no table lookups or
/// branches on data).

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace seedrl::security {

namespace detail {

/// Overwrites `bytes` with zeros in a way the optimizer may not drop as a dead store, so that
/// keys and key-derived hash states do not linger in freed memory.
inline void secure_zero(std::span<std::byte> bytes) noexcept {
  volatile std::byte* p = bytes.data();
  for (std::size_t i = 0; i < bytes.size(); ++i)
    p[i] = std::byte{0};
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

/// Views text as bytes; the hash and MAC take bytes, callers often hold labels as text.
inline std::span<const std::byte> text_bytes(std::string_view text) noexcept {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

}  // namespace detail

/// An incremental SHA-256 hasher: update() with the message in any number of pieces, then
/// finish(). Hashing the pieces gives the same digest as hashing their concatenation at once.
class sha256 {
 public:
  /// Bytes in a digest.
  static constexpr std::size_t digest_size = 32;
  /// Bytes in one compression block; HMAC pads its key to this size.
  static constexpr std::size_t block_size = 64;
  /// A finished hash.
  using digest = std::array<std::byte, digest_size>;

  sha256() noexcept { reset(); }
  sha256(const sha256&) = default;
  sha256& operator=(const sha256&) = default;
  /// Wipes the state: for HMAC it is derived from the key.
  ~sha256() { wipe(); }

  /// Forgets everything hashed so far; the next digest is of what is updated after this.
  void reset() noexcept {
    state_ = initial_state;
    buffered_ = 0;
    total_bytes_ = 0;
  }

  /// Appends `data` to the message.
  sha256& update(std::span<const std::byte> data) noexcept {
    total_bytes_ += data.size();
    std::size_t i = 0;
    // Top up a partly filled block first, then compress whole blocks straight from `data`.
    if (buffered_ > 0) {
      while (buffered_ < block_size && i < data.size())
        buffer_[buffered_++] = data[i++];
      if (buffered_ < block_size)
        return *this;
      compress(buffer_.data());
      buffered_ = 0;
    }
    for (; data.size() - i >= block_size; i += block_size)
      compress(data.data() + i);
    while (i < data.size())
      buffer_[buffered_++] = data[i++];
    return *this;
  }

  /// Appends the bytes of `text` (no terminator) to the message.
  sha256& update(std::string_view text) noexcept { return update(detail::text_bytes(text)); }

  /// Pads, returns the digest of everything updated since construction or reset(), and resets
  /// the hasher so that it can hash the next message.
  digest finish() noexcept {
    const std::uint64_t bit_length = total_bytes_ * 8;  // FIPS 180-4 counts bits, mod 2^64
    buffer_[buffered_++] = std::byte{0x80};
    if (buffered_ > block_size - 8) {
      while (buffered_ < block_size)
        buffer_[buffered_++] = std::byte{0};
      compress(buffer_.data());
      buffered_ = 0;
    }
    while (buffered_ < block_size - 8)
      buffer_[buffered_++] = std::byte{0};
    for (int k = 7; k >= 0; --k)
      buffer_[buffered_++] = static_cast<std::byte>((bit_length >> (8 * k)) & 0xFFu);
    compress(buffer_.data());

    digest out{};
    for (std::size_t w = 0; w < 8; ++w)
      for (std::size_t k = 0; k < 4; ++k)
        out[4 * w + k] = static_cast<std::byte>((state_[w] >> (24 - 8 * k)) & 0xFFu);
    wipe();
    reset();
    return out;
  }

  /// The digest of `data` in one call.
  static digest hash(std::span<const std::byte> data) noexcept {
    sha256 h;
    h.update(data);
    return h.finish();
  }

  /// The digest of the bytes of `text`.
  static digest hash(std::string_view text) noexcept { return hash(detail::text_bytes(text)); }

 private:
  // FIPS 180-4 section 5.3.3: the first 32 bits of the fractional parts of the square roots of
  // the first 8 primes.
  static constexpr std::array<std::uint32_t, 8> initial_state = {
      0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
      0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};

  // FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the cube roots of
  // the first 64 primes.
  static constexpr std::array<std::uint32_t, 64> round_constants = {
      0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
      0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
      0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
      0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
      0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
      0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
      0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
      0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
      0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
      0xc67178f2u};

  static constexpr std::uint32_t rotr(std::uint32_t x, int n) noexcept {
    return (x >> n) | (x << (32 - n));
  }

  // One application of the compression function (FIPS 180-4 section 6.2.2) to a 64-byte block.
  void compress(const std::byte* block) noexcept {
    std::array<std::uint32_t, 64> w{};
    for (std::size_t t = 0; t < 16; ++t) {
      w[t] = (std::to_integer<std::uint32_t>(block[4 * t]) << 24) |
             (std::to_integer<std::uint32_t>(block[4 * t + 1]) << 16) |
             (std::to_integer<std::uint32_t>(block[4 * t + 2]) << 8) |
             std::to_integer<std::uint32_t>(block[4 * t + 3]);
    }
    for (std::size_t t = 16; t < 64; ++t) {
      const std::uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      const std::uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
    std::uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
    for (std::size_t t = 0; t < 64; ++t) {
      const std::uint32_t big_s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = h + big_s1 + ch + round_constants[t] + w[t];
      const std::uint32_t big_s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const std::uint32_t t2 = big_s0 + maj;
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
    state_[5] += f;
    state_[6] += g;
    state_[7] += h;
    detail::secure_zero(std::as_writable_bytes(std::span(w)));
  }

  void wipe() noexcept {
    detail::secure_zero(std::as_writable_bytes(std::span(state_)));
    detail::secure_zero(std::span(buffer_));
  }

  std::array<std::uint32_t, 8> state_{};
  std::array<std::byte, block_size> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

}  // namespace seedrl::security
