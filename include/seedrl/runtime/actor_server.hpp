#pragma once
/// \file
/// The learner's actor server: it accepts actors over any Transport, holds their connections,
/// runs the handshake (with docs/security.md's challenge-response when a secret is set),
/// validates every frame and hands each step to the inference side as a typed request
/// (detail::step_request). A bad frame gets an error frame and closes only its connection.
///
/// Threads, for a transport whose connections are sockets (TCP, Unix sockets: their
/// connection_type has `release_to`): one per listener (accepts, then hands the socket to the
/// I/O pool), one watchdog (refuses handshakes that take too long) and
/// learner_config::io_threads I/O threads running one io_context, however many actors connect.
/// Each connection lives on a strand of it: reads go into a buffer with async_read_some and
/// whole frames are parsed out of it (a header and its payload usually arrive in one read;
/// partial frames wait for the next read, several frames in one read are handled in order).
/// The inference side answers through the connection's detail::requester by encoding the
/// actions frame and, when nothing is queued or being written on that socket, sending it itself
/// with a non-blocking send (learner_config::direct_replies): no I/O thread wakes for a reply.
/// What the socket does not take at once, and every reply while a write is under way, goes to
/// the strand, which writes it; the inference thread never blocks on a socket. Refusals, the
/// watchdog and stop() write through the strand.
///
/// Other transports (the in-process pipes) have no socket to poll: each connection gets a
/// thread that reads its frames with blocking calls, and writes take a per-connection lock.
/// Both paths run the same handshake and validation (on_frame).
///
/// `Tr` models Transport. `Steps` is the inference side: see StepConsumer.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/core/spec.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/detail/log_limiter.hpp"
#include "seedrl/runtime/detail/stats_board.hpp"
#include "seedrl/runtime/detail/step_request.hpp"
#include "seedrl/runtime/learner_config.hpp"
#include "seedrl/runtime/learner_stats.hpp"
#include "seedrl/security/challenge.hpp"
#include "seedrl/security/shared_secret.hpp"
#include "seedrl/transport/transport.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl {

/// What the actor server needs from the inference side: env slots for an actor that joins
/// (`attach`, nullopt when full), their return when it leaves (`detach`, called once no
/// request of it is in flight), and `submit` of a validated step (false once stopping).
template <class I>
concept StepConsumer = requires(I& i, std::size_t n, const detail::step_request& r) {
  { i.attach(n) } -> std::same_as<std::optional<std::size_t>>;
  i.detach(n, n);
  { i.submit(r) } -> std::same_as<bool>;
};

namespace detail {

/// A transport whose connections can move to an I/O pool for asynchronous serving (TCP, Unix
/// sockets: seedrl/transport/tcp.hpp's detail::io_pool and detail::async_socket). The pool's
/// socket reads with `read_some(span, done)`, writes with `write(span, done)`, runs `post(f)`
/// on its strand and closes with `close()`; `done` gets a detail::io_result.
template <class Tr>
concept async_transport = requires(typename Tr::connection_type& c, typename Tr::io_pool_type& pool,
                                   std::size_t n) {
  c.release_to(pool);
  pool.start(n);
};

/// The pool and socket types of the asynchronous path; stand-ins for other transports, whose
/// connections never take it (so the core needs no Asio).
struct no_io_pool {};
template <class Tr>
struct async_types {
  using pool = no_io_pool;
  using socket = no_io_pool;
};
template <async_transport Tr>
struct async_types<Tr> {
  using pool = typename Tr::io_pool_type;
  using socket =
      decltype(std::declval<typename Tr::connection_type&>().release_to(std::declval<pool&>()));
};

}  // namespace detail

/// See the file comment.
template <class Tr, StepConsumer Steps>
class actor_server {
 public:
  using connection_type = typename Tr::connection_type;
  using listener_type = typename Tr::listener_type;

  /// Whether connections are served by the I/O pool (true) or by a thread each (false).
  static constexpr bool asynchronous = detail::async_transport<Tr>;

  /// Serves actors whose hello matches `obs_spec` and `act_spec`; steps go to `steps`,
  /// counters to `stats`. A step with a float observation element that is not finite or whose
  /// magnitude exceeds `observation_limit` (the learner's scalar's largest value) is refused
  /// (non_finite_observation), so that none reaches the network or the running statistics.
  actor_server(const learner_config& config, const observation_spec& obs_spec,
               const action_spec& act_spec, Steps& steps, detail::stats_board& stats,
               double observation_limit = std::numeric_limits<double>::max())
      : config_(config),
        obs_spec_(obs_spec),
        observation_check_{obs_spec.type, observation_limit},
        act_spec_(act_spec),
        steps_(steps),
        stats_(stats),
        io_() {}

  actor_server(const actor_server&) = delete;
  actor_server& operator=(const actor_server&) = delete;
  ~actor_server() {
    stop_accepting();
    close_all();
    join();
  }

