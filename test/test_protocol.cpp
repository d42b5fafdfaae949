// The actor <-> learner wire protocol: golden byte vectors (shared with other-language
// clients), round trips, and every violation a receiver must catch (docs/protocol.md).
#include "seedrl/protocol/frame.hpp"

#include <array>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"

namespace p = seedrl::protocol;
using bytes = std::vector<std::byte>;
using seedrl::dtype;
using ec = seedrl::protocol::error_code;

namespace {

/// "53 44 52 4C" -> bytes; spaces and newlines are ignored so vectors can be laid out by field.
bytes from_hex(std::string_view hex) {
  bytes out;
  int high = -1;
  for (char c : hex) {
    int v = -1;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      continue;
    }
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<std::byte>(high * 16 + v));
      high = -1;
    }
  }
  REQUIRE(high < 0);
  return out;
}

std::string to_hex(std::span<const std::byte> b) {
  static const char* digits = "0123456789ABCDEF";
  std::string s;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto v = std::to_integer<unsigned>(b[i]);
    if (i != 0) {
      s += ' ';
    }
    s += digits[v >> 4];
    s += digits[v & 15];
  }
  return s;
}

std::span<const std::byte> payload_of(const bytes& frame) {
  return std::span<const std::byte>(frame).subspan(p::header_size);
}

p::hello cartpole_hello() {
  p::hello h;
  h.actor_id = 0x0102030405060708ull;
  h.num_envs = 2;
  h.observation = {dtype::float32, {4}};
  h.action = seedrl::action_spec::discrete(2);
  h.name.assign(1, 't');  // not = "t": GCC 12 -O3 warns falsely (-Wrestrict, PR 105329)
  return h;
}

const char* const cartpole_hello_hex =
    "53 44 52 4C 01 00 01 00 23 00 00 00 00 00 00 00"  // header: hello, 35 bytes
    "01 00 00 00"                                      // protocol_version 1, reserved
    "08 07 06 05 04 03 02 01"                          // actor_id
    "02 00 00 00"                                      // num_envs 2
    "03 01 00 00"                                      // float32, rank 1, reserved
    "04 00 00 00"                                      // dims [4]
    "01 00 00 00"                                      // discrete, reserved
    "02 00 00 00"                                      // num_actions 2
    "01 00 74";                                        // name "t"

const char* const pendulum_hello_hex =
    "53 44 52 4C 01 00 01 00 36 00 00 00 00 00 00 00"  // header: hello, 54 bytes
    "01 00 00 00"                                      // protocol_version 1, reserved
    "07 00 00 00 00 00 00 00"                          // actor_id 7
    "01 00 00 00"                                      // num_envs 1
    "03 01 00 00 03 00 00 00"                          // float32 [3]
    "02 00 00 00"                                      // continuous, reserved
    "01 00 00 00 01 00 00 00"                          // rank 1, reserved, dims [1]
    "00 00 00 00 00 00 00 C0"                          // low -2.0
    "00 00 00 00 00 00 00 40"                          // high 2.0
    "00 00";                                           // empty name

// Two CartPole envs: env 0 mid-episode, env 1 just truncated.
const char* const step_hex =
    "53 44 52 4C 01 00 04 00 4C 00 00 00 00 00 00 00"   // header: step, 76 bytes
    "02 00 00 00"                                       // num_envs 2
    "00 00 00 00 00 00 00 00"                           // env 0, flags 0, reserved
    "EF BE AD DE 00 00 00 00"                           // run_id 0xDEADBEEF
    "00 00 80 3F"                                       // reward 1.0
    "00 00 00 3F 00 00 80 BF 00 00 00 40 00 00 00 00"   // obs 0.5 -1 2 0
    "01 00 00 00 03 00 00 00"                           // env 1, done + truncated
    "EF CD AB 89 67 45 23 01"                           // run_id 0x0123456789ABCDEF
    "00 00 00 BF"                                       // reward -0.5
    "00 00 80 3E 00 00 C0 3F 00 00 00 C0 00 00 40 40";  // obs 0.25 1.5 -2 3

const std::vector<std::uint64_t> step_run_ids = {0xDEADBEEFull, 0x0123456789ABCDEFull};
const std::vector<float> step_rewards = {1.0f, -0.5f};
const std::vector<std::uint8_t> step_dones = {0, 1};
const std::vector<std::uint8_t> step_truncateds = {0, 1};
const std::vector<float> step_obs = {0.5f, -1.0f, 2.0f, 0.0f, 0.25f, 1.5f, -2.0f, 3.0f};

bytes encode_golden_step() {
  bytes frame(p::step_frame_size(2, 16));
  const std::size_t n = p::encode_step(frame, dtype::float32,
                                       {step_run_ids, step_rewards, step_dones, step_truncateds,
                                        std::as_bytes(std::span<const float>(step_obs))});
  REQUIRE(n == frame.size());
  return frame;
}

ec decode_hello_frame(const bytes& frame, std::string* why = nullptr) {
  p::hello h;
  return p::decode_hello(payload_of(frame), h, why);
}

ec parse_step_payload(std::span<const std::byte> payload, std::uint32_t envs, std::size_t obs_bytes,
                      std::string* why = nullptr) {
  p::step_view v;
  return p::parse_step(payload, envs, obs_bytes, v, why);
}

}  // namespace

TEST_CASE("frame header has the documented bytes and round trips", "[protocol]") {
  std::array<std::byte, p::header_size> h{};
  p::encode_header(h, p::message_type::step, 76);
  CHECK(to_hex(h) == "53 44 52 4C 01 00 04 00 4C 00 00 00 00 00 00 00");
  CHECK(to_hex(std::span<const std::byte>(h).first(4)) == to_hex(from_hex("53 44 52 4C")));
  for (std::uint16_t t = 1; t <= 8; ++t) {
    const auto type = static_cast<p::message_type>(t);
    const std::uint32_t len = type == p::message_type::keepalive ? 0 : 12;
    p::encode_header(h, type, len);
    p::frame_header out;
    REQUIRE(p::decode_header(h, p::default_max_payload, out) == ec::none);
    CHECK(out.type == type);
    CHECK(out.payload_length == len);
  }
  p::encode_header(h, p::message_type::keepalive, 0);
  CHECK(to_hex(h) == "53 44 52 4C 01 00 08 00 00 00 00 00 00 00 00 00");
}

TEST_CASE("decode_header rejects each malformed header with its code", "[protocol]") {
  std::array<std::byte, p::header_size> h{};
  p::frame_header out;
  std::string why;
  const auto reset = [&] { p::encode_header(h, p::message_type::step, 100); };

  reset();
  h[0] = std::byte{'G'};
  CHECK(p::decode_header(h, 1000, out, &why) == ec::bad_magic);
  CHECK(why.find("47 44 52 4c") != std::string::npos);

  reset();
  h[4] = std::byte{2};
  CHECK(p::decode_header(h, 1000, out, &why) == ec::unsupported_version);
  CHECK(why.find("version 2") != std::string::npos);

  for (std::uint16_t bad_type : {0, 14, 0xFFFF}) {
    reset();
    h[6] = static_cast<std::byte>(bad_type & 0xFF);
    h[7] = static_cast<std::byte>(bad_type >> 8);
    CHECK(p::decode_header(h, 1000, out) == ec::unknown_message_type);
  }

  for (std::size_t at = 12; at < 16; ++at) {
    reset();
    h[at] = std::byte{1};
    CHECK(p::decode_header(h, 1000, out) == ec::bad_reserved_bits);
  }

  // Version is checked before type and reserved bits, whatever else is wrong.
  reset();
  h[4] = std::byte{9};
  h[6] = std::byte{0x7F};
  h[12] = std::byte{1};
  CHECK(p::decode_header(h, 1000, out) == ec::unsupported_version);

  // Data frames against the caller's limit; control frames against their fixed cap.
  p::encode_header(h, p::message_type::step, 1001);
  CHECK(p::decode_header(h, 1000, out, &why) == ec::frame_too_large);
  CHECK(why.find("1001") != std::string::npos);
  p::encode_header(h, p::message_type::step, 1000);
  CHECK(p::decode_header(h, 1000, out) == ec::none);
  p::encode_header(h, p::message_type::actions, 1001);
  CHECK(p::decode_header(h, 1000, out) == ec::frame_too_large);
  p::encode_header(h, p::message_type::hello, p::max_hello_payload + 1);
  CHECK(p::decode_header(h, p::default_max_payload, out) == ec::frame_too_large);
  p::encode_header(h, p::message_type::error, p::max_control_payload);
  CHECK(p::decode_header(h, 16, out) == ec::none);
  p::encode_header(h, p::message_type::keepalive, 1);
  CHECK(p::decode_header(h, p::default_max_payload, out) == ec::frame_too_large);
  p::encode_header(h, p::message_type::step, 0xFFFFFFFFu);
  CHECK(p::decode_header(h, p::default_max_payload, out) == ec::frame_too_large);
}

