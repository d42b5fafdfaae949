#pragma once
/// \file
/// A bounded blocking queue: the hand-over from inference to training. A full queue blocks the
/// producer (backpressure on inference, as SEED does with its capacity-1 queue) instead of
/// dropping data; `close` wakes everyone for shutdown.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace seedrl {

/// See the file comment.
template <class T>
class bounded_queue {
 public:
  explicit bounded_queue(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0)
      throw std::invalid_argument("seedrl::bounded_queue: capacity must be positive");
  }

  /// Blocks while full; returns false (dropping nothing: `item` is not taken) once closed.
  bool push(const T& item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_)
      return false;
    items_.push_back(item);
    not_empty_.notify_one();
    return true;
  }

  /// Blocks while empty; nullopt once closed and drained.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty())
      return std::nullopt;
    T item = items_.front();
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::size_t capacity_;
  std::deque<T> items_;
  bool closed_ = false;
  mutable std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
};

}  // namespace seedrl
