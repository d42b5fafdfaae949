#pragma once
/// \file
/// Which explorer index each of an actor's environments has (epsilon_greedy_sampler's schedule,
/// R2D2): indices are handed out in the order actors first connect, one per environment, and an
/// actor that reconnects under the same name with the same number of environments gets its
/// indices back, so its exploration rate does not change with a reconnect. A second actor
/// connected under a name already in use, or one that comes back with more environments, gets
/// fresh indices.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace seedrl::detail {

/// See the file comment. Not thread-safe: its owner locks.
class explorer_registry {
 public:
  /// The first explorer index of an actor `name` with `num_envs` environments, attached at env
  /// slot `first_slot`; its environments are that index + 0 .. num_envs - 1.
  std::uint32_t attach(std::string_view name, std::size_t num_envs, std::size_t first_slot) {
    std::string key(name);
    for (int copy = 1;; ++copy) {
      const auto it = known_.find(key);
      if (it == known_.end()) {
        const auto base = static_cast<std::uint32_t>(next_);
        next_ += num_envs;
        known_.emplace(key, entry{base, num_envs, true});
        live_[first_slot] = key;
        return base;
      }
      if (!it->second.live && it->second.envs >= num_envs) {
        it->second.live = true;
        live_[first_slot] = key;
        return it->second.base;
      }
      key = std::string(name) + "#" + std::to_string(copy);  // in use: a place of its own
    }
  }

  /// The actor attached at `first_slot` left.
  void detach(std::size_t first_slot) {
    const auto it = live_.find(first_slot);
    if (it == live_.end())
      return;
    known_.at(it->second).live = false;
    live_.erase(it);
  }

 private:
  struct entry {
    std::uint32_t base = 0;
    std::size_t envs = 0;
    bool live = false;
  };
  std::map<std::string, entry, std::less<>> known_;
  std::map<std::size_t, std::string> live_;  // first slot -> key of the actor there
  std::size_t next_ = 0;
};

}  // namespace seedrl::detail