TEST_CASE("decode_frame needs exactly one whole frame", "[protocol]") {
  const bytes frame = from_hex(cartpole_hello_hex);
  p::frame_header h;
  std::span<const std::byte> payload;
  REQUIRE(p::decode_frame(frame, p::default_max_payload, h, payload) == ec::none);
  CHECK(h.type == p::message_type::hello);
  CHECK(payload.size() == 35);
  for (std::size_t n = 0; n < frame.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    CHECK(p::decode_frame(std::span<const std::byte>(frame).first(n), p::default_max_payload, h,
                          payload) == ec::truncated_frame);
  }
  bytes longer = frame;
  longer.push_back(std::byte{0});
  CHECK(p::decode_frame(longer, p::default_max_payload, h, payload) == ec::truncated_frame);
}

TEST_CASE("hello golden vectors decode and re-encode byte for byte", "[protocol]") {
  bytes frame;
  p::encode_hello(cartpole_hello(), frame);
  CHECK(to_hex(frame) == to_hex(from_hex(cartpole_hello_hex)));

  p::hello h;
  REQUIRE(p::decode_hello(payload_of(frame), h) == ec::none);
  CHECK(h.actor_id == 0x0102030405060708ull);
  CHECK(h.num_envs == 2);
  CHECK(h.observation == seedrl::observation_spec{dtype::float32, {4}});
  CHECK(h.action == seedrl::action_spec::discrete(2));
  CHECK(h.name == "t");

  const bytes pendulum = from_hex(pendulum_hello_hex);
  REQUIRE(p::decode_hello(payload_of(pendulum), h) == ec::none);
  CHECK(h.actor_id == 7);
  CHECK(h.num_envs == 1);
  CHECK(h.observation == seedrl::observation_spec{dtype::float32, {3}});
  CHECK(h.action == seedrl::action_spec::continuous({1}, -2.0, 2.0));
  CHECK(h.name.empty());
  p::encode_hello(h, frame);
  CHECK(to_hex(frame) == to_hex(pendulum));
}

TEST_CASE("hello round trips every dtype and shapes up to max rank", "[protocol]") {
  for (dtype t : {dtype::uint8, dtype::int32, dtype::float32, dtype::float64}) {
    p::hello h;
    h.actor_id = 0xFFFFFFFFFFFFFFFFull;
    h.num_envs = 0xFFFFFFFFu;
    h.observation = {t, {84, 84, 1}};
    h.action = seedrl::action_spec::continuous({2, 1, 1, 1, 1, 3}, -1.0,
                                               std::numeric_limits<double>::infinity());
    h.name = std::string(p::max_name_length, 'x');
    h.name.replace(0, 6, "h\xC3\xA9llo");  // é, two bytes of UTF-8
    bytes frame;
    p::encode_hello(h, frame);
    CHECK(frame.size() - p::header_size <= p::max_hello_payload);
    p::hello back;
    REQUIRE(p::decode_hello(payload_of(frame), back) == ec::none);
    CHECK(back.actor_id == h.actor_id);
    CHECK(back.num_envs == h.num_envs);
    CHECK(back.observation == h.observation);
    CHECK(back.action == h.action);
    CHECK(back.name == h.name);
  }
}

TEST_CASE("hello truncated at every length or with trailing bytes is truncated_frame",
          "[protocol]") {
  for (const char* hex : {cartpole_hello_hex, pendulum_hello_hex}) {
    const bytes frame = from_hex(hex);
    const auto payload = payload_of(frame);
    for (std::size_t n = 0; n < payload.size(); ++n) {
      INFO("prefix of " << n << " bytes");
      p::hello h;
      std::string why;
      CHECK(p::decode_hello(payload.first(n), h, &why) == ec::truncated_frame);
      CHECK_FALSE(why.empty());
    }
    bytes longer(payload.begin(), payload.end());
    longer.push_back(std::byte{0});
    p::hello h;
    CHECK(p::decode_hello(longer, h) == ec::truncated_frame);
  }
}

TEST_CASE("decode_hello rejects each malformed field with its code", "[protocol]") {
  const bytes good = from_hex(cartpole_hello_hex);
  // Offsets into the frame (header included) of the CartPole hello's fields.
  constexpr std::size_t version_at = 16, num_envs_at = 28, dtype_at = 32, rank_at = 33, dim_at = 36,
                        kind_at = 40, num_actions_at = 44, name_len_at = 48;
  const auto patched = [&](std::size_t at, std::initializer_list<unsigned> values) {
    bytes f = good;
    std::size_t i = at;
    for (unsigned v : values) {
      f[i++] = static_cast<std::byte>(v);
    }
    return f;
  };
  std::string why;

  // Versions 1 and 2 are spoken; a discrete hello reads the same in both.
  for (unsigned bad : {0u, 3u, 255u}) {
    CHECK(decode_hello_frame(patched(version_at, {bad}), &why) == ec::unsupported_version);
    CHECK(why.find("speaks 1 and 2") != std::string::npos);
  }
  CHECK(decode_hello_frame(patched(version_at, {2})) == ec::none);
  CHECK(decode_hello_frame(patched(num_envs_at, {0}), &why) == ec::bad_handshake);
  CHECK(why.find("num_envs") != std::string::npos);
  for (unsigned bad : {0u, 5u, 255u}) {
    CHECK(decode_hello_frame(patched(dtype_at, {bad}), &why) == ec::bad_handshake);
    CHECK(why.find("dtype") != std::string::npos);
  }
  CHECK(decode_hello_frame(patched(rank_at, {0}), &why) == ec::bad_handshake);
  CHECK(why.find("rank 0") != std::string::npos);
  CHECK(decode_hello_frame(patched(rank_at, {7}), &why) == ec::bad_handshake);
  CHECK(why.find("rank 7") != std::string::npos);
  CHECK(decode_hello_frame(patched(dim_at, {0, 0, 0, 0}), &why) == ec::bad_handshake);
  CHECK(why.find("dimension 0 is 0") != std::string::npos);
  for (unsigned bad : {0u, 3u}) {
    CHECK(decode_hello_frame(patched(kind_at, {bad}), &why) == ec::bad_handshake);
    CHECK(why.find("action kind") != std::string::npos);
  }
  CHECK(decode_hello_frame(patched(num_actions_at, {0, 0, 0, 0})) == ec::bad_handshake);
  CHECK(decode_hello_frame(patched(num_actions_at, {0xFF, 0xFF, 0xFF, 0xFF})) == ec::bad_handshake);
  // Every reserved byte: after the version, the observation rank and the action kind.
  for (std::size_t at : {18u, 19u, 34u, 35u, 41u, 42u, 43u}) {
    INFO("reserved byte at " << at);
    CHECK(decode_hello_frame(patched(at, {1})) == ec::bad_reserved_bits);
  }

  // Name: too long, invalid UTF-8, control characters.
  {
    bytes f(good.begin(), good.begin() + name_len_at);
    const std::size_t n = p::max_name_length + 1;
    f.push_back(static_cast<std::byte>(n & 0xFF));
    f.push_back(static_cast<std::byte>(n >> 8));
    f.insert(f.end(), n, std::byte{'a'});
    CHECK(decode_hello_frame(f, &why) == ec::bad_handshake);
    CHECK(why.find("257") != std::string::npos);
  }
  for (std::string_view bad_name :
       {std::string_view("\xFF"), std::string_view("\xC3"), std::string_view("\xC0\xAF"),
        std::string_view("\xED\xA0\x80"), std::string_view("a\nb"), std::string_view("\x1B[2J"),
        std::string_view("\x7F"), std::string_view("\xC2\x9B")}) {
    bytes f(good.begin(), good.begin() + name_len_at);
    f.push_back(static_cast<std::byte>(bad_name.size()));
    f.push_back(std::byte{0});
    for (char c : bad_name) {
      f.push_back(static_cast<std::byte>(c));
    }
    CHECK(decode_hello_frame(f, &why) == ec::bad_handshake);
    CHECK(why.find("name") != std::string::npos);
  }

  // Observation too large to ever fit a frame: [65536, 65536] float32 is 2^34 bytes.
  {
    p::hello h = cartpole_hello();
    h.observation.shape = seedrl::tensor_shape{65536, 65536};
    bytes f;
    CHECK_THROWS_AS(p::encode_hello(h, f), std::invalid_argument);
    bytes raw(good.begin(), good.begin() + rank_at);
    for (unsigned v : {2u, 0u, 0u, 0u, 0u, 1u, 0u, 0u, 0u, 1u, 0u}) {  // rank 2, [65536, 65536]
      raw.push_back(static_cast<std::byte>(v));
    }
    raw.insert(raw.end(), good.begin() + kind_at, good.end());
    CHECK(decode_hello_frame(raw, &why) == ec::bad_handshake);
    CHECK(why.find("2^31") != std::string::npos);
  }

  // Found by fuzzing: [2^32-1, 2^32-1] saturates the element count at 2^63, and 2^63 times a
  // 2-, 4- or 8-byte element wraps to 0, which passed the byte limit. Still too large.
  {
    bytes raw(good.begin(), good.begin() + rank_at);
    for (unsigned v : {2u, 0u, 0u, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu, 0xFFu}) {
      raw.push_back(static_cast<std::byte>(v));  // rank 2, [2^32-1, 2^32-1]
    }
    raw.insert(raw.end(), good.begin() + kind_at, good.end());
    CHECK(decode_hello_frame(raw, &why) == ec::bad_handshake);
    CHECK(why.find("2^31") != std::string::npos);
    p::hello h = cartpole_hello();
    h.observation.shape = seedrl::tensor_shape{4294967295, 4294967295};
    bytes f;
    CHECK_THROWS_AS(p::encode_hello(h, f), std::invalid_argument);
  }

  // Continuous bounds: low must be below high, and neither NaN.
  const bytes pendulum = from_hex(pendulum_hello_hex);
  constexpr std::size_t act_rank_at = 16 + 28, low_at = 16 + 36, high_at = 16 + 44;
  {
    bytes f = pendulum;
    std::memcpy(f.data() + high_at, f.data() + low_at, 8);  // high = low = -2
    CHECK(decode_hello_frame(f, &why) == ec::bad_handshake);
    CHECK(why.find("bounds") != std::string::npos);
    f = pendulum;
    f[low_at + 6] = std::byte{0xF8};  // low = NaN (0xFFF8...)
    f[low_at + 7] = std::byte{0xFF};
    CHECK(decode_hello_frame(f) == ec::bad_handshake);
    f = pendulum;
    f[act_rank_at] = std::byte{0};
    CHECK(decode_hello_frame(f) == ec::bad_handshake);
    f = pendulum;
    f[act_rank_at] = std::byte{7};
    CHECK(decode_hello_frame(f) == ec::bad_handshake);
    for (std::size_t at = act_rank_at + 1; at < act_rank_at + 4; ++at) {
      f = pendulum;
      f[at] = std::byte{1};
      CHECK(decode_hello_frame(f) == ec::bad_reserved_bits);
    }
  }

  // A payload over the hello limit is refused before it is parsed.
  bytes huge(p::max_hello_payload + 1);
  p::hello h;
  CHECK(p::decode_hello(huge, h) == ec::frame_too_large);
}

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// Hello version 2, by hand from docs/protocol.md: a Box of shape [2] with low [-1, -inf] and
// high [1, 2].
const char* const box_v2_hello_hex =
    "53 44 52 4C 01 00 01 00 46 00 00 00 00 00 00 00"  // header: hello, 70 bytes
    "02 00 00 00"                                      // protocol_version 2, reserved
    "07 00 00 00 00 00 00 00"                          // actor_id 7
    "01 00 00 00"                                      // num_envs 1
    "03 01 00 00 03 00 00 00"                          // float32 [3]
    "02 00 00 00"                                      // continuous, reserved
    "01 00 00 00 02 00 00 00"                          // rank 1, reserved, dims [2]
    "00 00 00 00 00 00 F0 BF 00 00 00 00 00 00 F0 FF"  // low: -1, -inf
    "00 00 00 00 00 00 F0 3F 00 00 00 00 00 00 00 40"  // high: 1, 2
    "00 00";                                           // empty name
