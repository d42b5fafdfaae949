#pragma once
/// \file
/// `call_at_deadline`: runs an action (close a listener, shut a socket down) at a deadline
/// unless cancelled first, so that a blocking call it would unblock never waits forever. A
/// thread sleeping on a condition variable: meant for rare waits (a handshake, a rendezvous),
/// not for a hot path.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace seedrl::detail {

/// See the file comment.
class call_at_deadline {
 public:
  call_at_deadline(std::chrono::steady_clock::time_point deadline, std::function<void()> action)
      : action_(std::move(action)), thread_([this, deadline] {
          std::unique_lock lock(mutex_);
          if (!wake_.wait_until(lock, deadline, [this] { return done_; })) {
            fired_ = true;
            action_();
          }
        }) {}
  call_at_deadline(const call_at_deadline&) = delete;
  call_at_deadline& operator=(const call_at_deadline&) = delete;
  ~call_at_deadline() { cancel(); }

  /// The wait is over: the action will not run from now on. Returns whether it already ran.
  bool cancel() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable())
      thread_.join();
    return fired_;
  }

 private:
  std::function<void()> action_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

}  // namespace seedrl::detail
