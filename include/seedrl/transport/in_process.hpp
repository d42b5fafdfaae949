#pragma once
/// \file
/// In-process byte streams: actors as threads in the learner's binary (tests, single-machine
/// runs without sockets). A process-wide registry maps endpoint names to listeners; `connect`
/// creates a pair of bounded in-memory pipes and queues one end for `accept`. Bytes are copied
/// into a ring buffer and out again, so a frame's bytes behave exactly as over a socket: a
/// reader sees them in order, may need several wake-ups for a frame larger than the pipe, and
/// sees end of stream once the writer closed and the pipe drained.
///
/// Threading: one thread at a time reads or writes a connection (or accepts on a listener);
/// `close()` may be called from any other thread and makes a blocked call throw
/// `transport_error` with `transport_failure::closed`; destroy it only once no other thread uses
/// it. The registry is per program image: a shared library that includes this header has its
/// own unless it shares the symbol.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "seedrl/transport/transport.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl {

/// Where an in-process learner listens: any name, unique among live listeners in the process.
struct in_process_endpoint {
  /// The channel name, e.g. "learner".
  std::string name;
};

namespace detail {

/// A bounded single-producer single-consumer byte pipe: a ring buffer allocated once, a mutex
/// and two condition variables. Either end can be closed; that wakes whoever waits on the pipe.
class byte_pipe {
 public:
  /// What a read or write ran into instead of finishing.
  enum class status {
    ok,             ///< all bytes moved
    reader_closed,  ///< the reading end is closed: nobody will ever take the bytes
    writer_closed,  ///< the writing end is closed: no more bytes will come
  };

  /// Allocates the ring buffer (`capacity` > 0 bytes).
  explicit byte_pipe(std::size_t capacity) : ring_(capacity) {}

  /// Appends all bytes of all `buffers`, blocking while the pipe is full. Stops early when
  /// either end is closed; the bytes already in the pipe stay readable.
  status write(std::span<const std::span<const std::byte>> buffers) {
    std::unique_lock lock(mutex_);
    for (const auto buffer : buffers) {
      std::size_t done = 0;
      while (done < buffer.size()) {
        writable_.wait(lock,
                       [&] { return size_ < ring_.size() || reader_closed_ || writer_closed_; });
        if (writer_closed_) {
          return status::writer_closed;
        }
        if (reader_closed_) {
          return status::reader_closed;
        }
        const std::size_t n = std::min(buffer.size() - done, ring_.size() - size_);
        copy_in(buffer.subspan(done, n));
        done += n;
        readable_.notify_one();
      }
    }
    return status::ok;
  }

  /// Appends all bytes of all `buffers` when the pipe has room for all of them now, without
  /// waiting; returns false, having written nothing, when it has not (or when either end is
  /// closed). A total larger than the whole pipe is written as `write` does, since it could
  /// never fit at once.
  bool try_write(std::span<const std::span<const std::byte>> buffers) {
    std::size_t total = 0;
    for (const auto buffer : buffers)
      total += buffer.size();
    if (total > ring_.size())
      return write(buffers) == status::ok;
    std::lock_guard lock(mutex_);
    if (reader_closed_ || writer_closed_ || ring_.size() - size_ < total)
      return false;
    for (const auto buffer : buffers)
      copy_in(buffer);
    readable_.notify_one();
    return true;
  }

  /// Bytes written and not yet read.
  std::size_t unread() const {
    std::lock_guard lock(mutex_);
    return size_;
  }

  /// Fills `buffer`, blocking until enough bytes arrived. Returns `writer_closed` when the
  /// writing end closed before enough bytes came (end of stream), `reader_closed` when this end
  /// was closed.
  status read(std::span<std::byte> buffer) {
    std::unique_lock lock(mutex_);
    std::size_t done = 0;
    while (done < buffer.size()) {
      readable_.wait(lock, [&] { return size_ > 0 || reader_closed_ || writer_closed_; });
      if (reader_closed_) {
        return status::reader_closed;
      }
      if (size_ == 0) {
        return status::writer_closed;  // drained and nothing more will come
      }
      const std::size_t n = std::min(buffer.size() - done, size_);
      copy_out(buffer.subspan(done, n));
      done += n;
      writable_.notify_one();
    }
    return status::ok;
  }

  /// No more bytes will be written; the reader drains what is there, then sees end of stream.
  void close_writer() noexcept { close(writer_closed_); }

  /// No more bytes will be read; writes fail and a blocked read returns.
  void close_reader() noexcept { close(reader_closed_); }