// Frame offsets of its fields.
constexpr std::size_t box_dim_at = 48, box_low_at = 52, box_high_at = 68;

seedrl::action_spec box_v2_action() {
  return seedrl::action_spec::continuous({2}, {-1.0, -inf}, {1.0, 2.0});
}

p::hello box_v2_hello() {
  p::hello h;
  h.actor_id = 7;
  h.num_envs = 1;
  h.observation = {dtype::float32, {3}};
  h.action = box_v2_action();
  return h;
}

void store_f64(bytes& f, std::size_t at, double v) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  for (std::size_t i = 0; i < 8; ++i) {
    f[at + i] = static_cast<std::byte>(bits >> (8 * i));
  }
}

}  // namespace

TEST_CASE("hello version 2 carries per-element bounds", "[protocol]") {
  // Per-element bounds go out as version 2, byte for byte as documented.
  bytes frame;
  p::encode_hello(box_v2_hello(), frame);
  CHECK(to_hex(frame) == to_hex(from_hex(box_v2_hello_hex)));
  p::hello h;
  REQUIRE(p::decode_hello(payload_of(frame), h) == ec::none);
  CHECK(h.version == 2);
  CHECK(h.action == box_v2_action());
  CHECK(h.action.per_element_bounds());
  CHECK(h.action.low_at(1) == -inf);
  CHECK(h.action.high_at(1) == 2.0);
  bytes again;
  p::encode_hello(h, again);
  CHECK(again == frame);

  // Bounds one pair can say go out as version 1, so that old learners still take them; the
  // Pendulum vector is such a hello.
  p::hello uniform = box_v2_hello();
  uniform.action = seedrl::action_spec::continuous({1}, -2.0, 2.0);
  p::encode_hello(uniform, frame);
  CHECK(to_hex(frame) == to_hex(from_hex(pendulum_hello_hex)));
  uniform.action = seedrl::action_spec::continuous({2}, {-2.0, -2.0}, {2.0, 2.0});
  p::encode_hello(uniform, frame);
  CHECK(frame[16] == std::byte{1});
  REQUIRE(p::decode_hello(payload_of(frame), h) == ec::none);
  CHECK(h.version == 1);
  CHECK(h.action == uniform.action);

  // Signed zeros differ bit for bit: version 2, and each comes back with its sign.
  uniform.action = seedrl::action_spec::continuous({2}, {-0.0, 0.0}, {2.0, 2.0});
  p::encode_hello(uniform, frame);
  CHECK(frame[16] == std::byte{2});
  REQUIRE(p::decode_hello(payload_of(frame), h) == ec::none);
  CHECK(std::signbit(h.action.low_at(0)));
  CHECK_FALSE(std::signbit(h.action.low_at(1)));
  // An explicit version is kept: uniform bounds in version 2 repeat the pair per element.
  uniform.action = seedrl::action_spec::continuous({2}, -2.0, 2.0);
  uniform.version = 2;
  p::encode_hello(uniform, frame);
  CHECK(frame[16] == std::byte{2});
  CHECK(frame.size() == p::header_size + 36 + 32 + 2);
  REQUIRE(p::decode_hello(payload_of(frame), h) == ec::none);
  CHECK(h.version == 2);
  CHECK(h.action == seedrl::action_spec::continuous({2}, -2.0, 2.0));
  // A discrete hello in version 2 has version 1's bytes but for the version field.
  p::hello d = cartpole_hello();
  d.version = 2;
  p::encode_hello(d, frame);
  bytes v1 = from_hex(cartpole_hello_hex);
  v1[16] = std::byte{2};
  CHECK(frame == v1);

  // Versions that cannot carry the bounds, or do not exist, are refused at the encoder.
  p::hello bad = box_v2_hello();
  bad.version = 1;
  try {
    p::encode_hello(bad, frame);
    FAIL("version 1 with per-element bounds encoded");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("version 1 carries one [low, high]") != std::string::npos);
    CHECK(std::string(e.what()).find("[-inf, 2]") != std::string::npos);
  }
  bad.version = 3;
  CHECK_THROWS_AS(p::encode_hello(bad, frame), std::invalid_argument);
  // A shape reassigned after the factory no longer fits the bounds: refused, not misread.
  bad.version = 0;
  bad.action.shape = seedrl::tensor_shape{3};
  CHECK_THROWS_AS(p::encode_hello(bad, frame), std::invalid_argument);
  bad.action.shape = seedrl::tensor_shape{1};
  CHECK_THROWS_AS(p::encode_hello(bad, frame), std::invalid_argument);
}

