// libFuzzer target: arbitrary bytes as one connection's byte stream, decoded the way the
// learner (and, for learner-to-actor frames, the actor) decodes them. Every message that
// decodes is re-encoded and decoded again; a difference aborts. See docs/fuzzing.md.

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "seedrl/protocol/frame.hpp"

namespace {

namespace p = seedrl::protocol;
using seedrl::action_spec;
using seedrl::dtype;
using seedrl::observation_spec;
using seedrl::tensor_shape;

// Small on purpose: a header may claim up to this much, and a real learner refuses more with
// the same decode_header check, so the fuzzer never allocates more than this per frame.
constexpr std::uint32_t max_payload = 1u << 20;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_frame: invariant violated: %s\n", what);
    std::abort();
  }
}

bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// A refusal says why, with a code that has a name, since both end up in the learner's log.
void check_refused(p::error_code e, const std::string& why, const char* what) {
  check(e != p::error_code::none && !why.empty() && std::strcmp(p::to_string(e), "unknown") != 0,
        what);
}

struct learner_spec {
  observation_spec observation;
  action_spec action;
};

// The learners this stream may be talking to: CartPole-like and Atari-like.
const std::array<learner_spec, 2>& learners() {
  static const std::array<learner_spec, 2> specs{{
      {{dtype::float32, tensor_shape{4}}, action_spec::discrete(2)},
      {{dtype::uint8, tensor_shape{84, 84, 1}}, action_spec::discrete(6)},
  }};
  return specs;
}

// A continuous spec, only so that actions frames also reach the float overload.
const action_spec& continuous_action() {
  // Per-element bounds, one side unbounded: parse_actions must check each element's own.
  static const action_spec spec = action_spec::continuous(
      tensor_shape{2}, {-1.0, -std::numeric_limits<double>::infinity()}, {1.0, 2.0});
  return spec;
}

// What the handshake has fixed so far. Before an accepted hello, steps and actions are read as
// one CartPole env, so that a single frame is a useful input on its own.
struct session {
  std::uint32_t num_envs = 1;
  const learner_spec* spec = &learners()[0];
  p::step_view step;
  p::step_view step_again;
  std::vector<std::int32_t> discrete;
  std::vector<float> continuous;
  std::vector<std::byte> buffer;
};

// Decodes a frame the encoders produced: it must be one whole frame of type `t`.
std::span<const std::byte> payload_of(std::span<const std::byte> frame, p::message_type t) {
  p::frame_header h;
  std::span<const std::byte> payload;
  check(p::decode_frame(frame, max_payload, h, payload) == p::error_code::none,
        "re-encoded frame does not decode");
  check(h.type == t, "re-encoded frame has another type");
  return payload;
}

// Whether `shape` has at most `limit` / `scale` elements, by division so nothing overflows.
bool fits(const tensor_shape& shape, std::uint64_t scale, std::uint64_t limit) {
  std::uint64_t n = scale;
  for (const std::int64_t d : shape) {
    const auto u = static_cast<std::uint64_t>(d);
    if (u == 0 || n > limit / u) {
      return false;
    }
    n *= u;
  }
  return true;
}

void on_hello(session& s, std::span<const std::byte> frame, std::span<const std::byte> payload) {
  p::hello h;
  std::string why;
  if (const p::error_code e = p::decode_hello(payload, h, &why); e != p::error_code::none) {
    check_refused(e, why, "hello refused without a reason");
    return;
  }
  // The size limits of docs/protocol.md; the learner sizes buffers from these values.
  check(fits(h.observation.shape, seedrl::size_of(h.observation.type), p::max_observation_bytes),
        "decode_hello accepted an observation over 2^31 bytes");
  check(h.action.kind != seedrl::action_kind::continuous ||
            fits(h.action.shape, 1, p::max_action_elements),
        "decode_hello accepted a continuous action over 2^28 elements");
  // decode_hello and encode_hello share their value rules, so this never throws.
  p::encode_hello(h, s.buffer);
  // Every field is either a value or a reserved zero, so the encoding is canonical.
  check(same_bytes(s.buffer, frame), "hello re-encodes to other bytes");
  p::hello again;
  check(p::decode_hello(payload_of(s.buffer, p::message_type::hello), again) == p::error_code::none,
        "re-encoded hello does not decode");
  check(again.actor_id == h.actor_id && again.num_envs == h.num_envs &&
            again.observation == h.observation && again.action == h.action && again.name == h.name,
        "hello round trip changed a value");

  bool accepted = false;
  for (const learner_spec& l : learners()) {
    const p::error_code e = p::check_hello(h, l.observation, l.action, max_payload, &why);
    const bool same_spec = h.observation == l.observation && h.action == l.action;
    check(e != p::error_code::none || same_spec, "check_hello accepted a different spec");
    check(e != p::error_code::spec_mismatch || !same_spec, "check_hello refused the same spec");
    if (e == p::error_code::none && !accepted) {
      accepted = true;
      s.num_envs = h.num_envs;
      s.spec = &l;
    }
  }
}

