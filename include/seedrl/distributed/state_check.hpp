#pragma once
/// \file
/// Data-parallel ranks must hold the same parameters and optimizer state after every step
/// (they apply the same averaged gradient). A bug, a rank restored from another checkpoint or
/// a non-deterministic reduction would let them drift apart silently; so every N steps the
/// learner compares a hash of both across the ranks, and a mismatch stops the run with an
/// error naming the ranks that differ from rank 0.

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/distributed/gradient_reducer.hpp"

namespace seedrl::distributed {

/// FNV-1a over the bytes of `values`: equal arrays give equal hashes on every machine of the same
/// byte order.
template <class T>
std::uint64_t hash_bytes(std::span<const T> values, std::uint64_t h = 14695981039346656037ull) {
  const auto* p = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size_bytes(); ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

/// The ranks whose `hash` differs from rank 0's, gathered over `r` (every rank calls it);
/// empty when all agree.
inline std::vector<int> ranks_differing_from_rank0(gradient_reducer& r, std::uint64_t hash) {
  const std::vector<std::uint64_t> all = r.gather(hash);
  std::vector<int> differ;
  for (std::size_t k = 1; k < all.size(); ++k) {
    if (all[k] != all[0])
      differ.push_back(static_cast<int>(k));
  }
  return differ;
}

/// FNV-1a over the parameters' bytes, then the optimizer's saved state (`save_state()`, the
/// bytes a checkpoint keeps: step count and moment arrays).
template <class S, class Opt>
std::uint64_t training_state_hash(std::span<const S> parameters, const Opt& optimizer) {
  const std::vector<std::byte> state = optimizer.save_state();
  return hash_bytes(std::span<const std::byte>(state), hash_bytes(parameters));
}

/// Gathers `hash` over the ranks (every rank calls it) and throws std::runtime_error, on every
/// rank alike, when some rank's differs from rank 0's; `what` names what was hashed and when
/// ("after training step 500").
inline void require_identical_ranks(gradient_reducer& reducer, std::uint64_t hash,
                                    const std::string& what) {
  const std::vector<int> differ = ranks_differing_from_rank0(reducer, hash);
  if (differ.empty())
    return;
  std::string ranks;
  for (const int r : differ)
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  throw std::runtime_error("seedrl: the learner ranks' parameters and optimizer state differ " +
                           what + ": rank" + (differ.size() > 1 ? "s " : " ") + ranks + " differ" +
                           (differ.size() > 1 ? "" : "s") + " from rank 0 (" + reducer.describe() +
                           ")");
}

}  // namespace seedrl::distributed
