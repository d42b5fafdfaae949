#pragma once
/// \file
/// TCP over Boost.Asio: the actor link between machines. The connection's own calls block (the
/// actor side runs one link per thread); the learner's actor server moves each accepted socket
/// onto its own io_context with `release_to` and serves it asynchronously from there. TCP_NODELAY
/// is set on both ends: a request is one small frame and waiting for Nagle's timer would add tens
/// of milliseconds to every inference round trip.
///
/// `tcp_transport(tls_config)` runs TLS 1.3 on every link it makes (Asio's ssl::stream over
/// OpenSSL), for links that leave the host: the actor's connect() completes the handshake
/// (checking the learner's certificate and name), the learner's side completes it on the I/O
/// pool, or on the first read or write of a blocking connection (`handshake()` forces it). Same
/// types, same calls: the learner's code does not change.
///
/// Threading: one thread at a time reads or writes a connection (or accepts on a listener);
/// `close()` may be called from any other thread and makes a blocked call throw
/// `transport_error` with `transport_failure::closed`; destroy it only once no other thread uses
/// it. POSIX only (`::shutdown`), and Linux for waking a blocked accept.
///
/// The socket code shared with `unix_socket.hpp` lives in `seedrl::detail` below.

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/transport/detail/tls_context.hpp"
#include "seedrl/transport/tls_config.hpp"
#include "seedrl/transport/transport.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl {

namespace detail {

/// The gather list handed to `boost::asio::write`: the buffers live in place, so a write does
/// not allocate (DESIGN.md section 4: nothing on the per-step path allocates).
template <std::size_t N>
class fixed_const_buffers {
 public:
  /// Asio's ConstBufferSequence requirements.
  using value_type = boost::asio::const_buffer;
  /// Iterates over the buffers in order.
  using const_iterator = const boost::asio::const_buffer*;

  /// Copies the views of at most `N` buffers; the caller checks the count.
  explicit fixed_const_buffers(std::span<const std::span<const std::byte>> buffers) noexcept
      : size_(buffers.size()) {
    for (std::size_t i = 0; i < size_; ++i) {
      buffers_[i] = boost::asio::const_buffer(buffers[i].data(), buffers[i].size());
    }
  }

  /// The first buffer.
  const_iterator begin() const noexcept { return buffers_.data(); }
  /// One past the last buffer.
  const_iterator end() const noexcept { return buffers_.data() + size_; }

 private:
  std::array<boost::asio::const_buffer, N> buffers_{};
  std::size_t size_;
};

/// Whether an Asio error means the other end went away rather than something failing here.
inline bool is_peer_gone(const boost::system::error_code& ec) noexcept {
  // A TLS peer that goes without close_notify truncates the stream: the same as end of file.
  return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
         ec == boost::asio::error::broken_pipe || ec == boost::asio::error::connection_aborted ||
         ec == boost::asio::error::not_connected || ec == boost::asio::ssl::error::stream_truncated;
}

/// The learner's I/O threads: one io_context run by `start(n)` threads. Sockets moved onto it
/// (socket_connection::release_to) each live on a strand of it, so one connection's handlers
/// never run at once, whatever the thread count.
class io_pool {
 public:
  io_pool() : work_(io_.get_executor()) {}
  io_pool(const io_pool&) = delete;
  io_pool& operator=(const io_pool&) = delete;
  /// Joins the threads (after drain_until, or they would wait for work forever).
  ~io_pool() { join(); }

  /// Starts `threads` (at least one) threads that run the handlers.
  void start(std::size_t threads) {
    for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i) {
      threads_.emplace_back([this] { io_.run(); });
    }
  }

  /// Whether start() ran.
  bool started() const noexcept { return !threads_.empty(); }