 private:
  void close(bool& flag) noexcept {
    {
      std::lock_guard lock(mutex_);
      flag = true;
    }
    readable_.notify_all();
    writable_.notify_all();
  }

  void copy_in(std::span<const std::byte> bytes) noexcept {
    const std::size_t tail = (head_ + size_) % ring_.size();
    const std::size_t first = std::min(bytes.size(), ring_.size() - tail);
    std::memcpy(ring_.data() + tail, bytes.data(), first);
    std::memcpy(ring_.data(), bytes.data() + first, bytes.size() - first);
    size_ += bytes.size();
  }

  void copy_out(std::span<std::byte> bytes) noexcept {
    const std::size_t first = std::min(bytes.size(), ring_.size() - head_);
    std::memcpy(bytes.data(), ring_.data() + head_, first);
    std::memcpy(bytes.data() + first, ring_.data(), bytes.size() - first);
    head_ = (head_ + bytes.size()) % ring_.size();
    size_ -= bytes.size();
  }

  mutable std::mutex mutex_;
  std::condition_variable readable_;
  std::condition_variable writable_;
  std::vector<std::byte> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  bool reader_closed_ = false;
  bool writer_closed_ = false;
};

}  // namespace detail

/// One in-process link: reads from one pipe, writes to the other; models `seedrl::Connection`.
/// `peer()` is "inproc:<name>#<n>" (the n-th link to that listener) on both ends.
class in_process_connection {
 public:
  /// The most buffers one `write` takes, as for the socket transports, so that code written
  /// against this transport runs unchanged over TCP.
  static constexpr std::size_t max_write_buffers = 8;

  /// Joins the two pipe ends; `in_process_transport::connect` calls this.
  in_process_connection(std::shared_ptr<detail::byte_pipe> in,
                        std::shared_ptr<detail::byte_pipe> out, std::string peer)
      : in_(std::move(in)), out_(std::move(out)), open_(true), peer_(std::move(peer)) {}

  /// Takes over the link; `other` is left closed.
  in_process_connection(in_process_connection&& other) noexcept
      : in_(std::move(other.in_)),
        out_(std::move(other.out_)),
        open_(other.open_.exchange(false)),
        peer_(std::move(other.peer_)) {}

  /// Closes this link (the peer sees end of stream) and takes over `other`'s.
  in_process_connection& operator=(in_process_connection&& other) noexcept {
    if (this != &other) {
      close();
      in_ = std::move(other.in_);
      out_ = std::move(other.out_);
      open_.store(other.open_.exchange(false));
      peer_ = std::move(other.peer_);
    }
    return *this;
  }

  in_process_connection(const in_process_connection&) = delete;
  in_process_connection& operator=(const in_process_connection&) = delete;

  /// Closes the link: the peer sees end of stream.
  ~in_process_connection() { close(); }

  /// Copies all `buffers` into the outgoing pipe, blocking while it is full. Throws
  /// `std::invalid_argument` for more than `max_write_buffers` buffers and `transport_error`
  /// when either end is closed.
  void write(std::span<const std::span<const std::byte>> buffers) {
    if (buffers.size() > max_write_buffers) {
      throw std::invalid_argument("seedrl::in_process_connection: write takes at most " +
                                  std::to_string(max_write_buffers) + " buffers, got " +
                                  std::to_string(buffers.size()));
    }
    if (!is_open()) {
      throw_closed("write to");
    }
    const auto result = out_->write(buffers);
    if (result != detail::byte_pipe::status::ok) {
      fail("write to", result == detail::byte_pipe::status::reader_closed);
    }
  }

  /// Copies all `buffers` into the outgoing pipe if it has room for them now; returns false,
  /// having written nothing, when the peer leaves too many bytes unread (or the link is
  /// closed). The learner answers with it from its inference thread, which must never wait for
  /// an actor that does not read. Throws `std::invalid_argument` for more than
  /// `max_write_buffers` buffers.
  bool try_write(std::span<const std::span<const std::byte>> buffers) {
    if (buffers.size() > max_write_buffers) {
      throw std::invalid_argument("seedrl::in_process_connection: write takes at most " +
                                  std::to_string(max_write_buffers) + " buffers, got " +
                                  std::to_string(buffers.size()));
    }
    return is_open() && out_->try_write(buffers);
  }

  /// Bytes written to the peer and not yet read by it.
  std::size_t unread_bytes() const { return out_ ? out_->unread() : 0; }

