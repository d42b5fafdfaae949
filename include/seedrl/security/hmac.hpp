#pragma once
/// \file
/// HMAC-SHA256 (RFC 2104, FIPS 198-1) and a constant-time comparison for checking MACs, both
/// OpenSSL's (libcrypto's EVP_MAC and CRYPTO_memcmp): the proofs of the authenticated actor
/// link (docs/security.md).

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string_view>

#include "seedrl/security/sha256.hpp"

namespace seedrl::security {

/// An incremental HMAC-SHA256: construct with the key, update() with the message in any number
/// of pieces, then finish(). The object keeps libcrypto's keyed state (wiped when freed), not
/// the key itself; a copy computes MACs under the same key. Members throw std::bad_alloc or
/// std::runtime_error when libcrypto cannot allocate its state.
class hmac_sha256 {
 public:
  /// Bytes in a MAC.
  static constexpr std::size_t digest_size = sha256::digest_size;
  /// A finished MAC.
  using digest = sha256::digest;

  /// Keys of any length work: longer than 64 bytes are hashed first, as RFC 2104 says.
  explicit hmac_sha256(std::span<const std::byte> key) {
    static const std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> hmac(
        EVP_MAC_fetch(nullptr, "HMAC", nullptr), &EVP_MAC_free);
    if (!hmac)
      throw std::runtime_error("seedrl: OpenSSL has no HMAC (EVP_MAC_fetch)");
    keyed_.reset(EVP_MAC_CTX_new(hmac.get()));
    if (!keyed_)
      throw std::bad_alloc();
    char digest_name[] = "SHA256";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
        OSSL_PARAM_construct_end()};
    // A zero-length key is a valid HMAC key; libcrypto wants a non-null pointer for it.
    static const unsigned char no_key = 0;
    const auto* k = key.empty() ? &no_key : reinterpret_cast<const unsigned char*>(key.data());
    detail::openssl_check(EVP_MAC_init(keyed_.get(), k, key.size(), params), "EVP_MAC_init");
    restart();
  }
  hmac_sha256(const hmac_sha256& other)
      : keyed_(dup(other.keyed_.get())), message_(dup(other.message_.get())) {}
  hmac_sha256& operator=(const hmac_sha256& other) {
    if (this != &other) {
      keyed_.reset(dup(other.keyed_.get()));
      message_.reset(dup(other.message_.get()));
    }
    return *this;
  }

  /// Appends `data` to the message.
  hmac_sha256& update(std::span<const std::byte> data) {
    detail::openssl_check(
        EVP_MAC_update(message_.get(), reinterpret_cast<const unsigned char*>(data.data()),
                       data.size()),
        "EVP_MAC_update");
    return *this;
  }

  /// Appends the bytes of `text` (no terminator) to the message.
  hmac_sha256& update(std::string_view text) { return update(detail::text_bytes(text)); }

  /// Returns the MAC of everything updated since construction or the last finish(), and makes
  /// the object ready for the next message under the same key.
  digest finish() {
    digest out{};
    std::size_t size = 0;
    detail::openssl_check(
        EVP_MAC_final(message_.get(), reinterpret_cast<unsigned char*>(out.data()), &size,
                      out.size()),
        "EVP_MAC_final");
    if (size != digest_size)
      throw std::runtime_error("seedrl: OpenSSL's HMAC-SHA256 gave a MAC of " +
                               std::to_string(size) + " bytes");
    restart();
    return out;
  }

  /// The MAC of `message` under `key` in one call.
  static digest mac(std::span<const std::byte> key, std::span<const std::byte> message) {
    hmac_sha256 h(key);
    h.update(message);
    return h.finish();
  }

 private:
  struct free_ctx {
    void operator()(EVP_MAC_CTX* c) const noexcept { EVP_MAC_CTX_free(c); }
  };
  using ctx_ptr = std::unique_ptr<EVP_MAC_CTX, free_ctx>;

  static EVP_MAC_CTX* dup(const EVP_MAC_CTX* c) {
    EVP_MAC_CTX* d = EVP_MAC_CTX_dup(c);
    if (d == nullptr)
      throw std::bad_alloc();
    return d;
  }

  /// The next message starts from the keyed state.
  void restart() { message_.reset(dup(keyed_.get())); }

  ctx_ptr keyed_;    // keyed, nothing hashed: each message starts from a copy of it
  ctx_ptr message_;  // the message in progress
};

/// Whether `a` and `b` hold the same bytes, in time that depends only on their sizes, never
/// on where they differ (CRYPTO_memcmp): comparing a received MAC with memcmp would tell an
/// attacker, by timing, how many leading bytes of a forgery are right. Sizes are not secret (a
/// MAC's size is public), so different sizes return false at once.
inline bool constant_time_equal(std::span<const std::byte> a,
                                std::span<const std::byte> b) noexcept {
  if (a.size() != b.size())
    return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace seedrl::security