TEST_CASE("hello version 2 bounds are limited to 1024 elements", "[protocol]") {
  // The largest version-2 hello: 1024 bounded elements, max ranks, the longest name.
  p::hello h;
  h.actor_id = 1;
  h.num_envs = 1;
  h.observation = {dtype::uint8, {2, 2, 2, 2, 2, 2}};
  std::vector<double> lo(1024), hi(1024);
  for (std::size_t i = 0; i < lo.size(); ++i) {
    lo[i] = -1.0 - static_cast<double>(i);
    hi[i] = static_cast<double>(i) + 0.5;
  }
  h.action = seedrl::action_spec::continuous({4, 4, 4, 4, 2, 2}, lo, hi);
  h.name = std::string(p::max_name_length, 'n');
  bytes frame;
  p::encode_hello(h, frame);
  CHECK(frame.size() - p::header_size == 334 + 16 * 1024);
  CHECK(frame.size() - p::header_size <= p::max_hello_payload);
  p::frame_header header;
  std::span<const std::byte> payload;
  REQUIRE(p::decode_frame(frame, p::default_max_payload, header, payload) == ec::none);
  p::hello back;
  REQUIRE(p::decode_hello(payload, back) == ec::none);
  CHECK(back.action == h.action);
  CHECK(back.action.low_at(1023) == -1024.0);
  CHECK(back.action.high_at(1023) == 1023.5);

  // One more element is refused, at the encoder and at the decoder, with what to do instead.
  lo.push_back(-1.0);
  hi.push_back(1.0);
  h.action = seedrl::action_spec::continuous({1025}, lo, hi);
  CHECK_THROWS_AS(p::encode_hello(h, frame), std::invalid_argument);
  bytes raw = from_hex(box_v2_hello_hex);
  raw[box_dim_at] = std::byte{0x01};  // dims [1025]: 0x0401
  raw[box_dim_at + 1] = std::byte{0x04};
  std::string why;
  CHECK(decode_hello_frame(raw, &why) == ec::bad_handshake);
  CHECK(why.find("at most 1024 action elements") != std::string::npos);
  CHECK(why.find("[1025]") != std::string::npos);
  CHECK(why.find("version-1 hello") != std::string::npos);

  // Uniform bounds have no such limit: version 1 carries one pair for up to 2^28 elements.
  h.action = seedrl::action_spec::continuous({1 << 20}, -1.0, 1.0);
  p::encode_hello(h, frame);
  REQUIRE(p::decode_hello(payload_of(frame), back) == ec::none);
  CHECK(back.version == 1);
  CHECK(back.action == h.action);

  // A hello frame's header may announce up to max_hello_payload, no more.
  std::array<std::byte, p::header_size> hdr{};
  p::frame_header out;
  p::encode_header(hdr, p::message_type::hello, p::max_hello_payload);
  CHECK(p::decode_header(hdr, 16, out) == ec::none);
  p::encode_header(hdr, p::message_type::hello, p::max_hello_payload + 1);
  CHECK(p::decode_header(hdr, p::default_max_payload, out) == ec::frame_too_large);
  // Other control frames keep their 4096-byte cap.
  p::encode_header(hdr, p::message_type::reject, p::max_control_payload + 1);
  CHECK(p::decode_header(hdr, p::default_max_payload, out) == ec::frame_too_large);
}

TEST_CASE("decode_hello refuses bad version 2 bounds with their reason", "[protocol]") {
  const bytes good = from_hex(box_v2_hello_hex);
  REQUIRE(decode_hello_frame(good) == ec::none);
  std::string why;

  // Cut anywhere, in the bounds too, or with bytes after the name: truncated_frame.
  const auto payload = payload_of(good);
  for (std::size_t n = 0; n < payload.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    p::hello h;
    CHECK(p::decode_hello(payload.first(n), h, &why) == ec::truncated_frame);
    if (n > box_low_at - p::header_size && n < box_high_at + 8 - p::header_size) {
      CHECK(why.find("per-element action bounds") != std::string::npos);
    }
  }
  {
    bytes longer = good;
    longer.push_back(std::byte{0});
    p::hello h;
    CHECK(p::decode_hello(payload_of(longer), h) == ec::truncated_frame);
  }

  // NaN in any low or high, naming the element.
  for (std::size_t at : {box_low_at, box_low_at + 8, box_high_at, box_high_at + 8}) {
    INFO("NaN at byte " << at);
    bytes f = good;
    store_f64(f, at, std::numeric_limits<double>::quiet_NaN());
    CHECK(decode_hello_frame(f, &why) == ec::bad_handshake);
    CHECK(why.find("NaN") != std::string::npos);
    const std::size_t element = (at - box_low_at) % 16 / 8;
    CHECK(why.find("element " + std::to_string(element)) != std::string::npos);
  }
  // low >= high, equal or crossed, finite or infinite.
  for (const auto& [low, high] : std::vector<std::pair<double, double>>{
           {2.0, 2.0}, {3.0, 2.0}, {inf, inf}, {-inf, -inf}, {inf, 2.0}}) {
    bytes f = good;
    store_f64(f, box_low_at + 8, low);
    store_f64(f, box_high_at + 8, high);
    CHECK(decode_hello_frame(f, &why) == ec::bad_handshake);
    CHECK(why.find("element 1 bounds") != std::string::npos);
    CHECK(why.find("need low < high") != std::string::npos);
  }

  // The count comes from the shape: a shape that disagrees with the bounds sent is refused.
  {
    bytes f = good;
    f[box_dim_at] = std::byte{3};  // 3 elements need 48 bytes of bounds; 34 bytes remain
    CHECK(decode_hello_frame(f, &why) == ec::truncated_frame);
    // 1 element: low -1, high -inf (bad, but values are checked last), name_length 0, then 18
    // stray bytes: truncated_frame, as the check order says.
    f[box_dim_at] = std::byte{1};
    CHECK(decode_hello_frame(f, &why) == ec::truncated_frame);
    CHECK(why.find("after the name") != std::string::npos);
  }
  // Bounds come before the name's text among the value checks.
  {
    bytes f = good;
    store_f64(f, box_high_at, -1.0);  // element 0: [-1, -1]
    f[f.size() - 2] = std::byte{1};   // name "\n"
    f.push_back(std::byte{'\n'});
    f[8] = std::byte{0x47};  // payload length 71
    CHECK(decode_hello_frame(f, &why) == ec::bad_handshake);
    CHECK(why.find("element 0 bounds [-1, -1] need low < high") != std::string::npos);
    store_f64(f, box_high_at, 1.0);
    CHECK(decode_hello_frame(f, &why) == ec::bad_handshake);
    CHECK(why.find("name") != std::string::npos);
  }
}

TEST_CASE("per-element bounds in spec matching and actions", "[protocol]") {
  const seedrl::observation_spec obs{dtype::float32, {3}};
  const auto box = box_v2_action();
  const auto uniform = seedrl::action_spec::continuous({2}, -1.0, 1.0);
  // Equal bounds match however they are stored.
  CHECK(p::describe_spec_mismatch(obs, uniform, obs,
                                  seedrl::action_spec::continuous({2}, {-1.0, -1.0}, {1.0, 1.0}))
            .empty());
  CHECK(p::describe_spec_mismatch(obs, box, obs, box).empty());
  // A difference names the first element that differs.
  CHECK(p::describe_spec_mismatch(obs, box, obs, uniform) ==
        "action bounds of element 1: actor has [-1, 1], learner expects [-inf, 2]");
  CHECK(p::describe_spec_mismatch(obs, uniform, obs, box) ==
        "action bounds of element 1: actor has [-inf, 2], learner expects [-1, 1]");
  std::string why;
  CHECK(p::check_hello(box_v2_hello(), obs, box, p::default_max_payload, &why) == ec::none);
  CHECK(p::check_hello(box_v2_hello(), obs, uniform, p::default_max_payload, &why) ==
        ec::spec_mismatch);

  // Actions are checked against their own element's bounds; infinite bounds admit every
  // finite value, never an infinite one.
  const auto parse = [&](std::vector<float> a) {
    bytes f(p::actions_frame_size(1, box));
    p::encode_continuous_actions(f, 1, a);
    std::vector<float> out(2);
    return p::parse_actions(payload_of(f), 1, box, out, &why);
  };
  constexpr float finf = std::numeric_limits<float>::infinity();
  CHECK(parse({1.0f, -3.0e38f}) == ec::none);
  CHECK(parse({-1.0f, 2.0f}) == ec::none);
  CHECK(parse({0.0f, 2.5f}) == ec::bad_action);
  CHECK(why.find("outside [-inf, 2]") != std::string::npos);
  CHECK(parse({1.5f, 0.0f}) == ec::bad_action);
  CHECK(why.find("outside [-1, 1]") != std::string::npos);
  CHECK(parse({0.0f, -finf}) == ec::bad_action);
  CHECK(parse({0.0f, std::numeric_limits<float>::quiet_NaN()}) == ec::bad_action);
}