/// Whether every float32 or float64 element of `bytes` (host order) is finite and within
/// +-limit; other element types are not looked at.
bool float_elements_within(std::span<const std::byte> bytes, dtype type, double limit) {
  if (type != dtype::float32 && type != dtype::float64)
    return true;
  const std::size_t size = type == dtype::float32 ? 4 : 8;
  for (std::size_t at = 0; at + size <= bytes.size(); at += size) {
    double v;
    if (type == dtype::float32) {
      float f;
      std::memcpy(&f, bytes.data() + at, sizeof f);
      v = f;
    } else {
      std::memcpy(&v, bytes.data() + at, sizeof v);
    }
    if (!(std::abs(v) <= limit))
      return false;
  }
  return true;
}

void on_step(session& s, std::span<const std::byte> frame, std::span<const std::byte> payload) {
  const std::size_t obs_bytes = s.spec->observation.num_bytes();
  const dtype type = s.spec->observation.type;
  // As a float32 learner checks: float elements finite and within float's range.
  const p::observation_check learner_check{type, std::numeric_limits<float>::max()};
  std::string why;
  if (const p::error_code e =
          p::parse_step(payload, s.num_envs, obs_bytes, s.step, &why, learner_check);
      e != p::error_code::none) {
    check_refused(e, why, "step refused without a reason");
    check(s.step.size() == 0, "a refused step left records in the view");
    return;
  }
  const std::size_t n = s.num_envs;
  check(s.step.size() == n && s.step.observation_bytes() == obs_bytes, "step view has other sizes");

  // Columns by env index, as the actor's env batch holds them; records may come in any order.
  std::vector<std::uint64_t> run_ids(n);
  std::vector<float> rewards(n);
  std::vector<std::uint8_t> dones(n);
  std::vector<std::uint8_t> truncateds(n);
  std::vector<std::byte> observations(n * obs_bytes);
  std::vector<bool> seen(n);
  bool in_order = true;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t env = s.step.env_index(i);
    check(env < n && !seen[env], "parse_step accepted a bad env index");
    seen[env] = true;
    in_order = in_order && env == i;
    run_ids[env] = s.step.run_id(i);
    rewards[env] = s.step.reward(i);
    dones[env] = s.step.done(i) ? 1 : 0;
    truncateds[env] = s.step.truncated(i) ? 1 : 0;
    check(std::isfinite(rewards[env]), "parse_step accepted a non-finite reward");
    check(!s.step.truncated(i) || s.step.done(i), "parse_step accepted truncated without done");
    const std::span<std::byte> dst(observations.data() + env * obs_bytes, obs_bytes);
    s.step.copy_observation(i, type, dst);
    check(float_elements_within(dst, type, std::numeric_limits<float>::max()),
          "parse_step accepted a non-finite or out-of-range observation element");
    if constexpr (std::endian::native == std::endian::little) {
      check(same_bytes(dst, s.step.observation(i)), "copy_observation differs from the wire");
    }
  }

  s.buffer.assign(p::step_frame_size(n, obs_bytes), std::byte{0});
  const p::step_input in{run_ids, rewards, dones, truncateds, observations};
  check(p::encode_step(s.buffer, type, in) == s.buffer.size(), "encode_step wrote another size");
  // The encoder writes records in env order; with the input in that order too, bytes match.
  check(!in_order || same_bytes(s.buffer, frame), "step re-encodes to other bytes");
  check(p::parse_step(payload_of(s.buffer, p::message_type::step), s.num_envs, obs_bytes,
                      s.step_again, nullptr, learner_check) == p::error_code::none,
        "re-encoded step does not parse");
  std::vector<std::byte> obs(obs_bytes);
  for (std::size_t i = 0; i < n; ++i) {
    check(s.step_again.env_index(i) == i, "encode_step wrote records out of order");
    check(s.step_again.run_id(i) == run_ids[i] && s.step_again.done(i) == (dones[i] != 0) &&
              s.step_again.truncated(i) == (truncateds[i] != 0) &&
              std::bit_cast<std::uint32_t>(s.step_again.reward(i)) ==
                  std::bit_cast<std::uint32_t>(rewards[i]),
          "step round trip changed a field");
    s.step_again.copy_observation(i, type, obs);
    check(same_bytes(obs, std::span(observations).subspan(i * obs_bytes, obs_bytes)),
          "step round trip changed an observation");
  }
}

