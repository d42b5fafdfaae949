#pragma once
/// \file
/// The mutual challenge-response of the authenticated actor link, without sockets: nonces,
/// proofs and the two one-shot state machines. docs/security.md ("Authenticated handshake")
/// is the normative description, with byte layouts and test vectors.
///
/// In short, with K the shared secret, Nl the learner's nonce and Na the actor's:
///
///     actor proof   = HMAC-SHA256(K, "seedrl-auth-v1" || 0x01 || Nl || Na)
///     learner proof = HMAC-SHA256(K, "seedrl-auth-v1" || 0x02 || Nl || Na)
///
/// The actor proves first (so a stranger who connects to the learner learns nothing but a
/// random nonce), then the learner proves, over both nonces. Fresh nonces on both sides make
/// every proof single-use (replay), and the role byte makes a proof of one side useless as a
/// proof of the other (reflection).
///
/// POSIX only (getrandom(2), /dev/urandom), like seedrl's socket transports.

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "seedrl/security/hmac.hpp"
#include "seedrl/security/sha256.hpp"
#include "seedrl/security/shared_secret.hpp"

namespace seedrl::security {

/// Bytes in a nonce: 256 bits, so that two connections never draw the same one.
inline constexpr std::size_t nonce_size = 32;
/// Bytes in a proof (a full, untruncated HMAC-SHA256).
inline constexpr std::size_t proof_size = hmac_sha256::digest_size;
/// A nonce, drawn fresh for each connection from the operating system's CSPRNG.
using auth_nonce = std::array<std::byte, nonce_size>;
/// A proof of knowledge of the shared secret, bound to one connection's two nonces.
using auth_proof = std::array<std::byte, proof_size>;
/// Domain-separation label at the start of every proof's input; a later, different exchange
/// uses a new label so that its MACs can never be taken for these.
inline constexpr std::string_view auth_label = "seedrl-auth-v1";
/// The auth_version field of the auth_request and auth_challenge messages.
inline constexpr std::uint16_t auth_version = 1;

/// Who computes a proof; the byte after the label. Distinct values are what stop a proof from
/// being reflected back to the side that made it.
enum class auth_role : std::uint8_t {
  actor = 0x01,    ///< the actor's proof, checked by the learner
  learner = 0x02,  ///< the learner's proof, checked by the actor
};

/// Fills `out` with bytes from the kernel's CSPRNG: getrandom(2), which blocks only until the
/// pool is first seeded, or /dev/urandom on kernels without it. Never seedrl's
/// random_generator: a predictable nonce lets an attacker precompute or replay proofs. Throws
/// std::system_error when neither source works; there is no weaker fallback.
inline void secure_random_bytes(std::span<std::byte> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ::ssize_t n = ::getrandom(out.data() + done, out.size() - done, 0);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == ENOSYS) {
      break;
    } else {
      throw std::system_error(errno, std::generic_category(), "seedrl: getrandom");
    }
  }
  if (done == out.size())
    return;
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "seedrl: open /dev/urandom");
  while (done < out.size()) {
    const ::ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw std::system_error(err, std::generic_category(), "seedrl: read /dev/urandom");
    }
  }
  ::close(fd);
}

/// A fresh nonce from secure_random_bytes.
inline auth_nonce make_nonce() {
  auth_nonce n{};
  secure_random_bytes(n);
  return n;
}

/// 32 fresh random bytes as 64 hex digits: a shared secret for processes a program starts
/// itself (handed to them through SEEDRL_AUTH_SECRET, never their argv).
inline std::string random_secret_hex() {
  std::array<std::byte, 32> raw{};
  secure_random_bytes(raw);
  std::string hex;
  for (std::byte b : raw) {
    hex += "0123456789abcdef"[std::to_integer<unsigned>(b) >> 4];
    hex += "0123456789abcdef"[std::to_integer<unsigned>(b) & 15];
  }
  return hex;
}

namespace detail {

/// The one place that lays out a proof's input. Takes the keyed MAC by value so that the
/// handshakes can keep the key-derived state instead of the key.
inline auth_proof keyed_proof(hmac_sha256 mac, auth_role role, const auth_nonce& learner_nonce,
                              const auth_nonce& actor_nonce) {
  const std::array<std::byte, 1> role_byte{static_cast<std::byte>(role)};
  mac.update(auth_label).update(role_byte).update(learner_nonce).update(actor_nonce);
  return mac.finish();
}

}  // namespace detail

/// HMAC-SHA256(secret, auth_label || role || learner_nonce || actor_nonce): 79 bytes of fixed
/// layout, so that no two different inputs can run together into the same message. Exposed
/// for test vectors and for implementations in other languages to check against.
inline auth_proof compute_proof(std::span<const std::byte> secret, auth_role role,
                                const auth_nonce& learner_nonce, const auth_nonce& actor_nonce) {
  return detail::keyed_proof(hmac_sha256(secret), role, learner_nonce, actor_nonce);
}

