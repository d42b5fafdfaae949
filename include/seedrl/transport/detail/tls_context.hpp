#pragma once
/// \file
/// The OpenSSL side of TLS on the actor link (seedrl/transport/tls_config.hpp): one client and
/// one server `boost::asio::ssl::context` built from a tls_config, TLS 1.3 only, with mutual
/// certificate checks or a pre-shared key; and how a failed handshake is described.

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <array>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "seedrl/security/hmac.hpp"
#include "seedrl/transport/detail/deadline.hpp"
#include "seedrl/transport/tls_config.hpp"

namespace seedrl::detail {

/// Which end of the handshake a link plays: the actor connects (client), the learner accepts.
enum class tls_role { client, server };

/// The PSK identity both ends use, and the label the PSK is derived under: the TLS key is
/// HMAC-SHA256(shared secret, label), never the secret itself, so the challenge-response that
/// may run on top (docs/security.md) and TLS use different keys.
inline constexpr const char* tls_psk_identity = "seedrl";
inline constexpr std::string_view tls_psk_label = "seedrl TLS 1.3 PSK v1";

/// The two OpenSSL contexts of one tls_config. Neither copied nor moved: OpenSSL's PSK callbacks
/// find it through the contexts' ex data (Asio keeps its own callback in the app data). Throws
/// std::invalid_argument naming the file and OpenSSL's reason when a file is missing, unreadable or
/// not PEM, when the key does not match the certificate, or when the config names neither or both
/// ways.
class tls_context {
 public:
  explicit tls_context(tls_config config)
      : config_(std::move(config)),
        client_(boost::asio::ssl::context::tls_client),
        server_(boost::asio::ssl::context::tls_server) {
    const bool certs = config_.uses_certificates();
    if (certs == config_.uses_psk()) {
      throw std::invalid_argument(
          certs ? "seedrl: TLS takes certificate files or a pre-shared key, not both"
                : "seedrl: TLS needs certificate files (certificate, key and CA) or a "
                  "pre-shared key");
    }
    if (certs) {
      for (const auto& [file, what] : {std::pair{&config_.certificate_file, "certificate"},
                                       std::pair{&config_.private_key_file, "private key"},
                                       std::pair{&config_.ca_file, "CA certificates"}}) {
        if (file->empty())
          throw std::invalid_argument(std::string("seedrl: TLS with certificates needs the ") +
                                      what + " file too (certificate, key and CA)");
        if (!std::ifstream(*file))
          throw std::invalid_argument(std::string("seedrl: cannot read the TLS ") + what +
                                      " file " + *file + ": " + std::strerror(errno));
      }
    } else {
      const auto key = security::hmac_sha256::mac(
          config_.psk_secret->bytes(),
          std::as_bytes(std::span(tls_psk_label.data(), tls_psk_label.size())));
      static_assert(sizeof key == sizeof psk_);
      std::memcpy(psk_.data(), key.data(), psk_.size());
    }
    setup(client_, tls_role::client);
    setup(server_, tls_role::server);
  }
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;
  ~tls_context() { OPENSSL_cleanse(psk_.data(), psk_.size()); }

  /// The context for links of `role`.
  boost::asio::ssl::context& context(tls_role role) noexcept {
    return role == tls_role::client ? client_ : server_;
  }

  /// What it was built from.
  const tls_config& config() const noexcept { return config_; }

