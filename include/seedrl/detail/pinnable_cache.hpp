#pragma once
/// \file
/// `detail::pinnable_cache<Key, T>`: objects made at their key's first use and kept for reuse,
/// at most `capacity` unpinned ones: making one more first drops the least recently used
/// unpinned entry. A pinned entry is never dropped; it lives as long as the cache. Pins are for
/// objects whose addresses something else baked in (cuda_backend's cuDNN convolutions and their
/// workspaces, which a captured CUDA graph replays), so they are never taken back, and the
/// pinned entries may outnumber `capacity`. Plain C++; not thread-safe.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace seedrl::detail {

/// See the file comment. `Key` needs ==; `T` is made by the caller's factory and never moves.
template <class Key, class T>
class pinnable_cache {
 public:
  /// Keeps at most `capacity` (> 0) unpinned entries.
  explicit pinnable_cache(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0)
      throw std::invalid_argument("seedrl::detail::pinnable_cache: capacity must be positive");
  }

  /// The entry of `key`, made by `make()` (returning std::unique_ptr<T>) when absent; an
  /// unpinned newcomer first drops the least recently used unpinned entry when `capacity`
  /// unpinned ones are held.
  /// `pin`: the entry is pinned from now on. The reference stays valid until the entry is
  /// dropped (never, once pinned).
  template <class Make>
  T& get(const Key& key, bool pin, Make&& make) {
    ++clock_;
    for (auto& e : entries_) {
      if (e.key == key) {
        e.last_use = clock_;
        e.pinned = e.pinned || pin;
        return *e.value;
      }
    }
    if (!pin && unpinned() >= capacity_)  // a pinned newcomer takes no unpinned room
      drop_least_recent_unpinned();
    // Made after the drop, so that the dropped object's resources are free for the new one.
    std::unique_ptr<T> value = std::forward<Make>(make)();
    entries_.push_back(entry{key, std::move(value), pin, clock_});
    return *entries_.back().value;
  }

  /// Whether `key` has an entry.
  bool contains(const Key& key) const noexcept { return find(key) != nullptr; }
  /// Whether `key` has a pinned entry.
  bool pinned(const Key& key) const noexcept {
    const entry* e = find(key);
    return e != nullptr && e->pinned;
  }
  /// Entries held, pinned or not.
  std::size_t size() const noexcept { return entries_.size(); }
  /// Pinned entries held.
  std::size_t pinned_count() const noexcept { return entries_.size() - unpinned(); }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  struct entry {
    Key key;
    std::unique_ptr<T> value;
    bool pinned = false;
    std::uint64_t last_use = 0;
  };

  const entry* find(const Key& key) const noexcept {
    for (const auto& e : entries_) {
      if (e.key == key)
        return &e;
    }
    return nullptr;
  }

  std::size_t unpinned() const noexcept {
    std::size_t n = 0;
    for (const auto& e : entries_)
      n += e.pinned ? 0 : 1;
    return n;
  }

  void drop_least_recent_unpinned() {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (!it->pinned && (victim == entries_.end() || it->last_use < victim->last_use))
        victim = it;
    }
    if (victim != entries_.end())
      entries_.erase(victim);
  }

  std::size_t capacity_;
  std::uint64_t clock_ = 0;
  std::vector<entry> entries_;
};

}  // namespace seedrl::detail