  /// Lets the threads return once no operation is pending and waits for that until `deadline`;
  /// false when operations are still pending then.
  bool drain_until(std::chrono::steady_clock::time_point deadline) {
    work_.reset();
    while (!io_.stopped() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return io_.stopped();
  }

  /// Waits for the threads to return.
  void join() {
    for (auto& t : threads_) {
      t.join();
    }
    threads_.clear();
  }

  /// The io_context the threads run.
  boost::asio::io_context& context() noexcept { return io_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
};

/// Memory for the handlers posted to one connection's strand, so that handing a reply from the
/// inference thread to the I/O side allocates nothing in steady state (DESIGN.md section 4):
/// Asio allocates each posted handler, and a thread outside the pool has no cache of its own. A
/// few fixed slots, taken and given back with atomics from any thread; a larger handler, or
/// one more while all are taken, falls back to the heap.
class handler_slots {
 public:
  /// The largest handler a slot holds, and how many slots there are.
  static constexpr std::size_t slot_size = 512;
  static constexpr std::size_t slot_count = 8;

  /// A free slot for `n` bytes, or the heap's.
  void* allocate(std::size_t n) {
    if (n <= slot_size) {
      for (std::size_t i = 0; i < slot_count; ++i) {
        bool expected = false;
        if (used_[i].compare_exchange_strong(expected, true, std::memory_order_acquire)) {
          return slots_[i].bytes;
        }
      }
    }
    return ::operator new(n);
  }

  /// Gives a slot back, or the memory to the heap.
  void deallocate(void* p) noexcept {
    for (std::size_t i = 0; i < slot_count; ++i) {
      if (p == slots_[i].bytes) {
        used_[i].store(false, std::memory_order_release);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  struct alignas(std::max_align_t) slot {
    std::byte bytes[slot_size];
  };
  std::array<slot, slot_count> slots_{};
  std::array<std::atomic<bool>, slot_count> used_{};
};

/// The allocator Asio sees for a handler posted with `async_socket::post`: the connection's
/// handler_slots, shared so that they outlive whatever Asio still holds.
template <class T>
class slot_allocator {
 public:
  using value_type = T;

  explicit slot_allocator(std::shared_ptr<handler_slots> slots) noexcept
      : slots_(std::move(slots)) {}
  template <class U>
  slot_allocator(const slot_allocator<U>& other) noexcept : slots_(other.slots_) {}

  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t));
    return static_cast<T*>(slots_->allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { slots_->deallocate(p); }

  template <class U>
  bool operator==(const slot_allocator<U>& other) const noexcept {
    return slots_ == other.slots_;
  }
  template <class U>
  bool operator!=(const slot_allocator<U>& other) const noexcept {
    return slots_ != other.slots_;
  }

 private:
  template <class U>
  friend class slot_allocator;
  std::shared_ptr<handler_slots> slots_;
};

/// A handler with its connection's handler memory (Asio finds `get_allocator`): a posted
/// function, or a read or write completion (called with an error code and a byte count).
template <class F>
struct slotted_handler {
  using allocator_type = slot_allocator<void>;
  allocator_type get_allocator() const noexcept { return allocator; }
  template <class... Args>
  void operator()(Args&&... args) {
    f(std::forward<Args>(args)...);
  }

  F f;
  allocator_type allocator;
};

/// Wraps `f` so that Asio allocates what it needs for it from `slots`.
template <class F>
slotted_handler<std::decay_t<F>> with_slots(F&& f, const std::shared_ptr<handler_slots>& slots) {
  return {std::forward<F>(f), slot_allocator<void>(slots)};
}

/// A stream socket of `Protocol` on a strand of an io_pool, for the learner's asynchronous
/// I/O: every handler runs on that strand. Call its members from the strand only, except
/// `post`, which any thread may call.
template <class Protocol>
class async_socket {
 public:
  /// The strand every handler of the socket runs on.
  using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;

  /// The socket, typed on its strand: behind Asio's type-erased executor every operation
  /// would allocate a copy of it.
  using socket_type = typename Protocol::socket::template rebind_executor<strand_type>::other;

  /// Takes a socket whose executor is `strand`; with `tls`, the link runs TLS as its server
  /// end, the handshake first thing in the first read_some().
  async_socket(socket_type socket, strand_type strand, std::shared_ptr<tls_context> tls = {})
      : socket_(std::move(socket)),
        fd_(socket_.native_handle()),
        strand_(std::move(strand)),
        slots_(std::make_shared<handler_slots>()),
        tls_context_(std::move(tls)) {
    if (tls_context_) {
      tls_ =
          std::make_unique<tls_stream>(std::move(socket_), tls_context_->context(tls_role::server));
    }
  }

  /// Runs `f` on the strand; from any thread, without allocating in steady state.
  template <class F>
  void post(F&& f) {
    boost::asio::post(strand_, with_slots(std::forward<F>(f), slots_));
  }

  /// Reads what has arrived (at least one byte) into `into`, then calls `done(io_result)`.
  /// A TLS link's first call runs the handshake first; a failed one ends with `tls_refused`.
  template <class F>
  void read_some(std::span<std::byte> into, F&& done) {
    if (!tls_) {
      socket_.async_read_some(boost::asio::buffer(into.data(), into.size()),
                              completion(std::forward<F>(done)));
    } else if (handshaken_) {
      tls_->async_read_some(boost::asio::buffer(into.data(), into.size()),
                            completion(std::forward<F>(done)));
    } else {
      // `this` outlives the handshake: `done` holds the connection that owns this socket.
      tls_->async_handshake(
          tls_stream::server,
          with_slots(
              [this, into, f = std::forward<F>(done)](const boost::system::error_code& ec) mutable {
                if (ec) {
                  io_result r = result(ec, 0);
                  r.tls_refused = !r.peer_gone;
                  r.error =
                      "TLS handshake failed: " + describe_tls_failure(ec, tls_->native_handle());
                  f(r);
                  return;
                }
                handshaken_ = true;
                read_some(into, std::move(f));
              },
              slots_));
    }
  }

  /// Writes all of `bytes` (which must stay valid until then), then calls `done(io_result)`.
  /// Before a TLS link's handshake has finished nothing can be written: `done` gets !ok.
  template <class F>
  void write(std::span<const std::byte> bytes, F&& done) {
    const auto buffer = boost::asio::buffer(bytes.data(), bytes.size());
    if (!tls_) {
      boost::asio::async_write(socket_, buffer, completion(std::forward<F>(done)));
    } else if (handshaken_) {
      boost::asio::async_write(*tls_, buffer, completion(std::forward<F>(done)));
    } else {
      post([f = std::forward<F>(done)]() mutable {
        f(io_result{0, false, false, "the TLS handshake has not finished"});
      });
    }
  }

  /// Sends what the socket buffer takes at once, without blocking and without the strand: from
  /// any thread, provided the caller's own lock orders it before close() and never beside a
  /// write() under way (the bytes would interleave). Returns the bytes taken (0 when the buffer
  /// is full), or nullopt when the link failed. Lets the learner's inference thread answer an
  /// actor without waking an I/O thread.
  std::optional<std::size_t> send_now(std::span<const std::byte> bytes) noexcept {
    if (tls_)
      return 0;  // TLS records are the strand's to write: the ssl::stream is not thread-safe
    for (;;) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) {
        return static_cast<std::size_t>(n);
      }
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return 0;
      }
      return std::nullopt;
    }
  }

  /// Shuts the link down (the peer sees end of stream) and closes it; pending operations
  /// complete with !ok.
  void close() noexcept {
    boost::system::error_code ec;
    auto& s = tls_ ? tls_->next_layer() : socket_;
    s.shutdown(socket_type::shutdown_both, ec);
    s.close(ec);
  }

 private:
  using tls_stream = boost::asio::ssl::stream<socket_type>;

  static io_result result(const boost::system::error_code& ec, std::size_t n) {
    if (!ec) {
      return {n, true, false, {}};
    }
    return {n, false, is_peer_gone(ec), ec.message()};
  }

  template <class F>
  auto completion(F&& done) {
    return with_slots([f = std::forward<F>(done)](const boost::system::error_code& ec,
                                                  std::size_t n) mutable { f(result(ec, n)); },
                      slots_);
  }

  socket_type socket_;  // plain links; a TLS link's socket is tls_'s next layer
  int fd_;              // for send_now, which must not touch socket_ (the strand's)
  strand_type strand_;
  std::shared_ptr<handler_slots> slots_;
  std::shared_ptr<tls_context> tls_context_;
  std::unique_ptr<tls_stream> tls_;  // on the heap: the socket moves, the TLS state stays put
  bool handshaken_ = false;
};

/// A connected blocking stream socket of `Protocol` (TCP or a Unix stream socket) that models
/// `seedrl::Connection`. It shares ownership of its io_context so that it may outlive the
/// transport that made it (a socket must be destroyed before its io_context).
template <class Protocol>
class socket_connection {
 public:
  /// The Asio socket this connection owns.
  using socket_type = typename Protocol::socket;
  /// TCP or a Unix stream socket.
  using protocol_type = Protocol;

