#pragma once
/// \file
/// The actor runtime: steps k environments and exchanges one step request and one action reply
/// per round trip with the learner. When the link breaks it reconnects with exponential
/// backoff, restarting its environments under new run ids so that the learner drops the
/// partial unrolls and resets the recurrent state. `stop` (e.g. from a signal handler's flag)
/// ends it cleanly with a close message.

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/env/any_env_batch.hpp"
#include "seedrl/env/environment.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/security/challenge.hpp"
#include "seedrl/security/shared_secret.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl {

/// Actor settings.
struct actor_config {
  std::size_t num_envs = 4;
  std::uint64_t actor_id = 0;
  std::string name = "actor";
  std::uint64_t seed = 0;
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::optional<std::int64_t> max_steps;  ///< stop after this many round trips (tests)
  /// How often to tell the learner where the actor's time goes (an actor_stats frame); zero
  /// turns the reports off.
  std::chrono::milliseconds stats_interval{1000};
  /// When set, the actor authenticates with docs/security.md's challenge-response before
  /// hello, and refuses a learner that cannot prove it knows the same secret.
  std::shared_ptr<const security::shared_secret> auth_secret;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

/// Raised when the learner refuses the actor for good (spec mismatch, bad handshake): retrying
/// cannot help.
class actor_rejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs `config.num_envs` environments, batched by `make_batch(num_envs, seed)`, against a
/// learner reached with `connect()` (which returns a Connection, or throws transport_error).
/// The environments' type is erased (seedrl/env/any_env_batch.hpp), so that this loop is
/// compiled once for every environment; `actor<E, Connect>` is the same for a factory of E.
template <class Connect>
class basic_actor {
 public:
  basic_actor(actor_config config, env_batch_factory make_batch, Connect connect)
      : config_(std::move(config)),
        make_batch_(std::move(make_batch)),
        connect_(std::move(connect)),
        rng_(config_.seed) {}