TEST_CASE("encode_hello refuses what the learner would refuse", "[protocol]") {
  bytes f;
  p::hello h = cartpole_hello();
  h.num_envs = 0;
  CHECK_THROWS_AS(p::encode_hello(h, f), std::invalid_argument);
  h = cartpole_hello();
  h.observation.shape = {};
  CHECK_THROWS_AS(p::encode_hello(h, f), std::invalid_argument);
  h = cartpole_hello();
  h.name = std::string(p::max_name_length + 1, 'a');
  CHECK_THROWS_AS(p::encode_hello(h, f), std::invalid_argument);
  h = cartpole_hello();
  h.name = "line\nbreak";
  CHECK_THROWS_AS(p::encode_hello(h, f), std::invalid_argument);
  h = cartpole_hello();
  h.action.num_actions = 0;
  CHECK_THROWS_AS(p::encode_hello(h, f), std::invalid_argument);
  h = cartpole_hello();
  h.observation.type = static_cast<dtype>(9);
  CHECK_THROWS_AS(p::encode_hello(h, f), std::invalid_argument);
}

TEST_CASE("welcome round trips and has the documented bytes", "[protocol]") {
  const p::welcome w{8, 2, p::default_max_payload, 1000};
  bytes frame;
  p::encode_welcome(w, frame);
  CHECK(to_hex(frame) == to_hex(from_hex("53 44 52 4C 01 00 02 00 10 00 00 00 00 00 00 00"
                                         "08 00 00 00 02 00 00 00 00 00 00 04 E8 03 00 00")));
  p::welcome back;
  REQUIRE(p::decode_welcome(payload_of(frame), back) == ec::none);
  CHECK(back.first_env_slot == 8);
  CHECK(back.num_envs == 2);
  CHECK(back.max_payload_bytes == p::default_max_payload);
  CHECK(back.keepalive_interval_ms == 1000);

  const auto payload = payload_of(frame);
  for (std::size_t n = 0; n < payload.size(); ++n) {
    CHECK(p::decode_welcome(payload.first(n), back) == ec::truncated_frame);
  }
  bytes longer(payload.begin(), payload.end());
  longer.push_back(std::byte{0});
  CHECK(p::decode_welcome(longer, back) == ec::truncated_frame);
  p::encode_welcome({0, 0, 100, 0}, frame);
  CHECK(p::decode_welcome(payload_of(frame), back) == ec::bad_handshake);
  p::encode_welcome({0xFFFFFFFFu, 2, 100, 0}, frame);
  CHECK(p::decode_welcome(payload_of(frame), back) == ec::bad_handshake);
  p::encode_welcome({0xFFFFFFFEu, 2, 100, 0}, frame);
  CHECK(p::decode_welcome(payload_of(frame), back) == ec::none);
}

TEST_CASE("reject error and close frames round trip and cut long text", "[protocol]") {
  bytes frame;
  p::encode_error({ec::spec_mismatch, "x"}, frame);
  CHECK(to_hex(frame) ==
        to_hex(from_hex("53 44 52 4C 01 00 06 00 05 00 00 00 00 00 00 00 08 00 01 00 78")));

  const std::vector<std::pair<p::message_type, void (*)(const p::status_message&, bytes&)>> kinds =
      {{p::message_type::reject, &p::encode_reject},
       {p::message_type::error, &p::encode_error},
       {p::message_type::close, &p::encode_close}};
  for (const auto& [type, encode] : kinds) {
    encode({ec::too_many_envs, "no room for 4096 environments"}, frame);
    p::frame_header h;
    std::span<const std::byte> payload;
    REQUIRE(p::decode_frame(frame, p::default_max_payload, h, payload) == ec::none);
    CHECK(h.type == type);
    p::status_message m;
    REQUIRE(p::decode_status(payload, m) == ec::none);
    CHECK(m.code == ec::too_many_envs);
    CHECK(m.message == "no room for 4096 environments");
    for (std::size_t n = 0; n < payload.size(); ++n) {
      CHECK(p::decode_status(payload.first(n), m) == ec::truncated_frame);
    }
    bytes longer(payload.begin(), payload.end());
    longer.push_back(std::byte{'!'});
    CHECK(p::decode_status(longer, m) == ec::truncated_frame);
  }
  p::encode_close({ec::none, ""}, frame);
  CHECK(to_hex(payload_of(frame)) == "00 00 00 00");
  CHECK_THROWS_AS(p::encode_status(p::message_type::step, {}, frame), std::invalid_argument);

  // Long text is cut at a character boundary: 1023 ASCII bytes then a 2-byte character.
  std::string text(p::max_message_length - 1, 'a');
  text += "\xC3\xA9 and more";
  p::encode_error({ec::internal, text}, frame);
  p::status_message m;
  REQUIRE(p::decode_status(payload_of(frame), m) == ec::none);
  CHECK(m.message == std::string(p::max_message_length - 1, 'a'));

  // A peer's text over the limit; and codes this version does not know are kept.
  bytes raw = from_hex("63 00 01 04");  // code 99, length 1025
  raw.insert(raw.end(), 1025, std::byte{'a'});
  CHECK(p::decode_status(raw, m) == ec::frame_too_large);
  REQUIRE(p::decode_status(from_hex("63 00 00 00"), m) == ec::none);
  CHECK(static_cast<unsigned>(m.code) == 99);
  CHECK(std::string(p::to_string(m.code)) == "unknown");
}

TEST_CASE("spec mismatch messages name what differs", "[protocol]") {
  const seedrl::observation_spec f32_4{dtype::float32, {4}};
  const seedrl::observation_spec u8_4{dtype::uint8, {4}};
  const seedrl::observation_spec f32_84{dtype::float32, {84, 84, 1}};
  const auto d2 = seedrl::action_spec::discrete(2);
  const auto d3 = seedrl::action_spec::discrete(3);
  const auto box = seedrl::action_spec::continuous({2}, -1.0, 1.0);

  CHECK(p::describe_spec_mismatch(f32_4, d2, f32_4, d2).empty());
  CHECK(p::describe_spec_mismatch(f32_4, d2, u8_4, d2) ==
        "observation dtype: actor sends uint8, learner expects float32");
  CHECK(p::describe_spec_mismatch(f32_4, d2, f32_84, d2) ==
        "observation shape: actor sends [84, 84, 1], learner expects [4]");
  CHECK(p::describe_spec_mismatch(f32_4, d2, f32_4, d3) ==
        "action count: actor has 3, learner expects 2");
  CHECK(p::describe_spec_mismatch(f32_4, d2, f32_4, box) ==
        "action kind: actor has continuous [2] in [-1, 1], learner expects discrete (2 actions)");
  // The reverse, with a HalfCheetah-like Box of per-element bounds under a Gaussian learner.
  CHECK(p::describe_spec_mismatch(
            f32_4, seedrl::action_spec::continuous({3}, {-1.0, -2.0, -1.0}, {1.0, 2.0, 1.0}), f32_4,
            d3) ==
        "action kind: actor has discrete (3 actions), learner expects "
        "continuous [3] with per-element bounds");
  CHECK(p::describe_spec_mismatch(f32_4, box, f32_4,
                                  seedrl::action_spec::continuous({3}, -1.0, 1.0)) ==
        "action shape: actor has [3], learner expects [2]");
  CHECK(p::describe_spec_mismatch(f32_4, box, f32_4,
                                  seedrl::action_spec::continuous({2}, -2.0, 0.5)) ==
        "action bounds: actor has [-2, 0.5], learner expects [-1, 1]");
  CHECK(p::describe_spec_mismatch(f32_4, d2, u8_4, d3) ==
        "observation dtype: actor sends uint8, learner expects float32; "
        "action count: actor has 3, learner expects 2");

  std::string why;
  p::hello h = cartpole_hello();
  CHECK(p::check_hello(h, f32_4, d2, p::default_max_payload, &why) == ec::none);
  CHECK(p::check_hello(h, u8_4, d2, p::default_max_payload, &why) == ec::spec_mismatch);
  CHECK(why == "observation dtype: actor sends float32, learner expects uint8");
  // Two envs of CartPole need a 76-byte step payload.
  CHECK(p::check_hello(h, f32_4, d2, 76, &why) == ec::none);
  CHECK(p::check_hello(h, f32_4, d2, 75, &why) == ec::too_many_envs);
  CHECK(why.find("76") != std::string::npos);
}