  /// The most buffers one `write` takes; the gather list is kept on the stack.
  static constexpr std::size_t max_write_buffers = 8;

  /// Takes a connected socket. `peer` names the other end in messages; `who` is the class name
  /// that messages start with. With `tls`, the link runs TLS as the `role` end; the caller
  /// runs handshake() (the client) or the first read or write does (the server).
  socket_connection(std::shared_ptr<boost::asio::io_context> io, socket_type socket,
                    std::string peer, const char* who, std::shared_ptr<tls_context> tls = {},
                    tls_role role = tls_role::server)
      : io_(std::move(io)),
        socket_(std::move(socket)),
        fd_(socket_.native_handle()),
        open_(true),
        peer_(std::move(peer)),
        who_(who),
        tls_context_(std::move(tls)),
        role_(role) {
    if (tls_context_)
      tls_ = std::make_unique<tls_stream>(std::move(socket_), tls_context_->context(role));
  }

  /// Takes over the socket; `other` is left closed.
  socket_connection(socket_connection&& other) noexcept
      : io_(std::move(other.io_)),
        socket_(std::move(other.socket_)),
        fd_(std::exchange(other.fd_, -1)),
        open_(other.open_.exchange(false)),
        peer_(std::move(other.peer_)),
        who_(other.who_),
        tls_context_(std::move(other.tls_context_)),
        tls_(std::move(other.tls_)),
        role_(other.role_),
        handshaken_(other.handshaken_) {}

