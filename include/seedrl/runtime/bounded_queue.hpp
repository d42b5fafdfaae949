#pragma once
/// \file
/// A bounded blocking queue: the hand-over from inference to training. A full queue blocks the
/// producer (backpressure on inference, as SEED does with its capacity-1 queue) instead of
/// dropping data; `close` wakes everyone for shutdown. The items live in a ring allocated
/// once, so pushing and popping never touch the heap (a std::deque would, block by block).

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

namespace seedrl {

/// See the file comment. `T` must be default-constructible and copyable (the learner passes
/// pointers).
template <class T>
class bounded_queue {
 public:
  explicit bounded_queue(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0)
      throw std::invalid_argument("seedrl::bounded_queue: capacity must be positive");
    ring_.resize(capacity);
  }

  /// Blocks while full; returns false (dropping nothing: `item` is not taken) once closed.
  bool push(const T& item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || count_ < capacity_; });
    if (closed_)
      return false;
    ring_[(head_ + count_) % capacity_] = item;
    ++count_;
    not_empty_.notify_one();
    return true;
  }

  /// Blocks while empty; nullopt once closed and drained.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || count_ > 0; });
    if (count_ == 0)
      return std::nullopt;
    T item = ring_[head_];
    head_ = (head_ + 1) % capacity_;
    --count_;
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
    return count_;
  }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::size_t capacity_;
  std::vector<T> ring_;  // capacity_ slots; the items are [head_, head_ + count_) mod capacity_
  std::size_t head_ = 0, count_ = 0;
  bool closed_ = false;
  mutable std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
};

}  // namespace seedrl