TEST_CASE("step golden vector encodes and parses", "[protocol]") {
  const bytes frame = encode_golden_step();
  CHECK(to_hex(frame) == to_hex(from_hex(step_hex)));
  CHECK(p::step_record_size(16) == 36);
  CHECK(p::step_payload_size(2, 16) == 76);

  p::step_view v;
  REQUIRE(p::parse_step(payload_of(frame), 2, 16, v) == ec::none);
  REQUIRE(v.size() == 2);
  CHECK(v.observation_bytes() == 16);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(v.env_index(i) == i);
    CHECK(v.run_id(i) == step_run_ids[i]);
    CHECK(v.reward(i) == step_rewards[i]);
    CHECK(v.done(i) == (step_dones[i] != 0));
    CHECK(v.truncated(i) == (step_truncateds[i] != 0));
    std::array<float, 4> obs{};
    v.copy_observation(i, dtype::float32, std::as_writable_bytes(std::span<float>(obs)));
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK(obs[j] == step_obs[i * 4 + j]);
    }
    CHECK(v.observation(i).size() == 16);
    CHECK(std::memcmp(v.observation(i).data(), obs.data(), 16) == 0);
  }
}

TEST_CASE("step records may come in any order and uint8 observations stay bytes", "[protocol]") {
  // Three envs of 3-byte uint8 observations, records written as env 2, 0, 1.
  bytes payload = from_hex("03 00 00 00");
  const unsigned order[] = {2, 0, 1};
  for (unsigned env : order) {
    const bytes rec = from_hex("00 00 00 00 01 00 00 00 07 00 00 00 00 00 00 00 00 00 00 00");
    payload.insert(payload.end(), rec.begin(), rec.end());
    payload[payload.size() - 20] = static_cast<std::byte>(env);
    for (unsigned b = 0; b < 3; ++b) {
      payload.push_back(static_cast<std::byte>(env * 10 + b));
    }
  }
  p::step_view v;
  REQUIRE(p::parse_step(payload, 3, 3, v) == ec::none);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(v.env_index(i) == order[i]);
    CHECK(v.done(i));
    CHECK_FALSE(v.truncated(i));
    CHECK(v.run_id(i) == 7);
    CHECK(v.reward(i) == 0.0f);
    CHECK(std::to_integer<unsigned>(v.observation(i)[2]) == order[i] * 10 + 2);
  }
}

TEST_CASE("parse_step rejects each malformed step with its code", "[protocol]") {
  const bytes frame = encode_golden_step();
  const auto good = payload_of(frame);
  std::string why;
  REQUIRE(parse_step_payload(good, 2, 16) == ec::none);

  // Every truncation: too short for the count, then too short for the records.
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("prefix of " << n << " bytes");
    const ec e = parse_step_payload(good.first(n), 2, 16, &why);
    CHECK(e == (n < 4 ? ec::truncated_frame : ec::wrong_observation_size));
  }
  bytes longer(good.begin(), good.end());
  longer.push_back(std::byte{0});
  CHECK(parse_step_payload(longer, 2, 16) == ec::wrong_observation_size);

  // The actor sends 16-byte observations, the learner expects 8 or 32.
  CHECK(parse_step_payload(good, 2, 8, &why) == ec::wrong_observation_size);
  CHECK(why.find("look like 16 bytes") != std::string::npos);
  CHECK(parse_step_payload(good, 2, 32) == ec::wrong_observation_size);
  // The count field disagrees with the handshake.
  CHECK(parse_step_payload(good, 3, 16, &why) == ec::bad_env_index);
  CHECK(why.find("declared 3") != std::string::npos);

  const auto patched = [&](std::size_t at, std::initializer_list<unsigned> values) {
    bytes f(good.begin(), good.end());
    std::size_t i = at;
    for (unsigned v : values) {
      f[i++] = static_cast<std::byte>(v);
    }
    return f;
  };
  // Payload offsets of record 1 (record 0 starts at 4, records are 36 bytes).
  constexpr std::size_t r1 = 4 + 36;
  CHECK(parse_step_payload(patched(r1, {2}), 2, 16, &why) == ec::bad_env_index);
  CHECK(why.find("outside [0, 2)") != std::string::npos);
  CHECK(parse_step_payload(patched(r1, {0xFF, 0xFF, 0xFF, 0xFF}), 2, 16) == ec::bad_env_index);
  CHECK(parse_step_payload(patched(r1, {0}), 2, 16, &why) == ec::bad_env_index);
  CHECK(why.find("twice") != std::string::npos);
  for (unsigned flags : {0x02u, 0x04u, 0x80u, 0xFFu}) {
    INFO("flags " << flags);
    CHECK(parse_step_payload(patched(r1 + 4, {flags}), 2, 16) == ec::bad_reserved_bits);
  }
  for (std::size_t at = r1 + 5; at < r1 + 8; ++at) {
    CHECK(parse_step_payload(patched(at, {1}), 2, 16) == ec::bad_reserved_bits);
  }
  CHECK(parse_step_payload(patched(r1 + 16, {0x00, 0x00, 0xC0, 0x7F}), 2, 16, &why) ==
        ec::non_finite_reward);  // NaN
  CHECK(why.find("nan") != std::string::npos);
  CHECK(parse_step_payload(patched(r1 + 16, {0x00, 0x00, 0x80, 0xFF}), 2, 16) ==
        ec::non_finite_reward);  // -inf

  // Float observations: with the learner's check, a NaN, an infinity or a value beyond the
  // learner's range is refused naming the record, the env and the element; without a check, or
  // for byte observations, the bytes are not looked at.
  const p::observation_check floats{seedrl::dtype::float32, std::numeric_limits<float>::max()};
  const auto parse_checked = [&](std::span<const std::byte> payload, p::observation_check check) {
    p::step_view view;
    why.clear();
    return p::parse_step(payload, 2, 16, view, &why, check);
  };
  CHECK(parse_checked(good, floats) == ec::none);
  // Record 1's observation starts at r1 + 20; element 2 is at r1 + 28.
  CHECK(parse_checked(patched(r1 + 28, {0x00, 0x00, 0xC0, 0x7F}), floats) ==
        ec::non_finite_observation);
  CHECK(why == "step record 1 (env 1): observation element 2 is nan");
  CHECK(parse_checked(patched(r1 + 20, {0x00, 0x00, 0x80, 0x7F}), floats) ==
        ec::non_finite_observation);  // +inf, element 0
  CHECK(why.find("element 0 is inf") != std::string::npos);
  CHECK(parse_checked(patched(r1 + 28, {0x00, 0x00, 0xC0, 0x7F}), {}) == ec::none);
  CHECK(parse_checked(patched(r1 + 28, {0x00, 0x00, 0xC0, 0x7F}), {seedrl::dtype::uint8, 0.0}) ==
        ec::none);
  CHECK(parse_checked(good, {seedrl::dtype::float32, 2.5}) == ec::non_finite_observation);
  CHECK(why.find("element 3 is 3, beyond the learner's range of +-2.5") != std::string::npos);
  // float64: 1e300 is finite but no float32; a float64 learner takes it.
  {
    const std::vector<double> obs64 = {1.0, 1e300};
    bytes frame(p::step_frame_size(1, 16));
    const std::vector<std::uint64_t> run = {1};
    const std::vector<float> reward = {0.0f};
    const std::vector<std::uint8_t> flags = {0};
    p::encode_step(frame, dtype::float64,
                   {run, reward, flags, flags, std::as_bytes(std::span(obs64))});
    p::step_view view;
    const auto payload = std::span<const std::byte>(frame).subspan(p::header_size);
    CHECK(p::parse_step(payload, 1, 16, view, &why,
                        {seedrl::dtype::float64, std::numeric_limits<float>::max()}) ==
          ec::non_finite_observation);
    CHECK(why.find("element 1 is 1e+300, beyond the learner's range") != std::string::npos);
    CHECK(p::parse_step(payload, 1, 16, view, &why,
                        {seedrl::dtype::float64, std::numeric_limits<double>::max()}) == ec::none);
  }

  // A failed parse leaves the view empty.
  p::step_view v;
  REQUIRE(p::parse_step(good, 2, 16, v) == ec::none);
  CHECK(p::parse_step(patched(r1, {2}), 2, 16, v) == ec::bad_env_index);
  CHECK(v.size() == 0);
}

