// The wire protocol's golden vectors in test/fixtures/protocol/: for each file, the C++ encoder
// given the values that test/fixtures/protocol/README.md documents writes exactly the file's
// bytes, and the decoder reads those values back. python/tests/test_protocol_vectors.py checks
// the same files from the Python actor's side, so the two implementations cannot drift apart
// without one of the suites failing.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "seedrl/core/spec.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/security/challenge.hpp"

namespace {

namespace p = seedrl::protocol;
namespace sec = seedrl::security;
using bytes = std::vector<std::byte>;
using seedrl::dtype;
using ec = seedrl::protocol::error_code;

const std::filesystem::path vector_dir = std::filesystem::path(SEEDRL_TEST_FIXTURES) / "protocol";

/// The files this test knows; a new file without a check here fails the test below.
const std::set<std::string> known_vectors = {
    "hello_cartpole.bin",      "hello_atari.bin",    "hello_continuous.bin",
    "hello_continuous_v2.bin", "welcome.bin",        "reject_spec_mismatch.bin",
    "error_auth_failed.bin",   "close.bin",          "close_shutting_down.bin",
    "step_cartpole.bin",       "step_uint8.bin",     "actions_discrete.bin",
    "actions_continuous.bin",  "keepalive.bin",      "actor_stats.bin",
    "auth_request.bin",        "auth_challenge.bin", "auth_response.bin",
    "auth_confirm.bin",
};

bytes read_vector(const std::string& name) {
  std::ifstream in(vector_dir / name, std::ios::binary);
  INFO("vector file " << (vector_dir / name).string());
  REQUIRE(in.good());
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  bytes out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

std::string to_hex_lines(std::span<const std::byte> b) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto v = std::to_integer<unsigned>(b[i]);
    s += i != 0 && i % 16 == 0 ? "\n" : (i != 0 ? " " : "");
    s += digits[v >> 4];
    s += digits[v & 15];
  }
  return s;
}

/// Splits a whole frame, checking the header's type; returns the payload.
std::span<const std::byte> vector_payload_of(const bytes& frame, p::message_type type) {
  p::frame_header h{};
  std::span<const std::byte> payload;
  std::string why;
  const ec code = p::decode_frame(frame, p::default_max_payload, h, payload, &why);
  INFO(why);
  REQUIRE(code == ec::none);
  CHECK(h.type == type);
  CHECK(h.payload_length == frame.size() - p::header_size);
  return payload;
}

std::array<std::byte, 32> counting(unsigned first) {
  std::array<std::byte, 32> out{};
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::byte>(first + i);
  return out;
}

