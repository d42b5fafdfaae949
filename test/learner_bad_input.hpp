// Bad input against a learner, written once against the Transport concept: test_learner.cpp
// runs these checks on the in-process transport (a thread per connection), test_learner_links.cpp
// on TCP and Unix sockets (the asynchronous I/O pool). Each malformed frame gets a clear error
// frame and closes only its connection while a well-behaved actor keeps being served; a silent
// peer is refused after the handshake timeout; the connection limit refuses at accept; the
// challenge-response lets only the right secret through.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/env/cartpole.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/security/shared_secret.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl_test {

using namespace std::chrono_literals;

/// Short unrolls, small batches and a 1 ms deadline: tests see training steps quickly.
inline seedrl::learner_config small_learner_config() {
  seedrl::learner_config lc;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  return lc;
}

/// A learner with one good actor (2 CartPoles) running against it over `Tr`.
template <class Tr>
struct served_learner {
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, Tr>;
  using connection_type = typename Tr::connection_type;

  Tr transport;
  typename Tr::endpoint_type endpoint;
  std::unique_ptr<learner_t> learner;
  std::atomic<bool> stop{false};
  std::thread good_actor;

  /// Listens at `listen_at` (port 0 and the like are resolved: `endpoint` is where it listens);
  /// the learner's log lines go to `log` when given.
  explicit served_learner(const typename Tr::endpoint_type& listen_at,
                          std::function<void(const std::string&)> log = {}) {
    seedrl::mlp_lstm_agent_config nc;
    nc.hidden_sizes = {8};
    nc.lstm_size = 0;
    seedrl::learner_config lc = small_learner_config();
    lc.max_payload = 1 << 16;
    if (log)
      lc.log = std::move(log);
    learner = std::make_unique<learner_t>(
        lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
        seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
    auto listener = transport.listen(listen_at);
    endpoint = listener.local_endpoint();
    learner->start();
    learner->serve(std::move(listener));
    good_actor = std::thread([this] {
      seedrl::actor_config ac;
      ac.num_envs = 2;
      ac.name = "good";
      seedrl::actor<seedrl::cartpole, std::function<connection_type()>> a(
          ac, [](std::size_t) { return seedrl::cartpole{}; },
          [this] { return transport.connect(endpoint); });
      a.run(stop);
    });
  }

  ~served_learner() {
    stop = true;
    good_actor.join();
    learner->stop();
  }

  /// True when the good actor gets at least `n` more steps answered within two seconds.
  bool still_served(std::int64_t n = 20) {
    const auto start = learner->stats().frames;
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (std::chrono::steady_clock::now() < until) {
      if (learner->stats().frames >= start + n)
        return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
};

inline std::vector<std::byte> header(std::uint32_t magic, std::uint16_t version, std::uint16_t type,
                                     std::uint32_t length) {
  std::vector<std::byte> h(seedrl::protocol::header_size);
  auto put = [&](std::size_t at, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      h[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
  };
  put(0, magic, 4);
  put(4, version, 2);
  put(6, type, 2);
  put(8, length, 4);
  return h;
}

inline std::vector<std::byte> cartpole_hello() {
  std::vector<std::byte> frame;
  seedrl::protocol::encode_hello(
      {7, 1, seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec(), "bad"}, frame);
  return frame;
}

/// Reads one whole frame; its payload is returned.
template <class C>
std::vector<std::byte> read_whole_frame(C& c, seedrl::protocol::frame_header& h) {
  std::array<std::byte, seedrl::protocol::header_size> raw{};
  c.read(raw);
  REQUIRE(seedrl::protocol::decode_header(raw, seedrl::protocol::default_max_payload, h) ==
          seedrl::protocol::error_code::none);
  std::vector<std::byte> payload(h.payload_length);
  if (!payload.empty())
    c.read(payload);
  return payload;
}

/// Sends `frames` on a fresh connection, each frame `chunk` bytes at a time (0: each whole),
/// and returns the learner's answer (type and code); the learner must then close the
/// connection.
template <class Tr>
std::pair<seedrl::protocol::message_type, seedrl::protocol::error_code> send_and_expect_refusal(
    served_learner<Tr>& s, const std::vector<std::vector<std::byte>>& frames,
    std::size_t chunk = 0) {
  namespace proto = seedrl::protocol;
  auto c = s.transport.connect(s.endpoint);
  for (const auto& f : frames) {
    const std::size_t step = chunk == 0 ? f.size() : chunk;
    for (std::size_t at = 0; at < f.size(); at += step) {
      const std::span<const std::byte> bufs[] = {
          std::span(f).subspan(at, std::min(step, f.size() - at))};
      try {
        c.write(bufs);
      } catch (const seedrl::transport_error&) {
        break;  // refused before the rest of the frame went out: its answer is waiting
      }
    }
  }
  proto::frame_header h{};
  std::vector<std::byte> payload;
  for (;;) {  // skip the welcome when the violation comes after the handshake
    payload = read_whole_frame(c, h);
    if (h.type != proto::message_type::welcome)
      break;
  }
  proto::status_message m;
  REQUIRE(proto::decode_status(payload, m) == proto::error_code::none);
  INFO("learner said: " << m.message);
  CHECK_FALSE(m.message.empty());
  std::array<std::byte, 1> more{};
  CHECK_THROWS_AS(c.read(more), seedrl::transport_error);  // and closed the connection
  return {h.type, m.code};
}

/// Every kind of malformed frame, whole or `chunk` bytes at a time: refused with the right
/// code, only that connection closed, the good actor still served.
template <class Tr>
void check_malformed_frames_are_refused(served_learner<Tr>& s, std::size_t chunk = 0) {
  namespace proto = seedrl::protocol;
  REQUIRE(s.still_served());
  const auto hello = cartpole_hello();
  const auto step_header = header(proto::magic, proto::version,
                                  static_cast<std::uint16_t>(proto::message_type::step), 8);

  SECTION("bad magic") {
    const auto r = send_and_expect_refusal(s, {header(0xDEADBEEF, proto::version, 1, 0)}, chunk);
    CHECK(r.first == proto::message_type::reject);
    CHECK(r.second == proto::error_code::bad_magic);
  }
  SECTION("wrong version") {
    const auto r = send_and_expect_refusal(s, {header(proto::magic, 99, 1, 0)}, chunk);
    CHECK(r.second == proto::error_code::unsupported_version);
  }
  SECTION("oversized frame") {
    const auto r = send_and_expect_refusal(
        s,
        {hello, header(proto::magic, proto::version,
                       static_cast<std::uint16_t>(proto::message_type::step), 1u << 30)},
        chunk);
    CHECK(r.first == proto::message_type::error);
    CHECK(r.second == proto::error_code::frame_too_large);
  }
  SECTION("truncated hello") {
    auto cut = hello;
    cut.resize(cut.size() - 3);  // the header still claims the full payload
    auto h = header(proto::magic, proto::version, 1,
                    static_cast<std::uint32_t>(cut.size() - proto::header_size));
    std::copy(h.begin(), h.end(), cut.begin());
    const auto r = send_and_expect_refusal(s, {cut}, chunk);
    CHECK(r.first == proto::message_type::reject);
    CHECK(r.second == proto::error_code::truncated_frame);
  }
  SECTION("wrong observation size") {
    std::vector<std::byte> step = step_header;
    step.resize(step.size() + 8);
    const auto r = send_and_expect_refusal(s, {hello, step}, chunk);
    CHECK(r.first == proto::message_type::error);
    CHECK(r.second == proto::error_code::wrong_observation_size);
  }
  SECTION("unknown message type") {
    const auto r = send_and_expect_refusal(s, {header(proto::magic, proto::version, 99, 0)}, chunk);
    CHECK(r.second == proto::error_code::unknown_message_type);
  }
  SECTION("step before the handshake") {
    std::vector<std::byte> step = step_header;
    step.resize(step.size() + 8);
    const auto r = send_and_expect_refusal(s, {step}, chunk);
    CHECK(r.first == proto::message_type::reject);
    CHECK(r.second == proto::error_code::unexpected_message);
  }
  SECTION("non-finite observation") {
    // A NaN (or a float beyond the learner's float range) would poison the observation
    // statistics and every action after it: the step is refused naming the element.
    const std::vector<std::uint64_t> run_ids{1};
    const std::vector<float> rewards{0.0f};
    const std::vector<std::uint8_t> flags{0};
    const std::vector<float> obs{0.0f, 0.1f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
    std::vector<std::byte> step(proto::step_frame_size(1, sizeof(float) * obs.size()));
    proto::encode_step(step, seedrl::dtype::float32,
                       {run_ids, rewards, flags, flags, std::as_bytes(std::span(obs))});
    const auto r = send_and_expect_refusal(s, {hello, step}, chunk);
    CHECK(r.first == proto::message_type::error);
    CHECK(r.second == proto::error_code::non_finite_observation);
  }
  SECTION("observation spec mismatch is named") {
    std::vector<std::byte> frame;
    proto::encode_hello(
        {7, 1, {seedrl::dtype::uint8, {84, 84, 1}}, seedrl::cartpole::action_spec(), "atari"},
        frame);
    const auto r = send_and_expect_refusal(s, {frame}, chunk);
    CHECK(r.second == proto::error_code::spec_mismatch);
  }
  CHECK(s.still_served());
}

/// A peer that connects and says nothing is refused after the handshake timeout, and with
/// max_connections held a further connection is refused at once.
template <class Tr>
void check_handshake_timeout_and_connection_limit(const typename Tr::endpoint_type& listen_at) {
  namespace proto = seedrl::protocol;
  using net_t = seedrl::mlp_lstm_agent<float>;
  Tr transport;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  seedrl::learner_config lc;
  lc.handshake_timeout = 50ms;
  lc.max_connections = 2;
  seedrl::learner<net_t, seedrl::adam<float>, Tr> learner(
      lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
      seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  auto listener = transport.listen(listen_at);
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));
  auto read_status = [](typename Tr::connection_type& c) {
    proto::frame_header h{};
    const auto payload = read_whole_frame(c, h);
    proto::status_message m;
    REQUIRE(proto::decode_status(payload, m) == proto::error_code::none);
    return std::pair{h.type, m};
  };
  auto silent = transport.connect(endpoint);
  const auto [type, m] = read_status(silent);  // blocks until the watchdog refuses it
  CHECK(type == proto::message_type::reject);
  CHECK(m.code == proto::error_code::idle_timeout);
  CHECK(m.message.find("50 ms") != std::string::npos);

  // Two held connections is the limit: a third is refused at once. The two say hello first:
  // silent, the watchdog would refuse them after 50 ms as well, and on a loaded machine that
  // could happen before the third connects, which then takes a freed place (and is refused
  // for its silence instead). The silent peer's place is free once the learner has closed it,
  // which may be just after its refusal arrived: a connection refused meanwhile is retried.
  auto welcomed = [&] {
    std::optional<typename Tr::connection_type> held;
    for (int attempt = 0; attempt < 100 && !held; ++attempt) {
      try {
        auto conn = transport.connect(endpoint);
        const auto hello = cartpole_hello();
        const std::span<const std::byte> bufs[] = {hello};
        conn.write(bufs);
        proto::frame_header h{};
        read_whole_frame(conn, h);
        if (h.type == proto::message_type::welcome) {
          held.emplace(std::move(conn));
          break;
        }
      } catch (const seedrl::transport_error&) {
        // Refused and closed before the hello went out: try again.
      }
      std::this_thread::sleep_for(10ms);
    }
    REQUIRE(held);
    return std::move(*held);
  };
  auto a = welcomed();
  auto b = welcomed();
  auto c = transport.connect(endpoint);
  const auto [type_c, m_c] = read_status(c);
  CHECK(type_c == proto::message_type::reject);
  CHECK(m_c.message.find("maximum of 2 connections") != std::string::npos);
  learner.stop();
}

inline std::shared_ptr<const seedrl::security::shared_secret> secret_of(const std::string& text) {
  return std::make_shared<const seedrl::security::shared_secret>(
      seedrl::security::shared_secret::from_bytes(std::as_bytes(std::span(text)), "test"));
}

/// Runs one actor with `secret` for up to `steps` round trips against the learner at
/// `endpoint`.
template <class Tr>
std::int64_t run_actor(Tr& transport, const typename Tr::endpoint_type& endpoint,
                       std::shared_ptr<const seedrl::security::shared_secret> secret,
                       std::int64_t steps = 20) {
  seedrl::actor_config ac;
  ac.num_envs = 2;
  ac.max_steps = steps;
  ac.auth_secret = std::move(secret);
  seedrl::actor<seedrl::cartpole, std::function<typename Tr::connection_type()>> a(
      ac, [](std::size_t) { return seedrl::cartpole{}; },
      [&] { return transport.connect(endpoint); });
  const std::atomic<bool> stop{false};
  return a.run(stop);
}

/// docs/security.md's challenge-response: the right secret is served; a wrong one, or none, is
/// refused and never reaches the batcher; refusals log one line per address a minute.
template <class Tr>
void check_authentication(const typename Tr::endpoint_type& listen_at) {
  using net_t = seedrl::mlp_lstm_agent<float>;
  Tr transport;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 0;
  seedrl::learner_config lc = small_learner_config();
  lc.auth_secret = secret_of("correct horse battery staple");
  std::mutex log_mutex;
  std::vector<std::string> log;
  lc.log = [&](const std::string& line) {
    std::lock_guard lock(log_mutex);
    log.push_back(line);
  };
  seedrl::learner<net_t, seedrl::adam<float>, Tr> learner(
      lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
      seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  auto listener = transport.listen(listen_at);
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));

  SECTION("wrong secret") {
    try {
      run_actor(transport, endpoint, secret_of("correct horse battery stable"));
      FAIL("an actor with the wrong secret was not refused");
    } catch (const seedrl::actor_rejected& e) {
      CHECK(std::string(e.what()).find("auth_failed") != std::string::npos);
      CHECK(std::string(e.what()).find("authentication failed") != std::string::npos);
    }
    // Retrying with the wrong secret: refused every time, logged once a minute per address.
    for (int retry = 0; retry < 3; ++retry)
      CHECK_THROWS_AS(run_actor(transport, endpoint, secret_of("correct horse battery stable")),
                      seedrl::actor_rejected);
    const auto s = learner.stats();
    CHECK(s.frames == 0);
    CHECK(s.requests == 0);
    CHECK(s.rejected_connections == 4);
    std::lock_guard lock(log_mutex);
    REQUIRE(log.size() == 1);
    CHECK(log[0].find("auth_failed") != std::string::npos);
  }
  SECTION("no secret") {
    try {
      run_actor(transport, endpoint, nullptr);
      FAIL("an actor without a secret was not refused");
    } catch (const seedrl::actor_rejected& e) {
      CHECK(std::string(e.what()).find("auth_required") != std::string::npos);
      CHECK(std::string(e.what()).find("shared secret") != std::string::npos);
    }
    CHECK(learner.stats().frames == 0);
  }
  SECTION("right secret") {
    CHECK(run_actor(transport, endpoint, secret_of("correct horse battery staple"), 30) == 30);
    // Stats are counted just after the replies are written: allow the last batch to land.
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (learner.stats().frames < 60 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    CHECK(learner.stats().frames >= 60);
  }
  learner.stop();
}

}  // namespace seedrl_test