  /// Fills `buffer` exactly from the incoming pipe. Throws `transport_error` on end of stream
  /// (also mid-buffer) or when this side closed the link.
  void read(std::span<std::byte> buffer) {
    if (!is_open()) {
      throw_closed("read from");
    }
    const auto result = in_->read(buffer);
    if (result != detail::byte_pipe::status::ok) {
      fail("read from", result == detail::byte_pipe::status::writer_closed);
    }
  }

  /// Closes both pipe ends this side holds: the peer reads end of stream after the bytes
  /// already sent, the peer's writes fail, and a read or write blocked here returns.
  void close() noexcept {
    if (open_.exchange(false, std::memory_order_acq_rel)) {
      out_->close_writer();
      in_->close_reader();
    }
  }

  /// False after `close()` or after a read or write failed.
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }

  /// The link's name for logs: "inproc:<name>#<n>".
  const std::string& peer() const noexcept { return peer_; }

 private:
  [[noreturn]] void throw_closed(const char* operation) const {
    throw transport_error("seedrl::in_process_connection: " + std::string(operation) + " " + peer_ +
                              ": the connection was closed on this side",
                          transport_failure::closed);
  }

  // `peer_end` says the pipe reported the peer's end closed; if this side was closed as well
  // (close() from another thread woke the call), that is the cause to report.
  [[noreturn]] void fail(const char* operation, bool peer_end) {
    const bool closed_here = !is_open();
    close();
    if (closed_here || !peer_end) {
      throw_closed(operation);
    }
    throw transport_error("seedrl::in_process_connection: " + std::string(operation) + " " + peer_ +
                              " failed: the peer closed the connection",
                          transport_failure::peer_closed);
  }

  std::shared_ptr<detail::byte_pipe> in_;
  std::shared_ptr<detail::byte_pipe> out_;
  std::atomic<bool> open_;
  std::string peer_;
};

namespace detail {

/// What a listener and the connecting side share: the queue of links not yet accepted.
struct in_process_channel {
  /// For the queue and `open`.
  std::mutex mutex;
  /// Signalled when a link is queued or the listener closes.
  std::condition_variable queued;
  /// Learner ends of links that `accept` has not returned yet.
  std::deque<in_process_connection> pending;
  /// Numbers the links, for `peer()`.
  std::uint64_t next_id = 0;
  /// False once the listener closed: connects are refused.
  bool open = true;
  /// The endpoint name.
  std::string name;
  /// Bytes per pipe of each link.
  std::size_t pipe_capacity = 0;
};

/// The process-wide map from endpoint names to live listeners.
class in_process_registry {
 public:
  /// The one registry. Never destroyed, so that a listener destroyed during static destruction
  /// still finds it.
  static in_process_registry& instance() {
    static auto* registry = new in_process_registry();
    return *registry;
  }

  /// Registers `channel` under its name; false when the name is taken.
  bool add(const std::shared_ptr<in_process_channel>& channel) {
    std::lock_guard lock(mutex_);
    return channels_.emplace(channel->name, channel).second;
  }

  /// The live listener's channel named `name`, or null.
  std::shared_ptr<in_process_channel> find(const std::string& name) const {
    std::lock_guard lock(mutex_);
    const auto it = channels_.find(name);
    return it == channels_.end() ? nullptr : it->second;
  }

  /// Unregisters `channel`, if its name still maps to it.
  void remove(const in_process_channel& channel) {
    std::lock_guard lock(mutex_);
    const auto it = channels_.find(channel.name);
    if (it != channels_.end() && it->second.get() == &channel) {
      channels_.erase(it);
    }
  }

 private:
  in_process_registry() = default;

  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<in_process_channel>> channels_;
};

}  // namespace detail

/// An in-process listener: holds its name in the registry until closed or destroyed.
class in_process_listener {
 public:
  /// Takes a registered channel; `in_process_transport::listen` calls this.
  explicit in_process_listener(std::shared_ptr<detail::in_process_channel> channel)
      : channel_(std::move(channel)), open_(true) {}

  /// Takes over the listener; `other` is left closed.
  in_process_listener(in_process_listener&& other) noexcept
      : channel_(std::move(other.channel_)), open_(other.open_.exchange(false)) {}

  /// Closes this listener and takes over `other`.
  in_process_listener& operator=(in_process_listener&& other) noexcept {
    if (this != &other) {
      close();
      channel_ = std::move(other.channel_);
      open_.store(other.open_.exchange(false));
    }
    return *this;
  }

  in_process_listener(const in_process_listener&) = delete;
  in_process_listener& operator=(const in_process_listener&) = delete;