  /// Starts the handshake watchdog and, for socket transports, the I/O threads.
  void start() {
    watchdog_thread_ = std::thread([this] { watchdog_loop(); });
    if constexpr (asynchronous)
      io_.start(config_.io_threads);
  }

  /// Accepts actors on `listener` in a thread of its own until stop_accepting().
  void serve(listener_type listener) {
    std::lock_guard lock(connections_mutex_);
    listeners_.push_back(std::make_unique<listener_type>(std::move(listener)));
    listener_type* l = listeners_.back().get();
    accept_threads_.emplace_back([this, l] { accept_loop(*l); });
  }

  /// Serves one already-connected actor: on the I/O pool, or in a thread of its own.
  void serve_connection(connection_type c) { spawn_connection(std::move(c)); }

  /// Stops accepting: closes the listeners, joins the accept threads and the watchdog. Steps
  /// of connected actors still arrive (the inference side refuses them once it stops).
  void stop_accepting() {
    if (stopping_.exchange(true))
      return;
    {
      std::lock_guard lock(connections_mutex_);
      for (auto& l : listeners_)
        l->close();
    }
    watchdog_wake_.notify_all();
    if (watchdog_thread_.joinable())
      watchdog_thread_.join();
    for (auto& t : accept_threads_)
      t.join();
    accept_threads_.clear();
  }

  /// Tells every actor with a close frame (`shutting_down`, so that it reconnects to the next
  /// learner) and closes every connection; call after the inference side stopped.
  void close_all() {
    std::vector<std::byte> goodbye;
    protocol::encode_close({protocol::error_code::shutting_down, "the learner is stopping"},
                           goodbye);
    std::lock_guard lock(connections_mutex_);
    for (auto& c : connections_) {
      if constexpr (asynchronous) {
        c->socket.post([this, c, goodbye] {
          if (!c->reading)
            return;
          c->send(goodbye);
          end(c);
        });
      } else {
        // Under the write lock, so that it never interleaves with a refusal being written.
        std::lock_guard write(c->write_mutex);
        if (c->is_open() && c->conn.is_open()) {
          try {
            (void)c->write_without_waiting(goodbye);
          } catch (const std::exception&) {
            // Best effort: the actor may be gone already, or not read.
          }
        }
        c->conn.close();
      }
    }
  }

  /// Joins every connection thread, or lets the I/O threads finish every connection (the
  /// goodbyes of close_all() are written first; a peer that takes none within a second is
  /// cut off) and joins them.
  void join() {
    if constexpr (asynchronous) {
      if (!io_.started())
        return;
      if (!io_.drain_until(std::chrono::steady_clock::now() + std::chrono::seconds(1))) {
        std::lock_guard lock(connections_mutex_);
        for (auto& c : connections_) {
          c->socket.post([this, c] {
            end(c);
            close_socket(*c);
          });
        }
      }
      io_.join();
    } else {
      std::lock_guard lock(connections_mutex_);
      for (auto& c : connections_) {
        if (c->thread.joinable())
          c->thread.join();
      }
    }
  }

  /// Connections still held (open, or finished and not yet reaped).
  std::size_t held_connections() const {
    std::lock_guard lock(connections_mutex_);
    return connections_.size();
  }

  /// Actors past their welcome and not yet gone.
  std::size_t connected() const noexcept { return connected_.load(); }

 private:
  /// Where a connection is in the handshake; only its reader (thread or strand) reads frames.
  enum class phase : std::uint8_t { auth_request, auth_response, hello, steps };

  /// What both paths keep per actor. Kept until it is reaped or the server stops, so that a
  /// batch in flight can still point at it after its actor has gone.
  struct link_state : detail::requester {
    link_state(std::string p, phase first) : peer(std::move(p)), at(first) {}

    std::string peer;
    std::string name;
    std::size_t first_slot = 0;
    std::size_t num_envs = 0;
    std::vector<std::byte> reply;  // outgoing actions frame, encoded by the inference thread
    protocol::step_view step;
    const std::chrono::steady_clock::time_point accepted = std::chrono::steady_clock::now();
    std::atomic<bool> welcomed{false};  // handshake done: the watchdog leaves it alone
    std::atomic<bool> finished{false};  // nothing refers to it any more: may be reaped
    phase at;
    std::optional<security::learner_handshake> auth;  // between auth_request and auth_response
    bool registered = false;                          // holds env slots and counts as connected
  };

  /// A connection served by a thread of its own with blocking reads.
  struct threaded_connection final : link_state {
    threaded_connection(connection_type c, phase first)
        : link_state(c.peer(), first), conn(std::move(c)) {}

    /// Writes a whole frame; throws transport_error on a broken link, or when the actor
    /// leaves too many bytes unread for it (write_without_waiting).
    void send(std::span<const std::byte> frame) {
      std::lock_guard lock(write_mutex);
      if (!write_without_waiting(frame))
        throw transport_error("seedrl learner: " + this->peer + " leaves " +
                                  std::to_string(unread_bytes()) + " bytes unread",
                              transport_failure::closed);
    }

