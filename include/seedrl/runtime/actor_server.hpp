#pragma once
/// \file
/// The learner's actor server: it accepts actors over any Transport, holds their connections,
/// runs the handshake (with docs/security.md's challenge-response when a secret is set),
/// validates every frame and hands each step to the inference side as a typed request
/// (detail::step_request). A bad frame gets an error frame and closes only its connection.
///
/// Threads: one per listener (accepts), one per connection (reads and validates its frames,
/// and is the only one that reads its socket), one watchdog (refuses handshakes that take too
/// long). Actions are written by the inference side through the connection's
/// detail::requester; refusals and stop() write too, so writes take a per-connection lock.
///
/// `Tr` models Transport. `Steps` is the inference side: see StepConsumer.

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/core/spec.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/detail/stats_board.hpp"
#include "seedrl/runtime/detail/step_request.hpp"
#include "seedrl/runtime/learner_config.hpp"
#include "seedrl/runtime/learner_stats.hpp"
#include "seedrl/security/challenge.hpp"
#include "seedrl/security/shared_secret.hpp"
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

/// See the file comment.
template <class Tr, StepConsumer Steps>
class actor_server {
 public:
  using connection_type = typename Tr::connection_type;
  using listener_type = typename Tr::listener_type;

  /// Serves actors whose hello matches `obs_spec` and `act_spec`; steps go to `steps`,
  /// counters to `stats`.
  actor_server(const learner_config& config, const observation_spec& obs_spec,
               const action_spec& act_spec, Steps& steps, detail::stats_board& stats)
      : config_(config), obs_spec_(obs_spec), act_spec_(act_spec), steps_(steps), stats_(stats) {}

  actor_server(const actor_server&) = delete;
  actor_server& operator=(const actor_server&) = delete;
  ~actor_server() {
    stop_accepting();
    close_all();
    join();
  }

  /// Starts the handshake watchdog.
  void start() {
    watchdog_thread_ = std::thread([this] { watchdog_loop(); });
  }

  /// Accepts actors on `listener` in a thread of its own until stop_accepting().
  void serve(listener_type listener) {
    std::lock_guard lock(connections_mutex_);
    listeners_.push_back(std::make_unique<listener_type>(std::move(listener)));
    listener_type* l = listeners_.back().get();
    accept_threads_.emplace_back([this, l] { accept_loop(*l); });
  }

