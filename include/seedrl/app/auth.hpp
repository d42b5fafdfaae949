#pragma once
/// \file
/// Where a program's link secret comes from (docs/security.md): --auth-secret-file, else the
/// SEEDRL_AUTH_SECRET environment variable, else, in local mode (and eval mode, which starts
/// actor processes of its own in programs with Python actors) only, a random one that the actor
/// processes inherit through their environment (never their argv). --no-auth: none.

#include <cstdlib>
#include <memory>

#include "seedrl/app/run_options.hpp"
#include "seedrl/security/challenge.hpp"
#include "seedrl/security/shared_secret.hpp"

namespace seedrl::app {

/// A shared secret, or null for an unauthenticated link.
using secret_ptr = std::shared_ptr<const security::shared_secret>;

/// See the file comment. Throws what `shared_secret` throws for a bad file or variable.
inline secret_ptr load_secret(const run_options& o) {
  namespace sec = security;
  if (o.no_auth)
    return nullptr;
  if (!o.auth_secret_file.empty())
    return std::make_shared<const sec::shared_secret>(
        sec::shared_secret::from_file(o.auth_secret_file));
  if (std::getenv(sec::default_secret_env) == nullptr) {
    if (o.mode != run_mode::local && o.mode != run_mode::eval)
      return nullptr;
    ::setenv(sec::default_secret_env, sec::random_secret_hex().c_str(), 1);  // for our actors
  }
  return std::make_shared<const sec::shared_secret>(
      sec::shared_secret::from_env(sec::default_secret_env));
}

}  // namespace seedrl::app