TEST_CASE("encode_step refuses inputs the learner would refuse", "[protocol]") {
  bytes frame(p::step_frame_size(2, 16));
  const auto obs = std::as_bytes(std::span<const float>(step_obs));
  const std::vector<float> nan_reward = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  const std::vector<float> inf_reward = {std::numeric_limits<float>::infinity(), 0.0f};
  const std::vector<std::uint8_t> not_done = {0, 0};
  const std::vector<std::uint8_t> one = {1};
  CHECK_THROWS_AS(p::encode_step(frame, dtype::float32,
                                 {step_run_ids, nan_reward, step_dones, step_truncateds, obs}),
                  std::invalid_argument);
  CHECK_THROWS_AS(p::encode_step(frame, dtype::float32,
                                 {step_run_ids, inf_reward, step_dones, step_truncateds, obs}),
                  std::invalid_argument);
  CHECK_THROWS_AS(p::encode_step(frame, dtype::float32,
                                 {step_run_ids, step_rewards, not_done, step_truncateds, obs}),
                  std::invalid_argument);
  CHECK_THROWS_AS(p::encode_step(frame, dtype::float32,
                                 {step_run_ids, step_rewards, one, step_truncateds, obs}),
                  std::invalid_argument);
  CHECK_THROWS_AS(
      p::encode_step(frame, dtype::float32,
                     {step_run_ids, step_rewards, step_dones, step_truncateds, obs.first(30)}),
      std::invalid_argument);
  CHECK_THROWS_AS(
      p::encode_step(std::span<std::byte>(frame).first(frame.size() - 1), dtype::float32,
                     {step_run_ids, step_rewards, step_dones, step_truncateds, obs}),
      std::length_error);
  // A larger buffer is fine; the returned size says how much was written.
  bytes big(200);
  CHECK(p::encode_step(big, dtype::float32,
                       {step_run_ids, step_rewards, step_dones, step_truncateds, obs}) == 92);
}

TEST_CASE("a reused step_view parses many steps without growing", "[protocol]") {
  // Random steps of up to 200 envs of 5-byte observations, each parsed into one view.
  seedrl::random_generator rng(7);
  p::step_view v;
  bytes frame;
  std::vector<std::uint64_t> run_ids;
  std::vector<float> rewards;
  std::vector<std::uint8_t> dones, truncateds;
  bytes obs;
  for (int round = 0; round < 50; ++round) {
    const std::size_t k = 1 + rng.below(200);
    run_ids.resize(k);
    rewards.resize(k);
    dones.resize(k);
    truncateds.resize(k);
    obs.resize(k * 5);
    for (std::size_t i = 0; i < k; ++i) {
      run_ids[i] = rng();
      rewards[i] = static_cast<float>(rng.uniform() * 2 - 1);
      dones[i] = rng.below(4) == 0 ? 1 : 0;
      truncateds[i] = dones[i] != 0 && rng.below(2) == 0 ? 1 : 0;
    }
    for (auto& b : obs) {
      b = static_cast<std::byte>(rng.below(256));
    }
    frame.resize(p::step_frame_size(k, 5));
    p::encode_step(frame, dtype::uint8, {run_ids, rewards, dones, truncateds, obs});
    p::frame_header h;
    std::span<const std::byte> payload;
    REQUIRE(p::decode_frame(frame, p::default_max_payload, h, payload) == ec::none);
    REQUIRE(h.type == p::message_type::step);
    REQUIRE(p::parse_step(payload, static_cast<std::uint32_t>(k), 5, v) == ec::none);
    REQUIRE(v.size() == k);
    for (std::size_t i = 0; i < k; ++i) {
      CHECK(v.env_index(i) == i);
      CHECK(v.run_id(i) == run_ids[i]);
      CHECK(v.reward(i) == rewards[i]);
      CHECK(v.done(i) == (dones[i] != 0));
      CHECK(v.truncated(i) == (truncateds[i] != 0));
      CHECK(std::memcmp(v.observation(i).data(), obs.data() + i * 5, 5) == 0);
    }
  }
}

TEST_CASE("actions golden vectors encode and parse", "[protocol]") {
  const auto d2 = seedrl::action_spec::discrete(2);
  const std::vector<std::int32_t> acts = {1, 0};
  bytes frame(p::actions_frame_size(2, d2));
  CHECK(p::encode_discrete_actions(frame, acts) == frame.size());
  CHECK(to_hex(frame) == to_hex(from_hex("53 44 52 4C 01 00 05 00 0C 00 00 00 00 00 00 00"
                                         "02 00 00 00 01 00 00 00 00 00 00 00")));
  std::vector<std::int32_t> out(2, -1);
  REQUIRE(p::parse_actions(payload_of(frame), 2, d2, out) == ec::none);
  CHECK(out == acts);

  const auto box = seedrl::action_spec::continuous({2}, -1.0, 1.0);
  const std::vector<float> cont = {0.5f, -1.0f};
  bytes cframe(p::actions_frame_size(1, box));
  CHECK(p::encode_continuous_actions(cframe, 1, cont) == cframe.size());
  CHECK(to_hex(cframe) == to_hex(from_hex("53 44 52 4C 01 00 05 00 0C 00 00 00 00 00 00 00"
                                          "01 00 00 00 00 00 00 3F 00 00 80 BF")));
  std::vector<float> fout(2);
  REQUIRE(p::parse_actions(payload_of(cframe), 1, box, fout) == ec::none);
  CHECK(fout == cont);
}

TEST_CASE("parse_actions rejects each malformed actions payload with its code", "[protocol]") {
  const auto d3 = seedrl::action_spec::discrete(3);
  const std::vector<std::int32_t> acts = {2, 0, 1};
  bytes frame(p::actions_frame_size(3, d3));
  p::encode_discrete_actions(frame, acts);
  const auto good = payload_of(frame);
  std::vector<std::int32_t> out(3);
  std::string why;
  for (std::size_t n = 0; n < good.size(); ++n) {
    CHECK(p::parse_actions(good.first(n), 3, d3, out) == ec::truncated_frame);
  }
  bytes longer(good.begin(), good.end());
  longer.push_back(std::byte{0});
  CHECK(p::parse_actions(longer, 3, d3, out) == ec::truncated_frame);
  std::vector<std::int32_t> out2(2);
  CHECK(p::parse_actions(good, 2, d3, out2, &why) == ec::bad_env_index);
  CHECK(why.find("actor has 2") != std::string::npos);
  for (std::int32_t bad : {-1, 3, std::numeric_limits<std::int32_t>::min()}) {
    const std::vector<std::int32_t> b = {0, bad, 0};
    p::encode_discrete_actions(frame, b);
    CHECK(p::parse_actions(payload_of(frame), 3, d3, out, &why) == ec::bad_action);
    CHECK(why.find("env 1") != std::string::npos);
  }
  CHECK_THROWS_AS(p::parse_actions(good, 3, d3, out2), std::invalid_argument);
  std::vector<float> fout(3);
  CHECK_THROWS_AS(p::parse_actions(good, 3, d3, fout), std::invalid_argument);

  const auto box = seedrl::action_spec::continuous({2}, -1.0, 1.0);
  bytes cframe(p::actions_frame_size(2, box));
  std::vector<float> cout(4);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), 1.5f, -1.0001f,
                    -std::numeric_limits<float>::infinity()}) {
    const std::vector<float> b = {0.0f, 0.0f, 1.0f, bad};
    p::encode_continuous_actions(cframe, 2, b);
    CHECK(p::parse_actions(payload_of(cframe), 2, box, cout, &why) == ec::bad_action);
    CHECK(why.find("env 1") != std::string::npos);
  }
  CHECK_THROWS_AS(p::encode_continuous_actions(cframe, 3, std::vector<float>(4)),
                  std::invalid_argument);
  CHECK_THROWS_AS(p::encode_discrete_actions(std::span<std::byte>(frame).first(10), acts),
                  std::length_error);
}

TEST_CASE("big-endian hosts swap each element of observations and actions", "[protocol]") {
  const bytes in = from_hex("01 02 03 04 05 06 07 08");
  bytes out(8);
  p::detail::copy_elements_le(out.data(), in.data(), 8, 4, std::endian::big);
  CHECK(to_hex(out) == "04 03 02 01 08 07 06 05");
  p::detail::copy_elements_le(out.data(), in.data(), 8, 8, std::endian::big);
  CHECK(to_hex(out) == "08 07 06 05 04 03 02 01");
  p::detail::copy_elements_le(out.data(), in.data(), 8, 1, std::endian::big);
  CHECK(to_hex(out) == to_hex(in));
  p::detail::copy_elements_le(out.data(), in.data(), 8, 4, std::endian::little);
  CHECK(to_hex(out) == to_hex(in));
}