  /// Closes this connection's socket and takes over `other`'s; `other` is left closed.
  socket_connection& operator=(socket_connection&& other) noexcept {
    if (this != &other) {
      // The old socket is destroyed here, before the io_context it may be the last user of.
      tls_ = std::move(other.tls_);
      socket_ = std::move(other.socket_);
      io_ = std::move(other.io_);
      tls_context_ = std::move(other.tls_context_);
      role_ = other.role_;
      handshaken_ = other.handshaken_;
      fd_ = std::exchange(other.fd_, -1);
      open_.store(other.open_.exchange(false));
      peer_ = std::move(other.peer_);
      who_ = other.who_;
    }
    return *this;
  }

  socket_connection(const socket_connection&) = delete;
  socket_connection& operator=(const socket_connection&) = delete;
  /// Closes the socket; the peer sees end of stream.
  ~socket_connection() = default;

  /// Sends all `buffers` in order with one gather write; blocks until the kernel took them.
  /// Throws `std::invalid_argument` for more than `max_write_buffers` buffers and
  /// `transport_error` when the link is closed or broken.
  void write(std::span<const std::span<const std::byte>> buffers) {
    if (buffers.size() > max_write_buffers) {
      throw std::invalid_argument(std::string(who_) + ": write takes at most " +
                                  std::to_string(max_write_buffers) + " buffers, got " +
                                  std::to_string(buffers.size()));
    }
    if (!is_open()) {
      throw_closed("write to");
    }
    boost::system::error_code ec;
    if (!tls_) {
      boost::asio::write(socket_, fixed_const_buffers<max_write_buffers>(buffers), ec);
    } else {
      handshake();
      // One TLS record per buffer would cost a record header and a MAC each, and the peer a
      // decryption each: the frame is gathered into one buffer first (kept, so that steady
      // state does not allocate).
      std::size_t total = 0;
      for (const auto& b : buffers)
        total += b.size();
      gathered_.resize(total);
      std::size_t at = 0;
      for (const auto& b : buffers) {
        if (!b.empty())
          std::memcpy(gathered_.data() + at, b.data(), b.size());
        at += b.size();
      }
      boost::asio::write(*tls_, boost::asio::buffer(gathered_.data(), total), ec);
    }
    if (ec) {
      fail("write to", ec);
    }
  }

  /// Fills `buffer` exactly; blocks until enough bytes arrived. Throws `transport_error` on end
  /// of stream (also mid-buffer), a reset, or when this side closed the connection.
  void read(std::span<std::byte> buffer) {
    if (!is_open()) {
      throw_closed("read from");
    }
    boost::system::error_code ec;
    if (!tls_) {
      boost::asio::read(socket_, boost::asio::buffer(buffer.data(), buffer.size()), ec);
    } else {
      handshake();
      boost::asio::read(*tls_, boost::asio::buffer(buffer.data(), buffer.size()), ec);
    }
    if (ec) {
      fail("read from", ec);
    }
  }

  /// Runs a TLS link's handshake now, if it has not run yet (a no-op on a plain link). The
  /// client checks the server's certificate and name here. Throws `transport_error` naming the
  /// peer and OpenSSL's reason when it fails or takes longer than the tls_config's
  /// handshake_timeout; the link is closed then.
  void handshake() {
    if (!tls_ || handshaken_)
      return;
    if (!is_open())
      throw_closed("handshake with");
    boost::system::error_code ec;
    // A peer that never answers must not hold this thread: the socket is shut down at the
    // deadline, which ends the handshake's blocked read.
    call_at_deadline deadline(
        std::chrono::steady_clock::now() + tls_context_->config().handshake_timeout,
        [fd = fd_] { ::shutdown(fd, SHUT_RDWR); });
    tls_->handshake(role_ == tls_role::client ? tls_stream::client : tls_stream::server, ec);
    const bool timed_out = deadline.cancel();
    if (!ec) {
      handshaken_ = true;
      return;
    }
    const bool closed_here = !is_open();
    const std::string why = describe_tls_failure(ec, tls_->native_handle());
    close();
    if (closed_here)
      throw_closed("handshake with");
    if (timed_out)
      throw transport_error(
          std::string(who_) + ": TLS handshake with " + peer_ + " timed out after " +
          std::to_string(tls_context_->config().handshake_timeout.count()) + " ms");
    throw transport_error(std::string(who_) + ": TLS handshake with " + peer_ + " failed: " + why +
                              (is_peer_gone(ec) ? " (the peer refused the link: does it speak "
                                                  "TLS, and does it accept this certificate?)"
                                                : ""),
                          transport_failure::other);
  }