  /// Runs until `stop` becomes true or `max_steps` round trips are done; returns the number of
  /// round trips. Throws actor_rejected when the learner refuses the handshake.
  std::int64_t run(const std::atomic<bool>& stop) {
    auto backoff = config_.initial_backoff;
    std::int64_t steps = 0;
    while (!stop && !done(steps)) {
      try {
        auto conn = connect_();
        steps += session(conn, stop, steps, backoff);
        if (stop || done(steps)) {
          say_goodbye(conn);
          return steps;
        }
      } catch (const transport_error& e) {
        if (stop)
          break;  // a signal interrupted the link: that is the stop, not a failure
        config_.log("seedrl actor " + config_.name + ": link lost (" + e.what() +
                    "); retrying in " + std::to_string(backoff.count()) + " ms");
      }
      // Exponential backoff with jitter, sleeping in small slices so that stop is prompt.
      const auto jitter = std::chrono::milliseconds(static_cast<std::int64_t>(
          rng_.below(static_cast<std::uint64_t>(backoff.count() / 4 + 1))));
      const auto until = std::chrono::steady_clock::now() + backoff + jitter;
      while (!stop && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      backoff = std::min(backoff * 2, config_.max_backoff);
    }
    return steps;
  }

 private:
  bool done(std::int64_t steps) const { return config_.max_steps && steps >= *config_.max_steps; }

  template <class C>
  void write(C& conn, std::span<const std::byte> frame) {
    const std::span<const std::byte> bufs[] = {frame};
    conn.write(bufs);
  }

  template <class C>
  void say_goodbye(C& conn) {
    try {
      std::vector<std::byte> frame;
      protocol::encode_close({protocol::error_code::none, "actor stopping"}, frame);
      write(conn, frame);
    } catch (const std::exception&) {
    }
    conn.close();
  }

  /// One connection's life: handshake, then lock-step step/actions until stop or failure. The
  /// backoff starts again once the learner welcomed us: a link that connects and is then
  /// refused (TLS 1.3 refuses a client's certificate after the client's connect returned) keeps
  /// backing off.
  template <class C>
  std::int64_t session(C& conn, const std::atomic<bool>& stop, std::int64_t steps_before,
                       std::chrono::milliseconds& backoff) {
    // Fresh environments and run ids for every connection: the learner starts them afresh.
    const std::unique_ptr<any_env_batch> fresh = make_batch_(config_.num_envs, rng_());
    any_env_batch& batch = *fresh;
    const auto obs_spec = batch.observation_spec();
    const auto act_spec = batch.action_spec();
    // Discrete environments take int32 indices, continuous ones floats; the wire carries the same.
    const bool discrete = act_spec.is_discrete();
    std::vector<std::byte> frame;
    protocol::frame_header h{};
    if (config_.auth_secret)
      authenticate(conn, frame);
    protocol::encode_hello({config_.actor_id, static_cast<std::uint32_t>(config_.num_envs),
                            obs_spec, act_spec, config_.name},
                           frame);
    write(conn, frame);
    read_frame(conn, h, frame);
    if (h.type == protocol::message_type::reject)
      handle_reject(frame);
    if (h.type != protocol::message_type::welcome) {
      throw transport_error(std::string("expected welcome, got ") + protocol::to_string(h.type));
    }
    backoff = config_.initial_backoff;
    std::vector<std::uint64_t> run_ids(config_.num_envs);
    for (auto& id : run_ids)
      id = rng_();
    const std::size_t k = config_.num_envs, obs_bytes = obs_spec.num_bytes();
    std::vector<std::byte> step_frame(protocol::step_frame_size(k, obs_bytes));
    std::vector<float> rewards(k, 0.0f);
    std::vector<std::uint8_t> dones(k, 1), truncateds(k, 0);  // first observations start episodes
    std::vector<std::int32_t> indices(discrete ? k : 0);
    std::vector<float> values(discrete ? 0 : k * batch.action_size());
    std::int64_t steps = 0;
    // Where the time goes, reported to the learner every stats_interval.
    using clock = std::chrono::steady_clock;
    std::array<std::byte, protocol::header_size + protocol::actor_stats_payload_size> stats_frame{};
    protocol::actor_stats period;
    auto last_report = clock::now(), t_env = last_report;
    while (!stop && !done(steps_before + steps)) {
      const std::span<const std::byte> obs_bytes_view = batch.observation_bytes();
      const std::size_t n = protocol::encode_step(
          step_frame, obs_spec.type, {run_ids, rewards, dones, truncateds, obs_bytes_view});
      const auto t_send = clock::now();
      period.env_seconds += std::chrono::duration<double>(t_send - t_env).count();
      write(conn, std::span<const std::byte>(step_frame).first(n));
      read_frame(conn, h, frame);
      t_env = clock::now();
      period.wait_seconds += std::chrono::duration<double>(t_env - t_send).count();
      ++period.steps;
      if (h.type == protocol::message_type::error || h.type == protocol::message_type::close) {
        protocol::status_message m;
        protocol::decode_status(frame, m);
        throw transport_error(std::string("learner sent ") + protocol::to_string(h.type) + ": " +
                              m.message);
      }
      if (h.type != protocol::message_type::actions) {
        throw transport_error(std::string("expected actions, got ") + protocol::to_string(h.type));
      }
      std::string why;
      const auto parsed =
          discrete ? protocol::parse_actions(frame, static_cast<std::uint32_t>(k), act_spec,
                                             std::span<std::int32_t>(indices), &why)
                   : protocol::parse_actions(frame, static_cast<std::uint32_t>(k), act_spec,
                                             std::span<float>(values), &why);
      if (parsed != protocol::error_code::none)
        throw transport_error("bad actions from the learner: " + why);
      if (discrete)
        batch.step(std::span<const std::int32_t>(indices));
      else
        batch.step(std::span<const float>(values));
      const auto r = batch.rewards();
      const auto d = batch.dones();
      const auto tr = batch.truncated();
      std::copy(r.begin(), r.end(), rewards.begin());
      std::copy(d.begin(), d.end(), dones.begin());
      std::copy(tr.begin(), tr.end(), truncateds.begin());
      ++steps;
      if (config_.stats_interval.count() > 0 && t_env - last_report >= config_.stats_interval) {
        protocol::encode_actor_stats(stats_frame, period);
        write(conn, stats_frame);
        period = {};
        last_report = t_env;
      }
    }
    return steps;
  }

  /// A reject ends this connection. Codes that can clear up (the learner is full, stopping or
  /// timed us out) are retried with backoff; any other means this actor cannot be served as
  /// configured (wrong specs, wrong secret), so it stops with the learner's reason.
  [[noreturn]] void handle_reject(std::span<const std::byte> payload) {
    protocol::status_message m;
    protocol::decode_status(payload, m);
    const std::string what =
        std::string("the learner refused us: ") + protocol::to_string(m.code) + ": " + m.message;
    using protocol::error_code;
    if (m.code == error_code::too_many_envs || m.code == error_code::shutting_down ||
        m.code == error_code::idle_timeout) {
      throw transport_error(what);
    }
    throw actor_rejected("seedrl actor " + config_.name + ": " + what);
  }

  /// The actor's side of docs/security.md's challenge-response.
  template <class C>
  void authenticate(C& conn, std::vector<std::byte>& frame) {
    protocol::encode_auth_request(frame);
    write(conn, frame);
    protocol::frame_header h{};
    read_frame(conn, h, frame);
    if (h.type == protocol::message_type::reject)
      handle_reject(frame);
    if (h.type != protocol::message_type::auth_challenge) {
      throw transport_error(std::string("expected auth_challenge, got ") +
                            protocol::to_string(h.type));
    }
    security::auth_nonce learner_nonce{};
    std::string why;
    if (protocol::decode_auth_challenge(frame, learner_nonce, &why) != protocol::error_code::none)
      throw actor_rejected("seedrl actor " + config_.name + ": bad auth_challenge: " + why);
    security::actor_handshake handshake(*config_.auth_secret);
    const auto response = handshake.respond(learner_nonce);
    protocol::encode_auth_response(response.actor_nonce, response.actor_proof, frame);
    write(conn, frame);
    read_frame(conn, h, frame);
    if (h.type == protocol::message_type::reject)
      handle_reject(frame);
    security::auth_proof learner_proof{};
    if (h.type != protocol::message_type::auth_confirm ||
        protocol::decode_auth_confirm(frame, learner_proof, &why) != protocol::error_code::none ||
        !handshake.verify_learner(learner_proof)) {
      try {
        protocol::encode_error({protocol::error_code::auth_failed, "authentication failed"}, frame);
        write(conn, frame);
      } catch (const std::exception&) {
      }
      conn.close();
      throw actor_rejected("seedrl actor " + config_.name +
                           ": the learner did not prove that it knows the shared secret; it is "
                           "not the learner this actor was configured for");
    }
  }

  template <class C>
  void read_frame(C& conn, protocol::frame_header& h, std::vector<std::byte>& payload) {
    std::array<std::byte, protocol::header_size> header{};
    conn.read(header);
    std::string why;
    if (protocol::decode_header(header, protocol::default_max_payload, h, &why) !=
        protocol::error_code::none) {
      throw transport_error("bad frame from the learner: " + why);
    }
    payload.resize(h.payload_length);
    if (h.payload_length > 0)
      conn.read(payload);
  }

  actor_config config_;
  env_batch_factory make_batch_;
  Connect connect_;
  random_generator rng_;
};

/// `basic_actor` over environments of type `E`, environment i built by `make_env(i)`.
template <class E, class Connect>
class actor : public basic_actor<Connect> {
  static_assert(check_environment<E>());

 public:
  actor(actor_config config, std::function<E(std::size_t)> make_env, Connect connect)
      : basic_actor<Connect>(std::move(config), make_env_batch_factory<E>(std::move(make_env)),
                             std::move(connect)) {}
};

}  // namespace seedrl