TEST_CASE("actor_stats golden frame encodes and decodes", "[protocol]") {
  // steps 3, env 0.5 s (0x3FE0000000000000), wait 2.0 s (0x4000000000000000), little-endian.
  const std::string golden =
      "5344524c"
      "0100"
      "0900"
      "18000000"
      "00000000"
      "0300000000000000"
      "000000000000e03f"
      "0000000000000040";
  std::array<std::byte, p::header_size + p::actor_stats_payload_size> frame{};
  p::encode_actor_stats(frame, {3, 0.5, 2.0});
  CHECK(to_hex(frame) == to_hex(from_hex(golden)));

  p::frame_header h{};
  std::span<const std::byte> payload;
  REQUIRE(p::decode_frame(frame, p::default_max_payload, h, payload) == ec::none);
  CHECK(h.type == p::message_type::actor_stats);
  p::actor_stats m;
  REQUIRE(p::decode_actor_stats(payload, m) == ec::none);
  CHECK(m.steps == 3);
  CHECK(m.env_seconds == 0.5);
  CHECK(m.wait_seconds == 2.0);
}

TEST_CASE("decode_actor_stats rejects bad sizes and times", "[protocol]") {
  std::array<std::byte, p::header_size + p::actor_stats_payload_size> frame{};
  p::actor_stats m;
  std::string why;
  // A 25-byte payload is refused by the header check before anything is read.
  std::array<std::byte, p::header_size> h{};
  p::encode_header(h, p::message_type::actor_stats, 25);
  p::frame_header out{};
  CHECK(p::decode_header(h, p::default_max_payload, out, &why) == ec::frame_too_large);
  p::encode_actor_stats(frame, {1, 0.1, 0.2});
  const auto payload = std::span<const std::byte>(frame).subspan(p::header_size);
  CHECK(p::decode_actor_stats(payload.first(23), m, &why) == ec::truncated_frame);
  for (const double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    p::encode_actor_stats(frame, {1, bad, 0.2});
    CHECK(p::decode_actor_stats(payload, m, &why) == ec::bad_actor_stats);
    CHECK(why.find("not a finite") != std::string::npos);
    p::encode_actor_stats(frame, {1, 0.1, bad});
    CHECK(p::decode_actor_stats(payload, m, &why) == ec::bad_actor_stats);
  }
}

TEST_CASE("authentication frames encode to their documented bytes and decode back", "[protocol]") {
  std::array<std::byte, 32> a{}, b{};
  for (std::size_t i = 0; i < 32; ++i) {
    a[i] = static_cast<std::byte>(i);
    b[i] = static_cast<std::byte>(0x20 + i);
  }
  bytes f;
  p::encode_auth_request(f);
  CHECK(to_hex(f) == to_hex(from_hex("5344524c 0100 0a00 04000000 00000000 0100 0000")));
  p::frame_header h{};
  std::span<const std::byte> payload;
  REQUIRE(p::decode_frame(f, p::default_max_payload, h, payload) == ec::none);
  CHECK(p::decode_auth_request(payload) == ec::none);

  p::encode_auth_challenge(a, f);
  REQUIRE(f.size() == 16 + 36);
  CHECK(to_hex(std::span<const std::byte>(f).first(20)) ==
        to_hex(from_hex("5344524c 0100 0b00 24000000 00000000 0100 0000")));
  REQUIRE(p::decode_frame(f, p::default_max_payload, h, payload) == ec::none);
  std::array<std::byte, 32> n{}, q{};
  REQUIRE(p::decode_auth_challenge(payload, n) == ec::none);
  CHECK(n == a);

  p::encode_auth_response(a, b, f);
  REQUIRE(p::decode_frame(f, p::default_max_payload, h, payload) == ec::none);
  CHECK(h.type == p::message_type::auth_response);
  REQUIRE(p::decode_auth_response(payload, n, q) == ec::none);
  CHECK(n == a);
  CHECK(q == b);

  p::encode_auth_confirm(b, f);
  REQUIRE(p::decode_frame(f, p::default_max_payload, h, payload) == ec::none);
  REQUIRE(p::decode_auth_confirm(payload, q) == ec::none);
  CHECK(q == b);

  // One valid size each: longer is refused from the header, shorter by the decoder.
  std::array<std::byte, p::header_size> hdr{};
  p::encode_header(hdr, p::message_type::auth_confirm, 33);
  CHECK(p::decode_header(hdr, p::default_max_payload, h) == ec::frame_too_large);
  CHECK(p::decode_auth_confirm(payload.first(31), q) == ec::truncated_frame);
  // Version and reserved words are checked.
  p::encode_auth_request(f);
  f[16] = std::byte{2};
  CHECK(p::decode_auth_request(payload_of(f)) == ec::unsupported_version);
  f[16] = std::byte{1};
  f[18] = std::byte{1};
  CHECK(p::decode_auth_request(payload_of(f)) == ec::bad_reserved_bits);
}

TEST_CASE("names of codes and types and who may send what", "[protocol]") {
  for (std::uint16_t c = 0; c <= 21; ++c) {
    CHECK(std::string(p::to_string(static_cast<ec>(c))) != "unknown");
  }
  CHECK(std::string(p::to_string(ec::spec_mismatch)) == "spec_mismatch");
  CHECK(std::string(p::to_string(static_cast<ec>(22))) == "unknown");
  CHECK(std::string(p::to_string(p::message_type::actor_stats)) == "actor_stats");
  CHECK(std::string(p::to_string(p::message_type::actions)) == "actions");
  using t = p::message_type;
  CHECK(p::actor_may_send(t::hello));
  CHECK(p::actor_may_send(t::step));
  CHECK_FALSE(p::actor_may_send(t::welcome));
  CHECK_FALSE(p::actor_may_send(t::actions));
  CHECK(p::learner_may_send(t::actions));
  CHECK_FALSE(p::learner_may_send(t::step));
  CHECK_FALSE(p::learner_may_send(t::hello));
  CHECK(p::actor_may_send(t::actor_stats));
  CHECK_FALSE(p::learner_may_send(t::actor_stats));
  for (t a : {t::auth_request, t::auth_response}) {
    CHECK(p::actor_may_send(a));
    CHECK_FALSE(p::learner_may_send(a));
  }
  for (t l : {t::auth_challenge, t::auth_confirm}) {
    CHECK(p::learner_may_send(l));
    CHECK_FALSE(p::actor_may_send(l));
  }
  for (t both : {t::error, t::close, t::keepalive}) {
    CHECK(p::actor_may_send(both));
    CHECK(p::learner_may_send(both));
  }
}

TEST_CASE("random corruption of valid frames never passes unnoticed or crashes", "[protocol]") {
  // Flip random bytes of each golden frame; every decoder must either accept (the flip hit a
  // free-form field: ids, rewards, observations) or fail with a reason.
  seedrl::random_generator rng(11);
  const std::vector<bytes> frames = {from_hex(cartpole_hello_hex), from_hex(pendulum_hello_hex),
                                     from_hex(step_hex)};
  const auto d2 = seedrl::action_spec::discrete(2);
  for (int round = 0; round < 3000; ++round) {
    bytes f = frames[rng.below(frames.size())];
    const int flips = 1 + static_cast<int>(rng.below(3));
    for (int i = 0; i < flips; ++i) {
      f[rng.below(f.size())] ^= static_cast<std::byte>(1 + rng.below(255));
    }
    if (rng.below(4) == 0) {
      f.resize(rng.below(f.size() + 1));
    }
    p::frame_header h;
    std::span<const std::byte> payload;
    std::string why;
    const ec e = p::decode_frame(f, p::default_max_payload, h, payload, &why);
    if (e != ec::none) {
      CHECK_FALSE(why.empty());
      continue;
    }
    why.clear();
    ec inner = ec::none;
    if (h.type == p::message_type::hello) {
      p::hello out;
      inner = p::decode_hello(payload, out, &why);
    } else if (h.type == p::message_type::step) {
      p::step_view v;
      inner = p::parse_step(payload, 2, 16, v, &why);
    } else if (h.type == p::message_type::actions) {
      std::vector<std::int32_t> out(2);
      inner = p::parse_actions(payload, 2, d2, out, &why);
    } else if (h.type == p::message_type::welcome) {
      p::welcome out;
      inner = p::decode_welcome(payload, out, &why);
    } else if (h.type != p::message_type::keepalive) {
      p::status_message out;
      inner = p::decode_status(payload, out, &why);
    }
    CHECK((inner == ec::none) == why.empty());
  }
}
