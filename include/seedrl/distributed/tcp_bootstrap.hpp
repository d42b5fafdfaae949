#pragma once
/// \file
/// The MASTER_ADDR bootstrap: ranks started without mpirun or srun (a Kubernetes Indexed Job,
/// torchrun-style launchers: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) get rank 0's bytes
/// (the NCCL unique id) over one TCP connection each. Rank 0 listens on MASTER_PORT on every
/// interface and answers once every rank has said hello; a rank connects to
/// MASTER_ADDR:MASTER_PORT, retrying while rank 0 is not up yet. It carries a launch, not
/// training traffic: the collective itself is NCCL's.
///
/// Nothing waits forever: rank 0 gives up after `timeout` naming the ranks that never came, a
/// rank gives up naming the address it could not reach; a hello from another run (a different
/// world size or settings hash), a duplicate rank or a stranger is refused and named. Keep
/// MASTER_PORT inside the cluster (a headless Service, a NetworkPolicy): whoever reaches it
/// before a rank could take that rank's place.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/distributed/rendezvous.hpp"
#include "seedrl/transport/detail/deadline.hpp"
#include "seedrl/transport/tcp.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl::distributed {

/// How the bootstrap waits.
struct tcp_bootstrap_config {
  /// How long rank 0 waits for every rank, and a rank for rank 0.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  /// Pause between a rank's attempts to reach rank 0.
  std::chrono::milliseconds retry{std::chrono::milliseconds(200)};
  /// What every rank must agree on (e.g. the run settings' hash); a hello with another is
  /// refused.
  std::uint64_t settings_hash = 0;
};

namespace detail {

inline constexpr std::array<char, 8> bootstrap_magic = {'s', 'e', 'e', 'd', 'r', 'l', 'B', '1'};

/// A rank's hello: magic, rank, world size, settings hash (little-endian on the hosts we run).
struct bootstrap_hello {
  std::array<char, 8> magic = bootstrap_magic;
  std::uint32_t rank = 0;
  std::uint32_t world = 0;
  std::uint64_t settings_hash = 0;
};
static_assert(sizeof(bootstrap_hello) == 24);

inline std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (const int r : ranks)
    s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

}  // namespace detail

/// Rank 0 serves `payload` (at most 64 KiB) to every other rank and returns it; another rank
/// returns rank 0's. `place` says who is who (world_place_from_environment: RANK, WORLD_SIZE,
/// MASTER_ADDR, MASTER_PORT). `log` gets one line per refused hello. Throws std::runtime_error
/// saying what was missing or refused.
inline std::vector<std::byte> share_from_rank0(
    const world_place& place, std::span<const std::byte> payload, tcp_bootstrap_config config = {},
    const std::function<void(const std::string&)>& log = {}) {
  if (place.size <= 1)
    return {payload.begin(), payload.end()};
  if (place.master_port <= 0 || place.master_port > 65535 || place.master_addr.empty())
    throw std::runtime_error("seedrl: ranks started by " + place.source +
                             " need MASTER_ADDR and MASTER_PORT (rank 0's address and a free "
                             "port) to meet");
  if (payload.size() > 65536)
    throw std::invalid_argument("seedrl: the bootstrap carries at most 64 KiB");
  const auto deadline = std::chrono::steady_clock::now() + config.timeout;
  const auto port = static_cast<std::uint16_t>(place.master_port);
  tcp_transport transport;
  if (place.rank == 0) {
    auto listener = transport.listen({"", port});
    std::map<int, tcp_connection> arrived;
    {
      seedrl::detail::call_at_deadline timer(deadline, [&listener] { listener.close(); });
      while (static_cast<int>(arrived.size()) < place.size - 1) {
        std::optional<tcp_connection> c;
        try {
          c.emplace(listener.accept());
        } catch (const transport_error&) {
          break;  // the deadline closed the listener
        }
        detail::bootstrap_hello h{};
        std::string refused;
        try {
          c->read(std::as_writable_bytes(std::span(&h, 1)));
          if (h.magic != detail::bootstrap_magic)
            refused = "not a seedrl rank";
          else if (h.world != static_cast<std::uint32_t>(place.size))
            refused = "it belongs to a run of " + std::to_string(h.world) + " ranks, not " +
                      std::to_string(place.size);
          else if (h.rank == 0 || h.rank >= h.world)
            refused = "it says it is rank " + std::to_string(h.rank);
          else if (h.settings_hash != config.settings_hash)
            refused = "its settings differ (hash " + std::to_string(h.settings_hash) +
                      ", rank 0's " + std::to_string(config.settings_hash) + ")";
          else if (arrived.count(static_cast<int>(h.rank)) != 0)
            refused = "rank " + std::to_string(h.rank) + " already arrived";
        } catch (const transport_error& e) {
          refused = e.what();
        }
        if (!refused.empty()) {
          if (log)
            log("seedrl bootstrap: refusing " + c->peer() + ": " + refused);
          continue;  // closes it
        }
        arrived.emplace(static_cast<int>(h.rank), std::move(*c));
      }
      timer.cancel();
    }
    if (static_cast<int>(arrived.size()) < place.size - 1) {
      std::vector<int> missing;
      for (int r = 1; r < place.size; ++r)
        if (arrived.count(r) == 0)
          missing.push_back(r);
      throw std::runtime_error("seedrl: rank 0 waited " + std::to_string(config.timeout.count()) +
                               " ms on port " + std::to_string(port) + " and rank(s) " +
                               detail::rank_list(missing) + " of " + std::to_string(place.size) +
                               " never arrived");
    }
    const auto size = static_cast<std::uint32_t>(payload.size());
    for (auto& [rank, c] : arrived) {
      try {
        const std::span<const std::byte> parts[] = {std::as_bytes(std::span(&size, 1)), payload};
        c.write(parts);
      } catch (const transport_error& e) {
        throw std::runtime_error("seedrl: rank " + std::to_string(rank) +
                                 " went away during the bootstrap: " + e.what());
      }
    }
    return {payload.begin(), payload.end()};
  }

  const std::string where = place.master_addr + ":" + std::to_string(port);
  std::string last_error;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      auto c = transport.connect({place.master_addr, port});
      detail::bootstrap_hello h{};
      h.rank = static_cast<std::uint32_t>(place.rank);
      h.world = static_cast<std::uint32_t>(place.size);
      h.settings_hash = config.settings_hash;
      const std::span<const std::byte> parts[] = {std::as_bytes(std::span(&h, 1))};
      c.write(parts);
      std::uint32_t size = 0;
      c.read(std::as_writable_bytes(std::span(&size, 1)));
      if (size > 65536)
        throw std::runtime_error("seedrl: " + where + " is not a seedrl rank 0");
      std::vector<std::byte> got(size);
      c.read(got);
      return got;
    } catch (const transport_error& e) {
      last_error = e.what();  // rank 0 not up yet, or it refused us: try again until the end
    }
    std::this_thread::sleep_for(config.retry);
  }
  throw std::runtime_error("seedrl: rank " + std::to_string(place.rank) +
                           " could not get the "
                           "bootstrap from rank 0 at " +
                           where + " (MASTER_ADDR:MASTER_PORT) " + "within " +
                           std::to_string(config.timeout.count()) + " ms; last: " + last_error);
}

}  // namespace seedrl::distributed
