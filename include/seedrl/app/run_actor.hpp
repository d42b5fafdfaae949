#pragma once
/// \file
/// Actor mode: one process that steps `--envs-per-actor` environments and talks to the learner
/// at `--learner` over TCP, reconnecting with backoff, until SIGINT/SIGTERM (exit 0) or the
/// learner refuses it (exit 1, e.g. a wrong secret).

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>

#include "seedrl/app/auth.hpp"
#include "seedrl/app/run_options.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/transport/tcp.hpp"

namespace seedrl::app {

/// Runs the actor; `make_env(i)` builds environment `i` of this process. `name` prefixes the
/// actor's name in the learner's log (the pid is appended).
template <class Env>
int run_actor(const run_options& o, secret_ptr secret, std::function<Env(std::size_t)> make_env,
              const std::string& name) {
  actor_config c;
  c.auth_secret = std::move(secret);
  c.num_envs = o.envs_per_actor;
  c.seed = o.seed;
  c.actor_id = o.seed;
  c.name = name + ":" + std::to_string(::getpid());
  c.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  tcp_transport transport;
  const tcp_endpoint endpoint{o.host, o.port};
  actor<Env, std::function<tcp_connection()>> a(c, std::move(make_env),
                                                [&] { return transport.connect(endpoint); });
  try {
    a.run(stop_requested());
  } catch (const actor_rejected& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace seedrl::app
