// The learner on the in-process transport: every kind of malformed input gets a clear error
// frame and closes only that connection, while a well-behaved actor keeps being served.
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "seedrl/env/cartpole.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/in_process.hpp"

namespace {

using namespace std::chrono_literals;
namespace proto = seedrl::protocol;
using net_t = seedrl::mlp_lstm_agent<float>;
using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport>;

/// A learner with one good actor (2 CartPoles) running against it.
struct served_learner {
  seedrl::in_process_transport transport;
  seedrl::in_process_endpoint endpoint;
  std::unique_ptr<learner_t> learner;
  std::atomic<bool> stop{false};
  std::thread good_actor;

  explicit served_learner(const std::string& name) : endpoint{name} {
    seedrl::mlp_lstm_agent_config nc;
    nc.hidden_sizes = {8};
    nc.lstm_size = 0;
    seedrl::learner_config lc;
    lc.unroll_length = 4;
    lc.batch_size = 2;
    lc.batching.max_batch = 4;
    lc.batching.deadline = 1ms;
    lc.batching.max_request_rows = 8;
    lc.max_payload = 1 << 16;
    learner = std::make_unique<learner_t>(
        lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
        seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
    learner->start();
    learner->serve(transport.listen(endpoint));
    good_actor = std::thread([this] {
      seedrl::actor_config ac;
      ac.num_envs = 2;
      ac.name = "good";
      seedrl::actor<seedrl::cartpole, std::function<seedrl::in_process_connection()>> a(
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

std::vector<std::byte> header(std::uint32_t magic, std::uint16_t version, std::uint16_t type,
                              std::uint32_t length) {
  std::vector<std::byte> h(proto::header_size);
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

std::vector<std::byte> cartpole_hello() {
  std::vector<std::byte> frame;
  proto::encode_hello(
      {7, 1, seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec(), "bad"}, frame);
  return frame;
}

/// Sends `bytes` on a fresh connection and returns the learner's answer (type and code); the
/// learner must then close the connection.
std::pair<proto::message_type, proto::error_code> send_and_expect_refusal(
    served_learner& s, const std::vector<std::vector<std::byte>>& frames) {
  auto c = s.transport.connect(s.endpoint);
  for (const auto& f : frames) {
    const std::span<const std::byte> bufs[] = {f};
    c.write(bufs);
  }
  proto::frame_header h{};
  std::vector<std::byte> payload;
  for (;;) {  // skip the welcome when the violation comes after the handshake
    std::array<std::byte, proto::header_size> raw{};
    c.read(raw);
    REQUIRE(proto::decode_header(raw, proto::default_max_payload, h) == proto::error_code::none);
    payload.resize(h.payload_length);
    if (!payload.empty())
      c.read(payload);
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

}  // namespace

TEST_CASE("learner refuses malformed frames and keeps serving other actors",
          "[learner][bad_input]") {
  served_learner s("learner-bad-input");
  REQUIRE(s.still_served());
  const auto hello = cartpole_hello();
  const auto step_header = header(proto::magic, proto::version,
                                  static_cast<std::uint16_t>(proto::message_type::step), 8);

  SECTION("bad magic") {
    const auto r = send_and_expect_refusal(s, {header(0xDEADBEEF, proto::version, 1, 0)});
    CHECK(r.first == proto::message_type::reject);
    CHECK(r.second == proto::error_code::bad_magic);
  }
  SECTION("wrong version") {
    const auto r = send_and_expect_refusal(s, {header(proto::magic, 99, 1, 0)});
    CHECK(r.second == proto::error_code::unsupported_version);
  }
  SECTION("oversized frame") {
    const auto r = send_and_expect_refusal(
        s, {hello, header(proto::magic, proto::version,
                          static_cast<std::uint16_t>(proto::message_type::step), 1u << 30)});
    CHECK(r.first == proto::message_type::error);
    CHECK(r.second == proto::error_code::frame_too_large);
  }
  SECTION("truncated hello") {
    auto cut = hello;
    cut.resize(cut.size() - 3);  // the header still claims the full payload
    auto h = header(proto::magic, proto::version, 1,
                    static_cast<std::uint32_t>(cut.size() - proto::header_size));
    std::copy(h.begin(), h.end(), cut.begin());
    const auto r = send_and_expect_refusal(s, {cut});
    CHECK(r.first == proto::message_type::reject);
    CHECK(r.second == proto::error_code::truncated_frame);
  }
  SECTION("wrong observation size") {
    std::vector<std::byte> step = step_header;
    step.resize(step.size() + 8);
    const auto r = send_and_expect_refusal(s, {hello, step});
    CHECK(r.first == proto::message_type::error);
    CHECK(r.second == proto::error_code::wrong_observation_size);
  }
  SECTION("unknown message type") {
    const auto r = send_and_expect_refusal(s, {header(proto::magic, proto::version, 99, 0)});
    CHECK(r.second == proto::error_code::unknown_message_type);
  }
  SECTION("step before the handshake") {
    std::vector<std::byte> step = step_header;
    step.resize(step.size() + 8);
    const auto r = send_and_expect_refusal(s, {step});
    CHECK(r.first == proto::message_type::reject);
    CHECK(r.second == proto::error_code::unexpected_message);
  }
  SECTION("observation spec mismatch is named") {
    std::vector<std::byte> frame;
    proto::encode_hello(
        {7, 1, {seedrl::dtype::uint8, {84, 84, 1}}, seedrl::cartpole::action_spec(), "atari"},
        frame);
    const auto r = send_and_expect_refusal(s, {frame});
    CHECK(r.second == proto::error_code::spec_mismatch);
  }
  CHECK(s.still_served());
}