std::span<const std::byte> example_secret() {
  static constexpr std::string_view text = "seedrl-example-secret-0123456789";
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

void check_hello(const std::string& file, const p::hello& want, std::uint16_t version = 1) {
  const bytes golden = read_vector(file);
  bytes encoded;
  p::encode_hello(want, encoded);
  CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
  p::hello got;
  REQUIRE(p::decode_hello(vector_payload_of(golden, p::message_type::hello), got) == ec::none);
  CHECK(got.actor_id == want.actor_id);
  CHECK(got.num_envs == want.num_envs);
  CHECK(got.observation == want.observation);
  CHECK(got.action == want.action);
  CHECK(got.name == want.name);
  CHECK(got.version == version);
}

void check_status(const std::string& file, p::message_type type, ec code,
                  const std::string& message) {
  const bytes golden = read_vector(file);
  bytes encoded;
  p::encode_status(type, {code, message}, encoded);
  CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
  p::status_message got;
  REQUIRE(p::decode_status(vector_payload_of(golden, type), got) == ec::none);
  CHECK(got.code == code);
  CHECK(got.message == message);
}

template <class T>
std::span<const std::byte> raw(const std::vector<T>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace

TEST_CASE("protocol vector directory holds exactly the documented vectors", "[protocol]") {
  REQUIRE(std::filesystem::is_directory(vector_dir));
  std::set<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(vector_dir)) {
    if (entry.path().extension() == ".bin")
      found.insert(entry.path().filename().string());
  }
  CHECK(found == known_vectors);
}

TEST_CASE("hello vectors match the encoder and decode to their values", "[protocol]") {
  check_hello(
      "hello_cartpole.bin",
      {0x0102030405060708ull, 2, {dtype::float32, {4}}, seedrl::action_spec::discrete(2), "t"});
  check_hello("hello_atari.bin",
              {42, 8, {dtype::uint8, {84, 84, 1}}, seedrl::action_spec::discrete(6), "pong:7"});
  check_hello("hello_continuous.bin",
              {7, 1, {dtype::float32, {3}}, seedrl::action_spec::continuous({1}, -2.0, 2.0), ""});
  constexpr double inf = std::numeric_limits<double>::infinity();
  check_hello("hello_continuous_v2.bin",
              {9,
               2,
               {dtype::float32, {3}},
               seedrl::action_spec::continuous({3}, {-1.0, -2.0, -inf}, {1.0, 0.5, inf}),
               "box"},
              2);
  // Written by hand from docs/protocol.md's version-2 layout: every low, then every high.
  CHECK(to_hex_lines(read_vector("hello_continuous_v2.bin")) ==
        "53 44 52 4c 01 00 01 00 59 00 00 00 00 00 00 00\n"  // header, payload 89 bytes
        "02 00 00 00 09 00 00 00 00 00 00 00 02 00 00 00\n"  // version 2, actor_id 9, 2 envs
        "03 01 00 00 03 00 00 00 02 00 00 00 01 00 00 00\n"  // float32 [3]; continuous rank 1
        "03 00 00 00 00 00 00 00 00 00 f0 bf 00 00 00 00\n"  // dim 3; low -1, -2,
        "00 00 00 c0 00 00 00 00 00 00 f0 ff 00 00 00 00\n"  // -inf; high 1,
        "00 00 f0 3f 00 00 00 00 00 00 e0 3f 00 00 00 00\n"  // 0.5, inf
        "00 00 f0 7f 03 00 62 6f 78");                       // name "box"
  // The CartPole hello is docs/protocol.md's golden vector too.
  CHECK(to_hex_lines(read_vector("hello_cartpole.bin")) ==
        "53 44 52 4c 01 00 01 00 23 00 00 00 00 00 00 00\n"
        "01 00 00 00 08 07 06 05 04 03 02 01 02 00 00 00\n"
        "03 01 00 00 04 00 00 00 01 00 00 00 02 00 00 00\n"
        "01 00 74");
}

TEST_CASE("welcome vector matches the encoder and decodes to its values", "[protocol]") {
  const bytes golden = read_vector("welcome.bin");
  bytes encoded;
  p::encode_welcome({8, 2, 64u * 1024u * 1024u, 1000}, encoded);
  CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
  p::welcome got;
  REQUIRE(p::decode_welcome(vector_payload_of(golden, p::message_type::welcome), got) == ec::none);
  CHECK(got.first_env_slot == 8);
  CHECK(got.num_envs == 2);
  CHECK(got.max_payload_bytes == 67108864);
  CHECK(got.keepalive_interval_ms == 1000);
}

TEST_CASE("reject error and close vectors match the encoder and decode", "[protocol]") {
  const std::string mismatch =
      "observation shape: actor sends [2], learner expects [4]; action count: actor has 3, "
      "learner expects 2";
  // The learner's own wording, for a MountainCar-v0 actor at a CartPole learner.
  CHECK(p::describe_spec_mismatch({dtype::float32, {4}}, seedrl::action_spec::discrete(2),
                                  {dtype::float32, {2}},
                                  seedrl::action_spec::discrete(3)) == mismatch);
  check_status("reject_spec_mismatch.bin", p::message_type::reject, ec::spec_mismatch, mismatch);
  check_status("error_auth_failed.bin", p::message_type::error, ec::auth_failed,
               "authentication failed");
  check_status("close.bin", p::message_type::close, ec::none, "actor stopping");
  check_status("close_shutting_down.bin", p::message_type::close, ec::shutting_down,
               "the learner is stopping");
}

TEST_CASE("step vectors match the encoder and parse to their values", "[protocol]") {
  SECTION("float32 CartPole with env 1 done and truncated") {
    const bytes golden = read_vector("step_cartpole.bin");
    const std::vector<std::uint64_t> run_ids{0xDEADBEEFull, 0x0123456789ABCDEFull};
    const std::vector<float> rewards{1.0f, -0.5f};
    const std::vector<std::uint8_t> dones{0, 1}, truncateds{0, 1};
    const std::vector<float> obs{0.5f, -1.0f, 2.0f, 0.0f, 0.25f, 1.5f, -2.0f, 3.0f};
    bytes encoded(p::step_frame_size(2, 16));
    encoded.resize(
        p::encode_step(encoded, dtype::float32, {run_ids, rewards, dones, truncateds, raw(obs)}));
    CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
    p::step_view v;
    REQUIRE(p::parse_step(vector_payload_of(golden, p::message_type::step), 2, 16, v) == ec::none);
    REQUIRE(v.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(v.env_index(i) == i);
      CHECK(v.run_id(i) == run_ids[i]);
      CHECK(v.reward(i) == rewards[i]);
      CHECK(v.done(i) == (dones[i] != 0));
      CHECK(v.truncated(i) == (truncateds[i] != 0));
      std::array<float, 4> o{};
      v.copy_observation(i, dtype::float32, std::as_writable_bytes(std::span(o)));
      CHECK(std::equal(o.begin(), o.end(), obs.begin() + static_cast<std::ptrdiff_t>(4 * i)));
    }
  }
  SECTION("uint8 observations stay one byte per element") {
    const bytes golden = read_vector("step_uint8.bin");
    const std::vector<std::uint64_t> run_ids{1, 0xFFFFFFFFFFFFFFFFull};
    const std::vector<float> rewards{0.0f, 21.0f};
    const std::vector<std::uint8_t> dones{0, 1}, truncateds{0, 0};
    const std::vector<std::uint8_t> obs{0, 1, 2, 127, 128, 255, 255, 254, 253, 3, 2, 1};
    bytes encoded(p::step_frame_size(2, 6));
    encoded.resize(
        p::encode_step(encoded, dtype::uint8, {run_ids, rewards, dones, truncateds, raw(obs)}));
    CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
    p::step_view v;
    REQUIRE(p::parse_step(vector_payload_of(golden, p::message_type::step), 2, 6, v) == ec::none);
    REQUIRE(v.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(v.run_id(i) == run_ids[i]);
      CHECK(v.reward(i) == rewards[i]);
      CHECK(v.done(i) == (dones[i] != 0));
      CHECK_FALSE(v.truncated(i));
      const auto o = v.observation(i);
      CHECK(std::memcmp(o.data(), obs.data() + 6 * i, 6) == 0);
    }
  }
}

TEST_CASE("actions vectors match the encoder and parse to their values", "[protocol]") {
  {
    const bytes golden = read_vector("actions_discrete.bin");
    const auto spec = seedrl::action_spec::discrete(2);
    const std::vector<std::int32_t> actions{1, 0};
    bytes encoded(p::actions_frame_size(2, spec));
    encoded.resize(p::encode_discrete_actions(encoded, actions));
    CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
    std::array<std::int32_t, 2> got{};
    REQUIRE(p::parse_actions(vector_payload_of(golden, p::message_type::actions), 2, spec,
                             std::span<std::int32_t>(got)) == ec::none);
    CHECK(got == std::array<std::int32_t, 2>{1, 0});
  }
  {
    const bytes golden = read_vector("actions_continuous.bin");
    const auto spec = seedrl::action_spec::continuous({2}, -1.0, 1.0);
    const std::vector<float> actions{0.5f, -1.0f};
    bytes encoded(p::actions_frame_size(1, spec));
    encoded.resize(p::encode_continuous_actions(encoded, 1, actions));
    CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
    std::array<float, 2> got{};
    REQUIRE(p::parse_actions(vector_payload_of(golden, p::message_type::actions), 1, spec,
                             std::span<float>(got)) == ec::none);
    CHECK(got == std::array<float, 2>{0.5f, -1.0f});
  }
}

TEST_CASE("keepalive and actor_stats vectors match the encoder and decode", "[protocol]") {
  {
    const bytes golden = read_vector("keepalive.bin");
    std::array<std::byte, p::header_size> encoded{};
    p::encode_header(encoded, p::message_type::keepalive, 0);
    CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
    CHECK(vector_payload_of(golden, p::message_type::keepalive).empty());
  }
  {
    const bytes golden = read_vector("actor_stats.bin");
    std::array<std::byte, p::header_size + p::actor_stats_payload_size> encoded{};
    p::encode_actor_stats(encoded, {3, 0.5, 2.0});
    CHECK(to_hex_lines(encoded) == to_hex_lines(golden));
    p::actor_stats got;
    REQUIRE(p::decode_actor_stats(vector_payload_of(golden, p::message_type::actor_stats), got) ==
            ec::none);
    CHECK(got.steps == 3);
    CHECK(got.env_seconds == 0.5);
    CHECK(got.wait_seconds == 2.0);
  }
}

TEST_CASE("auth vectors match the encoder and carry the docs/security.md proofs", "[protocol]") {
  const auto nl = counting(0x00), na = counting(0x20);
  const auto pa = sec::compute_proof(example_secret(), sec::auth_role::actor, nl, na);
  const auto pl = sec::compute_proof(example_secret(), sec::auth_role::learner, nl, na);
  bytes encoded;

  const bytes request = read_vector("auth_request.bin");
  p::encode_auth_request(encoded);
  CHECK(to_hex_lines(encoded) == to_hex_lines(request));
  CHECK(p::decode_auth_request(vector_payload_of(request, p::message_type::auth_request)) ==
        ec::none);

  const bytes challenge = read_vector("auth_challenge.bin");
  p::encode_auth_challenge(nl, encoded);
  CHECK(to_hex_lines(encoded) == to_hex_lines(challenge));
  std::array<std::byte, 32> nonce{}, proof{};
  REQUIRE(p::decode_auth_challenge(vector_payload_of(challenge, p::message_type::auth_challenge),
                                   nonce) == ec::none);
  CHECK(nonce == nl);

  const bytes response = read_vector("auth_response.bin");
  p::encode_auth_response(na, pa, encoded);
  CHECK(to_hex_lines(encoded) == to_hex_lines(response));
  REQUIRE(p::decode_auth_response(vector_payload_of(response, p::message_type::auth_response),
                                  nonce, proof) == ec::none);
  CHECK(nonce == na);
  CHECK(to_hex_lines(proof) ==
        "ce 1f 00 95 46 e9 8c 12 38 95 81 92 17 e2 8f 0e\n"
        "f2 c2 48 39 30 92 ce 82 eb fb 08 1a 84 b4 d3 d1");

  const bytes confirm = read_vector("auth_confirm.bin");
  p::encode_auth_confirm(pl, encoded);
  CHECK(to_hex_lines(encoded) == to_hex_lines(confirm));
  REQUIRE(p::decode_auth_confirm(vector_payload_of(confirm, p::message_type::auth_confirm),
                                 proof) == ec::none);
  CHECK(to_hex_lines(proof) ==
        "2f 4f 32 6e 17 51 a2 04 1c 83 b6 62 f6 9f 58 7b\n"
        "7b 02 eb 26 65 31 c6 10 2c 9f 37 69 16 ac 85 c2");
}