  /// Closes the listener.
  ~in_process_listener() { close(); }

  /// Blocks until an actor connects and returns the learner end of the link. Throws
  /// `transport_error` (`transport_failure::closed`) once the listener is closed.
  in_process_connection accept() {
    if (!channel_) {
      throw_closed();
    }
    std::unique_lock lock(channel_->mutex);
    channel_->queued.wait(lock, [&] { return !channel_->pending.empty() || !channel_->open; });
    if (!channel_->open) {
      throw_closed();
    }
    in_process_connection connection = std::move(channel_->pending.front());
    channel_->pending.pop_front();
    return connection;
  }

  /// Frees the name, refuses further connects, wakes a blocked `accept` (which throws) and
  /// closes the links not yet accepted (their actors see end of stream). Safe from another
  /// thread.
  void close() noexcept {
    if (!open_.exchange(false, std::memory_order_acq_rel)) {
      return;
    }
    std::deque<in_process_connection> orphans;
    {
      std::lock_guard lock(channel_->mutex);
      channel_->open = false;
      orphans.swap(channel_->pending);
    }
    channel_->queued.notify_all();
    detail::in_process_registry::instance().remove(*channel_);
    // `orphans` closes its links here, outside the lock.
  }

  /// False after `close()`.
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }

  /// Where actors reach this listener.
  in_process_endpoint local_endpoint() const { return {channel_ ? channel_->name : std::string()}; }

 private:
  [[noreturn]] void throw_closed() const {
    throw transport_error("seedrl::in_process_listener: accept on inproc:" +
                              (channel_ ? channel_->name : std::string()) +
                              ": the listener was closed",
                          transport_failure::closed);
  }

  std::shared_ptr<detail::in_process_channel> channel_;
  std::atomic<bool> open_;
};

/// Bounded in-memory pipes between threads of one process; models `seedrl::Transport`.
class in_process_transport {
 public:
  /// A channel name.
  using endpoint_type = in_process_endpoint;
  /// One link.
  using connection_type = in_process_connection;
  /// The learner's end of a channel.
  using listener_type = in_process_listener;

  /// Bytes buffered in each direction of a link unless the listening transport says otherwise.
  static constexpr std::size_t default_pipe_capacity = 256 * 1024;

  /// `pipe_capacity` (> 0) applies to links to listeners made by this transport: a writer
  /// blocks once that many bytes wait unread, as a socket's writer does on a full buffer.
  explicit in_process_transport(std::size_t pipe_capacity = default_pipe_capacity)
      : pipe_capacity_(pipe_capacity) {
    if (pipe_capacity == 0) {
      throw std::invalid_argument("seedrl::in_process_transport: pipe_capacity must be > 0");
    }
  }

  /// Queues a link on the listener named `endpoint.name` and returns the actor's end; does not
  /// wait for `accept`, as a socket connect does not. Throws `transport_error`
  /// (`transport_failure::refused`) naming the endpoint when no listener has that name.
  connection_type connect(const endpoint_type& endpoint) {
    const auto channel = detail::in_process_registry::instance().find(endpoint.name);
    if (channel) {
      std::lock_guard lock(channel->mutex);
      if (channel->open) {
        const std::string peer =
            "inproc:" + channel->name + "#" + std::to_string(channel->next_id++);
        auto to_learner = std::make_shared<detail::byte_pipe>(channel->pipe_capacity);
        auto to_actor = std::make_shared<detail::byte_pipe>(channel->pipe_capacity);
        channel->pending.emplace_back(to_learner, to_actor, peer);
        channel->queued.notify_one();
        return connection_type(std::move(to_actor), std::move(to_learner), peer);
      }
    }
    throw transport_error("seedrl::in_process_transport: cannot connect to inproc:" +
                              endpoint.name + ": no listener has that name",
                          transport_failure::refused);
  }

  /// Registers a listener under `endpoint.name`. Throws `transport_error` when a live listener
  /// already has that name.
  listener_type listen(const endpoint_type& endpoint) {
    auto channel = std::make_shared<detail::in_process_channel>();
    channel->name = endpoint.name;
    channel->pipe_capacity = pipe_capacity_;
    if (!detail::in_process_registry::instance().add(channel)) {
      throw transport_error("seedrl::in_process_transport: cannot listen on inproc:" +
                            endpoint.name + ": another listener has that name");
    }
    return listener_type(std::move(channel));
  }

 private:
  std::size_t pipe_capacity_;
};

static_assert(Connection<in_process_connection>);
static_assert(Transport<in_process_transport>);

}  // namespace seedrl