  /// Serves one already-connected actor in a thread of its own.
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
      // Under the write lock, so that it never interleaves with a refusal being written.
      std::lock_guard write(c->write_mutex);
      if (c->is_open() && c->conn.is_open()) {
        try {
          const std::span<const std::byte> bufs[] = {goodbye};
          c->conn.write(bufs);
        } catch (const std::exception&) {
          // Best effort: the actor may be gone already.
        }
      }
      c->conn.close();
    }
  }

  /// Joins every connection thread.
  void join() {
    std::lock_guard lock(connections_mutex_);
    for (auto& c : connections_) {
      if (c->thread.joinable())
        c->thread.join();
    }
  }

  /// Connections still held (open, or finished and not yet joined).
  std::size_t held_connections() const {
    std::lock_guard lock(connections_mutex_);
    return connections_.size();
  }

  /// Actors past their welcome and not yet gone.
  std::size_t connected() const noexcept { return connected_.load(); }

 private:
  /// One actor connection. Kept until it is reaped or the server stops, so that a batch in
  /// flight can still point at it after its actor has gone.
  struct connection final : detail::requester {
    explicit connection(connection_type c)
        : conn(std::move(c)), accepted(std::chrono::steady_clock::now()) {}

    void write(std::span<const std::byte> frame) {
      const std::span<const std::byte> bufs[] = {frame};
      std::lock_guard lock(write_mutex);
      conn.write(bufs);
    }

    connection_type conn;
    std::thread thread;
    std::string name;
    std::size_t first_slot = 0;
    std::size_t num_envs = 0;
    std::vector<std::byte> frame;  // incoming frame payload
    std::vector<std::byte> reply;  // outgoing actions frame
    protocol::step_view step;
    std::mutex write_mutex;  // the inference thread, refusals and close_all() may all write
    std::atomic<bool> finished{false};  // its thread has nothing left to do: may be joined
    std::chrono::steady_clock::time_point accepted;
    std::atomic<bool> welcomed{false};  // handshake done: the watchdog leaves it alone

   protected:
    void send_actions(std::span<const std::int32_t> actions) noexcept override {
      try {
        protocol::encode_discrete_actions(reply, actions);
        write(reply);
      } catch (const std::exception&) {
        conn.close();  // its reader notices and cleans up
      }
    }
    void send_continuous_actions(std::size_t n, std::span<const float> actions) noexcept override {
      try {
        protocol::encode_continuous_actions(reply, n, actions);
        write(reply);
      } catch (const std::exception&) {
        conn.close();
      }
    }
  };

  void log(const std::string& line) const { config_.log(line); }

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
      connection refused(std::move(c));
      refuse(refused, protocol::message_type::reject, protocol::error_code::too_many_envs,
             "the learner already holds its maximum of " + std::to_string(config_.max_connections) +
                 " connections");
      return;
    }
    connections_.push_back(std::make_unique<connection>(std::move(c)));
    connection* s = connections_.back().get();
    s->thread = std::thread([this, s] {
      serve_actor(*s);
      s->finished.store(true, std::memory_order_release);
    });
  }

  /// Joins and frees connections whose thread has finished, so that actors that come and go
  /// (reconnects, restarts) do not accumulate. A finished connection has no request left in
  /// any batch (its thread waited for that), so nothing else refers to it. Called with
  /// connections_mutex_ held.
  void reap_finished_connections() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->finished.load(std::memory_order_acquire)) {
        (*it)->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// Sends an error (or reject) frame best effort, logs, and closes the connection.
  void refuse(connection& s, protocol::message_type type, protocol::error_code code,
              const std::string& why) {
    if (type == protocol::message_type::reject)
      stats_.update([](learner_stats& st) { ++st.rejected_connections; });
    log("seedrl learner: closing " + s.conn.peer() + (s.name.empty() ? "" : " (" + s.name + ")") +
        ": " + protocol::to_string(code) + ": " + why);
    try {
      std::vector<std::byte> frame;
      protocol::encode_status(type, {code, why}, frame);
      s.write(frame);
    } catch (const std::exception&) {
      // The peer may already be gone; the log line above is what matters.
    }
    s.conn.close();
  }

  /// Reads one whole frame into `s.frame`; false on a header violation (refused).
  bool read_frame(connection& s, protocol::frame_header& h, bool handshaken) {
    std::array<std::byte, protocol::header_size> header{};
    s.conn.read(header);
    std::string why;
    const auto code = protocol::decode_header(header, config_.max_payload, h, &why);
    if (code != protocol::error_code::none) {
      refuse(s, handshaken ? protocol::message_type::error : protocol::message_type::reject, code,
             why);
      return false;
    }
    s.frame.resize(h.payload_length);
    if (h.payload_length > 0)
      s.conn.read(s.frame);
    return true;
  }

  /// The learner's side of docs/security.md's challenge-response; true once the actor proved
  /// it knows the secret and the learner's own proof was sent. Refuses and returns false
  /// otherwise, so a peer without the secret never reaches hello, let alone inference.
  bool authenticate(connection& s) {
    protocol::frame_header h{};
    if (!read_frame(s, h, false))
      return false;
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
    if (const auto code = protocol::decode_auth_request(s.frame, &why);
        code != protocol::error_code::none) {
      refuse(s, protocol::message_type::reject, code, why);
      return false;
    }
    security::learner_handshake handshake(*config_.auth_secret);
    std::vector<std::byte> frame;
    protocol::encode_auth_challenge(handshake.challenge(), frame);
    s.write(frame);
    if (!read_frame(s, h, false))
      return false;
    if (h.type != protocol::message_type::auth_response) {
      refuse(s, protocol::message_type::reject, protocol::error_code::unexpected_message,
             std::string("expected auth_response, got ") + protocol::to_string(h.type));
      return false;
    }
    security::auth_nonce actor_nonce{};
    security::auth_proof actor_proof{};
    if (const auto code = protocol::decode_auth_response(s.frame, actor_nonce, actor_proof, &why);
        code != protocol::error_code::none) {
      refuse(s, protocol::message_type::reject, code, why);
      return false;
    }
    const auto learner_proof = handshake.verify_actor(actor_nonce, actor_proof);
    if (!learner_proof) {
      // The same text whatever failed: the peer learns nothing from it.
      refuse(s, protocol::message_type::reject, protocol::error_code::auth_failed,
             "authentication failed");
      return false;
    }
    protocol::encode_auth_confirm(*learner_proof, frame);
    s.write(frame);
    return true;
  }

  /// Refuses connections whose handshake takes longer than handshake_timeout: without it a
  /// peer that connects and sends nothing would hold a thread until the learner stops.
  void watchdog_loop() {
    std::unique_lock wake_lock(watchdog_mutex_);
    while (!stopping_) {
      watchdog_wake_.wait_for(wake_lock, std::chrono::milliseconds(20));
      if (stopping_)
        break;
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard lock(connections_mutex_);
      for (auto& c : connections_) {
        if (!c->welcomed && c->is_open() && !c->finished &&
            now - c->accepted > config_.handshake_timeout) {
          c->mark_closed();
          refuse(*c, protocol::message_type::reject, protocol::error_code::idle_timeout,
                 "no complete handshake within " +
                     std::to_string(config_.handshake_timeout.count()) + " ms");
        }
      }
    }
  }

  /// The handshake up to the welcome: authentication when a secret is set, then a hello that
  /// matches the learner's specs and env slots for it. False (after refusing) otherwise.
  bool welcome(connection& s) {
    protocol::frame_header h{};
    if (config_.auth_secret && !authenticate(s))
      return false;
    if (!read_frame(s, h, false))
      return false;
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
    auto code = protocol::decode_hello(s.frame, hello, &why);
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
    const auto first = steps_.attach(s.num_envs);
    if (!first) {
      refuse(s, protocol::message_type::reject, protocol::error_code::too_many_envs,
             "no room for " + std::to_string(s.num_envs) + " more envs (max_envs " +
                 std::to_string(config_.max_envs) + ")");
      return false;
    }
    s.first_slot = *first;
    return true;
  }

  /// Handshake, then steps until the actor leaves, misbehaves or the learner stops.
  void serve_actor(connection& s) {
    bool registered = false;
    try {
      if (welcome(s)) {
        // Counted before the welcome goes out: the cleanup below undoes exactly this if the
        // write fails, and an actor that has its welcome is already in the counters.
        registered = true;
        s.welcomed = true;
        ++connected_;
        s.reply.resize(protocol::actions_frame_size(s.num_envs, act_spec_));
        std::vector<std::byte> frame;
        protocol::encode_welcome({static_cast<std::uint32_t>(s.first_slot),
                                  static_cast<std::uint32_t>(s.num_envs), config_.max_payload, 0},
                                 frame);
        s.write(frame);
        log("seedrl learner: actor " + s.name + " from " + s.conn.peer() + " connected with " +
            std::to_string(s.num_envs) + " envs");
        serve_steps(s);
      }
    } catch (const transport_error& e) {
      if (!stopping_)
        log("seedrl learner: actor " + (s.name.empty() ? s.conn.peer() : s.name) +
            " went away: " + e.what());
    } catch (const std::exception& e) {
      refuse(s, protocol::message_type::error, protocol::error_code::internal, e.what());
    }
    finish(s, registered);
  }

  /// After the welcome: one frame at a time until the actor leaves or stop() closes the link
  /// (after its goodbye).
  void serve_steps(connection& s) {
    const std::size_t obs_bytes = obs_spec_.num_bytes();
    const std::size_t expected = protocol::step_payload_size(s.num_envs, obs_bytes);
    protocol::frame_header h{};
    std::string why;
    for (;;) {
      if (!read_frame(s, h, true))
        return;
      if (h.type == protocol::message_type::keepalive)
        continue;
      if (h.type == protocol::message_type::actor_stats) {
        protocol::actor_stats m;
        if (const auto code = protocol::decode_actor_stats(s.frame, m, &why);
            code != protocol::error_code::none) {
          refuse(s, protocol::message_type::error, code, why);
          return;
        }
        stats_.update([&](learner_stats& st) {
          st.actor_steps += static_cast<std::int64_t>(m.steps);
          st.actor_seconds_env += m.env_seconds;
          st.actor_seconds_waiting += m.wait_seconds;
        });
        continue;
      }
      if (h.type == protocol::message_type::close) {
        log("seedrl learner: actor " + s.name + " said goodbye");
        return;
      }
      if (h.type != protocol::message_type::step) {
        refuse(s, protocol::message_type::error, protocol::error_code::unexpected_message,
               std::string("expected step, got ") + protocol::to_string(h.type));
        return;
      }
      if (s.awaiting_actions()) {
        // Submitting it would race with the inference thread on the arrival time and put the
        // same env slots twice into one batch. Only this connection ends; the cleanup waits
        // for the step still in flight.
        refuse(s, protocol::message_type::error, protocol::error_code::unexpected_message,
               "a step arrived while the previous one still awaits its actions: one request in "
               "flight per actor");
        return;
      }
      if (h.payload_length != expected) {
        refuse(s, protocol::message_type::error, protocol::error_code::wrong_observation_size,
               "step payload is " + std::to_string(h.payload_length) + " bytes, expected " +
                   std::to_string(expected) + " for " + std::to_string(s.num_envs) + " envs of " +
                   std::to_string(obs_bytes) + "-byte observations");
        return;
      }
      if (const auto code = protocol::parse_step(s.frame, static_cast<std::uint32_t>(s.num_envs),
                                                 obs_bytes, s.step, &why);
          code != protocol::error_code::none) {
        refuse(s, protocol::message_type::error, code, why);
        return;
      }
      s.begin_request();
      if (!steps_.submit({&s, s.first_slot, &s.step})) {
        // The learner is stopping: tell the actor, as close_all() does.
        s.cancel_request();
        std::vector<std::byte> goodbye;
        protocol::encode_close({protocol::error_code::shutting_down, "the learner is stopping"},
                               goodbye);
        try {
          s.write(goodbye);
        } catch (const std::exception&) {
        }
        return;
      }
    }
  }

  /// Closes the link; for an actor that was welcomed, waits until inference has answered (or
  /// skipped) its last request, then hands its slots back.
  void finish(connection& s, bool registered) {
    s.mark_closed();
    s.conn.close();
    if (!registered)
      return;
    s.wait_idle();
    --connected_;
    steps_.detach(s.first_slot, s.num_envs);
  }

  learner_config config_;
  observation_spec obs_spec_;
  action_spec act_spec_;
  Steps& steps_;
  detail::stats_board& stats_;

  mutable std::mutex connections_mutex_;
  std::list<std::unique_ptr<connection>> connections_;
  std::vector<std::unique_ptr<listener_type>> listeners_;
  std::vector<std::thread> accept_threads_;
  std::thread watchdog_thread_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connected_{0};
};

}  // namespace seedrl