  /// Whether the link runs TLS.
  bool uses_tls() const noexcept { return tls_ != nullptr; }

  /// The OpenSSL object of a TLS link (null on a plain one), for settings seedrl does not make.
  SSL* native_tls_handle() noexcept { return tls_ ? tls_->native_handle() : nullptr; }

  /// Shuts the link down in both directions: the peer sees end of stream and a read or write
  /// blocked in another thread returns. Only `shutdown` here, because closing the descriptor
  /// while another thread uses it could hit a reused descriptor number; the destructor closes.
  void close() noexcept {
    if (open_.exchange(false, std::memory_order_acq_rel)) {
      ::shutdown(fd_, SHUT_RDWR);  // ENOTCONN when the peer already reset it: nothing to do
    }
  }

  /// False after `close()` or after a read or write failed (a failed link is shut down).
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }

  /// Hands the open socket over to `pool` (the learner's I/O threads), on a strand of its own,
  /// for asynchronous I/O there; this connection is left closed
  /// and keeps only its peer(). The descriptor moves as it is, so nothing the peer sent is lost.
  /// Throws `transport_error` when the link is closed or the socket cannot be moved. Call it
  /// while no other thread uses the connection.
  async_socket<Protocol> release_to(io_pool& pool) {
    if (!is_open()) {
      throw_closed("hand over");
    }
    if (tls_ && (handshaken_ || role_ == tls_role::client)) {
      // The TLS session lives in this connection's ssl::stream; only a server end that has not
      // started its handshake can move (the pool's socket runs the handshake).
      throw transport_error(std::string(who_) + ": cannot hand the TLS link to " + peer_ +
                                " over once its handshake ran",
                            transport_failure::other);
    }
    boost::system::error_code ec;
    auto& socket = tls_ ? tls_->next_layer() : socket_;
    const auto local = socket.local_endpoint(ec);
    if (!ec) {
      const int fd = socket.release(ec);
      if (!ec) {
        open_.store(false, std::memory_order_release);
        fd_ = -1;
        tls_.reset();
        auto strand = boost::asio::make_strand(pool.context());
        typename async_socket<Protocol>::socket_type moved(strand);
        moved.assign(local.protocol(), fd, ec);
        if (!ec) {
          return async_socket<Protocol>(std::move(moved), std::move(strand), tls_context_);
        }
        ::close(fd);
      }
    }
    close();
    throw transport_error(std::string(who_) + ": cannot hand the link to " + peer_ +
                              " over to another io_context: " + ec.message(),
                          transport_failure::other);
  }

  /// The other end, for logs: "127.0.0.1:51234", "unix:/run/learner.sock#3".
  const std::string& peer() const noexcept { return peer_; }

  /// The socket's descriptor, for options seedrl does not set (buffer sizes, priorities).
  int native_handle() const noexcept { return fd_; }

 private:
  [[noreturn]] void throw_closed(const char* operation) const {
    throw transport_error(std::string(who_) + ": " + operation + " " + peer_ +
                              ": the connection was closed on this side",
                          transport_failure::closed);
  }

  [[noreturn]] void fail(const char* operation, const boost::system::error_code& ec) {
    // Read before close(): a close() from another thread is what made the call fail.
    const bool closed_here = !is_open();
    close();
    if (closed_here) {
      throw_closed(operation);
    }
    if (is_peer_gone(ec)) {
      throw transport_error(std::string(who_) + ": " + operation + " " + peer_ +
                                " failed: the peer closed the connection (" + ec.message() + ")",
                            transport_failure::peer_closed);
    }
    // An alert from the peer's TLS: it refused this end (TLS 1.3 checks a client's certificate
    // after the client's handshake returned, so the client hears of it here).
    const bool tls_alert = tls_ && ec.category() == boost::asio::error::get_ssl_category();
    throw transport_error(std::string(who_) + ": " + operation + " " + peer_ + " failed: " +
                              (tls_alert ? "TLS refused: " + describe_tls_failure(ec, nullptr) +
                                               " (does the peer accept this end's certificate "
                                               "or key?)"
                                         : ec.message()),
                          transport_failure::other);
  }

  using tls_stream = boost::asio::ssl::stream<socket_type>;

