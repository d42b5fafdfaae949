#pragma once
/// \file
/// The actor <-> learner wire protocol, version 1 (with hello versions 1 and 2): frame header,
/// message codecs and the checks a receiver makes. docs/protocol.md is the normative description;
/// this header is its C++ implementation.
///
/// Everything here is pure: no I/O, no threads, no Boost, so that the learner, the actor, a
/// fuzzer and tests share one implementation of every check. Integers and floats are
/// little-endian on the wire and are read and written byte by byte (never by casting a struct
/// over the buffer), so the code is correct on any host and free of alignment and aliasing
/// traps. The step and actions paths write into and read from caller-provided buffers and do
/// not allocate; the handshake and status messages, which happen once per connection, use
/// std::string and std::vector for readability.

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedrl/core/spec.hpp"

namespace seedrl::protocol {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "seedrl: the wire protocol needs a little- or big-endian host");

/// First four bytes of every frame, "SDRL" in ASCII; lets a receiver reject a stray client
/// (an HTTP probe, a port scanner) on its first read instead of misreading a length.
inline constexpr std::uint32_t magic = 0x4C524453;
/// The protocol version this header implements; sent in every frame header. Hello carries its
/// own version (hello_version): only hello's layout has changed since version 1, so every
/// other frame, and the header, stays as version-1 peers know it.
inline constexpr std::uint16_t version = 1;
/// Newest hello layout: version 2 carries one [low, high] pair per continuous action element
/// (gymnasium's Box); version 1 carries one pair for all elements. A learner accepts both; an
/// actor sends the lowest version that can say its bounds, so that it still reaches learners
/// that know only version 1.
inline constexpr std::uint16_t hello_version = 2;
/// Oldest hello layout a learner accepts.
inline constexpr std::uint16_t min_hello_version = 1;
/// Most continuous action elements a version-2 hello may give per-element bounds for (16 bytes
/// each keep the largest hello near 16 KiB). Larger action spaces need uniform bounds, which a
/// version-1 hello carries for up to max_action_elements.
inline constexpr std::uint64_t max_bounded_action_elements = 1024;
/// Bytes in a frame header: magic u32, version u16, type u16, payload_length u32, reserved u32.
inline constexpr std::size_t header_size = 16;
/// Default largest step/actions payload a receiver accepts (64 MiB): bounds the memory a
/// single peer can make the learner reserve.
inline constexpr std::uint32_t default_max_payload = 64u * 1024u * 1024u;
/// Largest payload of hello, welcome, reject, error and close frames, whatever the data limit:
/// control frames are small, so a fixed cap lets a receiver read them before any handshake.
inline constexpr std::uint32_t max_control_payload = 4096;
/// Largest hello payload. The largest valid version-1 hello is 350 bytes; a version-2 hello
/// adds 16 bytes per action element past the first pair: 334 + 16 * 1024 = 16718 bytes at most.
inline constexpr std::uint32_t max_hello_payload = 17 * 1024;
static_assert(334 + 16 * max_bounded_action_elements <= max_hello_payload);
/// Longest actor name in hello, in bytes of UTF-8.
inline constexpr std::size_t max_name_length = 256;
/// Longest message text in reject, error and close frames, in bytes of UTF-8; encoders cut
/// longer text so that a verbose diagnostic can never make its own frame invalid.
inline constexpr std::size_t max_message_length = 1024;
/// Largest observation (elements times element size) a hello may declare: keeps a step frame
/// with one environment representable with a u32 payload length and all size arithmetic far
/// from overflow.
inline constexpr std::uint64_t max_observation_bytes = std::uint64_t{1} << 31;
/// Largest number of float32 elements in one continuous action, for the same reason.
inline constexpr std::uint64_t max_action_elements = std::uint64_t{1} << 28;
/// Bytes of a step record before its observation: env_index, flags, reserved, run_id, reward.
inline constexpr std::size_t step_record_fixed_size = 20;
/// Step record flag: the step ended an episode (terminated or truncated); the observation is
/// the first one of the next episode.
inline constexpr std::uint8_t flag_done = 0x01;
/// Step record flag: the episode was ended by a time limit; only valid together with
/// flag_done.
inline constexpr std::uint8_t flag_truncated = 0x02;

/// Bytes of an actor_stats payload: u64 steps, f64 env_seconds, f64 wait_seconds.
inline constexpr std::uint32_t actor_stats_payload_size = 24;
/// Bytes of a handshake nonce or proof (docs/security.md).
inline constexpr std::size_t auth_field_size = 32;
/// The authenticated handshake's version, sent in auth_request and auth_challenge.
inline constexpr std::uint16_t auth_version = 1;
/// Exact payload sizes of the four authentication messages (docs/security.md).
inline constexpr std::uint32_t auth_request_payload_size = 4;
inline constexpr std::uint32_t auth_challenge_payload_size = 36;
inline constexpr std::uint32_t auth_response_payload_size = 64;
inline constexpr std::uint32_t auth_confirm_payload_size = 32;

/// What a frame carries. The numeric values are part of the wire protocol.
enum class message_type : std::uint16_t {
  hello = 1,            ///< actor -> learner: who I am, what my environments look like
  welcome = 2,          ///< learner -> actor: handshake accepted, env slots assigned
  reject = 3,           ///< learner -> actor: handshake refused; the learner then closes
  step = 4,             ///< actor -> learner: rewards, flags and observations of all envs
  actions = 5,          ///< learner -> actor: one action per env, answering the last step
  error = 6,            ///< either way: a protocol violation; the sender then closes
  close = 7,            ///< either way: orderly goodbye; the sender sends nothing more
  keepalive = 8,        ///< either way: empty; proves liveness on an idle connection
  actor_stats = 9,      ///< actor -> learner: where the actor's time went, for the progress line
  auth_request = 10,    ///< actor -> learner: start of the authenticated handshake
  auth_challenge = 11,  ///< learner -> actor: the learner's nonce
  auth_response = 12,   ///< actor -> learner: the actor's nonce and proof
  auth_confirm = 13,    ///< learner -> actor: the learner's proof
};

/// A readable name, for logs.
constexpr const char* to_string(message_type t) noexcept {
  switch (t) {
    case message_type::hello:
      return "hello";
    case message_type::welcome:
      return "welcome";
    case message_type::reject:
      return "reject";
    case message_type::step:
      return "step";
    case message_type::actions:
      return "actions";
    case message_type::error:
      return "error";
    case message_type::close:
      return "close";
    case message_type::keepalive:
      return "keepalive";
    case message_type::actor_stats:
      return "actor_stats";
    case message_type::auth_request:
      return "auth_request";
    case message_type::auth_challenge:
      return "auth_challenge";
    case message_type::auth_response:
      return "auth_response";
    case message_type::auth_confirm:
      return "auth_confirm";
  }
  return "unknown";
}

/// Whether `t` is one of the v1 message types; any other value on the wire is a violation.
constexpr bool is_known(message_type t) noexcept {
  const auto v = static_cast<std::uint16_t>(t);
  return v >= 1 && v <= 13;
}

/// Whether an actor may send `t`; the learner answers any other type with unexpected_message.
constexpr bool actor_may_send(message_type t) noexcept {
  return t == message_type::hello || t == message_type::step || t == message_type::error ||
         t == message_type::close || t == message_type::keepalive ||
         t == message_type::actor_stats || t == message_type::auth_request ||
         t == message_type::auth_response;
}

/// Whether the learner may send `t`; the actor treats any other type as unexpected_message.
constexpr bool learner_may_send(message_type t) noexcept {
  return t == message_type::welcome || t == message_type::reject || t == message_type::actions ||
         t == message_type::error || t == message_type::close || t == message_type::keepalive ||
         t == message_type::auth_challenge || t == message_type::auth_confirm;
}

/// Why a frame or a connection was refused. Sent as u16 in reject, error and close frames; the
/// numeric values are part of the wire protocol. Receivers keep unknown values as they are
/// (to_string says "unknown") so that a newer peer's codes still reach the log.
enum class error_code : std::uint16_t {
  none = 0,                     ///< no error; the code of a normal close
  bad_magic = 1,                ///< header does not start with "SDRL"
  unsupported_version = 2,      ///< header or hello version is not 1
  unknown_message_type = 3,     ///< header type is not 1..13
  frame_too_large = 4,          ///< payload or a text field exceeds its limit
  truncated_frame = 5,          ///< payload shorter than its fields say, or trailing bytes
  bad_reserved_bits = 6,        ///< a reserved field or undefined flag bit is not zero
  bad_handshake = 7,            ///< malformed hello (or welcome): bad dtype, rank, dims, name...
  spec_mismatch = 8,            ///< actor's observation/action spec differs from the learner's
  wrong_observation_size = 9,   ///< step payload length is not what the handshake implies
  unexpected_message = 10,      ///< valid frame at the wrong time (step before hello, ...)
  bad_env_index = 11,           ///< env index out of range or repeated, or wrong env count
  non_finite_reward = 12,       ///< reward is NaN or infinite
  too_many_envs = 13,           ///< learner has no room for this actor's environments
  shutting_down = 14,           ///< learner is stopping; try again later
  internal = 15,                ///< the sender failed for reasons of its own
  bad_action = 16,              ///< actions frame holds an action outside the action spec
  idle_timeout = 17,            ///< nothing arrived for 3 keepalive intervals
  bad_actor_stats = 18,         ///< an actor_stats time is negative, NaN or infinite
  auth_failed = 19,             ///< a handshake proof did not verify (docs/security.md)
  auth_required = 20,           ///< the learner requires authentication; hello came first
  non_finite_observation = 21,  ///< an observation element is NaN, infinite or out of range
};

