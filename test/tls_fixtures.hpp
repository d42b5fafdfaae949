#pragma once
// The TLS test certificates (test/fixtures/tls, made by its make.sh) and a TCP transport that
// runs TLS with them, for the transport and learner tests.

#include <string>

#include "seedrl/transport/tcp.hpp"
#include "seedrl/transport/tls_config.hpp"

namespace seedrl::test {

// `name`.pem and `name`.key, trusting `ca`.pem.
inline tls_config tls_fixture(const std::string& name, const std::string& ca = "ca") {
  const std::string dir = std::string(SEEDRL_TEST_FIXTURES) + "/tls/";
  tls_config c;
  c.certificate_file = dir + name + ".pem";
  c.private_key_file = dir + name + ".key";
  c.ca_file = dir + ca + ".pem";
  return c;
}

// TCP with TLS from the fixtures: the learner's certificate names 127.0.0.1, so one transport
// serves both ends.
struct tls_tcp_transport : tcp_transport {
  tls_tcp_transport() : tcp_transport(tls_fixture("learner")) {}
};

}  // namespace seedrl::test
