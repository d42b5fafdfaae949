#pragma once
/// \file
/// The definition of the actor mode's `run_actor` (app/run_actor.hpp): inline in header-only
/// use, in the library's src/app/actor.cpp in compiled use (app/compiled.hpp).

#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/app/link_transport.hpp"
#include "seedrl/app/run_actor.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/distributed/learner_failover.hpp"
#include "seedrl/distributed/rendezvous.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/transport/tcp.hpp"

namespace seedrl::app {

namespace detail {
/// An actor's index without --actor-index: its rank when a launcher started it as one (srun,
/// mpirun), else a hash of the host name (e.g. the pods of a Kubernetes Deployment).
inline std::size_t default_actor_index() {
  const distributed::world_place place = distributed::world_place_from_environment();
  if (place.size > 1)
    return static_cast<std::size_t>(place.rank);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::hash<std::string>{}(host);
}
}  // namespace detail

SEEDRL_APP_API int run_actor(const run_options& o, secret_ptr secret, env_batch_factory make_batch,
                             const std::string& name) {
  actor_config c;
  tcp_transport transport = make_link_transport(o, secret);
  c.auth_secret = std::move(secret);
  c.num_envs = o.envs_per_actor;
  c.seed = o.seed;
  c.actor_id = o.seed;
  c.name = name + ":" + std::to_string(::getpid());
  c.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  std::function<tcp_connection()> connect;
  std::optional<distributed::learner_failover<tcp_transport>> failover;
  if (o.learners.size() > 1) {  // several learner ranks: its home rank, then the next ones
    std::vector<tcp_endpoint> ranks;
    for (const auto& hp : o.learners)
      ranks.push_back({hp.host, hp.port});
    const std::size_t index = o.actor_index ? *o.actor_index : detail::default_actor_index();
    failover.emplace(
        transport, std::move(ranks), index, c.log,
        [](const tcp_endpoint& e) { return e.host + ":" + std::to_string(e.port); }, 3,
        std::chrono::milliseconds(static_cast<std::int64_t>(o.home_rank_wait * 1000.0)));
    c.log("seedrl actor " + c.name + ": actor index " + std::to_string(index) + " of " +
          std::to_string(o.learners.size()) + " learner ranks: rank " +
          std::to_string(failover->current_rank()) + " first");
    connect = std::ref(*failover);
  } else {
    connect = [&transport, endpoint = tcp_endpoint{o.host, o.port}] {
      return transport.connect(endpoint);
    };
  }
  basic_actor<std::function<tcp_connection()>> a(c, std::move(make_batch), std::move(connect));
  try {
    a.run(stop_requested());
  } catch (const actor_rejected& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace seedrl::app