void on_actions(session& s, std::span<const std::byte> frame, std::span<const std::byte> payload) {
  const std::uint32_t n = s.num_envs;
  const action_spec& discrete = s.spec->action;
  s.discrete.assign(n, 0);
  std::string why;
  const p::error_code e = p::parse_actions(payload, n, discrete, std::span(s.discrete), &why);
  if (e == p::error_code::none) {
    for (const std::int32_t a : s.discrete) {
      check(a >= 0 && a < discrete.num_actions, "parse_actions accepted an out-of-range action");
    }
    s.buffer.assign(p::actions_frame_size(n, discrete), std::byte{0});
    check(p::encode_discrete_actions(s.buffer, s.discrete) == s.buffer.size(),
          "encode_discrete_actions wrote another size");
    check(same_bytes(s.buffer, frame), "discrete actions re-encode to other bytes");
  } else {
    check_refused(e, why, "actions refused without a reason");
  }

  const action_spec& continuous = continuous_action();
  s.continuous.assign(std::size_t{n} * p::action_elements(continuous), 0.0f);
  if (p::parse_actions(payload, n, continuous, std::span(s.continuous), &why) ==
      p::error_code::none) {
    for (std::size_t j = 0; j < s.continuous.size(); ++j) {
      const std::size_t k = j % p::action_elements(continuous);
      check(std::isfinite(s.continuous[j]) && s.continuous[j] >= continuous.low_at(k) &&
                s.continuous[j] <= continuous.high_at(k),
            "parse_actions accepted a bad float");
    }
    s.buffer.assign(p::actions_frame_size(n, continuous), std::byte{0});
    check(p::encode_continuous_actions(s.buffer, n, s.continuous) == s.buffer.size(),
          "encode_continuous_actions wrote another size");
    check(same_bytes(s.buffer, frame), "continuous actions re-encode to other bytes");
  }
}

void on_status(session& s, p::message_type type, std::span<const std::byte> frame,
               std::span<const std::byte> payload) {
  p::status_message m;
  std::string why;
  if (const p::error_code e = p::decode_status(payload, m, &why); e != p::error_code::none) {
    check_refused(e, why, "status refused without a reason");
    return;
  }
  check(m.message.size() <= p::max_message_length, "status text over the limit");
  // Codes this version does not know are kept as they are, and still print.
  check(p::to_string(m.code)[0] != '\0', "a status code has no printable name");
  p::encode_status(type, m, s.buffer);
  check(same_bytes(s.buffer, frame), "status re-encodes to other bytes");
  p::status_message again;
  check(p::decode_status(payload_of(s.buffer, type), again) == p::error_code::none &&
            again.code == m.code && again.message == m.message,
        "status round trip changed a value");
}

void on_welcome(session& s, std::span<const std::byte> frame, std::span<const std::byte> payload) {
  p::welcome w;
  std::string why;
  if (const p::error_code e = p::decode_welcome(payload, w, &why); e != p::error_code::none) {
    check_refused(e, why, "welcome refused without a reason");
    return;
  }
  check(w.num_envs != 0 && std::uint64_t{w.first_env_slot} + w.num_envs <= (1ull << 32),
        "decode_welcome accepted a bad slot range");
  p::encode_welcome(w, s.buffer);
  check(same_bytes(s.buffer, frame), "welcome re-encodes to other bytes");
}

void on_actor_stats(std::span<const std::byte> frame, std::span<const std::byte> payload) {
  p::actor_stats m;
  std::string why;
  if (const p::error_code e = p::decode_actor_stats(payload, m, &why); e != p::error_code::none) {
    check_refused(e, why, "actor_stats refused without a reason");
    return;
  }
  check(std::isfinite(m.env_seconds) && m.env_seconds >= 0.0 && std::isfinite(m.wait_seconds) &&
            m.wait_seconds >= 0.0,
        "decode_actor_stats accepted a bad time");
  std::array<std::byte, p::header_size + p::actor_stats_payload_size> out{};
  p::encode_actor_stats(out, m);
  check(same_bytes(out, frame), "actor_stats re-encodes to other bytes");
}