    /// Writes a whole frame (the caller holds write_mutex). A connection that can refuse a
    /// write instead of waiting (the in-process pipes) returns false when the actor leaves too
    /// many bytes unread for it: the learner's threads must never wait for an actor that does
    /// not read, or stop() would hang. Others block as a socket's blocking write does.
    bool write_without_waiting(std::span<const std::byte> frame) {
      const std::span<const std::byte> bufs[] = {frame};
      if constexpr (requires { conn.try_write(bufs); }) {
        return conn.try_write(bufs);
      } else {
        conn.write(bufs);
        return true;
      }
    }
    std::size_t unread_bytes() const {
      if constexpr (requires { conn.unread_bytes(); })
        return conn.unread_bytes();
      else
        return 0;
    }
    void close_link() noexcept { conn.close(); }

    connection_type conn;
    std::thread thread;
    std::vector<std::byte> frame;  // incoming frame payload
    std::mutex write_mutex;        // the inference thread, refusals and close_all() may all write
    // Bytes the actor left unread when its reply did not fit (0: not cut off); its reader
    // thread says so once the link is closed.
    std::atomic<std::size_t> cut_off_unread{0};

   protected:
    void send_actions(std::span<const std::int32_t> actions) noexcept override {
      reply_with([&] { return protocol::encode_discrete_actions(this->reply, actions); });
    }
    void send_continuous_actions(std::size_t n, std::span<const float> actions) noexcept override {
      reply_with([&] { return protocol::encode_continuous_actions(this->reply, n, actions); });
    }

   private:
    /// Encodes the reply with `encode` (which returns its size in `reply`) and sends it from
    /// the inference thread. An actor that leaves too many replies unread for the next one
    /// (write_without_waiting) is cut off, as on the socket path: an actor may step again
    /// before reading its actions, and waiting for one that never reads would stall every
    /// actor's inference.
    template <class Encode>
    void reply_with(Encode encode) noexcept {
      try {
        const std::size_t bytes = encode();
        std::lock_guard lock(write_mutex);
        if (!write_without_waiting(std::span(this->reply).first(bytes))) {
          cut_off_unread = std::max<std::size_t>(unread_bytes(), 1);
          conn.close();  // its reader notices, says why and cleans up
        }
      } catch (const std::exception&) {
        conn.close();  // its reader notices and cleans up
      }
    }
  };

  using socket_type = typename detail::async_types<Tr>::socket;

  /// A connection served on the I/O pool. Everything below runs on its strand (the socket's
  /// executor), except the reply hand-off and became_idle(), which the inference thread calls.
  struct async_connection final : link_state, std::enable_shared_from_this<async_connection> {
    async_connection(actor_server& s, socket_type so, std::string p, phase first)
        : link_state(std::move(p), first), server(s), socket(std::move(so)), in(4096) {}

    /// Queues a whole frame and starts writing it unless a write is under way.
    void send(std::span<const std::byte> frame) {
      {
        std::lock_guard lock(out_mutex);
        out_pending.insert(out_pending.end(), frame.begin(), frame.end());
      }
      server.flush(*this);
    }
    void close_link() noexcept {}  // the reader ends it after the refusal (end())

    actor_server& server;
    socket_type socket;
    std::vector<std::byte> in;  // read buffer: bytes [in_begin, in_end) are not parsed yet
    std::size_t in_begin = 0;
    std::size_t in_end = 0;
    // The inference thread writes replies too (hand_over), so what decides who may touch the
    // wire is under out_mutex: out_pending, writing, socket_closed and flush_posted.
    std::mutex out_mutex;
    std::vector<std::byte> out_pending;  // frames waiting for the write under way
    std::vector<std::byte> out_writing;  // the bytes of the write under way (strand only)
    bool writing = false;
    bool socket_closed = false;
    bool flush_posted = false;    // a take_replies is queued on the strand
    bool reading = true;          // false once ended: no more frames are read or parsed
    bool closing = false;         // close the socket once out_pending is written
    bool detached = false;        // its slots went back (or it never had any)
    bool timeout_posted = false;  // the watchdog's refusal is on its way (connections_mutex_)

   protected:
    void send_actions(std::span<const std::int32_t> actions) noexcept override {
      try {
        hand_over(protocol::encode_discrete_actions(this->reply, actions));
      } catch (const std::exception&) {
        post_end();
      }
    }
    void send_continuous_actions(std::size_t n, std::span<const float> actions) noexcept override {
      try {
        hand_over(protocol::encode_continuous_actions(this->reply, n, actions));
      } catch (const std::exception&) {
        post_end();
      }
    }
    void became_idle() noexcept override {
      try {
        socket.post([self = this->shared_from_this()] { self->server.detach(*self); });
      } catch (const std::exception&) {
        std::terminate();  // the slots would leak and stop() would wait forever
      }
    }

