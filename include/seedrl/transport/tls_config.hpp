#pragma once
/// \file
/// What a TCP link needs to run TLS 1.3 (docs/security.md): certificate files, or a pre-shared
/// key. Certificates authenticate both ends (mutual TLS): the learner presents its certificate
/// and requires one from every actor, each checked against `ca_file`; the actor also checks that
/// the learner's certificate names the host it dialled (or `server_name`). A pre-shared key
/// (TLS 1.3 PSK with ephemeral Diffie-Hellman) needs no certificates: both ends derive the TLS
/// key from the link's shared secret, so only holders of the secret complete the handshake.
/// Exactly one of the two ways is set; `tcp_transport(tls_config)` checks the files and says
/// which is missing or unreadable.

#include <chrono>
#include <memory>
#include <string>

#include "seedrl/security/shared_secret.hpp"

namespace seedrl {

/// See the file comment.
struct tls_config {
  /// This end's certificate chain (PEM), the leaf first.
  std::string certificate_file;
  /// The private key of that certificate (PEM); it must match the certificate.
  std::string private_key_file;
  /// The certificate authorities (PEM) that the other end's certificate must chain to.
  std::string ca_file;
  /// The actor's check of the learner's certificate: the name it must carry (DNS name or IP
  /// address in its subjectAltName). Empty: the host the actor connects to.
  std::string server_name;
  /// Instead of certificates: the shared secret both ends derive the TLS 1.3 PSK from.
  std::shared_ptr<const security::shared_secret> psk_secret;
  /// How long a handshake may take before the link is dropped (a peer that connects and then
  /// says nothing must not hold a thread).
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(30)};

  /// Whether certificates are configured (any of the three files named).
  bool uses_certificates() const noexcept {
    return !certificate_file.empty() || !private_key_file.empty() || !ca_file.empty();
  }
  /// Whether a pre-shared key is configured.
  bool uses_psk() const noexcept { return psk_secret != nullptr; }
};

}  // namespace seedrl
