#pragma once
/// \file
/// The learner's dynamic batcher. Connection threads submit requests of k rows (one row per
/// environment of an actor); the inference thread takes whole batches. A batch is handed over
/// when it holds `max_batch` rows, when `deadline` has passed since its first request, or when
/// every connected environment is waiting in it, so it never stalls with few actors (SEED's
/// fixed-size batches do). A request that does not fit goes whole into the next batch instead
/// of aborting. Rows are reserved under a short lock and filled outside it, and the inference
/// thread is woken once per batch, not per request.
///
/// `Payload` is the caller's preallocated storage for one batch (observations, rewards, ...);
/// the batcher owns `num_buffers` of them and never allocates after construction.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace seedrl {

/// Why a batch was handed to inference; counted for the progress line.
enum class flush_reason : std::uint8_t { full, deadline, all_waiting, shutdown };

/// One request's rows in a batch: rows [first_row, first_row + rows) belong to `requester`.
struct batch_entry {
  void* requester = nullptr;
  std::size_t first_row = 0;
  std::size_t rows = 0;
};

/// Batcher settings.
struct batcher_config {
  std::size_t max_batch = 64;                ///< rows that trigger a flush
  std::chrono::microseconds deadline{2000};  ///< longest wait after a batch's first request
  std::size_t max_request_rows = 256;        ///< largest request; sizes the buffers
  std::size_t num_buffers = 2;               ///< batches in flight: one filling, one in inference
};

/// See the file comment.
template <class Payload>
class dynamic_batcher {
 public:
  using clock = std::chrono::steady_clock;

  /// A batch handed to inference: its payload, its requests and why it was flushed.
  struct batch {
    Payload payload;
    std::vector<batch_entry> entries;
    std::size_t rows = 0;
    std::size_t writers = 0;  // submitters still copying into this batch
    bool sealed = false;      // no more rows may join
    flush_reason reason = flush_reason::full;
    clock::time_point first_request{};
    bool in_inference = false;
    bool answered = false;  // see answered(): its rows no longer wait
  };

  /// `make_payload(capacity_rows)` builds one batch's storage.
  template <class MakePayload>
  dynamic_batcher(const batcher_config& config, MakePayload&& make_payload) : config_(config) {
    if (config.max_batch == 0 || config.num_buffers < 2 || config.max_request_rows == 0) {
      throw std::invalid_argument(
          "seedrl::dynamic_batcher: max_batch and max_request_rows must be positive and "
          "num_buffers at least 2");
    }
    const std::size_t capacity = std::max(config.max_batch, config.max_request_rows);
    buffers_.reserve(config.num_buffers);
    for (std::size_t i = 0; i < config.num_buffers; ++i) {
      buffers_.push_back(
          batch{make_payload(capacity), {}, 0, 0, false, flush_reason::full, {}, false, false});
      buffers_.back().entries.reserve(capacity);
    }
  }

  dynamic_batcher(const dynamic_batcher&) = delete;
  dynamic_batcher& operator=(const dynamic_batcher&) = delete;

  const batcher_config& config() const noexcept { return config_; }