  std::shared_ptr<boost::asio::io_context> io_;  // declared first: outlives socket_
  socket_type socket_;  // plain links; a TLS link's socket is tls_'s next layer
  int fd_;              // cached: close() from another thread must not touch socket_
  std::atomic<bool> open_;
  std::string peer_;
  const char* who_;
  std::shared_ptr<tls_context> tls_context_;
  std::unique_ptr<tls_stream> tls_;  // on the heap: the connection moves, the TLS state stays
  tls_role role_;
  bool handshaken_ = false;
  std::vector<std::byte> gathered_;  // a TLS write's frame in one piece
};

/// A listening stream socket of `Protocol`; `accept_socket()` blocks for the next client and
/// `close()` unblocks it from another thread.
template <class Protocol>
class socket_listener {
 public:
  /// The Asio acceptor this listener owns.
  using acceptor_type = typename Protocol::acceptor;

  /// Takes a bound, listening acceptor. `where` names the endpoint in messages; `who` is the
  /// class name that messages start with.
  socket_listener(std::shared_ptr<boost::asio::io_context> io, acceptor_type acceptor,
                  std::string where, const char* who)
      : io_(std::move(io)),
        acceptor_(std::move(acceptor)),
        fd_(acceptor_.native_handle()),
        open_(true),
        where_(std::move(where)),
        who_(who) {}

  /// Takes over the acceptor; `other` is left closed.
  socket_listener(socket_listener&& other) noexcept
      : io_(std::move(other.io_)),
        acceptor_(std::move(other.acceptor_)),
        fd_(std::exchange(other.fd_, -1)),
        open_(other.open_.exchange(false)),
        where_(std::move(other.where_)),
        who_(other.who_) {}

  /// Closes this listener's acceptor and takes over `other`'s; `other` is left closed.
  socket_listener& operator=(socket_listener&& other) noexcept {
    if (this != &other) {
      acceptor_ = std::move(other.acceptor_);  // before io_, as in socket_connection
      io_ = std::move(other.io_);
      fd_ = std::exchange(other.fd_, -1);
      open_.store(other.open_.exchange(false));
      where_ = std::move(other.where_);
      who_ = other.who_;
    }
    return *this;
  }

  socket_listener(const socket_listener&) = delete;
  socket_listener& operator=(const socket_listener&) = delete;
  /// Stops listening; later connects are refused.
  ~socket_listener() = default;

  /// Stops listening and makes an `accept()` blocked in another thread throw
  /// `transport_error` (`transport_failure::closed`). Linux wakes a blocked accept when its
  /// listening socket is shut down; the descriptor is closed by the destructor.
  void close() noexcept {
    if (open_.exchange(false, std::memory_order_acq_rel)) {
      ::shutdown(fd_, SHUT_RDWR);
    }
  }

  /// False after `close()`.
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }

 protected:
  /// Blocks until a client connects; throws `transport_error` when closed or on failure.
  typename Protocol::socket accept_socket() {
    for (;;) {
      if (!is_open()) {
        throw_closed();
      }
      typename Protocol::socket socket(*io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (!ec) {
        return socket;
      }
      if (!is_open()) {
        throw_closed();
      }
      // A client that gave up between its connect and our accept is its failure, not ours.
      if (ec == boost::asio::error::connection_aborted) {
        continue;
      }
      throw transport_error(std::string(who_) + ": accept on " + where_ +
                            " failed: " + ec.message());
    }
  }

  /// The io_context accepted sockets belong to.
  const std::shared_ptr<boost::asio::io_context>& io() const noexcept { return io_; }

  /// The endpoint as named in messages.
  const std::string& where() const noexcept { return where_; }

 private:
  [[noreturn]] void throw_closed() const {
    throw transport_error(std::string(who_) + ": accept on " + where_ + ": the listener was closed",
                          transport_failure::closed);
  }

  std::shared_ptr<boost::asio::io_context> io_;  // declared first: outlives acceptor_
  acceptor_type acceptor_;
  int fd_;  // cached: close() from another thread must not touch acceptor_
  std::atomic<bool> open_;
  std::string where_;
  const char* who_;
};

/// "host:port", with brackets around an IPv6 address so that the port stays readable.
inline std::string format_host_port(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

/// A resolved TCP endpoint as "address:port".
inline std::string format_tcp_endpoint(const boost::asio::ip::tcp::endpoint& endpoint) {
  return format_host_port(endpoint.address().to_string(), endpoint.port());
}

}  // namespace detail

/// Where a TCP learner listens or an actor connects.
struct tcp_endpoint {
  /// An IP address or a host name (resolved); empty means every IPv4 interface for `listen`.
  std::string host = "127.0.0.1";
  /// 0 lets `listen` pick a free port; `tcp_listener::local_port()` reports it.
  std::uint16_t port = 0;
};

