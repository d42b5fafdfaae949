#pragma once
/// \file
/// The definition of the actor mode's `run_actor` (app/run_actor.hpp): inline in header-only
/// use, in the library's src/app/actor.cpp in compiled use (app/compiled.hpp).

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <utility>

#include "seedrl/app/run_actor.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/transport/tcp.hpp"

namespace seedrl::app {

SEEDRL_APP_API int run_actor(const run_options& o, secret_ptr secret, env_batch_factory make_batch,
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
  basic_actor<std::function<tcp_connection()>> a(c, std::move(make_batch),
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