/// The learner's side of one connection's handshake. Construct it when an actor asks to
/// authenticate, send challenge() in auth_challenge, pass the auth_response fields to
/// verify_actor(), and send the proof it returns in auth_confirm; on nullopt, reject with
/// auth_failed. One object per connection, used once.
class learner_handshake {
 public:
  /// Draws a fresh learner nonce. Throws std::system_error when no secure randomness exists.
  explicit learner_handshake(const shared_secret& secret)
      : learner_handshake(secret, make_nonce()) {}

  /// Uses the given nonce: for test vectors only. A reused nonce lets a recorded actor proof
  /// be replayed.
  learner_handshake(const shared_secret& secret, const auth_nonce& learner_nonce)
      : mac_(secret.bytes()), learner_nonce_(learner_nonce) {}

  /// The nonce to send in auth_challenge.
  const auth_nonce& challenge() const noexcept { return learner_nonce_; }

  /// Checks the actor's proof in constant time. Returns the learner's proof to send in
  /// auth_confirm when it is right, nullopt when it is wrong or when the actor echoed the
  /// learner's own nonce (a reflection attempt; no honest actor draws the same 256 bits).
  /// Callers must not tell the actor which check failed. Throws std::logic_error when called
  /// a second time: each challenge answers one response, so a retry is a new connection.
  std::optional<auth_proof> verify_actor(const auth_nonce& actor_nonce,
                                         std::span<const std::byte> actor_proof) {
    if (used_)
      throw std::logic_error("seedrl: learner_handshake::verify_actor called twice");
    used_ = true;
    const auth_proof expected = proof(auth_role::actor, actor_nonce);
    const bool nonces_differ = !constant_time_equal(learner_nonce_, actor_nonce);
    // Both checks run whatever the first one says, so timing does not tell them apart.
    const bool proof_ok = constant_time_equal(expected, actor_proof);
    if (!(nonces_differ && proof_ok))
      return std::nullopt;
    authenticated_ = true;
    return proof(auth_role::learner, actor_nonce);
  }

  /// Whether verify_actor() accepted the actor.
  bool authenticated() const noexcept { return authenticated_; }

 private:
  auth_proof proof(auth_role role, const auth_nonce& actor_nonce) const {
    return detail::keyed_proof(mac_, role, learner_nonce_, actor_nonce);
  }

  hmac_sha256 mac_;  // keyed once; copies of it compute each proof without keeping K
  auth_nonce learner_nonce_;
  bool used_ = false;
  bool authenticated_ = false;
};

/// What the actor sends in auth_response.
struct auth_response {
  auth_nonce actor_nonce;  ///< fresh for this connection
  auth_proof actor_proof;  ///< compute_proof(K, actor, learner_nonce, actor_nonce)
};

/// The actor's side of one connection's handshake. Send auth_request, pass the learner's
/// nonce from auth_challenge to respond() and send its result in auth_response, then pass the
/// proof from auth_confirm to verify_learner(); send hello only when it returns true. One
/// object per connection, used once.
class actor_handshake {
 public:
  explicit actor_handshake(const shared_secret& secret) : mac_(secret.bytes()) {}

  /// Answers the learner's challenge with a fresh actor nonce and the actor's proof. Throws
  /// std::system_error when no secure randomness exists, std::logic_error when called twice.
  auth_response respond(const auth_nonce& learner_nonce) {
    return respond(learner_nonce, make_nonce());
  }

  /// As above with the given actor nonce: for test vectors only. A reused nonce lets a
  /// recorded learner proof be replayed to this actor.
  auth_response respond(const auth_nonce& learner_nonce, const auth_nonce& actor_nonce) {
    if (responded_)
      throw std::logic_error("seedrl: actor_handshake::respond called twice");
    responded_ = true;
    learner_nonce_ = learner_nonce;
    actor_nonce_ = actor_nonce;
    return {actor_nonce_, proof(auth_role::actor)};
  }

  /// Checks the learner's proof in constant time; true means the learner knows the secret and
  /// answered this connection's nonces. A reflected actor proof fails (wrong role byte), as
  /// does a proof recorded on another connection (other actor nonce). Throws
  /// std::logic_error before respond() or when called a second time.
  bool verify_learner(std::span<const std::byte> learner_proof) {
    if (!responded_)
      throw std::logic_error("seedrl: actor_handshake::verify_learner called before respond");
    if (verified_)
      throw std::logic_error("seedrl: actor_handshake::verify_learner called twice");
    verified_ = true;
    authenticated_ = constant_time_equal(proof(auth_role::learner), learner_proof);
    return authenticated_;
  }

  /// Whether verify_learner() accepted the learner.
  bool authenticated() const noexcept { return authenticated_; }

 private:
  auth_proof proof(auth_role role) const {
    return detail::keyed_proof(mac_, role, learner_nonce_, actor_nonce_);
  }

  hmac_sha256 mac_;
  auth_nonce learner_nonce_{};
  auth_nonce actor_nonce_{};
  bool responded_ = false;
  bool verified_ = false;
  bool authenticated_ = false;
};

}  // namespace seedrl::security