/// One TCP link to an actor or to the learner; models `seedrl::Connection`. `peer()` is the
/// remote "address:port".
class tcp_connection final : public detail::socket_connection<boost::asio::ip::tcp> {
 public:
  /// Wraps a connected socket; `tcp_transport::connect` and `tcp_listener::accept` call this.
  /// With `tls`, the link runs TLS as the `role` end.
  tcp_connection(std::shared_ptr<boost::asio::io_context> io, boost::asio::ip::tcp::socket socket,
                 std::string peer, std::shared_ptr<detail::tls_context> tls = {},
                 detail::tls_role role = detail::tls_role::server)
      : socket_connection(std::move(io), std::move(socket), std::move(peer),
                          "seedrl::tcp_connection", std::move(tls), role) {}
};

/// A listening TCP socket (SO_REUSEADDR, so that a restarted learner can bind its port while
/// old connections linger in TIME_WAIT).
class tcp_listener final : public detail::socket_listener<boost::asio::ip::tcp> {
 public:
  /// Wraps a bound, listening acceptor whose address is `local`; `tcp_transport::listen` calls
  /// this.
  tcp_listener(std::shared_ptr<boost::asio::io_context> io, boost::asio::ip::tcp::acceptor acceptor,
               const boost::asio::ip::tcp::endpoint& local,
               std::shared_ptr<detail::tls_context> tls = {})
      : socket_listener(std::move(io), std::move(acceptor), detail::format_tcp_endpoint(local),
                        "seedrl::tcp_listener"),
        local_(local),
        tls_(std::move(tls)) {}

  /// Blocks until an actor connects and returns the link, with TCP_NODELAY set. A TLS link's
  /// handshake has not run yet: it runs on the I/O pool after release_to, or on the first read
  /// or write (not here, where a client that never speaks would hold up every other).
  tcp_connection accept() {
    auto socket = accept_socket();
    boost::system::error_code ec;
    // Best effort: it fails only on a socket the peer already reset, and the first read
    // reports that with a better message.
    socket.set_option(boost::asio::ip::tcp::no_delay(true), ec);
    const auto remote = socket.remote_endpoint(ec);
    std::string peer = ec ? std::string("(unknown peer)") : detail::format_tcp_endpoint(remote);
    return tcp_connection(io(), std::move(socket), std::move(peer), tls_);
  }

  /// The bound port: the one picked when the endpoint asked for port 0.
  std::uint16_t local_port() const noexcept { return local_.port(); }

  /// Where clients reach this listener: the bound address ("0.0.0.0" for every interface, which
  /// Linux routes to the local host) and port.
  tcp_endpoint local_endpoint() const { return {local_.address().to_string(), local_.port()}; }

 private:
  boost::asio::ip::tcp::endpoint local_;
  std::shared_ptr<detail::tls_context> tls_;
};

/// TCP over Boost.Asio; models `seedrl::Transport`. Copies share one io_context.
class tcp_transport {
 public:
  /// Host and port.
  using endpoint_type = tcp_endpoint;
  /// One link.
  using connection_type = tcp_connection;
  /// The learner's listening socket.
  using listener_type = tcp_listener;
  /// The learner's I/O threads, which accepted connections move to (release_to).
  using io_pool_type = detail::io_pool;

  /// Owns an io_context; the connections and listeners it makes keep it alive.
  tcp_transport() : io_(std::make_shared<boost::asio::io_context>()) {}

  /// Runs TLS 1.3 on every link (see tls_config). Throws std::invalid_argument when a file of
  /// `tls` is missing, unreadable or does not fit, naming it.
  explicit tcp_transport(tls_config tls)
      : io_(std::make_shared<boost::asio::io_context>()),
        tls_(std::make_shared<detail::tls_context>(std::move(tls))) {}

  /// Whether links run TLS.
  bool uses_tls() const noexcept { return tls_ != nullptr; }