/// The enumerator's name ("bad_magic"), for logs; "unknown" for values this version lacks.
constexpr const char* to_string(error_code c) noexcept {
  switch (c) {
    case error_code::none:
      return "none";
    case error_code::bad_magic:
      return "bad_magic";
    case error_code::unsupported_version:
      return "unsupported_version";
    case error_code::unknown_message_type:
      return "unknown_message_type";
    case error_code::frame_too_large:
      return "frame_too_large";
    case error_code::truncated_frame:
      return "truncated_frame";
    case error_code::bad_reserved_bits:
      return "bad_reserved_bits";
    case error_code::bad_handshake:
      return "bad_handshake";
    case error_code::spec_mismatch:
      return "spec_mismatch";
    case error_code::wrong_observation_size:
      return "wrong_observation_size";
    case error_code::unexpected_message:
      return "unexpected_message";
    case error_code::bad_env_index:
      return "bad_env_index";
    case error_code::non_finite_reward:
      return "non_finite_reward";
    case error_code::too_many_envs:
      return "too_many_envs";
    case error_code::shutting_down:
      return "shutting_down";
    case error_code::internal:
      return "internal";
    case error_code::bad_action:
      return "bad_action";
    case error_code::idle_timeout:
      return "idle_timeout";
    case error_code::bad_actor_stats:
      return "bad_actor_stats";
    case error_code::auth_failed:
      return "auth_failed";
    case error_code::auth_required:
      return "auth_required";
    case error_code::non_finite_observation:
      return "non_finite_observation";
  }
  return "unknown";
}

namespace detail {

// Little-endian stores and loads, byte by byte: correct on any host, and compilers turn them
// into single moves on little-endian ones.
inline void store_u8(std::byte* p, std::uint8_t v) noexcept {
  p[0] = std::byte{v};
}
inline void store_u16(std::byte* p, std::uint16_t v) noexcept {
  p[0] = static_cast<std::byte>(v & 0xFFu);
  p[1] = static_cast<std::byte>(v >> 8);
}
inline void store_u32(std::byte* p, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) {
    p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFFu);
  }
}
inline void store_u64(std::byte* p, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) {
    p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFFu);
  }
}
inline void store_f32(std::byte* p, float v) noexcept {
  store_u32(p, std::bit_cast<std::uint32_t>(v));
}
inline void store_f64(std::byte* p, double v) noexcept {
  store_u64(p, std::bit_cast<std::uint64_t>(v));
}
inline std::uint8_t load_u8(const std::byte* p) noexcept {
  return std::to_integer<std::uint8_t>(p[0]);
}
inline std::uint16_t load_u16(const std::byte* p) noexcept {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(p[0]) |
                                    (std::to_integer<unsigned>(p[1]) << 8));
}
inline std::uint32_t load_u32(const std::byte* p) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= std::to_integer<std::uint32_t>(p[i]) << (8 * i);
  }
  return v;
}
inline std::uint64_t load_u64(const std::byte* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= std::to_integer<std::uint64_t>(p[i]) << (8 * i);
  }
  return v;
}
inline float load_f32(const std::byte* p) noexcept {
  return std::bit_cast<float>(load_u32(p));
}
inline double load_f64(const std::byte* p) noexcept {
  return std::bit_cast<double>(load_u64(p));
}

/// Copies `n` bytes of elements of `element_size` bytes between host order and wire order
/// (little-endian); a plain memcpy on little-endian hosts. The same operation converts both
/// ways, since byte reversal is its own inverse.
inline void copy_elements_le(std::byte* dst, const std::byte* src, std::size_t n,
                             std::size_t element_size,
                             std::endian host = std::endian::native) noexcept {
  if (host == std::endian::little || element_size <= 1) {
    if (n != 0) {
      std::memcpy(dst, src, n);
    }
    return;
  }
  for (std::size_t e = 0; e + element_size <= n; e += element_size) {
    for (std::size_t b = 0; b < element_size; ++b) {
      dst[e + b] = src[e + element_size - 1 - b];
    }
  }
}

/// Stores `code` in `*why` when the caller asked for a reason, and returns it, so that every
/// check reads `return fail(...)`.
inline error_code fail(std::string* why, error_code code, std::string_view message) {
  if (why != nullptr) {
    why->assign(message);
  }
  return code;
}

/// Shortest decimal form of `v` that reads back exactly ("0.5", "-inf").
inline std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// "[low, high]" for messages; appended piece by piece because GCC 12 at -O3 warns falsely
/// (-Wrestrict) on "[" + std::string.
inline std::string format_bounds(double low, double high) {
  std::string s(1, '[');
  s += format_double(low);
  s += ", ";
  s += format_double(high);
  s += ']';
  return s;
}

/// Checks that `text` is well-formed UTF-8 without control characters (C0, DEL, C1): names
/// end up in log lines, where a newline or an escape sequence could forge or hide entries.
inline bool is_printable_utf8(std::string_view text, std::string* problem) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned c = s[i];
    std::uint32_t cp = 0;
    std::size_t len = 0;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      cp = c & 0x1F;
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      cp = c & 0x0F;
      len = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      cp = c & 0x07;
      len = 4;
    } else {
      *problem = "invalid UTF-8 lead byte at offset " + std::to_string(i);
      return false;
    }
    if (i + len > n) {
      *problem = "UTF-8 sequence cut short at offset " + std::to_string(i);
      return false;
    }
    for (std::size_t k = 1; k < len; ++k) {
      const unsigned cc = s[i + k];
      if ((cc & 0xC0) != 0x80) {
        *problem = "invalid UTF-8 continuation byte at offset " + std::to_string(i + k);
        return false;
      }
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      *problem = "invalid UTF-8 sequence at offset " + std::to_string(i);
      return false;
    }
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
      static constexpr char hex[] = "0123456789ABCDEF";
      *problem = std::string("control character U+00") + hex[cp >> 4] + hex[cp & 15] +
                 " at offset " + std::to_string(i);
      return false;
    }
    i += len;
  }
  return true;
}

/// Length of the longest prefix of `text` of at most `limit` bytes that does not split a
/// UTF-8 sequence.
inline std::size_t utf8_prefix(std::string_view text, std::size_t limit) noexcept {
  if (text.size() <= limit) {
    return text.size();
  }
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return cut;
}

/// Appends a frame to a vector: header first, payload length patched in by finish(), so the
/// encoders do not have to compute sizes twice. Reuses the vector's capacity.
class frame_writer {
 public:
  frame_writer(std::vector<std::byte>& out, message_type type) : out_(out), type_(type) {
    out_.clear();
    out_.resize(header_size);
  }
  void u8(std::uint8_t v) {
    grow(1, [&](std::byte* p) { store_u8(p, v); });
  }
  void u16(std::uint16_t v) {
    grow(2, [&](std::byte* p) { store_u16(p, v); });
  }
  void u32(std::uint32_t v) {
    grow(4, [&](std::byte* p) { store_u32(p, v); });
  }
  void u64(std::uint64_t v) {
    grow(8, [&](std::byte* p) { store_u64(p, v); });
  }
  void f64(double v) {
    grow(8, [&](std::byte* p) { store_f64(p, v); });
  }
  void bytes(std::span<const std::byte> b) {
    grow(b.size(), [&](std::byte* p) {
      if (!b.empty()) {
        std::memcpy(p, b.data(), b.size());
      }
    });
  }
  void bytes(std::string_view s) {
    grow(s.size(), [&](std::byte* p) {
      if (!s.empty()) {
        std::memcpy(p, s.data(), s.size());
      }
    });
  }
  void finish();

 private:
  template <class F>
  void grow(std::size_t n, F&& write) {
    const std::size_t at = out_.size();
    out_.resize(at + n);
    write(out_.data() + at);
  }
  std::vector<std::byte>& out_;
  message_type type_;
};

/// Reads fields front to back; every read is preceded by need(), so a short payload is found
/// at the first field it lacks.
class field_reader {
 public:
  explicit field_reader(std::span<const std::byte> in) noexcept : in_(in) {}
  bool need(std::size_t n) const noexcept { return in_.size() - at_ >= n; }
  std::size_t remaining() const noexcept { return in_.size() - at_; }
  std::uint8_t u8() noexcept { return load_u8(advance(1)); }
  std::uint16_t u16() noexcept { return load_u16(advance(2)); }
  std::uint32_t u32() noexcept { return load_u32(advance(4)); }
  std::uint64_t u64() noexcept { return load_u64(advance(8)); }
  double f64() noexcept { return load_f64(advance(8)); }
  std::string_view text(std::size_t n) noexcept {
    return {reinterpret_cast<const char*>(advance(n)), n};
  }

