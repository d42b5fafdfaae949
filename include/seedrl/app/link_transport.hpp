#pragma once
/// \file
/// The TCP transport a program's actor links run on: plain, or TLS 1.3 when the --tls-* flags
/// ask for it (docs/security.md). With --tls-psk the TLS key is derived from the link's shared
/// secret (app/auth.hpp), which must then be there.

#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/app/auth.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/transport/tcp.hpp"
#include "seedrl/transport/tls_config.hpp"

namespace seedrl::app {

/// The TLS settings the flags name (neither way set: a plain link).
inline tls_config tls_from_flags(const run_options& o, const secret_ptr& secret) {
  tls_config c;
  c.certificate_file = o.tls_cert;
  c.private_key_file = o.tls_key;
  c.ca_file = o.tls_ca;
  c.server_name = o.tls_server_name;
  if (o.tls_psk) {
    if (!secret)
      throw std::invalid_argument(
          "--tls-psk derives the TLS key from the link's shared secret: set SEEDRL_AUTH_SECRET "
          "or --auth-secret-file");
    c.psk_secret = secret;
  }
  return c;
}

/// The transport for the flags: TLS when --tls-cert or --tls-psk is given. Throws
/// std::invalid_argument naming a file that cannot be used.
inline tcp_transport make_link_transport(const run_options& o, const secret_ptr& secret) {
  tls_config c = tls_from_flags(o, secret);
  if (!c.uses_certificates() && !c.uses_psk())
    return tcp_transport();
  return tcp_transport(std::move(c));
}

/// The --tls-* flags as given, for an actor process this program starts.
inline std::vector<std::string> tls_flags(const run_options& o) {
  std::vector<std::string> args;
  for (const auto& [flag, value] :
       {std::pair{"--tls-cert", &o.tls_cert}, std::pair{"--tls-key", &o.tls_key},
        std::pair{"--tls-ca", &o.tls_ca}, std::pair{"--tls-server-name", &o.tls_server_name}}) {
    if (!value->empty())
      args.insert(args.end(), {flag, *value});
  }
  if (o.tls_psk)
    args.emplace_back("--tls-psk");
  return args;
}

}  // namespace seedrl::app