  /// Connects to a listening learner (trying each address the host resolves to), with
  /// TCP_NODELAY set, and with TLS runs the handshake. Throws `transport_error` naming
  /// host:port when nobody listens there (`transport_failure::refused`), the host does not
  /// resolve, or the TLS handshake fails (the learner's certificate is not signed by the CA or
  /// does not name the host, the learner refuses this end's certificate or key).
  connection_type connect(const endpoint_type& endpoint) {
    const std::string where = detail::format_host_port(endpoint.host, endpoint.port);
    boost::asio::ip::tcp::resolver resolver(*io_);
    boost::system::error_code ec;
    const auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port),
                                          boost::asio::ip::tcp::resolver::numeric_service, ec);
    if (ec) {
      throw transport_error("seedrl::tcp_transport: cannot connect to " + where +
                            ": cannot resolve the host (" + ec.message() + ")");
    }
    boost::asio::ip::tcp::socket socket(*io_);
    boost::asio::connect(socket, results, ec);
    if (ec) {
      const bool refused = ec == boost::asio::error::connection_refused;
      throw transport_error("seedrl::tcp_transport: cannot connect to " + where + ": " +
                                ec.message() +
                                (refused ? " (is the learner listening there?)" : ""),
                            refused ? transport_failure::refused : transport_failure::other);
    }
    socket.set_option(boost::asio::ip::tcp::no_delay(true), ec);
    if (ec) {
      throw transport_error("seedrl::tcp_transport: cannot set TCP_NODELAY on the link to " +
                            where + ": " + ec.message());
    }
    const auto remote = socket.remote_endpoint(ec);
    std::string peer = ec ? where : detail::format_tcp_endpoint(remote);
    if (!tls_)
      return connection_type(io_, std::move(socket), std::move(peer));
    connection_type c(io_, std::move(socket), std::move(peer), tls_, detail::tls_role::client);
    expect_server_name(c, endpoint.host);
    c.handshake();
    return c;
  }

  /// Binds and listens, with SO_REUSEADDR. A host name is resolved and the first address that
  /// binds is used. Throws `transport_error` naming host:port when the address cannot be bound
  /// (in use, not local, no permission).
  listener_type listen(const endpoint_type& endpoint) {
    namespace ip = boost::asio::ip;
    const std::string where = detail::format_host_port(endpoint.host, endpoint.port);
    boost::system::error_code ec;
    std::vector<ip::tcp::endpoint> candidates;
    if (endpoint.host.empty()) {
      candidates.emplace_back(ip::tcp::v4(), endpoint.port);
    } else if (const auto address = ip::make_address(endpoint.host, ec); !ec) {
      candidates.emplace_back(address, endpoint.port);
    } else {
      ip::tcp::resolver resolver(*io_);
      const auto results =
          resolver.resolve(endpoint.host, std::to_string(endpoint.port),
                           ip::tcp::resolver::passive | ip::tcp::resolver::numeric_service, ec);
      if (ec) {
        throw transport_error("seedrl::tcp_transport: cannot listen on " + where +
                              ": cannot resolve the host (" + ec.message() + ")");
      }
      for (const auto& result : results) {
        candidates.push_back(result.endpoint());
      }
    }
    for (const auto& candidate : candidates) {
      ip::tcp::acceptor acceptor(*io_);
      // Asio's error_code overloads return void here (BOOST_ASIO_NO_DEPRECATED), hence the chain.
      acceptor.open(candidate.protocol(), ec);
      if (!ec) {
        acceptor.set_option(ip::tcp::acceptor::reuse_address(true), ec);
      }
      if (!ec) {
        acceptor.bind(candidate, ec);
      }
      if (!ec) {
        acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
      }
      ip::tcp::endpoint local;
      if (!ec) {
        local = acceptor.local_endpoint(ec);
      }
      if (!ec) {
        return listener_type(io_, std::move(acceptor), local, tls_);
      }
      // Otherwise try the next address; ec keeps the last failure for the message.
    }
    throw transport_error("seedrl::tcp_transport: cannot listen on " + where + ": " +
                          (ec ? ec.message() : std::string("the host has no address")));
  }

 private:
  /// With certificates, the learner's must name `host` (or the tls_config's server_name): its
  /// DNS name or IP address in subjectAltName, checked by OpenSSL during the handshake.
  void expect_server_name(connection_type& c, const std::string& host) const {
    if (!tls_->config().uses_certificates())
      return;
    const std::string& name =
        tls_->config().server_name.empty() ? host : tls_->config().server_name;
    SSL* ssl = c.native_tls_handle();
    boost::system::error_code ec;
    boost::asio::ip::make_address(name, ec);
    const int ok = !ec ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str())
                       : SSL_set1_host(ssl, name.c_str()) &
                             SSL_set_tlsext_host_name(ssl, const_cast<char*>(name.c_str()));
    if (ok != 1) {
      ERR_clear_error();
      throw std::invalid_argument("seedrl::tcp_transport: cannot check the learner's name " + name +
                                  " in its certificate");
    }
  }

  std::shared_ptr<boost::asio::io_context> io_;
  std::shared_ptr<detail::tls_context> tls_;
};

static_assert(Connection<tcp_connection>);
static_assert(Transport<tcp_transport>);

}  // namespace seedrl
