#pragma once
/// \file
/// Publication of trained parameters to inference. The trainer publishes a complete, immutable
/// copy; inference takes the newest one between batches. A reader holds a shared pointer to a
/// snapshot that is never written again, so it cannot see half of an update.

#include <concepts>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace seedrl {

/// See the file comment.
template <std::floating_point S>
class parameter_store {
 public:
  using snapshot = std::shared_ptr<const std::vector<S>>;

  /// Publishes a copy of `params` as the next version.
  void publish(std::span<const S> params) {
    auto next = std::make_shared<const std::vector<S>>(params.begin(), params.end());
    std::lock_guard lock(mutex_);
    latest_ = std::move(next);
    ++version_;
  }

  /// Copies the newest parameters into `out` when they are newer than `*have_version`.
  /// Returns true when it copied.
  bool update_if_newer(std::uint64_t* have_version, std::span<S> out) const {
    snapshot s;
    std::uint64_t v = 0;
    {
      std::lock_guard lock(mutex_);
      if (version_ == *have_version || !latest_)
        return false;
      s = latest_;
      v = version_;
    }
    std::copy(s->begin(), s->end(), out.begin());  // outside the lock: the snapshot is immutable
    *have_version = v;
    return true;
  }

  std::uint64_t version() const {
    std::lock_guard lock(mutex_);
    return version_;
  }

 private:
  mutable std::mutex mutex_;
  snapshot latest_;
  std::uint64_t version_ = 0;
};

}  // namespace seedrl