  /// Environments currently connected; "every connected env is waiting" compares with it.
  void add_connected(std::ptrdiff_t delta) {
    std::lock_guard lock(mutex_);
    connected_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(connected_) + delta);
    if (maybe_seal_all_waiting() && buffers_[filling_].writers == 0)
      wake_inference();
  }

  /// Reserves `rows` rows for `requester`, calls `fill(payload, first_row)` outside the lock to
  /// copy the request in, then publishes it. Blocks while every buffer is busy (backpressure).
  /// Returns false, without calling `fill`, once `shutdown()` has been called.
  template <class Fill>
  bool submit(void* requester, std::size_t rows, Fill&& fill) {
    if (rows == 0 || rows > config_.max_request_rows) {
      throw std::invalid_argument("seedrl::dynamic_batcher::submit: a request has " +
                                  std::to_string(rows) + " rows; it must have 1 to " +
                                  std::to_string(config_.max_request_rows));
    }
    batch* b = nullptr;
    std::size_t first = 0;
    {
      std::unique_lock lock(mutex_);
      for (;;) {
        if (shutdown_)
          return false;
        batch& cur = buffers_[filling_];
        if (!cur.in_inference && !cur.sealed) {
          if (cur.rows + rows <= capacity() &&
              (cur.rows == 0 || cur.rows + rows <= config_.max_batch))
            break;
          seal(cur, flush_reason::full);  // the excess goes to the next batch
          if (cur.writers == 0)
            wake_inference();
        }
        // Move on to the next buffer if it is free; otherwise wait for inference to return one.
        batch& next = buffers_[(filling_ + 1) % buffers_.size()];
        if (cur.sealed && !next.in_inference && !next.sealed && next.rows == 0) {
          filling_ = (filling_ + 1) % buffers_.size();
          continue;
        }
        space_.wait(lock);
      }
      b = &buffers_[filling_];
      if (b->rows == 0)
        b->first_request = clock::now();
      first = b->rows;
      b->rows += rows;
      b->entries.push_back({requester, first, rows});
      ++b->writers;
      if (b->rows >= config_.max_batch)
        seal(*b, flush_reason::full);
      maybe_seal_all_waiting();
    }
    fill(b->payload, first);
    {
      std::lock_guard lock(mutex_);
      --b->writers;
      // Wake inference when a sealed batch is complete, or on a batch's first request so that
      // an idle inference thread starts the deadline clock; never once per request otherwise.
      if ((b->sealed && b->writers == 0) || (first == 0 && inference_idle_))
        wake_inference();
    }
    return true;
  }

  /// Waits for the next batch that is sealed (or whose deadline passed) and fully written.
  /// Returns nullptr after `shutdown()` once no batch is left.
  batch* next_batch() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (batch* ready = take_ready())
        return ready;
      batch& b = buffers_[taking_];
      if (shutdown_ && b.rows == 0)
        return nullptr;
      if (!b.in_inference && b.rows > 0 && !b.sealed) {
        ready_.wait_until(lock, b.first_request + config_.deadline);
      } else {
        inference_idle_ = true;
        ready_.wait(lock);
        inference_idle_ = false;
      }
    }
  }

  /// next_batch() without waiting: the next batch if it is ready now (sealed or past its
  /// deadline, and fully written), else nullptr. A pipelined inference loop takes batch k+1
  /// with it while batch k computes, and never makes batch k wait for one.
  batch* try_next_batch() {
    std::lock_guard lock(mutex_);
    return take_ready();
  }

  /// Says that inference has its answers for every request in `b`: from now on its rows no
  /// longer count as waiting, since their actors may step again at once, long before `b` is
  /// released. Without it the first actor back would find every env "waiting" (its own new
  /// request plus the rows being answered) and seal a batch of one request; batches would then
  /// stay split. Call it from the thread that took `b`, once, before writing the first answer.
  /// Fewer waiting rows can only delay the all-waiting rule, never complete it, so no one is
  /// woken here.
  void answered(batch* b) {
    std::lock_guard lock(mutex_);
    b->answered = true;
  }

  /// Gives a batch back after inference has answered every request in it.
  void release(batch* b) {
    {
      std::lock_guard lock(mutex_);
      b->rows = 0;
      b->writers = 0;
      b->sealed = false;
      b->in_inference = false;
      b->answered = false;
      b->entries.clear();
    }
    // After unlocking: woken submitters would otherwise block at once on the mutex we hold.
    space_.notify_all();
  }

  /// Stops accepting requests; `next_batch` drains what was submitted, then returns nullptr.
  void shutdown() {
    std::lock_guard lock(mutex_);
    shutdown_ = true;
    space_.notify_all();
    count_inference_wakeup();
    ready_.notify_all();
  }

  std::size_t capacity() const noexcept {
    return std::max(config_.max_batch, config_.max_request_rows);
  }

  /// How many times the inference thread has been notified so far: every notify on the
  /// condition variable `next_batch` waits on, whether or not it was waiting. The design goal
  /// is at most one per batch; benchmarks divide by batches taken. Readable from any thread.
  std::uint64_t inference_wakeups() const noexcept {
    return inference_wakeups_.load(std::memory_order_relaxed);
  }

 private:
  void seal(batch& b, flush_reason why) {
    if (b.sealed)
      return;
    b.sealed = true;
    b.reason = why;
  }

  // Both run under mutex_: the mutex orders the writers, so a plain load and store suffice and
  // the atomic is only there for lock-free readers of inference_wakeups().
  void count_inference_wakeup() noexcept {
    inference_wakeups_.store(inference_wakeups_.load(std::memory_order_relaxed) + 1,
                             std::memory_order_relaxed);
  }
  void wake_inference() noexcept {
    count_inference_wakeup();
    ready_.notify_one();
  }

  /// Under mutex_: hands over the next batch (batches go in the order they filled) when it is
  /// ready, sealing it first when its deadline has passed or the batcher is shutting down.
  batch* take_ready() {
    batch& b = buffers_[taking_];
    if (b.in_inference || b.rows == 0)
      return nullptr;
    if (!b.sealed && clock::now() >= b.first_request + config_.deadline)
      seal(b, flush_reason::deadline);
    if (!b.sealed && shutdown_)
      seal(b, flush_reason::shutdown);
    if (!b.sealed || b.writers != 0)
      return nullptr;
    b.in_inference = true;
    // Requests must never land in a buffer behind the one inference takes next: if this was
    // the filling buffer, filling moves on with taking.
    if (filling_ == taking_)
      filling_ = (filling_ + 1) % buffers_.size();
    taking_ = (taking_ + 1) % buffers_.size();
    return &b;
  }

  bool maybe_seal_all_waiting() {
    batch& cur = buffers_[filling_];
    if (!cur.sealed && !cur.in_inference && cur.rows > 0 && connected_ > 0 &&
        waiting_rows() >= connected_) {
      seal(cur, flush_reason::all_waiting);
      return true;
    }
    return false;
  }

  /// Rows waiting for an answer: everything submitted and not yet answered (see answered()).
  /// When this covers every connected env, nobody else can add to the filling batch.
  std::size_t waiting_rows() const {
    std::size_t n = 0;
    for (const auto& b : buffers_) {
      if (!b.answered)
        n += b.rows;
    }
    return n;
  }

  batcher_config config_;
  std::vector<batch> buffers_;
  std::size_t filling_ = 0;  // buffer receiving requests
  std::size_t taking_ = 0;   // next buffer to hand to inference
  std::size_t connected_ = 0;
  bool shutdown_ = false;
  bool inference_idle_ = false;  // next_batch waits with no batch started
  std::mutex mutex_;
  std::condition_variable ready_;  // inference waits here
  std::condition_variable space_;  // submitters wait here when every buffer is busy
  std::atomic<std::uint64_t> inference_wakeups_{0};  // see inference_wakeups()
};

}  // namespace seedrl