 private:
  void setup(boost::asio::ssl::context& c, tls_role role) {
    SSL_CTX* ctx = c.native_handle();
    // TLS 1.3 only: its handshake always has forward secrecy and encrypts the certificates.
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1)
      throw std::invalid_argument("seedrl: this OpenSSL cannot do TLS 1.3");
    // AES-128-GCM first: with AES-NI the cheapest per record of TLS 1.3's suites (OpenSSL's
    // default order puts AES-256 first, and ChaCha20 first for a SHA-256 PSK).
    if (SSL_CTX_set_ciphersuites(ctx,
                                 "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                                 "TLS_CHACHA20_POLY1305_SHA256") != 1)
      throw std::invalid_argument("seedrl: this OpenSSL lacks TLS 1.3's AES-GCM suites");
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_set_ex_data(ctx, ex_index(), this) != 1)
      throw std::bad_alloc();
    namespace ssl = boost::asio::ssl;
    if (config_.uses_psk()) {
      // No certificates: the PSK authenticates both ends (psk_dhe_ke keeps forward secrecy).
      c.set_verify_mode(ssl::verify_none);
      if (role == tls_role::client)
        SSL_CTX_set_psk_client_callback(ctx, &psk_client);
      else
        SSL_CTX_set_psk_server_callback(ctx, &psk_server);
      return;
    }
    boost::system::error_code ec;
    c.use_certificate_chain_file(config_.certificate_file, ec);
    check(ec, "certificate", config_.certificate_file);
    c.use_private_key_file(config_.private_key_file, ssl::context::pem, ec);
    check(ec, "private key",
          config_.private_key_file + " (for the certificate " + config_.certificate_file + ")");
    if (SSL_CTX_check_private_key(ctx) != 1) {
      ERR_clear_error();
      throw std::invalid_argument("seedrl: the TLS private key " + config_.private_key_file +
                                  " does not belong to the certificate " +
                                  config_.certificate_file);
    }
    c.load_verify_file(config_.ca_file, ec);
    check(ec, "CA certificates", config_.ca_file);
    // Both ends present a certificate and check the other's: an actor without one signed by
    // the CA never reaches the protocol.
    c.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }

  static void check(const boost::system::error_code& ec, const char* what,
                    const std::string& file) {
    if (ec) {
      ERR_clear_error();
      throw std::invalid_argument(std::string("seedrl: cannot use the TLS ") + what + " file " +
                                  file + ": " + ec.message());
    }
  }

  static int ex_index() {
    static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    if (index < 0)
      throw std::bad_alloc();
    return index;
  }

  static tls_context* self(SSL* ssl) {
    return static_cast<tls_context*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ex_index()));
  }

  static unsigned psk_client(SSL* ssl, const char*, char* identity, unsigned max_identity,
                             unsigned char* psk, unsigned max_psk) {
    tls_context* t = self(ssl);
    const std::size_t id_size = std::strlen(tls_psk_identity);
    if (t == nullptr || max_identity <= id_size || max_psk < t->psk_.size())
      return 0;
    std::memcpy(identity, tls_psk_identity, id_size + 1);
    std::memcpy(psk, t->psk_.data(), t->psk_.size());
    return static_cast<unsigned>(t->psk_.size());
  }

  static unsigned psk_server(SSL* ssl, const char* identity, unsigned char* psk, unsigned max_psk) {
    tls_context* t = self(ssl);
    if (t == nullptr || identity == nullptr || std::strcmp(identity, tls_psk_identity) != 0 ||
        max_psk < t->psk_.size())
      return 0;  // the handshake fails: not one of ours
    std::memcpy(psk, t->psk_.data(), t->psk_.size());
    return static_cast<unsigned>(t->psk_.size());
  }

  tls_config config_;
  std::array<unsigned char, security::hmac_sha256::digest_size> psk_{};
  boost::asio::ssl::context client_;
  boost::asio::ssl::context server_;
};

/// Why a handshake failed, for a message: OpenSSL's reason and, when certificate checking
/// failed, the check's own reason ("unable to get local issuer certificate", "hostname
/// mismatch").
inline std::string describe_tls_failure(const boost::system::error_code& ec, SSL* ssl) {
  std::string why = ec.message();
  if (ssl != nullptr) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK)
      why += std::string(": ") + X509_verify_cert_error_string(verify);
  }
  ERR_clear_error();  // this thread's queue: the next operation starts clean
  return why;
}

}  // namespace seedrl::detail
