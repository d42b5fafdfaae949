#pragma once
/// \file
/// HMAC-SHA256 (RFC 2104, FIPS 198-1) and a constant-time comparison for checking MACs: the
/// proofs of the authenticated actor link (docs/security.md).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "seedrl/security/sha256.hpp"

namespace seedrl::security {

/// An incremental HMAC-SHA256: construct with the key, update() with the message in any number
/// of pieces, then finish(). The object keeps only the two key-derived hash states (wiped on
/// destruction), not the key itself.
class hmac_sha256 {
 public:
  /// Bytes in a MAC.
  static constexpr std::size_t digest_size = sha256::digest_size;
  /// A finished MAC.
  using digest = sha256::digest;

  /// Keys of any length work: longer than 64 bytes are hashed first, as RFC 2104 says.
  explicit hmac_sha256(std::span<const std::byte> key) noexcept {
    std::array<std::byte, sha256::block_size> block{};
    if (key.size() > sha256::block_size) {
      const sha256::digest hashed = sha256::hash(key);
      for (std::size_t i = 0; i < hashed.size(); ++i)
        block[i] = hashed[i];
    } else {
      for (std::size_t i = 0; i < key.size(); ++i)
        block[i] = key[i];
    }
    std::array<std::byte, sha256::block_size> pad{};
    for (std::size_t i = 0; i < pad.size(); ++i)
      pad[i] = block[i] ^ std::byte{0x36};
    inner_key_.update(pad);
    for (std::size_t i = 0; i < pad.size(); ++i)
      pad[i] = block[i] ^ std::byte{0x5c};
    outer_key_.update(pad);
    detail::secure_zero(pad);
    detail::secure_zero(block);
    inner_ = inner_key_;
  }

  /// Appends `data` to the message.
  hmac_sha256& update(std::span<const std::byte> data) noexcept {
    inner_.update(data);
    return *this;
  }

  /// Appends the bytes of `text` (no terminator) to the message.
  hmac_sha256& update(std::string_view text) noexcept {
    inner_.update(text);
    return *this;
  }

  /// Returns the MAC of everything updated since construction or the last finish(), and makes
  /// the object ready for the next message under the same key.
  digest finish() noexcept {
    digest inner_digest = inner_.finish();
    sha256 outer = outer_key_;
    outer.update(inner_digest);
    detail::secure_zero(inner_digest);
    inner_ = inner_key_;
    return outer.finish();
  }

  /// The MAC of `message` under `key` in one call.
  static digest mac(std::span<const std::byte> key, std::span<const std::byte> message) noexcept {
    hmac_sha256 h(key);
    h.update(message);
    return h.finish();
  }

 private:
  sha256 inner_key_;  // state after hashing key ^ ipad: restarts each message
  sha256 outer_key_;  // state after hashing key ^ opad
  sha256 inner_;      // inner hash of the message in progress
};

/// Whether `a` and `b` hold the same bytes, in time that depends only on their sizes, never
/// on where they differ: comparing a received MAC with memcmp would tell an attacker, by
/// timing, how many leading bytes of a forgery are right. Sizes are not secret (a MAC's
/// size is public), so different sizes return false at once.
inline bool constant_time_equal(std::span<const std::byte> a,
                                std::span<const std::byte> b) noexcept {
  if (a.size() != b.size())
    return false;
  // Accumulating through a volatile keeps the compiler from turning the loop into an early
  // exit at the first difference.
  volatile std::uint8_t diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff = static_cast<std::uint8_t>(diff | std::to_integer<std::uint8_t>(a[i] ^ b[i]));
  return diff == 0;
}

}  // namespace seedrl::security