/// The four authentication frames: fixed sizes, decoded fields re-encode to the same bytes.
void on_auth(session& s, p::message_type type, std::span<const std::byte> frame,
             std::span<const std::byte> payload) {
  std::array<std::byte, p::auth_field_size> a{}, b{};
  std::string why;
  p::error_code e = p::error_code::none;
  switch (type) {
    case p::message_type::auth_request:
      e = p::decode_auth_request(payload, &why);
      if (e == p::error_code::none)
        p::encode_auth_request(s.buffer);
      break;
    case p::message_type::auth_challenge:
      e = p::decode_auth_challenge(payload, a, &why);
      if (e == p::error_code::none)
        p::encode_auth_challenge(a, s.buffer);
      break;
    case p::message_type::auth_response:
      e = p::decode_auth_response(payload, a, b, &why);
      if (e == p::error_code::none)
        p::encode_auth_response(a, b, s.buffer);
      break;
    default:
      e = p::decode_auth_confirm(payload, a, &why);
      if (e == p::error_code::none)
        p::encode_auth_confirm(a, s.buffer);
      break;
  }
  if (e != p::error_code::none) {
    check_refused(e, why, "an authentication frame refused without a reason");
    return;
  }
  check(same_bytes(s.buffer, frame), "an authentication frame re-encodes to other bytes");
}

void run(std::span<const std::byte> in) {
  session s;
  // Frame after frame, as a connection delivers them. A bad header ends the stream, as it does
  // for the learner (the next frame's start is unknown). A bad payload would too, but the
  // fuzzer reads on so that one input reaches several decoders.
  while (in.size() >= p::header_size) {
    p::frame_header h;
    std::string why;
    const auto header = in.first<p::header_size>();
    // decode_frame on everything left: the header's verdict, or truncated_frame unless the
    // stream holds exactly one frame.
    p::frame_header whole;
    std::span<const std::byte> whole_payload;
    const p::error_code whole_code = p::decode_frame(in, max_payload, whole, whole_payload);
    if (const p::error_code e = p::decode_header(header, max_payload, h, &why);
        e != p::error_code::none) {
      check_refused(e, why, "header refused without a reason");
      check(whole_code == e, "decode_frame and decode_header disagree on a bad header");
      return;
    }
    const bool one_frame = in.size() == p::header_size + std::size_t{h.payload_length};
    check(whole_code == (one_frame ? p::error_code::none : p::error_code::truncated_frame),
          "decode_frame misjudged the stream's length");
    check(p::is_known(h.type) && h.payload_length <= p::payload_limit(h.type, max_payload),
          "decode_header accepted a bad type or length");
    // Magic, version and reserved word are checked, so a valid header is canonical.
    std::array<std::byte, p::header_size> again{};
    p::encode_header(again, h.type, h.payload_length);
    check(same_bytes(again, header), "header re-encodes to other bytes");
    if (in.size() - p::header_size < h.payload_length) {
      return;  // the connection ended inside the payload
    }
    const auto frame = in.first(p::header_size + h.payload_length);
    const auto payload = frame.subspan(p::header_size);
    in = in.subspan(frame.size());

    check(p::decode_frame(frame, max_payload, whole, whole_payload) == p::error_code::none &&
              whole.type == h.type && whole_payload.data() == payload.data() &&
              whole_payload.size() == payload.size(),
          "decode_frame disagrees with decode_header");
    check(std::strcmp(p::to_string(h.type), "unknown") != 0 &&
              (p::actor_may_send(h.type) || p::learner_may_send(h.type)),
          "a known message type has no name or no sender");

    switch (h.type) {
      case p::message_type::hello:
        on_hello(s, frame, payload);
        break;
      case p::message_type::step:
        on_step(s, frame, payload);
        break;
      case p::message_type::actions:
        on_actions(s, frame, payload);
        break;
      case p::message_type::reject:
      case p::message_type::error:
      case p::message_type::close:
        on_status(s, h.type, frame, payload);
        break;
      case p::message_type::welcome:
        on_welcome(s, frame, payload);
        break;
      case p::message_type::actor_stats:
        on_actor_stats(frame, payload);
        break;
      case p::message_type::auth_request:
      case p::message_type::auth_challenge:
      case p::message_type::auth_response:
      case p::message_type::auth_confirm:
        on_auth(s, h.type, frame, payload);
        break;
      case p::message_type::keepalive:
        check(payload.empty(), "keepalive with a payload passed the header check");
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The decoders report bad input by code, never by throwing; an exception here is a bug.
  try {
    run({reinterpret_cast<const std::byte*>(data), size});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_frame: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
