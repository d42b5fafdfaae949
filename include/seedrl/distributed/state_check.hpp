#pragma once
/// \file
/// Data-parallel ranks must hold the same parameters and optimizer state after every step
/// (they apply the same averaged gradient). A bug, a rank restored from another checkpoint or
/// a non-deterministic reduction would let them drift apart silently; so every N steps the
/// learner compares a hash of both across the ranks, and a mismatch stops the run with an
/// error naming the ranks that differ from rank 0.

#include <cstddef>
#include <cstdint>
#include <cstdio>
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

/// A hash as 16 hexadecimal digits, for messages.
inline std::string hash_text(std::uint64_t h) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

/// Gathers `hash` over the ranks (every rank calls it) and throws std::runtime_error, on every
/// rank alike, when some rank's differs from rank 0's, printing both hashes; `subject` names
/// what was hashed ("configuration"), `when` when ("after training step 500").
inline void require_same_on_all_ranks(gradient_reducer& reducer, std::uint64_t hash,
                                      const std::string& subject, const std::string& when) {
  const std::vector<std::uint64_t> all = reducer.gather(hash);
  std::string differ;
  std::size_t count = 0;
  for (std::size_t k = 1; k < all.size(); ++k) {
    if (all[k] == all[0])
      continue;
    differ += (differ.empty() ? "" : ", ") + std::to_string(k) + " (" + hash_text(all[k]) + ")";
    ++count;
  }
  if (count == 0)
    return;
  throw std::runtime_error("seedrl: the learner ranks' " + subject + " differ " + when + ": rank" +
                           (count > 1 ? "s " : " ") + differ +
                           (count > 1 ? " differ" : " differs") + " from rank 0 (" +
                           hash_text(all[0]) + "; " + reducer.describe() + ")");
}

/// require_same_on_all_ranks for training_state_hash: the parameters and optimizer state.
inline void require_identical_ranks(gradient_reducer& reducer, std::uint64_t hash,
                                    const std::string& when) {
  require_same_on_all_ranks(reducer, hash, "parameters and optimizer state", when);
}

}  // namespace seedrl::distributed
