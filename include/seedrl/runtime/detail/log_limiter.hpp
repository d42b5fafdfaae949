#pragma once
/// \file
/// `log_limiter`: lets one log line per key (a peer's address) through per interval, and counts
/// the ones it holds back, so that a peer retrying a failed authentication every few
/// milliseconds (a misconfigured actor, or someone guessing) costs the log one line a minute,
/// not one per attempt. Thread-safe: the actor server's I/O threads share one. Its memory is
/// bounded: past `max_keys` addresses it forgets those whose interval has passed, and if that
/// is not enough, all of them (a flood from many addresses then logs a little more, never
/// grows without bound).

#include <chrono>
#include <cstddef>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace seedrl::detail {

/// See the file comment.
class log_limiter {
 public:
  using clock = std::chrono::steady_clock;

  explicit log_limiter(clock::duration interval = std::chrono::minutes(1),
                       std::size_t max_keys = 4096)
      : interval_(interval), max_keys_(max_keys) {}

  /// Whether to log a line about `key` now: the count of lines about it held back since its
  /// last logged one (0 for none), or nullopt to hold this one back too.
  std::optional<std::size_t> admit(std::string_view key, clock::time_point now = clock::now()) {
    std::lock_guard lock(mutex_);
    auto it = keys_.find(std::string(key));
    if (it != keys_.end() && now - it->second.logged < interval_) {
      ++it->second.held_back;
      return std::nullopt;
    }
    if (it == keys_.end()) {
      if (keys_.size() >= max_keys_)
        forget_expired(now);
      it = keys_.emplace(std::string(key), entry{}).first;
    }
    const std::size_t held = it->second.held_back;
    it->second = {now, 0};
    return held;
  }

  /// The address part of a peer name ("10.0.0.7:51234" -> "10.0.0.7", "[::1]:9000" ->
  /// "[::1]", "unix:/run/l.sock#12" -> "unix:/run/l.sock"): a retrying peer comes from a new
  /// port, or is a new numbered link, every time.
  static std::string_view address_of(std::string_view peer) {
    if (const auto hash = peer.rfind('#'); hash != std::string_view::npos &&
                                           hash + 1 < peer.size() &&
                                           all_digits(peer.substr(hash + 1)))
      return peer.substr(0, hash);
    const auto colon = peer.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == peer.size())
      return peer;
    if (!all_digits(peer.substr(colon + 1)))
      return peer;
    // A bare IPv6 address without brackets has more colons and no port to strip.
    if (peer.find(':') != colon && peer.front() != '[')
      return peer;
    return peer.substr(0, colon);
  }

 private:
  static bool all_digits(std::string_view s) {
    for (const char c : s)
      if (c < '0' || c > '9')
        return false;
    return !s.empty();
  }

  struct entry {
    clock::time_point logged{};
    std::size_t held_back = 0;
  };

  void forget_expired(clock::time_point now) {
    for (auto it = keys_.begin(); it != keys_.end();)
      it = now - it->second.logged >= interval_ ? keys_.erase(it) : std::next(it);
    if (keys_.size() >= max_keys_)
      keys_.clear();
  }

  clock::duration interval_;
  std::size_t max_keys_;
  std::mutex mutex_;
  std::unordered_map<std::string, entry> keys_;
};

}  // namespace seedrl::detail