   private:
    /// Sends the frame the inference thread just encoded. When nothing is queued or being
    /// written, the inference thread hands it to the kernel itself with a non-blocking send
    /// (learner_config::direct_replies): no I/O thread has to wake for it, which on a busy
    /// machine is a wait for a core per round trip. What the socket buffer does not take, or
    /// every frame while the wire is busy, is queued and the strand is woken once for however
    /// many are waiting: the inference thread never blocks on the socket. The lock keeps the
    /// strand from writing or closing the socket meanwhile.
    void hand_over(std::size_t bytes) {
      auto frame = std::span<const std::byte>(this->reply).first(bytes);
      bool post = false;
      bool failed = false;
      {
        std::lock_guard lock(out_mutex);
        if (socket_closed)
          return;
        if (server.config_.direct_replies && !writing && out_pending.empty()) {
          if (const auto sent = socket.send_now(frame))
            frame = frame.subspan(*sent);
          else
            failed = true;
        }
        if (!failed && !frame.empty()) {
          out_pending.insert(out_pending.end(), frame.begin(), frame.end());
          // A write under way picks it up when it completes, unless the actor stopped reading
          // (that write never completes): then the strand must see the queue's size now.
          post = (!writing || out_pending.size() > max_unsent_bytes) &&
                 !std::exchange(flush_posted, true);
        }
      }
      if (failed)
        post_end();  // its read fails too; end() closes the socket
      else if (post)
        socket.post([self = this->shared_from_this()] { self->server.take_replies(self); });
    }
    void post_end() noexcept {
      try {
        socket.post([self = this->shared_from_this()] { self->server.end(self); });
      } catch (const std::exception&) {
      }
    }
  };

  using conn_t = std::conditional_t<asynchronous, async_connection, threaded_connection>;

  /// Replies queued behind a write that does not finish, beyond which the actor is cut off.
  static constexpr std::size_t max_unsent_bytes = std::size_t{1} << 22;

  void log(const std::string& line) const { config_.log(line); }

  phase first_phase() const noexcept {
    return config_.auth_secret ? phase::auth_request : phase::hello;
  }

  void accept_loop(listener_type& listener) {
    while (!stopping_) {
      try {
        spawn_connection(listener.accept());
      } catch (const transport_error& e) {
        if (!stopping_)
          log(std::string("seedrl learner: accept failed: ") + e.what());
        return;
      }
    }
  }

  void spawn_connection(connection_type c) {
    std::lock_guard lock(connections_mutex_);
    if (stopping_)
      return;
    reap_finished_connections();
    if (connections_.size() >= config_.max_connections) {
      refuse_at_accept(c, "the learner already holds its maximum of " +
                              std::to_string(config_.max_connections) + " connections");
      return;
    }
    if constexpr (asynchronous) {
      std::string peer = c.peer();
      std::shared_ptr<async_connection> s;
      try {
        s = std::make_shared<async_connection>(*this, c.release_to(io_), peer, first_phase());
      } catch (const transport_error& e) {
        log("seedrl learner: dropping " + peer + ": " + e.what());  // gone before it was served
        return;
      }
      connections_.push_back(s);
      s->socket.post([this, s] { read_more(s); });
    } else {
      connections_.push_back(std::make_shared<threaded_connection>(std::move(c), first_phase()));
      threaded_connection* s = connections_.back().get();
      s->thread = std::thread([this, s] {
        serve_actor(*s);
        s->finished.store(true, std::memory_order_release);
      });
    }
  }

