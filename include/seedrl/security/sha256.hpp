#pragma once
/// \file
/// SHA-256 (FIPS 180-4), incremental and one-shot, computed by OpenSSL's libcrypto (Debian
/// `libssl-dev`; target OpenSSL::Crypto, which seedrl's CMake target links): the hash under
/// seedrl's HMAC-SHA256 for the authenticated actor link (docs/security.md). The tests check it
/// against the FIPS 180-4 examples and, through HMAC, against RFC 4231.

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace seedrl::security {

namespace detail {

/// Overwrites `bytes` with zeros in a way the optimizer may not drop as a dead store
/// (OPENSSL_cleanse), so that keys and key-derived states do not linger in freed memory.
inline void secure_zero(std::span<std::byte> bytes) noexcept {
  OPENSSL_cleanse(bytes.data(), bytes.size());
}

/// Views text as bytes; the hash and MAC take bytes, callers often hold labels as text.
inline std::span<const std::byte> text_bytes(std::string_view text) noexcept {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

/// Throws for a libcrypto call that failed (only out of memory, for these calls).
inline void openssl_check(int ok, const char* call) {
  if (ok != 1)
    throw std::runtime_error(std::string("seedrl: OpenSSL's ") + call + " failed");
}

}  // namespace detail

/// An incremental SHA-256 hasher: update() with the message in any number of pieces, then
/// finish(). Hashing the pieces gives the same digest as hashing their concatenation at once.
/// A copy continues from the same state. Every member but the destructor throws
/// std::bad_alloc or std::runtime_error when libcrypto cannot allocate its state.
class sha256 {
 public:
  /// Bytes in a digest.
  static constexpr std::size_t digest_size = 32;
  /// Bytes in one compression block.
  static constexpr std::size_t block_size = 64;
  /// A finished hash.
  using digest = std::array<std::byte, digest_size>;

  sha256() : ctx_(make()) { reset(); }
  sha256(const sha256& other) : ctx_(make()) {
    detail::openssl_check(EVP_MD_CTX_copy_ex(ctx_, other.ctx_), "EVP_MD_CTX_copy_ex");
  }
  sha256& operator=(const sha256& other) {
    if (this != &other)
      detail::openssl_check(EVP_MD_CTX_copy_ex(ctx_, other.ctx_), "EVP_MD_CTX_copy_ex");
    return *this;
  }
  /// Frees (and so wipes) the state: for HMAC it is derived from the key.
  ~sha256() { EVP_MD_CTX_free(ctx_); }

  /// Forgets everything hashed so far; the next digest is of what is updated after this.
  void reset() {
    detail::openssl_check(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr), "EVP_DigestInit_ex");
  }

  /// Appends `data` to the message.
  sha256& update(std::span<const std::byte> data) {
    detail::openssl_check(EVP_DigestUpdate(ctx_, data.data(), data.size()), "EVP_DigestUpdate");
    return *this;
  }

  /// Appends the bytes of `text` (no terminator) to the message.
  sha256& update(std::string_view text) { return update(detail::text_bytes(text)); }

  /// Returns the digest of everything updated since construction or reset(), and resets the
  /// hasher so that it can hash the next message.
  digest finish() {
    digest out{};
    unsigned int size = 0;
    detail::openssl_check(
        EVP_DigestFinal_ex(ctx_, reinterpret_cast<unsigned char*>(out.data()), &size),
        "EVP_DigestFinal_ex");
    if (size != digest_size)
      throw std::runtime_error("seedrl: OpenSSL's SHA-256 gave a digest of " +
                               std::to_string(size) + " bytes");
    reset();
    return out;
  }

  /// The digest of `data` in one call.
  static digest hash(std::span<const std::byte> data) {
    sha256 h;
    h.update(data);
    return h.finish();
  }
  /// The digest of the bytes of `text` in one call.
  static digest hash(std::string_view text) { return hash(detail::text_bytes(text)); }

 private:
  static EVP_MD_CTX* make() {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (ctx == nullptr)
      throw std::bad_alloc();
    return ctx;
  }

  EVP_MD_CTX* ctx_;
};

}  // namespace seedrl::security