 private:
  const std::byte* advance(std::size_t n) noexcept {
    const std::byte* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Frame header

/// A decoded frame header; magic, version and the reserved word are checked, not kept.
struct frame_header {
  message_type type = message_type::keepalive;  ///< a known type (1..13)
  std::uint32_t payload_length = 0;             ///< within payload_limit(type, max_payload)
};

/// Largest payload a receiver accepts for a frame of type `t`: `max_payload` for step and
/// actions, max_hello_payload for hello, max_control_payload for the other messages (or their
/// exact size), 0 for keepalive. Lets a receiver refuse a length before reading (and
/// buffering) the payload.
constexpr std::uint32_t payload_limit(message_type t, std::uint32_t max_payload) noexcept {
  switch (t) {
    case message_type::step:
    case message_type::actions:
      return max_payload;
    case message_type::keepalive:
      return 0;
    case message_type::hello:
      return max_hello_payload;
    case message_type::actor_stats:
      return actor_stats_payload_size;
    case message_type::auth_request:
      return auth_request_payload_size;
    case message_type::auth_challenge:
      return auth_challenge_payload_size;
    case message_type::auth_response:
      return auth_response_payload_size;
    case message_type::auth_confirm:
      return auth_confirm_payload_size;
    default:
      return max_control_payload;
  }
}

/// Writes a frame header. Used directly for keepalive (a header alone) and by every encoder.
inline void encode_header(std::span<std::byte, header_size> out, message_type type,
                          std::uint32_t payload_length) noexcept {
  detail::store_u32(out.data(), magic);
  detail::store_u16(out.data() + 4, version);
  detail::store_u16(out.data() + 6, static_cast<std::uint16_t>(type));
  detail::store_u32(out.data() + 8, payload_length);
  detail::store_u32(out.data() + 12, 0);
}

/// Checks a frame header, in this order: magic (bad_magic), version (unsupported_version),
/// type (unknown_message_type), reserved word (bad_reserved_bits), payload length against
/// payload_limit(type, max_payload) (frame_too_large). Version is checked before anything
/// else that a later version might lay out differently. On success fills `out`.
inline error_code decode_header(std::span<const std::byte, header_size> in,
                                std::uint32_t max_payload, frame_header& out,
                                std::string* why = nullptr) {
  using detail::fail;
  const std::uint32_t m = detail::load_u32(in.data());
  if (m != magic) {
    std::string seen;
    for (std::size_t i = 0; i < 4; ++i) {
      const unsigned b = std::to_integer<unsigned>(in[i]);
      seen += "0123456789abcdef"[b >> 4];
      seen += "0123456789abcdef"[b & 15];
      seen += i < 3 ? " " : "";
    }
    return fail(why, error_code::bad_magic,
                "frame starts with bytes " + seen + ", expected 53 44 52 4c (\"SDRL\")");
  }
  const std::uint16_t v = detail::load_u16(in.data() + 4);
  if (v != version) {
    return fail(why, error_code::unsupported_version,
                "frame has protocol version " + std::to_string(v) + ", this peer speaks " +
                    std::to_string(version));
  }
  const auto type = static_cast<message_type>(detail::load_u16(in.data() + 6));
  if (!is_known(type)) {
    return fail(why, error_code::unknown_message_type,
                "unknown message type " + std::to_string(static_cast<unsigned>(type)));
  }
  const std::uint32_t length = detail::load_u32(in.data() + 8);
  const std::uint32_t reserved = detail::load_u32(in.data() + 12);
  if (reserved != 0) {
    return fail(why, error_code::bad_reserved_bits,
                "frame header reserved word is " + std::to_string(reserved) + ", must be 0");
  }
  const std::uint32_t limit = payload_limit(type, max_payload);
  if (length > limit) {
    return fail(why, error_code::frame_too_large,
                std::string(to_string(type)) + " payload of " + std::to_string(length) +
                    " bytes exceeds the limit of " + std::to_string(limit));
  }
  out.type = type;
  out.payload_length = length;
  return error_code::none;
}

/// Splits a buffer holding exactly one frame into header and payload: decode_header, then
/// truncated_frame when the buffer is shorter than header + payload_length or has bytes after
/// it. For callers that hold whole frames (fuzzer, tests, datagram-style clients); a stream
/// reader uses decode_header and reads payload_length bytes itself.
inline error_code decode_frame(std::span<const std::byte> frame, std::uint32_t max_payload,
                               frame_header& header, std::span<const std::byte>& payload,
                               std::string* why = nullptr) {
  if (frame.size() < header_size) {
    return detail::fail(
        why, error_code::truncated_frame,
        "frame of " + std::to_string(frame.size()) + " bytes is shorter than its 16-byte header");
  }
  const error_code e = decode_header(frame.first<header_size>(), max_payload, header, why);
  if (e != error_code::none) {
    return e;
  }
  const std::size_t want = header_size + header.payload_length;
  if (frame.size() != want) {
    return detail::fail(
        why, error_code::truncated_frame,
        "frame of " + std::to_string(frame.size()) + " bytes, header says " + std::to_string(want));
  }
  payload = frame.subspan(header_size);
  return error_code::none;
}

inline void detail::frame_writer::finish() {
  encode_header(std::span<std::byte, header_size>(out_.data(), header_size), type_,
                static_cast<std::uint32_t>(out_.size() - header_size));
}

// ---------------------------------------------------------------------------------------------
// reject, error, close

/// Payload of reject, error and close frames: a code and a human-readable reason.
struct status_message {
  error_code code = error_code::none;
  std::string message;  ///< UTF-8; cut to max_message_length by the encoders
};

/// Writes a whole reject, error or close frame (header included) into `frame`, replacing its
/// contents. Text longer than max_message_length is cut at a character boundary: the reason
/// is a diagnostic, and a frame the peer refuses would lose all of it. Throws
/// std::invalid_argument for any other `type`.
inline void encode_status(message_type type, const status_message& m,
                          std::vector<std::byte>& frame) {
  if (type != message_type::reject && type != message_type::error && type != message_type::close) {
    throw std::invalid_argument(
        "seedrl::protocol::encode_status: type must be reject, error or close");
  }
  const std::size_t n = detail::utf8_prefix(m.message, max_message_length);
  detail::frame_writer w(frame, type);
  w.u16(static_cast<std::uint16_t>(m.code));
  w.u16(static_cast<std::uint16_t>(n));
  w.bytes(std::string_view(m.message).substr(0, n));
  w.finish();
}

/// A reject frame; see encode_status.
inline void encode_reject(const status_message& m, std::vector<std::byte>& frame) {
  encode_status(message_type::reject, m, frame);
}
/// An error frame; see encode_status.
inline void encode_error(const status_message& m, std::vector<std::byte>& frame) {
  encode_status(message_type::error, m, frame);
}
/// A close frame; see encode_status.
inline void encode_close(const status_message& m, std::vector<std::byte>& frame) {
  encode_status(message_type::close, m, frame);
}

/// Decodes a reject, error or close payload: code u16, length u16, text. truncated_frame when
/// the payload is shorter or longer than the length says, frame_too_large when the text is
/// longer than max_message_length. The code is kept even when this version does not know it;
/// the text is not checked, so treat it as untrusted (escape it before logging).
inline error_code decode_status(std::span<const std::byte> payload, status_message& out,
                                std::string* why = nullptr) {
  using detail::fail;
  if (payload.size() < 4) {
    return fail(why, error_code::truncated_frame,
                "status payload of " + std::to_string(payload.size()) +
                    " bytes is shorter than its 4-byte code and length");
  }
  const std::uint16_t code = detail::load_u16(payload.data());
  const std::uint16_t length = detail::load_u16(payload.data() + 2);
  if (length > max_message_length) {
    return fail(why, error_code::frame_too_large,
                "status message of " + std::to_string(length) + " bytes exceeds the limit of " +
                    std::to_string(max_message_length));
  }
  if (payload.size() != 4u + length) {
    return fail(why, error_code::truncated_frame,
                "status payload of " + std::to_string(payload.size()) +
                    " bytes, its message length says " + std::to_string(4u + length));
  }
  out.code = static_cast<error_code>(code);
  out.message.assign(reinterpret_cast<const char*>(payload.data() + 4), length);
  return error_code::none;
}

// ---------------------------------------------------------------------------------------------
// hello, welcome

/// The actor's handshake: who it is and what its environments look like, so that the learner
/// can refuse a mismatched actor before any step instead of misreading its observations.
struct hello {
  std::uint64_t actor_id = 0;    ///< chosen by the actor; for logs and metrics
  std::uint32_t num_envs = 0;    ///< environments this actor steps, >= 1
  observation_spec observation;  ///< rank 1..6, every dim in [1, 2^32)
  action_spec action;            ///< discrete (num_actions >= 1) or continuous (rank 1..6)
  std::string name;              ///< e.g. "host:pid"; printable UTF-8, <= 256 bytes
  /// Hello layout on the wire: 1 (one bounds pair), 2 (a pair per action element), or 0 when
  /// encoding to let encode_hello pick the lowest that can carry `action`'s bounds. decode_hello
  /// sets it to what the actor sent.
  std::uint16_t version = 0;
};

namespace detail {

/// Checks the shape of an observation or continuous action against what the wire can carry.
inline bool check_wire_shape(const tensor_shape& s, std::string_view what, std::string* problem) {
  if (s.rank() == 0) {
    *problem = std::string(what) + " rank is 0; scalars travel as shape [1]";
    return false;
  }
  for (std::int64_t d : s) {
    if (d < 1 || d > std::int64_t{std::numeric_limits<std::uint32_t>::max()}) {
      *problem = std::string(what) + " dimension " + std::to_string(d) + " is outside [1, 2^32)";
      return false;
    }
  }
  return true;
}

/// Element count of a shape of at most max_rank dims of at most 2^32-1 each, saturated at
/// 2^63 so that absurd shapes compare as too large instead of overflowing.
inline std::uint64_t saturating_elements(const tensor_shape& s) noexcept {
  std::uint64_t n = 1;
  for (std::int64_t d : s) {
    const auto u = static_cast<std::uint64_t>(d);
    if (u != 0 && n > (std::uint64_t{1} << 63) / u) {
      return std::uint64_t{1} << 63;
    }
    n *= u;
  }
  return n;
}

/// The hello layout `h` travels in: its version, or for 0 the lowest that carries its bounds.
inline std::uint16_t hello_wire_version(const hello& h) noexcept {
  if (h.version != 0) {
    return h.version;
  }
  return h.action.kind == action_kind::continuous && !h.action.uniform_bounds() ? 2 : 1;
}

/// Checks one element's bounds; `element` < 0 for version 1's pair for all elements.
inline error_code check_bounds(double low, double high, std::int64_t element, std::string* why) {
  const std::string which = element < 0
                                ? "hello: action bounds "
                                : "hello: action element " + std::to_string(element) + " bounds ";
  const std::string pair = format_bounds(low, high);
  if (std::isnan(low) || std::isnan(high)) {
    return fail(why, error_code::bad_handshake, which + pair + " contain NaN");
  }
  if (!(low < high)) {
    return fail(why, error_code::bad_handshake, which + pair + " need low < high");
  }
  return error_code::none;
}

/// Refuses per-element bounds for more elements than a version-2 hello carries.
inline error_code check_bounded_elements(const tensor_shape& shape, std::string* why) {
  const std::uint64_t n = saturating_elements(shape);
  if (n > max_bounded_action_elements) {
    return fail(why, error_code::bad_handshake,
                "hello: version 2 carries per-element bounds for at most " +
                    std::to_string(max_bounded_action_elements) + " action elements, shape " +
                    shape.to_string() + " has " + std::to_string(n) +
                    "; give every element the same bounds and send a version-1 hello");
  }
  return error_code::none;
}

/// Continuous bounds as decode_hello read them, before an action_spec (which refuses bad
/// bounds) holds them: one pair (version 1) or one per element (version 2).
struct raw_bounds {
  std::span<const double> lows;
  std::span<const double> highs;
};

/// Every rule decode_hello enforces on decoded values, shared with encode_hello so that what
/// one side writes the other side accepts. decode_hello passes the bounds it read as `raw`,
/// so that they are checked in the documented order, after the name has been read.
inline error_code check_hello_fields(const hello& h, std::string* why,
                                     const raw_bounds* raw = nullptr) {
  std::string problem;
  const std::uint16_t v = hello_wire_version(h);
  if (v < min_hello_version || v > hello_version) {
    return fail(why, error_code::unsupported_version,
                "hello: protocol_version " + std::to_string(v) + ", this peer speaks 1 and 2");
  }
  if (h.num_envs == 0) {
    return fail(why, error_code::bad_handshake, "hello: num_envs is 0");
  }
  if (size_of(h.observation.type) == 0) {
    return fail(why, error_code::bad_handshake,
                "hello: unknown observation dtype " +
                    std::to_string(static_cast<unsigned>(h.observation.type)));
  }
  if (!check_wire_shape(h.observation.shape, "observation", &problem)) {
    return fail(why, error_code::bad_handshake, "hello: " + problem);
  }
  // Compare element counts, not bytes: a saturated count times the element size would wrap.
  if (saturating_elements(h.observation.shape) >
      max_observation_bytes / size_of(h.observation.type)) {
    return fail(why, error_code::bad_handshake,
                "hello: observation of " + h.observation.shape.to_string() + " " +
                    to_string(h.observation.type) + " exceeds 2^31 bytes");
  }
  if (h.action.kind == action_kind::discrete) {
    if (h.action.num_actions < 1) {
      return fail(
          why, error_code::bad_handshake,
          "hello: discrete action count " + std::to_string(h.action.num_actions) + " is below 1");
    }
  } else if (h.action.kind == action_kind::continuous) {
    if (!check_wire_shape(h.action.shape, "action", &problem)) {
      return fail(why, error_code::bad_handshake, "hello: " + problem);
    }
    if (saturating_elements(h.action.shape) > max_action_elements) {
      return fail(why, error_code::bad_handshake,
                  "hello: action shape " + h.action.shape.to_string() + " exceeds 2^28 elements");
    }
    const auto low_at = [&](std::size_t i) {
      return raw == nullptr ? h.action.low_at(i) : raw->lows[raw->lows.size() == 1 ? 0 : i];
    };
    const auto high_at = [&](std::size_t i) {
      return raw == nullptr ? h.action.high_at(i) : raw->highs[raw->highs.size() == 1 ? 0 : i];
    };
    // Only possible when `shape` was reassigned after the factory.
    if (raw == nullptr && h.action.per_element_bounds() &&
        h.action.bound_pairs() != saturating_elements(h.action.shape)) {
      return fail(why, error_code::bad_handshake,
                  "hello: action has " + std::to_string(h.action.bound_pairs()) +
                      " bounds pairs for shape " + h.action.shape.to_string());
    }
    if (v == 1) {
      if (raw == nullptr && !h.action.uniform_bounds()) {
        // Name the first element unlike element 0: the whole list could be 2^28 pairs.
        std::size_t i = 1;
        while (h.action.low_at(i) == h.action.low_at(0) &&
               h.action.high_at(i) == h.action.high_at(0)) {
          ++i;
        }
        const auto pair = [&](std::size_t k) {
          return format_bounds(h.action.low_at(k), h.action.high_at(k));
        };
        return fail(why, error_code::bad_handshake,
                    "hello: version 1 carries one [low, high] for every action element, these "
                    "differ: element 0 has " +
                        pair(0) + ", element " + std::to_string(i) + " " + pair(i));
      }
      if (const error_code e = check_bounds(low_at(0), high_at(0), -1, why);
          e != error_code::none) {
        return e;
      }
    } else {
      if (const error_code e = check_bounded_elements(h.action.shape, why); e != error_code::none) {
        return e;
      }
      const auto n = static_cast<std::int64_t>(saturating_elements(h.action.shape));
      for (std::int64_t i = 0; i < n; ++i) {
        const auto at = static_cast<std::size_t>(i);
        if (const error_code e = check_bounds(low_at(at), high_at(at), i, why);
            e != error_code::none) {
          return e;
        }
      }
    }
  } else {
    return fail(
        why, error_code::bad_handshake,
        "hello: unknown action kind " + std::to_string(static_cast<unsigned>(h.action.kind)));
  }
  if (h.name.size() > max_name_length) {
    return fail(
        why, error_code::bad_handshake,
        "hello: name of " + std::to_string(h.name.size()) + " bytes exceeds the limit of 256");
  }
  if (!is_printable_utf8(h.name, &problem)) {
    return fail(why, error_code::bad_handshake, "hello: name: " + problem);
  }
  return error_code::none;
}

}  // namespace detail

/// Writes a whole hello frame into `frame`, replacing its contents. Throws
/// std::invalid_argument (with decode_hello's reason) for a hello the learner would refuse as
/// malformed, so that an actor fails at start-up with a local message.
inline void encode_hello(const hello& h, std::vector<std::byte>& frame) {
  std::string why;
  if (detail::check_hello_fields(h, &why) != error_code::none) {
    throw std::invalid_argument("seedrl::protocol::encode_hello: " + why);
  }
  const std::uint16_t v = detail::hello_wire_version(h);
  detail::frame_writer w(frame, message_type::hello);
  w.u16(v);
  w.u16(0);
  w.u64(h.actor_id);
  w.u32(h.num_envs);
  w.u8(static_cast<std::uint8_t>(h.observation.type));
  w.u8(static_cast<std::uint8_t>(h.observation.shape.rank()));
  w.u16(0);
  for (std::int64_t d : h.observation.shape) {
    w.u32(static_cast<std::uint32_t>(d));
  }
  w.u8(static_cast<std::uint8_t>(h.action.kind));
  w.u8(0);
  w.u16(0);
  if (h.action.kind == action_kind::discrete) {
    w.u32(static_cast<std::uint32_t>(h.action.num_actions));
  } else {
    w.u8(static_cast<std::uint8_t>(h.action.shape.rank()));
    w.u8(0);
    w.u16(0);
    for (std::int64_t d : h.action.shape) {
      w.u32(static_cast<std::uint32_t>(d));
    }
    if (v == 1) {
      w.f64(h.action.low_at(0));
      w.f64(h.action.high_at(0));
    } else {
      // Version 2: every element's low, then every element's high, row-major.
      const auto n = static_cast<std::size_t>(h.action.shape.num_elements());
      for (std::size_t i = 0; i < n; ++i) {
        w.f64(h.action.low_at(i));
      }
      for (std::size_t i = 0; i < n; ++i) {
        w.f64(h.action.high_at(i));
      }
    }
  }
  w.u16(static_cast<std::uint16_t>(h.name.size()));
  w.bytes(h.name);
  w.finish();
}

/// Decodes and validates a hello payload. Codes: frame_too_large (payload over
/// max_hello_payload), truncated_frame (ends inside a field, or bytes after the name),
/// unsupported_version (protocol_version is not 1 or 2), bad_reserved_bits, bad_handshake
/// (unknown dtype or action kind, rank 0 or above 6, a zero dimension, observation over 2^31
/// bytes, num_envs 0, num_actions < 1, a NaN bound or low >= high, per-element bounds for more
/// than 1024 elements, name too long or not printable UTF-8). Fields are
/// checked in wire order, so the first bad field decides the code. `out` is complete only on
/// success.
inline error_code decode_hello(std::span<const std::byte> payload, hello& out,
                               std::string* why = nullptr) {
  using detail::fail;
  if (payload.size() > max_hello_payload) {
    return fail(why, error_code::frame_too_large,
                "hello payload of " + std::to_string(payload.size()) +
                    " bytes exceeds the limit of " + std::to_string(max_hello_payload));
  }
  detail::field_reader r(payload);
  const auto short_at = [&](const char* field) {
    return fail(why, error_code::truncated_frame,
                "hello ends at byte " + std::to_string(payload.size()) + " inside " + field);
  };
  const auto reserved = [&](const char* field) {
    return fail(why, error_code::bad_reserved_bits, std::string("hello: ") + field + " is not 0");
  };
  // Called with the rank and its `padding` reserved bytes available: the observation's rank
  // follows its dtype byte and has 2, the action's rank starts its group and has 3.
  const auto read_shape = [&](const char* what, std::size_t padding,
                              tensor_shape& shape) -> error_code {
    const std::uint8_t rank = r.u8();
    if (rank == 0 || rank > tensor_shape::max_rank) {
      return fail(
          why, error_code::bad_handshake,
          std::string("hello: ") + what + " rank " + std::to_string(rank) + " is outside [1, 6]");
    }
    bool padded = true;
    for (std::size_t i = 0; i < padding; ++i) {
      padded = r.u8() == 0 && padded;
    }
    if (!padded) {
      return reserved("reserved bytes after the rank");
    }
    if (!r.need(4u * rank)) {
      return short_at("dims");
    }
    shape = tensor_shape{};
    for (unsigned i = 0; i < rank; ++i) {
      const std::uint32_t d = r.u32();
      if (d == 0) {
        return fail(why, error_code::bad_handshake,
                    std::string("hello: ") + what + " dimension " + std::to_string(i) + " is 0");
      }
      shape.push_back(d);
    }
    return error_code::none;
  };

  if (!r.need(16)) {
    return short_at("the fixed fields (version, actor_id, num_envs)");
  }
  const std::uint16_t v = r.u16();
  if (v < min_hello_version || v > hello_version) {
    return fail(why, error_code::unsupported_version,
                "hello: protocol_version " + std::to_string(v) + ", this learner speaks 1 and 2");
  }
  if (r.u16() != 0) {
    return reserved("reserved u16 after protocol_version");
  }
  hello h;
  h.version = v;
  std::vector<double> lows, highs;  // continuous bounds as read
  h.actor_id = r.u64();
  h.num_envs = r.u32();
  if (h.num_envs == 0) {
    return fail(why, error_code::bad_handshake, "hello: num_envs is 0");
  }

  if (!r.need(4)) {
    return short_at("the observation spec");
  }
  const std::uint8_t obs_dtype = r.u8();
  if (size_of(static_cast<dtype>(obs_dtype)) == 0) {
    return fail(why, error_code::bad_handshake,
                "hello: unknown observation dtype " + std::to_string(obs_dtype));
  }
  h.observation.type = static_cast<dtype>(obs_dtype);
  if (const error_code e = read_shape("observation", 2, h.observation.shape);
      e != error_code::none) {
    return e;
  }

  if (!r.need(4)) {
    return short_at("the action kind");
  }
  const std::uint8_t kind = r.u8();
  if (r.u8() != 0 || r.u16() != 0) {
    return reserved("reserved bytes after the action kind");
  }
  if (kind == static_cast<std::uint8_t>(action_kind::discrete)) {
    if (!r.need(4)) {
      return short_at("num_actions");
    }
    h.action.kind = action_kind::discrete;
    h.action.num_actions = static_cast<std::int32_t>(r.u32());
  } else if (kind == static_cast<std::uint8_t>(action_kind::continuous)) {
    if (!r.need(4)) {
      return short_at("the action shape");
    }
    h.action.kind = action_kind::continuous;
    if (const error_code e = read_shape("action", 3, h.action.shape); e != error_code::none) {
      return e;
    }
    // The bounds are kept raw here and checked with the other values below; the action spec
    // takes them only once they passed.
    if (v == 1) {
      if (!r.need(16)) {
        return short_at("the action bounds");
      }
      lows.push_back(r.f64());
      highs.push_back(r.f64());
    } else {
      // The count comes from the shape: bounded before it sizes anything.
      if (const error_code e = detail::check_bounded_elements(h.action.shape, why);
          e != error_code::none) {
        return e;
      }
      const auto n = static_cast<std::size_t>(h.action.shape.num_elements());
      if (!r.need(16 * n)) {
        return short_at("the per-element action bounds");
      }
      lows.resize(n);
      highs.resize(n);
      for (double& x : lows) {
        x = r.f64();
      }
      for (double& x : highs) {
        x = r.f64();
      }
    }
  } else {
    return fail(why, error_code::bad_handshake,
                "hello: unknown action kind " + std::to_string(kind));
  }

  if (!r.need(2)) {
    return short_at("name_length");
  }
  const std::uint16_t name_length = r.u16();
  if (name_length > max_name_length) {
    return fail(
        why, error_code::bad_handshake,
        "hello: name of " + std::to_string(name_length) + " bytes exceeds the limit of 256");
  }
  if (!r.need(name_length)) {
    return short_at("the name");
  }
  h.name.assign(r.text(name_length));
  if (r.remaining() != 0) {
    return fail(why, error_code::truncated_frame,
                "hello has " + std::to_string(r.remaining()) + " bytes after the name");
  }
  // Value rules (counts, sizes, bounds, name text) in one place, shared with encode_hello.
  const detail::raw_bounds raw{lows, highs};
  if (const error_code e = detail::check_hello_fields(h, why, &raw); e != error_code::none) {
    return e;
  }
  if (h.action.kind == action_kind::continuous) {
    h.action = v == 1 ? action_spec::continuous(h.action.shape, lows[0], highs[0])
                      : action_spec::continuous(h.action.shape, lows, highs);
  }
  out = std::move(h);
  return error_code::none;
}

/// The learner's answer to an accepted hello.
struct welcome {
  /// Learner-wide slot of the actor's env 0; env i is slot first_env_slot + i. For logs and
  /// metrics: the actor keeps addressing its envs by local index.
  std::uint32_t first_env_slot = 0;
  std::uint32_t num_envs = 0;  ///< echoes hello.num_envs
  /// Largest step payload the learner accepts from this actor (>= its exact step size).
  std::uint32_t max_payload_bytes = default_max_payload;
  /// Send a keepalive after this long without sending anything; 0 turns keepalives and the
  /// idle timeout off.
  std::uint32_t keepalive_interval_ms = 0;
};

/// Writes a whole welcome frame into `frame`, replacing its contents.
inline void encode_welcome(const welcome& m, std::vector<std::byte>& frame) {
  detail::frame_writer w(frame, message_type::welcome);
  w.u32(m.first_env_slot);
  w.u32(m.num_envs);
  w.u32(m.max_payload_bytes);
  w.u32(m.keepalive_interval_ms);
  w.finish();
}

/// Decodes a welcome payload (exactly 16 bytes, else truncated_frame). bad_handshake when
/// num_envs is 0 or the slot range passes 2^32. The actor still has to check that num_envs
/// equals what it sent.
inline error_code decode_welcome(std::span<const std::byte> payload, welcome& out,
                                 std::string* why = nullptr) {
  using detail::fail;
  if (payload.size() != 16) {
    return fail(why, error_code::truncated_frame,
                "welcome payload of " + std::to_string(payload.size()) + " bytes, expected 16");
  }
  welcome m;
  m.first_env_slot = detail::load_u32(payload.data());
  m.num_envs = detail::load_u32(payload.data() + 4);
  m.max_payload_bytes = detail::load_u32(payload.data() + 8);
  m.keepalive_interval_ms = detail::load_u32(payload.data() + 12);
  if (m.num_envs == 0) {
    return fail(why, error_code::bad_handshake, "welcome: num_envs is 0");
  }
  if (std::uint64_t{m.first_env_slot} + m.num_envs > (std::uint64_t{1} << 32)) {
    return fail(why, error_code::bad_handshake, "welcome: env slots pass 2^32");
  }
  out = m;
  return error_code::none;
}

/// What differs between the learner's specs and the actor's, as "; "-separated phrases such
/// as "observation dtype: actor sends uint8, learner expects float32"; "" when they match.
/// Discrete specs compare by action count only, continuous ones by shape and bounds.
inline std::string describe_spec_mismatch(const observation_spec& learner_obs,
                                          const action_spec& learner_act,
                                          const observation_spec& actor_obs,
                                          const action_spec& actor_act) {
  std::string out;
  const auto add = [&](const std::string& s) {
    if (!out.empty()) {
      out += "; ";
    }
    out += s;
  };
  if (actor_obs.type != learner_obs.type) {
    add(std::string("observation dtype: actor sends ") + to_string(actor_obs.type) +
        ", learner expects " + to_string(learner_obs.type));
  }
  if (!(actor_obs.shape == learner_obs.shape)) {
    add("observation shape: actor sends " + actor_obs.shape.to_string() + ", learner expects " +
        learner_obs.shape.to_string());
  }
  if (actor_act.kind != learner_act.kind) {
    add("action kind: actor has " + actor_act.to_string() + ", learner expects " +
        learner_act.to_string());
  } else if (actor_act.kind == action_kind::discrete) {
    if (actor_act.num_actions != learner_act.num_actions) {
      add("action count: actor has " + std::to_string(actor_act.num_actions) +
          ", learner expects " + std::to_string(learner_act.num_actions));
    }
  } else {
    if (!(actor_act.shape == learner_act.shape)) {
      add("action shape: actor has " + actor_act.shape.to_string() + ", learner expects " +
          learner_act.shape.to_string());
    } else if (!(actor_act == learner_act)) {
      if (actor_act.uniform_bounds() && learner_act.uniform_bounds()) {
        add("action bounds: actor has " + actor_act.bounds_to_string() + ", learner expects " +
            learner_act.bounds_to_string());
      } else {
        // Name the first element that differs: a whole per-element list could fill the message.
        const auto n = static_cast<std::size_t>(actor_act.shape.num_elements());
        std::size_t i = 0;
        while (i + 1 < n && actor_act.low_at(i) == learner_act.low_at(i) &&
               actor_act.high_at(i) == learner_act.high_at(i)) {
          ++i;
        }
        const auto pair = [&](const action_spec& a) {
          return detail::format_bounds(a.low_at(i), a.high_at(i));
        };
        add("action bounds of element " + std::to_string(i) + ": actor has " + pair(actor_act) +
            ", learner expects " + pair(learner_act));
      }
    }
  }
  return out;
}

/// Number of action elements per environment on the wire: 1 (an int32) for discrete spaces,
/// the shape's element count (float32 each) for continuous ones.
constexpr std::size_t action_elements(const action_spec& s) noexcept {
  return s.kind == action_kind::discrete ? 1 : static_cast<std::size_t>(s.shape.num_elements());
}

/// Bytes in one env's step record: 20 fixed bytes, then the observation.
constexpr std::size_t step_record_size(std::size_t obs_bytes) noexcept {
  return step_record_fixed_size + obs_bytes;
}
/// Bytes in a step payload: num_envs u32, then one record per environment.
constexpr std::size_t step_payload_size(std::size_t num_envs, std::size_t obs_bytes) noexcept {
  return 4 + num_envs * step_record_size(obs_bytes);
}
/// Bytes in a whole step frame, header included: the buffer encode_step needs.
constexpr std::size_t step_frame_size(std::size_t num_envs, std::size_t obs_bytes) noexcept {
  return header_size + step_payload_size(num_envs, obs_bytes);
}
/// Bytes in an actions payload: num_envs u32, then 4 bytes per action element.
constexpr std::size_t actions_payload_size(std::size_t num_envs, const action_spec& s) noexcept {
  return 4 + num_envs * 4 * action_elements(s);
}
/// Bytes in a whole actions frame, header included.
constexpr std::size_t actions_frame_size(std::size_t num_envs, const action_spec& s) noexcept {
  return header_size + actions_payload_size(num_envs, s);
}

/// The learner's admission check after a well-formed hello, short of slot accounting:
/// spec_mismatch (reason from describe_spec_mismatch) when the actor's specs differ from the
/// learner's, too_many_envs when the actor's step or actions frames would exceed
/// `max_payload`. The learner also answers too_many_envs when it lacks free slots.
inline error_code check_hello(const hello& h, const observation_spec& learner_obs,
                              const action_spec& learner_act, std::uint32_t max_payload,
                              std::string* why = nullptr) {
  std::string diff = describe_spec_mismatch(learner_obs, learner_act, h.observation, h.action);
  if (!diff.empty()) {
    return detail::fail(why, error_code::spec_mismatch, diff);
  }
  // Specs now match the learner's own, so these products are small enough not to overflow.
  const std::uint64_t step =
      4 + std::uint64_t{h.num_envs} * (step_record_fixed_size + h.observation.num_bytes());
  const std::uint64_t acts = 4 + std::uint64_t{h.num_envs} * 4 * action_elements(h.action);
  if (step > max_payload || acts > max_payload) {
    return detail::fail(
        why, error_code::too_many_envs,
        std::to_string(h.num_envs) + " environments need " + std::to_string(std::max(step, acts)) +
            "-byte frames, above the learner's limit of " + std::to_string(max_payload));
  }
  return error_code::none;
}

// ---------------------------------------------------------------------------------------------
// step

/// The columns of one step, as the actor's env batch holds them; env i is local index i.
struct step_input {
  std::span<const std::uint64_t> run_ids;    ///< per env: random per env instance
  std::span<const float> rewards;            ///< per env: finite
  std::span<const std::uint8_t> dones;       ///< per env: nonzero = episode ended
  std::span<const std::uint8_t> truncateds;  ///< per env: nonzero = ended by time limit
  std::span<const std::byte> observations;   ///< [num_envs * obs_bytes], host byte order
};

/// Writes a whole step frame for `in` into `frame` (at least step_frame_size bytes) and
/// returns its size. Env indices are 0..num_envs-1 in order. Observation elements of type
/// `observation_type` are converted from host to wire (little-endian) order. Does not
/// allocate. Throws std::invalid_argument on inconsistent column sizes, a non-finite reward,
/// or truncated without done (the learner would close the connection for either);
/// std::length_error when `frame` is too small or the payload passes 2^32 bytes.
inline std::size_t encode_step(std::span<std::byte> frame, dtype observation_type,
                               const step_input& in) {
  const std::size_t k = in.run_ids.size();
  const std::size_t elem = size_of(observation_type);
  if (k == 0 || in.rewards.size() != k || in.dones.size() != k || in.truncateds.size() != k) {
    throw std::invalid_argument(
        "seedrl::protocol::encode_step: run_ids, rewards, dones and truncateds need the same "
        "nonzero size");
  }
  if (elem == 0 || in.observations.size() % (k * elem) != 0 || in.observations.empty()) {
    throw std::invalid_argument(
        "seedrl::protocol::encode_step: observations must hold num_envs equal, nonempty "
        "observations of whole elements");
  }
  const std::size_t obs_bytes = in.observations.size() / k;
  const std::size_t payload = step_payload_size(k, obs_bytes);
  if (payload > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("seedrl::protocol::encode_step: payload exceeds 2^32 bytes");
  }
  if (frame.size() < header_size + payload) {
    throw std::length_error(
        "seedrl::protocol::encode_step: frame buffer smaller than step_frame_size()");
  }
  for (std::size_t i = 0; i < k; ++i) {
    if (!std::isfinite(in.rewards[i])) {
      throw std::invalid_argument("seedrl::protocol::encode_step: reward of env " +
                                  std::to_string(i) + " is not finite");
    }
    if (in.truncateds[i] != 0 && in.dones[i] == 0) {
      throw std::invalid_argument("seedrl::protocol::encode_step: env " + std::to_string(i) +
                                  " is truncated but not done");
    }
  }
  encode_header(frame.first<header_size>(), message_type::step,
                static_cast<std::uint32_t>(payload));
  std::byte* p = frame.data() + header_size;
  detail::store_u32(p, static_cast<std::uint32_t>(k));
  p += 4;
  for (std::size_t i = 0; i < k; ++i) {
    const std::uint8_t flags = static_cast<std::uint8_t>(
        (in.dones[i] != 0 ? flag_done : 0) | (in.truncateds[i] != 0 ? flag_truncated : 0));
    detail::store_u32(p, static_cast<std::uint32_t>(i));
    detail::store_u8(p + 4, flags);
    detail::store_u8(p + 5, 0);
    detail::store_u16(p + 6, 0);
    detail::store_u64(p + 8, in.run_ids[i]);
    detail::store_f32(p + 16, in.rewards[i]);
    detail::copy_elements_le(p + step_record_fixed_size, in.observations.data() + i * obs_bytes,
                             obs_bytes, elem);
    p += step_record_size(obs_bytes);
  }
  return header_size + payload;
}

class step_view;

/// What parse_step checks in each observation element besides the size: float32 and float64
/// elements must be finite and at most `max_magnitude` in absolute value (the learner sets its
/// scalar's largest value, so that no element becomes infinite when converted: one such
/// element would turn running statistics into NaN for good). Other element types, and the
/// default `type`, are not looked at.
struct observation_check {
  dtype type = dtype::uint8;
  double max_magnitude = std::numeric_limits<double>::max();
};

/// Validates a whole step payload and, on success, points `out` at it. Checks, in this order:
/// payload shorter than 4 bytes (truncated_frame); num_envs field != expected_envs
/// (bad_env_index: some index would be missing or out of range); length !=
/// step_payload_size(expected_envs, obs_bytes) (wrong_observation_size); then record by
/// record: env_index >= num_envs or repeated (bad_env_index), undefined flag bits or truncated
/// without done, or nonzero reserved bytes (bad_reserved_bits), non-finite reward
/// (non_finite_reward), a float observation element that `check` refuses
/// (non_finite_observation). Allocates only when `out` meets more envs than ever before.
inline error_code parse_step(std::span<const std::byte> payload, std::uint32_t expected_envs,
                             std::size_t obs_bytes, step_view& out, std::string* why = nullptr,
                             observation_check check = {});

/// A validated step payload, read in place: accessors decode one field of record `i` (the
/// i-th record on the wire, which need not be env i). Observations are spans into the payload,
/// so the learner copies them straight into its batch buffer. Valid while the payload lives;
/// reuse one view per connection so that its index bitmap is allocated once.
class step_view {
 public:
  /// Records in the step (0 after a failed parse).
  std::size_t size() const noexcept { return num_envs_; }
  /// Bytes of one observation.
  std::size_t observation_bytes() const noexcept { return obs_bytes_; }
  /// Local env index of record i, in [0, size()).
  std::uint32_t env_index(std::size_t i) const noexcept { return detail::load_u32(record(i)); }
  /// Whether record i ended an episode (its observation starts the next one).
  bool done(std::size_t i) const noexcept {
    return (detail::load_u8(record(i) + 4) & flag_done) != 0;
  }
  /// Whether record i's episode was ended by a time limit (implies done).
  bool truncated(std::size_t i) const noexcept {
    return (detail::load_u8(record(i) + 4) & flag_truncated) != 0;
  }
  /// The run id of record i's environment instance; a new value means the env restarted.
  std::uint64_t run_id(std::size_t i) const noexcept { return detail::load_u64(record(i) + 8); }
  /// Reward of record i, finite.
  float reward(std::size_t i) const noexcept { return detail::load_f32(record(i) + 16); }
  /// Observation bytes of record i in wire (little-endian) order; on little-endian hosts this
  /// is the host representation. Use copy_observation to be portable.
  std::span<const std::byte> observation(std::size_t i) const noexcept {
    return {record(i) + step_record_fixed_size, obs_bytes_};
  }
  /// Copies record i's observation into `dst` (observation_bytes() long) in host order; a
  /// memcpy on little-endian hosts.
  void copy_observation(std::size_t i, dtype type, std::span<std::byte> dst) const noexcept {
    detail::copy_elements_le(dst.data(), record(i) + step_record_fixed_size,
                             std::min(dst.size(), obs_bytes_), size_of(type));
  }
  /// Converts record i's observation, elements of wire type `type`, into `dst` as `S` (the
  /// learner's scalar): the one copy from a step frame into an inference batch. Writes
  /// min(dst.size(), observation elements) elements.
  template <class S>
  void decode_observation(std::size_t i, dtype type, std::span<S> dst) const noexcept {
    const std::byte* src = record(i) + step_record_fixed_size;
    const std::size_t n = std::min(dst.size(), obs_bytes_ / size_of(type));
    switch (type) {
      case dtype::float32:
        for (std::size_t j = 0; j < n; ++j)
          dst[j] = static_cast<S>(detail::load_f32(src + 4 * j));
        break;
      case dtype::float64:
        for (std::size_t j = 0; j < n; ++j)
          dst[j] = static_cast<S>(detail::load_f64(src + 8 * j));
        break;
      case dtype::uint8:
        for (std::size_t j = 0; j < n; ++j)
          dst[j] = static_cast<S>(std::to_integer<std::uint8_t>(src[j]));
        break;
      case dtype::int32:
        for (std::size_t j = 0; j < n; ++j)
          dst[j] = static_cast<S>(static_cast<std::int32_t>(detail::load_u32(src + 4 * j)));
        break;
    }
  }

 private:
  friend error_code parse_step(std::span<const std::byte>, std::uint32_t, std::size_t, step_view&,
                               std::string*, observation_check);
  const std::byte* record(std::size_t i) const noexcept {
    return payload_.data() + 4 + i * (step_record_fixed_size + obs_bytes_);
  }
  std::span<const std::byte> payload_;
  std::size_t num_envs_ = 0;
  std::size_t obs_bytes_ = 0;
  std::vector<std::uint64_t> seen_;  // one bit per env index, reused across steps
};

namespace detail {
/// The first element of a float observation (`count` elements of `type` at `p`) that `check`
/// refuses, or `count` when there is none.
inline std::size_t first_refused_element(const std::byte* p, std::size_t count, dtype type,
                                         double max_magnitude, double& value) noexcept {
  for (std::size_t j = 0; j < count; ++j) {
    const double v = type == dtype::float32 ? double{load_f32(p + 4 * j)} : load_f64(p + 8 * j);
    if (!(std::abs(v) <= max_magnitude)) {  // NaN fails too
      value = v;
      return j;
    }
  }
  return count;
}
}  // namespace detail

inline error_code parse_step(std::span<const std::byte> payload, std::uint32_t expected_envs,
                             std::size_t obs_bytes, step_view& out, std::string* why,
                             observation_check check) {
  using detail::fail;
  out.num_envs_ = 0;
  out.payload_ = {};
  if (payload.size() < 4) {
    return fail(why, error_code::truncated_frame,
                "step payload of " + std::to_string(payload.size()) +
                    " bytes is shorter than its num_envs field");
  }
  const std::uint32_t n = detail::load_u32(payload.data());
  if (n != expected_envs) {
    return fail(why, error_code::bad_env_index,
                "step carries " + std::to_string(n) + " environments, the handshake declared " +
                    std::to_string(expected_envs));
  }
  const std::size_t want = step_payload_size(n, obs_bytes);
  if (payload.size() != want) {
    std::string msg = "step payload of " + std::to_string(payload.size()) + " bytes, expected " +
                      std::to_string(want) + " (" + std::to_string(n) + " records of 20 + " +
                      std::to_string(obs_bytes) + " observation bytes)";
    if (n != 0 && payload.size() > 4 + std::size_t{n} * step_record_fixed_size &&
        (payload.size() - 4) % n == 0) {
      msg += "; the actor's observations look like " +
             std::to_string((payload.size() - 4) / n - step_record_fixed_size) + " bytes";
    }
    return fail(why, error_code::wrong_observation_size, msg);
  }
  const std::size_t record_size = step_record_size(obs_bytes);
  out.seen_.assign((std::size_t{n} + 63) / 64, 0);
  const std::byte* p = payload.data() + 4;
  for (std::size_t i = 0; i < n; ++i, p += record_size) {
    const std::uint32_t env = detail::load_u32(p);
    if (env >= n) {
      return fail(why, error_code::bad_env_index,
                  "step record " + std::to_string(i) + ": env_index " + std::to_string(env) +
                      " is outside [0, " + std::to_string(n) + ")");
    }
    std::uint64_t& word = out.seen_[env / 64];
    const std::uint64_t bit = std::uint64_t{1} << (env % 64);
    if ((word & bit) != 0) {
      return fail(why, error_code::bad_env_index,
                  "step record " + std::to_string(i) + ": env_index " + std::to_string(env) +
                      " appears twice");
    }
    word |= bit;
    const std::uint8_t flags = detail::load_u8(p + 4);
    if ((flags & ~(flag_done | flag_truncated)) != 0 ||
        ((flags & flag_truncated) != 0 && (flags & flag_done) == 0)) {
      return fail(why, error_code::bad_reserved_bits,
                  "step record " + std::to_string(i) + ": flags " + std::to_string(flags) +
                      " (allowed: 0, 1 done, 3 done+truncated)");
    }
    if (detail::load_u8(p + 5) != 0 || detail::load_u16(p + 6) != 0) {
      return fail(why, error_code::bad_reserved_bits,
                  "step record " + std::to_string(i) + ": reserved bytes are not 0");
    }
    const float reward = detail::load_f32(p + 16);
    if (!std::isfinite(reward)) {
      return fail(why, error_code::non_finite_reward,
                  "step record " + std::to_string(i) + " (env " + std::to_string(env) +
                      "): reward is " + detail::format_double(reward));
    }
    if (check.type == dtype::float32 || check.type == dtype::float64) {
      double value = 0.0;
      const std::size_t count = obs_bytes / size_of(check.type);
      if (const std::size_t j = detail::first_refused_element(
              p + step_record_fixed_size, count, check.type, check.max_magnitude, value);
          j != count) {
        return fail(why, error_code::non_finite_observation,
                    "step record " + std::to_string(i) + " (env " + std::to_string(env) +
                        "): observation element " + std::to_string(j) + " is " +
                        detail::format_double(value) +
                        (std::isfinite(value) ? ", beyond the learner's range of +-" +
                                                    detail::format_double(check.max_magnitude)
                                              : std::string()));
      }
    }
  }
  out.payload_ = payload;
  out.num_envs_ = n;
  out.obs_bytes_ = obs_bytes;
  return error_code::none;
}

// ---------------------------------------------------------------------------------------------
// actions

/// Writes a whole discrete actions frame (actions[i] for local env i) into `frame` (at least
/// header_size + 4 + 4 * actions.size() bytes) and returns its size. Does not allocate.
/// Throws std::invalid_argument for no actions, std::length_error when `frame` is too small.
inline std::size_t encode_discrete_actions(std::span<std::byte> frame,
                                           std::span<const std::int32_t> actions) {
  const std::size_t k = actions.size();
  const std::size_t payload = 4 + 4 * k;
  if (k == 0 || k > std::numeric_limits<std::uint32_t>::max() / 4 - 1) {
    throw std::invalid_argument(
        "seedrl::protocol::encode_discrete_actions: needs between 1 and 2^30 - 2 actions");
  }
  if (frame.size() < header_size + payload) {
    throw std::length_error(
        "seedrl::protocol::encode_discrete_actions: frame buffer smaller than "
        "actions_frame_size()");
  }
  encode_header(frame.first<header_size>(), message_type::actions,
                static_cast<std::uint32_t>(payload));
  std::byte* p = frame.data() + header_size;
  detail::store_u32(p, static_cast<std::uint32_t>(k));
  detail::copy_elements_le(p + 4, reinterpret_cast<const std::byte*>(actions.data()), 4 * k, 4);
  return header_size + payload;
}

/// Writes a whole continuous actions frame into `frame` and returns its size: `actions` holds
/// num_envs rows of equal length, env-major. Does not allocate. Throws std::invalid_argument
/// when `actions` does not split into num_envs nonempty rows, std::length_error when `frame`
/// is too small or the payload passes 2^32 bytes.
inline std::size_t encode_continuous_actions(std::span<std::byte> frame, std::size_t num_envs,
                                             std::span<const float> actions) {
  if (num_envs == 0 || actions.empty() || actions.size() % num_envs != 0) {
    throw std::invalid_argument(
        "seedrl::protocol::encode_continuous_actions: actions must hold num_envs (>= 1) "
        "nonempty rows");
  }
  const std::size_t payload = 4 + 4 * actions.size();
  if (actions.size() > std::numeric_limits<std::uint32_t>::max() / 4 - 1) {
    throw std::length_error(
        "seedrl::protocol::encode_continuous_actions: payload exceeds 2^32 bytes");
  }
  if (frame.size() < header_size + payload) {
    throw std::length_error(
        "seedrl::protocol::encode_continuous_actions: frame buffer smaller than "
        "actions_frame_size()");
  }
  encode_header(frame.first<header_size>(), message_type::actions,
                static_cast<std::uint32_t>(payload));
  std::byte* p = frame.data() + header_size;
  detail::store_u32(p, static_cast<std::uint32_t>(num_envs));
  detail::copy_elements_le(p + 4, reinterpret_cast<const std::byte*>(actions.data()),
                           4 * actions.size(), 4);
  return header_size + payload;
}

namespace detail {

/// Shared front of both parse_actions: count and length checks.
inline error_code check_actions_size(std::span<const std::byte> payload,
                                     std::uint32_t expected_envs, const action_spec& spec,
                                     std::string* why) {
  if (payload.size() < 4) {
    return fail(why, error_code::truncated_frame,
                "actions payload of " + std::to_string(payload.size()) +
                    " bytes is shorter than its num_envs field");
  }
  const std::uint32_t n = load_u32(payload.data());
  if (n != expected_envs) {
    return fail(why, error_code::bad_env_index,
                "actions for " + std::to_string(n) + " environments, the actor has " +
                    std::to_string(expected_envs));
  }
  const std::size_t want = actions_payload_size(n, spec);
  if (payload.size() != want) {
    return fail(why, error_code::truncated_frame,
                "actions payload of " + std::to_string(payload.size()) + " bytes, expected " +
                    std::to_string(want));
  }
  return error_code::none;
}

}  // namespace detail

/// Decodes a discrete actions payload into `out` (exactly expected_envs entries; out[i] is
/// for local env i). Codes: truncated_frame (shorter than 4 bytes, or length other than
/// actions_payload_size), bad_env_index (num_envs field != expected_envs), bad_action (an
/// action outside [0, num_actions)). Throws std::invalid_argument when `spec` is not discrete
/// or `out` has the wrong size. Does not allocate on success.
inline error_code parse_actions(std::span<const std::byte> payload, std::uint32_t expected_envs,
                                const action_spec& spec, std::span<std::int32_t> out,
                                std::string* why = nullptr) {
  if (spec.kind != action_kind::discrete || out.size() != expected_envs) {
    throw std::invalid_argument(
        "seedrl::protocol::parse_actions: int32 output needs a discrete spec and expected_envs "
        "entries");
  }
  if (const error_code e = detail::check_actions_size(payload, expected_envs, spec, why);
      e != error_code::none) {
    return e;
  }
  const std::byte* p = payload.data() + 4;
  for (std::size_t i = 0; i < out.size(); ++i, p += 4) {
    const auto a = static_cast<std::int32_t>(detail::load_u32(p));
    if (a < 0 || a >= spec.num_actions) {
      return detail::fail(why, error_code::bad_action,
                          "action " + std::to_string(a) + " for env " + std::to_string(i) +
                              " is outside [0, " + std::to_string(spec.num_actions) + ")");
    }
    out[i] = a;
  }
  return error_code::none;
}

/// Decodes a continuous actions payload into `out` (expected_envs * action_elements(spec)
/// floats, env-major). Codes as for discrete actions; bad_action when an element is NaN,
/// infinite or outside its [low_at(k), high_at(k)] (actors' env batches refuse such actions, so
/// learners clip before sending). Throws std::invalid_argument when `spec` is not continuous or
/// `out` has the wrong size.
inline error_code parse_actions(std::span<const std::byte> payload, std::uint32_t expected_envs,
                                const action_spec& spec, std::span<float> out,
                                std::string* why = nullptr) {
  if (spec.kind != action_kind::continuous ||
      out.size() != std::size_t{expected_envs} * action_elements(spec)) {
    throw std::invalid_argument(
        "seedrl::protocol::parse_actions: float output needs a continuous spec and "
        "expected_envs * action_elements(spec) entries");
  }
  if (const error_code e = detail::check_actions_size(payload, expected_envs, spec, why);
      e != error_code::none) {
    return e;
  }
  const std::byte* p = payload.data() + 4;
  for (std::size_t j = 0; j < out.size(); ++j, p += 4) {
    const float a = detail::load_f32(p);
    const std::size_t k = j % action_elements(spec);
    // Infinite bounds admit every finite value; an infinite action is refused either way.
    if (!(std::isfinite(a) && a >= spec.low_at(k) && a <= spec.high_at(k))) {
      return detail::fail(why, error_code::bad_action,
                          "action element " + std::to_string(j) + " (env " +
                              std::to_string(j / action_elements(spec)) + ") is " +
                              detail::format_double(a) + ", outside [" +
                              detail::format_double(spec.low_at(k)) + ", " +
                              detail::format_double(spec.high_at(k)) + "]");
    }
    out[j] = a;
  }
  return error_code::none;
}

// ---------------------------------------------------------------------------------------------
// actor_stats

/// Where an actor's time went since its previous actor_stats frame (or its welcome): `steps`
/// round trips, `env_seconds` stepping environments and `wait_seconds` from starting to write
/// a step until its actions were read (link both ways plus the learner's own time). The
/// learner subtracts its own time per request to tell link time from batching and inference.
struct actor_stats {
  std::uint64_t steps = 0;
  double env_seconds = 0.0;
  double wait_seconds = 0.0;
};

/// Writes a whole actor_stats frame (header included) into `frame`, which must hold
/// header_size + actor_stats_payload_size bytes; does not allocate.
inline void encode_actor_stats(std::span<std::byte, header_size + actor_stats_payload_size> frame,
                               const actor_stats& m) noexcept {
  encode_header(frame.first<header_size>(), message_type::actor_stats, actor_stats_payload_size);
  detail::store_u64(frame.data() + header_size, m.steps);
  detail::store_f64(frame.data() + header_size + 8, m.env_seconds);
  detail::store_f64(frame.data() + header_size + 16, m.wait_seconds);
}

/// Decodes an actor_stats payload: exactly 24 bytes (else truncated_frame), and both times
/// finite and not negative (else bad_actor_stats).
inline error_code decode_actor_stats(std::span<const std::byte> payload, actor_stats& out,
                                     std::string* why = nullptr) {
  using detail::fail;
  if (payload.size() != actor_stats_payload_size) {
    return fail(why, error_code::truncated_frame,
                "actor_stats payload of " + std::to_string(payload.size()) + " bytes, expected " +
                    std::to_string(actor_stats_payload_size));
  }
  actor_stats m;
  m.steps = detail::load_u64(payload.data());
  m.env_seconds = detail::load_f64(payload.data() + 8);
  m.wait_seconds = detail::load_f64(payload.data() + 16);
  for (const double v : {m.env_seconds, m.wait_seconds}) {
    if (!std::isfinite(v) || v < 0.0) {
      return fail(why, error_code::bad_actor_stats,
                  "actor_stats time " + detail::format_double(v) +
                      " s is not a finite, non-negative number");
    }
  }
  out = m;
  return error_code::none;
}

// ---------------------------------------------------------------------------------------------
// authenticated handshake (docs/security.md): the byte layouts only; the proofs are computed
// by seedrl/security/challenge.hpp.

/// 32 bytes of a nonce or a proof.
using auth_bytes = std::span<const std::byte, auth_field_size>;

/// Writes a whole auth_request frame into `frame`, replacing its contents.
inline void encode_auth_request(std::vector<std::byte>& frame) {
  detail::frame_writer w(frame, message_type::auth_request);
  w.u16(auth_version);
  w.u16(0);
  w.finish();
}

/// Writes a whole auth_challenge frame carrying the learner's nonce.
inline void encode_auth_challenge(auth_bytes learner_nonce, std::vector<std::byte>& frame) {
  detail::frame_writer w(frame, message_type::auth_challenge);
  w.u16(auth_version);
  w.u16(0);
  w.bytes(learner_nonce);
  w.finish();
}

/// Writes a whole auth_response frame: the actor's nonce, then its proof.
inline void encode_auth_response(auth_bytes actor_nonce, auth_bytes actor_proof,
                                 std::vector<std::byte>& frame) {
  detail::frame_writer w(frame, message_type::auth_response);
  w.bytes(actor_nonce);
  w.bytes(actor_proof);
  w.finish();
}

/// Writes a whole auth_confirm frame carrying the learner's proof.
inline void encode_auth_confirm(auth_bytes learner_proof, std::vector<std::byte>& frame) {
  detail::frame_writer w(frame, message_type::auth_confirm);
  w.bytes(learner_proof);
  w.finish();
}

namespace detail {

/// Each authentication payload has exactly one valid size.
inline error_code check_auth_size(std::span<const std::byte> payload, std::uint32_t want,
                                  const char* what, std::string* why) {
  if (payload.size() != want) {
    return fail(why, error_code::truncated_frame,
                std::string(what) + " payload of " + std::to_string(payload.size()) +
                    " bytes, expected " + std::to_string(want));
  }
  return error_code::none;
}

/// Version and reserved word of auth_request and auth_challenge.
inline error_code check_auth_version(std::span<const std::byte> payload, const char* what,
                                     std::string* why) {
  const std::uint16_t v = load_u16(payload.data());
  if (v != auth_version) {
    // Appended to one named string: GCC 12.2 reported a false -Warray-bounds on the inlined
    // chain of rvalue operator+ here (GCC bug 105651, when the tests had a precompiled header).
    std::string message(what);
    message += " has authentication version ";
    message += std::to_string(v);
    message += ", this peer speaks ";
    message += std::to_string(auth_version);
    return fail(why, error_code::unsupported_version, message);
  }
  if (load_u16(payload.data() + 2) != 0)
    return fail(why, error_code::bad_reserved_bits, std::string(what) + " reserved field is not 0");
  return error_code::none;
}

}  // namespace detail

/// Checks an auth_request payload: 4 bytes, version 1, reserved 0.
inline error_code decode_auth_request(std::span<const std::byte> payload,
                                      std::string* why = nullptr) {
  if (auto e = detail::check_auth_size(payload, auth_request_payload_size, "auth_request", why);
      e != error_code::none)
    return e;
  return detail::check_auth_version(payload, "auth_request", why);
}

/// Decodes an auth_challenge payload into the learner's nonce.
inline error_code decode_auth_challenge(std::span<const std::byte> payload,
                                        std::span<std::byte, auth_field_size> learner_nonce,
                                        std::string* why = nullptr) {
  if (auto e = detail::check_auth_size(payload, auth_challenge_payload_size, "auth_challenge", why);
      e != error_code::none)
    return e;
  if (auto e = detail::check_auth_version(payload, "auth_challenge", why); e != error_code::none)
    return e;
  std::copy_n(payload.data() + 4, auth_field_size, learner_nonce.data());
  return error_code::none;
}

/// Decodes an auth_response payload into the actor's nonce and proof.
inline error_code decode_auth_response(std::span<const std::byte> payload,
                                       std::span<std::byte, auth_field_size> actor_nonce,
                                       std::span<std::byte, auth_field_size> actor_proof,
                                       std::string* why = nullptr) {
  if (auto e = detail::check_auth_size(payload, auth_response_payload_size, "auth_response", why);
      e != error_code::none)
    return e;
  std::copy_n(payload.data(), auth_field_size, actor_nonce.data());
  std::copy_n(payload.data() + auth_field_size, auth_field_size, actor_proof.data());
  return error_code::none;
}

/// Decodes an auth_confirm payload into the learner's proof.
inline error_code decode_auth_confirm(std::span<const std::byte> payload,
                                      std::span<std::byte, auth_field_size> learner_proof,
                                      std::string* why = nullptr) {
  if (auto e = detail::check_auth_size(payload, auth_confirm_payload_size, "auth_confirm", why);
      e != error_code::none)
    return e;
  std::copy_n(payload.data(), auth_field_size, learner_proof.data());
  return error_code::none;
}

}  // namespace seedrl::protocol
