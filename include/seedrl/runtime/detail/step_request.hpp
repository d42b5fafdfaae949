#pragma once
/// \file
/// The hand-over from the actor server to the inference loop: a validated step (step_request)
/// and the actor it came from as the inference thread sees it (requester). The server derives
/// its connections from requester; the inference loop answers through it without knowing the
/// transport.
///
/// One request in flight per actor (docs/protocol.md): the connection's reader marks a step as
/// awaiting its actions before it submits it, and the inference thread clears the mark (with
/// release order, after reading `received`) before it writes the actions, so the actor's next
/// step, legal as soon as it has read them, never races with this one.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <utility>

#include "seedrl/protocol/frame.hpp"

namespace seedrl::detail {

/// See the file comment.
class requester {
 public:
  using clock = std::chrono::steady_clock;

  requester() = default;
  requester(const requester&) = delete;
  requester& operator=(const requester&) = delete;

  // --- the connection's reader (its thread, or its strand on the I/O pool)

  /// Marks a step as submitted; call just before handing it to the inference loop, which
  /// publishes both writes (the batcher's lock).
  void begin_request() {
    {
      std::lock_guard lock(mutex_);
      ++in_flight_;
    }
    awaiting_actions_.store(true, std::memory_order_relaxed);
    received_ = clock::now();
  }

  /// Undoes begin_request for a step the inference loop did not take (it is stopping).
  void cancel_request() {
    awaiting_actions_.store(false, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    --in_flight_;
  }

  /// Whether the previous step still awaits its actions: a step arriving now breaks "one
  /// request in flight per actor".
  bool awaiting_actions() const noexcept {
    return awaiting_actions_.load(std::memory_order_acquire);
  }

  /// Waits, after mark_closed(), until inference has answered (or skipped) every request
  /// already submitted, so that no batch refers to this actor afterwards.
  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return in_flight_ == 0; });
  }

  /// The non-blocking wait_idle, for a server whose I/O thread must not wait on inference:
  /// call after mark_closed(). True when no request is in flight (the caller cleans up now);
  /// otherwise false, and became_idle() runs once, on the inference thread, when the last
  /// one is done.
  bool idle_or_notify() {
    std::lock_guard lock(mutex_);
    if (in_flight_ == 0)
      return true;
    notify_idle_ = true;
    return false;
  }

  /// Whether actions should still be written (false once the link is closing).
  bool is_open() const noexcept { return open_.load(); }
  void mark_closed() noexcept { open_ = false; }

  // --- the inference thread

  /// When the step in flight arrived; read before answer(), since the actor's next step
  /// overwrites it.
  clock::time_point received() const noexcept { return received_; }

  /// Clears the mark, then writes `actions` (one per env of this actor) if the link is open.
  void answer(std::span<const std::int32_t> actions) {
    // Release: our read of received_ comes before the reader's next write of it.
    awaiting_actions_.store(false, std::memory_order_release);
    if (open_)
      send_actions(actions);
  }

  /// The continuous-action version of answer: `actions` holds `num_envs` rows of D floats.
  void answer(std::size_t num_envs, std::span<const float> actions) {
    awaiting_actions_.store(false, std::memory_order_release);
    if (open_)
      send_continuous_actions(num_envs, actions);
  }

  /// The request is fully handled (actions written, unrolls appended).
  void request_done() {
    bool call = false;
    {
      std::lock_guard lock(mutex_);
      if (--in_flight_ == 0) {
        if (!open_)
          idle_.notify_all();
        call = std::exchange(notify_idle_, false);
      }
    }
    if (call)
      became_idle();
  }

 protected:
  ~requester() = default;

  /// Writes an actions frame; on failure closes the link (its reader notices and cleans up).
  /// Must not throw.
  virtual void send_actions(std::span<const std::int32_t> actions) noexcept = 0;
  /// Writes a continuous actions frame (`num_envs` rows of D floats); as send_actions.
  virtual void send_continuous_actions(std::size_t num_envs,
                                       std::span<const float> actions) noexcept = 0;
  /// See idle_or_notify(); runs on the inference thread, so it must only hand over, not wait.
  virtual void became_idle() noexcept {}

 private:
  std::atomic<bool> awaiting_actions_{false};
  clock::time_point received_{};
  std::atomic<bool> open_{true};
  std::mutex mutex_;  // in_flight_ and the closing handshake
  std::condition_variable idle_;
  int in_flight_ = 0;
  bool notify_idle_ = false;  // idle_or_notify() asked for became_idle()
};

/// A validated step of one actor: rows [first_slot, first_slot + step.size()) of the env
/// tables, each record's env index relative to first_slot.
struct step_request {
  requester* from = nullptr;
  std::size_t first_slot = 0;
  const protocol::step_view* step = nullptr;
};

}  // namespace seedrl::detail
