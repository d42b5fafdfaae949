#pragma once
/// \file
/// `learner_failover`: how an actor reaches one of several learner ranks (`--learner
/// A,B,...`). It connects to its home rank (distributed/actor_placement.hpp: actor i to rank
/// i mod K); when that rank cannot be reached `tries_per_learner` times in a row (a rank that
/// died), it moves on to the next rank in learner_order, and so on around the list. Before its
/// first connection (actors often start before their learners) it gives each rank
/// `first_contact_wait` from its first failure there instead, so that actors started early
/// still spread by index. The actor's own loop (runtime/actor.hpp) keeps its backoff between
/// attempts, and starts its environments under new run ids on every connection, so the rank it
/// reaches sees it as a new actor. Use it as the actor's Connect:
///
///   seedrl::distributed::learner_failover<seedrl::tcp_transport> connect(transport, addresses,
///                                                                       actor_index, log);
///   seedrl::basic_actor<std::function<seedrl::tcp_connection()>> a(config, batches,
///                                                                  std::ref(connect));

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/distributed/actor_placement.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl::distributed {

/// See the file comment. `Transport` models seedrl::Transport.
template <class Transport>
class learner_failover {
 public:
  using endpoint_type = typename Transport::endpoint_type;
  using connection_type = typename Transport::connection_type;

  /// `learners` are the ranks' addresses in rank order; `describe(endpoint)` names one for the
  /// log. Throws std::invalid_argument on an empty list or `tries_per_learner` 0.
  learner_failover(Transport& transport, std::vector<endpoint_type> learners,
                   std::size_t actor_index, std::function<void(const std::string&)> log,
                   std::function<std::string(const endpoint_type&)> describe,
                   int tries_per_learner = 3,
                   std::chrono::milliseconds first_contact_wait = std::chrono::seconds(30))
      : transport_(transport),
        learners_(std::move(learners)),
        order_(learner_order(actor_index, learners_.size())),
        log_(std::move(log)),
        describe_(std::move(describe)),
        tries_(tries_per_learner),
        first_contact_wait_(first_contact_wait) {
    if (tries_ <= 0)
      throw std::invalid_argument("seedrl::learner_failover: tries_per_learner must be positive");
  }

  /// Connects to the current rank; on failure counts it, moves on after tries_per_learner
  /// failures in a row, and rethrows (the actor backs off and calls again).
  connection_type operator()() {
    const endpoint_type& at = learners_[order_[position_]];
    try {
      connection_type c = transport_.connect(at);
      failures_ = 0;
      connected_once_ = true;
      return c;
    } catch (const transport_error&) {
      const auto now = std::chrono::steady_clock::now();
      if (failures_++ == 0)
        first_failure_ = now;
      const bool give_up =
          connected_once_ ? failures_ >= tries_ : now - first_failure_ >= first_contact_wait_;
      if (give_up && learners_.size() > 1) {
        const std::size_t lost = order_[position_];
        failures_ = 0;
        position_ = (position_ + 1) % order_.size();
        const std::size_t next = order_[position_];
        if (log_) {
          log_("seedrl actor: learner rank " + std::to_string(lost) + " at " + describe_(at) +
               " is unreachable; moving to rank " + std::to_string(next) + " at " +
               describe_(learners_[next]));
        }
      }
      throw;
    }
  }

  /// The rank the next attempt goes to.
  std::size_t current_rank() const noexcept { return order_[position_]; }

 private:
  Transport& transport_;
  std::vector<endpoint_type> learners_;
  std::vector<std::size_t> order_;
  std::function<void(const std::string&)> log_;
  std::function<std::string(const endpoint_type&)> describe_;
  int tries_;
  std::chrono::milliseconds first_contact_wait_;
  std::size_t position_ = 0;                             // into order_
  int failures_ = 0;                                     // in a row, at the current rank
  std::chrono::steady_clock::time_point first_failure_;  // of those
  bool connected_once_ = false;
};

}  // namespace seedrl::distributed