  /// Frees connections that are finished, so that actors that come and go (reconnects,
  /// restarts) do not accumulate. A finished connection has no request left in any batch (its
  /// slots went back only after that), so nothing else refers to it. Called with
  /// connections_mutex_ held.
  void reap_finished_connections() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->finished.load(std::memory_order_acquire)) {
        if constexpr (!asynchronous)
          (*it)->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// Refuses a connection beyond max_connections on the accepting thread: one small frame,
  /// which the socket buffer takes at once. A TLS link is only closed: its frame would need
  /// the handshake first, which a peer could stall, and this thread accepts everyone.
  void refuse_at_accept(connection_type& c, const std::string& why) {
    stats_.update([](learner_stats& st) { ++st.rejected_connections; });
    log("seedrl learner: closing " + c.peer() + ": " +
        protocol::to_string(protocol::error_code::too_many_envs) + ": " + why);
    if constexpr (requires { c.uses_tls(); }) {
      if (c.uses_tls()) {
        c.close();
        return;
      }
    }
    try {
      std::vector<std::byte> frame;
      protocol::encode_status(protocol::message_type::reject,
                              {protocol::error_code::too_many_envs, why}, frame);
      const std::span<const std::byte> bufs[] = {frame};
      c.write(bufs);
    } catch (const std::exception&) {
    }
    c.close();
  }

  /// Sends an error (or reject) frame best effort, logs, and closes the connection (the
  /// asynchronous one once the frame is written: its reader calls end()).
  void refuse(conn_t& s, protocol::message_type type, protocol::error_code code,
              const std::string& why) {
    if (type == protocol::message_type::reject)
      stats_.update([](learner_stats& st) { ++st.rejected_connections; });
    const std::string line = "seedrl learner: closing " + s.peer +
                             (s.name.empty() ? "" : " (" + s.name + ")") + ": " +
                             protocol::to_string(code) + ": " + why;
    // A peer that fails authentication may retry at once, forever (docs/security.md).
    if (code == protocol::error_code::auth_failed || code == protocol::error_code::auth_required)
      log_once_a_minute(s.peer, line);
    else
      log(line);
    try {
      std::vector<std::byte> frame;
      protocol::encode_status(type, {code, why}, frame);
      s.send(frame);
    } catch (const std::exception&) {
      // The peer may already be gone; the log line above is what matters.
    }
    s.close_link();
  }

  /// A peer whose TLS handshake failed (no TLS, a certificate the CA did not sign, the wrong
  /// pre-shared key): counted as refused and logged like a failed authentication.
  void refused_tls(conn_t& s, const std::string& why) {
    stats_.update([](learner_stats& st) { ++st.rejected_connections; });
    log_once_a_minute(s.peer, "seedrl learner: refusing " + s.peer + ": " + why);
  }

  /// Logs `line` about a refused peer at most once per address a minute, saying how many lines
  /// about that address were held back since.
  void log_once_a_minute(const std::string& peer, const std::string& line) {
    if (const auto held_back = refused_peers_.admit(detail::log_limiter::address_of(peer))) {
      log(line + (*held_back > 0 ? " (" + std::to_string(*held_back) +
                                       " more from this address in the last minute, not logged)"
                                 : ""));
    }
  }

  // --- the handshake and the steps, one frame at a time (both paths)

  /// Handles one whole frame whose header is valid; false when the connection ends (after a
  /// refusal, a goodbye or a stop).
  bool on_frame(conn_t& s, const protocol::frame_header& h, std::span<const std::byte> payload) {
    switch (s.at) {
      case phase::auth_request:
        return on_auth_request(s, h, payload);
      case phase::auth_response:
        return on_auth_response(s, h, payload);
      case phase::hello:
        return on_hello(s, h, payload);
      case phase::steps:
        return on_step_frame(s, h, payload);
    }
    return false;
  }

  /// The learner's side of docs/security.md's challenge-response, first half: the actor's
  /// auth_request gets a challenge. A peer without the secret never reaches hello, let alone
  /// inference.
  bool on_auth_request(conn_t& s, const protocol::frame_header& h,
                       std::span<const std::byte> payload) {
    if (h.type == protocol::message_type::hello) {
      refuse(s, protocol::message_type::reject, protocol::error_code::auth_required,
             "this learner requires authentication: give the actor the shared secret "
             "(SEEDRL_AUTH_SECRET or a secret file)");
      return false;
    }
    if (h.type != protocol::message_type::auth_request) {
      refuse(s, protocol::message_type::reject, protocol::error_code::unexpected_message,
             std::string("expected auth_request first, got ") + protocol::to_string(h.type));
      return false;
    }
    std::string why;
    if (const auto code = protocol::decode_auth_request(payload, &why);
        code != protocol::error_code::none) {
      refuse(s, protocol::message_type::reject, code, why);
      return false;
    }
    s.auth.emplace(*config_.auth_secret);
    std::vector<std::byte> frame;
    protocol::encode_auth_challenge(s.auth->challenge(), frame);
    s.send(frame);
    s.at = phase::auth_response;
    return true;
  }

  /// Second half: the actor's proof is checked and the learner's own proof sent.
  bool on_auth_response(conn_t& s, const protocol::frame_header& h,
                        std::span<const std::byte> payload) {
    if (h.type != protocol::message_type::auth_response) {
      refuse(s, protocol::message_type::reject, protocol::error_code::unexpected_message,
             std::string("expected auth_response, got ") + protocol::to_string(h.type));
      return false;
    }
    std::string why;
    security::auth_nonce actor_nonce{};
    security::auth_proof actor_proof{};
    if (const auto code = protocol::decode_auth_response(payload, actor_nonce, actor_proof, &why);
        code != protocol::error_code::none) {
      refuse(s, protocol::message_type::reject, code, why);
      return false;
    }
    const auto learner_proof = s.auth->verify_actor(actor_nonce, actor_proof);
    s.auth.reset();
    if (!learner_proof) {
      // The same text whatever failed: the peer learns nothing from it.
      refuse(s, protocol::message_type::reject, protocol::error_code::auth_failed,
             "authentication failed");
      return false;
    }
    std::vector<std::byte> frame;
    protocol::encode_auth_confirm(*learner_proof, frame);
    s.send(frame);
    s.at = phase::hello;
    return true;
  }

  /// A hello that matches the learner's specs gets env slots and the welcome.
  bool on_hello(conn_t& s, const protocol::frame_header& h, std::span<const std::byte> payload) {
    if (h.type != protocol::message_type::hello) {
      std::string why = std::string("expected hello first, got ") + protocol::to_string(h.type);
      if (h.type == protocol::message_type::auth_request)
        why +=
            ": this learner runs without authentication (give it the shared secret too, or "
            "start the actor without one)";
      refuse(s, protocol::message_type::reject, protocol::error_code::unexpected_message, why);
      return false;
    }
    protocol::hello hello;
    std::string why;
    auto code = protocol::decode_hello(payload, hello, &why);
    if (code == protocol::error_code::none)
      code = protocol::check_hello(hello, obs_spec_, act_spec_, config_.max_payload, &why);
    if (code != protocol::error_code::none) {
      refuse(s, protocol::message_type::reject, code, why);
      return false;
    }
    s.name = hello.name;
    s.num_envs = hello.num_envs;
    if (s.num_envs > config_.batching.max_request_rows) {
      refuse(s, protocol::message_type::reject, protocol::error_code::too_many_envs,
             "an actor may step at most " + std::to_string(config_.batching.max_request_rows) +
                 " envs, got " + std::to_string(s.num_envs));
      return false;
    }
    std::optional<std::size_t> first;
    if constexpr (requires { steps_.attach(s.num_envs, std::string_view(s.name)); })
      first = steps_.attach(s.num_envs, std::string_view(s.name));  // explorer indices by name
    else
      first = steps_.attach(s.num_envs);
    if (!first) {
      refuse(s, protocol::message_type::reject, protocol::error_code::too_many_envs,
             "no room for " + std::to_string(s.num_envs) + " more envs (max_envs " +
                 std::to_string(config_.max_envs) + ")");
      return false;
    }
    s.first_slot = *first;
    // Counted before the welcome goes out: the cleanup undoes exactly this if the write
    // fails, and an actor that has its welcome is already in the counters.
    s.registered = true;
    s.welcomed = true;
    ++connected_;
    s.reply.resize(protocol::actions_frame_size(s.num_envs, act_spec_));
    s.at = phase::steps;
    std::vector<std::byte> frame;
    protocol::encode_welcome({static_cast<std::uint32_t>(s.first_slot),
                              static_cast<std::uint32_t>(s.num_envs), config_.max_payload, 0},
                             frame);
    s.send(frame);
    log("seedrl learner: actor " + s.name + " from " + s.peer + " connected with " +
        std::to_string(s.num_envs) + " envs");
    return true;
  }

  /// After the welcome: steps (handed to inference), keepalives, statistics and the goodbye.
  bool on_step_frame(conn_t& s, const protocol::frame_header& h,
                     std::span<const std::byte> payload) {
    std::string why;
    if (h.type == protocol::message_type::keepalive)
      return true;
    if (h.type == protocol::message_type::actor_stats) {
      protocol::actor_stats m;
      if (const auto code = protocol::decode_actor_stats(payload, m, &why);
          code != protocol::error_code::none) {
        refuse(s, protocol::message_type::error, code, why);
        return false;
      }
      stats_.update([&](learner_stats& st) {
        st.actor_steps += static_cast<std::int64_t>(m.steps);
        st.actor_seconds_env += m.env_seconds;
        st.actor_seconds_waiting += m.wait_seconds;
      });
      return true;
    }
    if (h.type == protocol::message_type::close) {
      log("seedrl learner: actor " + s.name + " said goodbye");
      return false;
    }
    if (h.type != protocol::message_type::step) {
      refuse(s, protocol::message_type::error, protocol::error_code::unexpected_message,
             std::string("expected step, got ") + protocol::to_string(h.type));
      return false;
    }
    if (s.awaiting_actions()) {
      // Submitting it would race with the inference thread on the arrival time and put the
      // same env slots twice into one batch. Only this connection ends; the cleanup waits
      // for the step still in flight.
      refuse(s, protocol::message_type::error, protocol::error_code::unexpected_message,
             "a step arrived while the previous one still awaits its actions: one request in "
             "flight per actor");
      return false;
    }
    const std::size_t obs_bytes = obs_spec_.num_bytes();
    const std::size_t expected = protocol::step_payload_size(s.num_envs, obs_bytes);
    if (h.payload_length != expected) {
      refuse(s, protocol::message_type::error, protocol::error_code::wrong_observation_size,
             "step payload is " + std::to_string(h.payload_length) + " bytes, expected " +
                 std::to_string(expected) + " for " + std::to_string(s.num_envs) + " envs of " +
                 std::to_string(obs_bytes) + "-byte observations");
      return false;
    }
    if (const auto code = protocol::parse_step(payload, static_cast<std::uint32_t>(s.num_envs),
                                               obs_bytes, s.step, &why, observation_check_);
        code != protocol::error_code::none) {
      refuse(s, protocol::message_type::error, code, why);
      return false;
    }
    s.begin_request();
    // The step's bytes are copied into the batch inside submit: the buffer they are in may
    // be reused as soon as it returns.
    if (!steps_.submit({&s, s.first_slot, &s.step})) {
      // The learner is stopping: tell the actor, as close_all() does.
      s.cancel_request();
      std::vector<std::byte> goodbye;
      protocol::encode_close({protocol::error_code::shutting_down, "the learner is stopping"},
                             goodbye);
      try {
        s.send(goodbye);
      } catch (const std::exception&) {
      }
      return false;
    }
    return true;
  }

  /// Refuses connections whose handshake takes longer than handshake_timeout: without it a
  /// peer that connects and sends nothing would hold its slot in the connection limit (and,
  /// on the threaded path, a thread) until the learner stops.
  void watchdog_loop() {
    std::unique_lock wake_lock(watchdog_mutex_);
    while (!stopping_) {
      watchdog_wake_.wait_for(wake_lock, std::chrono::milliseconds(20));
      if (stopping_)
        break;
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard lock(connections_mutex_);
      for (auto& c : connections_) {
        if (c->welcomed || c->finished || now - c->accepted <= config_.handshake_timeout)
          continue;
        if constexpr (asynchronous) {
          if (c->timeout_posted)
            continue;
          c->timeout_posted = true;
          c->socket.post([this, c] {
            // Welcomed since the check above, or ended otherwise: nothing to refuse.
            if (c->welcomed || !c->reading)
              return;
            refuse_slow_handshake(*c);
            end(c);
          });
        } else if (c->is_open()) {
          c->mark_closed();
          refuse_slow_handshake(*c);
        }
      }
    }
  }

  void refuse_slow_handshake(conn_t& c) {
    refuse(c, protocol::message_type::reject, protocol::error_code::idle_timeout,
           "no complete handshake within " + std::to_string(config_.handshake_timeout.count()) +
               " ms");
  }

  // --- the threaded path

  /// Reads one whole frame into `s.frame`; false on a header violation (refused).
  bool read_frame(threaded_connection& s, protocol::frame_header& h) {
    std::array<std::byte, protocol::header_size> header{};
    s.conn.read(header);
    std::string why;
    const auto code = protocol::decode_header(header, config_.max_payload, h, &why);
    if (code != protocol::error_code::none) {
      refuse(s,
             s.at == phase::steps ? protocol::message_type::error : protocol::message_type::reject,
             code, why);
      return false;
    }
    s.frame.resize(h.payload_length);
    if (h.payload_length > 0)
      s.conn.read(s.frame);
    return true;
  }

  /// Handshake, then steps until the actor leaves, misbehaves or the learner stops.
  void serve_actor(threaded_connection& s) {
    try {
      protocol::frame_header h{};
      while (read_frame(s, h) && on_frame(s, h, s.frame)) {
      }
    } catch (const transport_error& e) {
      if (const std::size_t unread = s.cut_off_unread.load(); unread > 0)
        log("seedrl learner: closing " + s.peer + (s.name.empty() ? "" : " (" + s.name + ")") +
            ": it leaves " + std::to_string(unread) + " bytes of replies unread");
      else if (!stopping_)
        log("seedrl learner: actor " + (s.name.empty() ? s.peer : s.name) +
            " went away: " + e.what());
    } catch (const std::exception& e) {
      refuse(s, protocol::message_type::error, protocol::error_code::internal, e.what());
    }
    // Closes the link; for an actor that was welcomed, waits until inference has answered
    // (or skipped) its last request, then hands its slots back.
    s.mark_closed();
    s.conn.close();
    if (!s.registered)
      return;
    s.wait_idle();
    --connected_;
    steps_.detach(s.first_slot, s.num_envs);
  }

  // --- the asynchronous path: each function runs on the connection's strand

  /// Reads whatever has arrived into the free end of the buffer.
  void read_more(const std::shared_ptr<async_connection>& s) {
    if (!s->reading)
      return;
    s->socket.read_some(std::span(s->in).subspan(s->in_end),
                        [this, s](const detail::io_result& r) { on_read(s, r); });
  }

  void on_read(const std::shared_ptr<async_connection>& s, const detail::io_result& r) {
    if (!s->reading)
      return;  // ended meanwhile (refused by the watchdog, stopped)
    if (!r.ok) {
      if (r.tls_refused) {
        refused_tls(*s, r.error);
      } else if (!stopping_) {
        log("seedrl learner: actor " + (s->name.empty() ? s->peer : s->name) + " went away: " +
            (r.peer_gone ? "the peer closed the connection (" + r.error + ")" : r.error));
      }
      end(s);
      return;
    }
    s->in_end += r.bytes;
    bool go_on = false;
    try {
      go_on = parse_frames(*s);
    } catch (const std::exception& e) {
      refuse(*s, protocol::message_type::error, protocol::error_code::internal, e.what());
    }
    if (!go_on) {
      end(s);
      return;
    }
    read_more(s);
  }

  /// Handles every whole frame in the buffer, in order, and makes room for the rest; false
  /// when the connection ends. A header is judged as soon as it is complete, before its payload
  /// arrives, as the threaded path does.
  bool parse_frames(async_connection& s) {
    std::size_t need = protocol::header_size;
    while (s.in_end - s.in_begin >= protocol::header_size) {
      protocol::frame_header h{};
      std::string why;
      const auto code =
          protocol::decode_header(std::span<const std::byte, protocol::header_size>(
                                      s.in.data() + s.in_begin, protocol::header_size),
                                  config_.max_payload, h, &why);
      if (code != protocol::error_code::none) {
        refuse(
            s,
            s.at == phase::steps ? protocol::message_type::error : protocol::message_type::reject,
            code, why);
        return false;
      }
      const std::size_t total = protocol::header_size + h.payload_length;
      if (s.in_end - s.in_begin < total) {
        need = total;
        break;
      }
      if (!on_frame(s, h,
                    std::span<const std::byte>(s.in.data() + s.in_begin + protocol::header_size,
                                               h.payload_length)))
        return false;
      s.in_begin += total;
    }
    // Room for the next frame (or at least its header) from in_begin on: move the unparsed
    // bytes to the front when the tail is too short, grow once for a larger frame.
    if (s.in_begin == s.in_end) {
      s.in_begin = s.in_end = 0;
    } else if (s.in.size() - s.in_begin < need || s.in_end == s.in.size()) {
      std::memmove(s.in.data(), s.in.data() + s.in_begin, s.in_end - s.in_begin);
      s.in_end -= s.in_begin;
      s.in_begin = 0;
    }
    if (s.in.size() < need)
      s.in.resize(need);
    return true;
  }

  /// Starts writing what is queued unless a write is under way; once the queue is empty on a
  /// closing connection, closes the socket.
  void flush(async_connection& s) {
    std::size_t unread = 0;
    {
      std::lock_guard lock(s.out_mutex);
      if (s.socket_closed)
        return;
      if (s.out_pending.size() > max_unsent_bytes && s.reading) {
        // Checked before `writing`: a peer that never reads leaves its write under way forever.
        unread = s.out_pending.size();
        s.out_pending.clear();
      } else if (s.writing) {
        return;
      } else if (s.out_pending.empty()) {
        if (!s.closing)
          return;
      } else {
        std::swap(s.out_pending, s.out_writing);
        s.out_pending.clear();
        s.writing = true;
      }
    }
    if (unread > 0) {
      // An actor may step again before reading its actions, so one that never reads would
      // make the queue grow without bound: it is cut off instead (nothing more can reach it).
      log("seedrl learner: closing " + s.peer + (s.name.empty() ? "" : " (" + s.name + ")") +
          ": it leaves " + std::to_string(unread) + " bytes of replies unread");
      const auto self = s.shared_from_this();
      end(self);
      close_socket(s);
      return;
    }
    if (!s.writing) {
      close_socket(s);  // closing, and everything is written
      return;
    }
    s.socket.write(s.out_writing, [this, self = s.shared_from_this()](const detail::io_result& r) {
      {
        std::lock_guard lock(self->out_mutex);
        self->writing = false;
      }
      if (!r.ok) {
        end(self);
        close_socket(*self);
        return;
      }
      flush(*self);
    });
  }

  /// Writes the replies the inference thread queued (hand_over).
  void take_replies(const std::shared_ptr<async_connection>& s) {
    {
      std::lock_guard lock(s->out_mutex);
      s->flush_posted = false;
    }
    flush(*s);
  }

  /// Stops reading: what is queued is still written, then the socket closes. An actor that
  /// was welcomed hands its slots back once inference has answered (or skipped) its last
  /// request: at once, or from became_idle().
  void end(const std::shared_ptr<async_connection>& s) {
    if (!s->reading)
      return;
    s->reading = false;
    s->mark_closed();
    s->closing = true;
    flush(*s);
    if (!s->registered) {
      s->detached = true;
      maybe_finished(*s);
    } else if (s->idle_or_notify()) {
      detach(*s);
    }
  }

  void detach(async_connection& s) {
    --connected_;
    steps_.detach(s.first_slot, s.num_envs);
    s.detached = true;
    maybe_finished(s);
  }

  void close_socket(async_connection& s) {
    {
      // Under the lock: the inference thread's send_now never meets a closed descriptor.
      std::lock_guard lock(s.out_mutex);
      if (s.socket_closed)
        return;
      s.socket_closed = true;
      s.socket.close();
    }  // the peer sees end of stream; a pending read completes with !ok
    maybe_finished(s);
  }

  void maybe_finished(async_connection& s) {
    // socket_closed only changes on the strand, which calls this.
    if (s.detached && s.socket_closed)
      s.finished.store(true, std::memory_order_release);
  }

  learner_config config_;
  observation_spec obs_spec_;
  protocol::observation_check observation_check_;
  action_spec act_spec_;
  Steps& steps_;
  detail::stats_board& stats_;
  detail::log_limiter refused_peers_;  // authentication refusals: one line per address a minute

  // Declared before the connections, so that it outlives them: the last references to a
  // connection may be handlers still queued here, destroyed with it.
  typename detail::async_types<Tr>::pool io_;

  mutable std::mutex connections_mutex_;
  std::list<std::shared_ptr<conn_t>> connections_;
  std::vector<std::unique_ptr<listener_type>> listeners_;
  std::vector<std::thread> accept_threads_;
  std::thread watchdog_thread_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connected_{0};
};

}  // namespace seedrl
