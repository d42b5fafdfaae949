// Writes the fuzzers' seed corpus: fuzz/corpus/frame (wire byte streams, one or more frames)
// and fuzz/corpus/handshake (inputs in fuzz_handshake.cpp's layout). Valid frames come from the
// library's own encoders; near-misses are valid frames with one field patched, so that the
// fuzzer starts next to every check instead of having to find the magic and lengths itself.
//
//   seedrl_fuzz_make_corpus fuzz/corpus
//
// Output is deterministic; rerun it and commit the result when the protocol changes.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedrl/protocol/frame.hpp"

namespace {

namespace p = seedrl::protocol;
using seedrl::action_spec;
using seedrl::dtype;
using seedrl::tensor_shape;
using bytes = std::vector<std::byte>;

bytes& operator+=(bytes& a, const bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bytes from_text(std::string_view s) {
  bytes out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// Overwrites frame bytes from `at` on; how the near-misses are made.
bytes patched(bytes frame, std::size_t at, std::initializer_list<std::uint8_t> values) {
  for (const std::uint8_t v : values) {
    frame.at(at++) = std::byte{v};
  }
  return frame;
}

p::hello make_hello(std::uint32_t num_envs, const seedrl::observation_spec& obs,
                    const action_spec& act, std::string name) {
  p::hello h;
  h.actor_id = 7;
  h.num_envs = num_envs;
  h.observation = obs;
  h.action = act;
  h.name = std::move(name);
  return h;
}

const seedrl::observation_spec cartpole_obs{dtype::float32, tensor_shape{4}};
const seedrl::observation_spec atari_obs{dtype::uint8, tensor_shape{84, 84, 1}};

bytes hello_frame(const p::hello& h) {
  bytes out;
  p::encode_hello(h, out);
  return out;
}

bytes cartpole_hello(std::uint32_t num_envs, std::string name = "host:1234") {
  return hello_frame(make_hello(num_envs, cartpole_obs, action_spec::discrete(2), std::move(name)));
}

// A step of `k` envs with observations of `obs_bytes` bytes of a simple pattern; env i has
// flags `flags[i]` (bit 0 done, bit 1 truncated) when given.
bytes step_frame(std::size_t k, dtype type, std::size_t obs_bytes,
                 std::vector<std::uint8_t> flags = {}) {
  flags.resize(k, 0);
  std::vector<std::uint64_t> run_ids(k);
  std::vector<float> rewards(k);
  std::vector<std::uint8_t> dones(k);
  std::vector<std::uint8_t> truncateds(k);
  bytes observations(k * obs_bytes);
  for (std::size_t i = 0; i < k; ++i) {
    run_ids[i] = 0x1000 + i;
    rewards[i] = (flags[i] & 1) != 0 ? 1.0f : 0.0f;
    dones[i] = flags[i] & 1;
    truncateds[i] = (flags[i] >> 1) & 1;
  }
  if (type == dtype::float32) {
    for (std::size_t j = 0; j * 4 < observations.size(); ++j) {
      const float v = 0.25f * static_cast<float>(j % 8) - 1.0f;
      std::memcpy(observations.data() + j * 4, &v, 4);
    }
  } else {
    for (std::size_t j = 0; j < observations.size(); ++j) {
      observations[j] = static_cast<std::byte>(j % 251);
    }
  }
  bytes out(p::step_frame_size(k, obs_bytes));
  p::encode_step(out, type, {run_ids, rewards, dones, truncateds, observations});
  return out;
}

bytes actions_frame(std::initializer_list<std::int32_t> actions) {
  const std::vector<std::int32_t> a(actions);
  bytes out(p::header_size + 4 + 4 * a.size());
  p::encode_discrete_actions(out, a);
  return out;
}

bytes status_frame(p::message_type type, p::error_code code, std::string text) {
  bytes out;
  p::encode_status(type, {code, std::move(text)}, out);
  return out;
}

bytes welcome_frame(std::uint32_t first, std::uint32_t num_envs) {
  bytes out;
  p::encode_welcome({first, num_envs, 1u << 20, 0}, out);
  return out;
}

bytes actor_stats_frame(double env_seconds, double wait_seconds) {
  std::array<std::byte, p::header_size + p::actor_stats_payload_size> out{};
  p::encode_actor_stats(out, {120, env_seconds, wait_seconds});
  return {out.begin(), out.end()};
}

bytes keepalive_frame() {
  bytes out(p::header_size);
  p::encode_header(std::span<std::byte, p::header_size>(out.data(), p::header_size),
                   p::message_type::keepalive, 0);
  return out;
}

// --- fuzz_handshake inputs (layout in fuzz_handshake.cpp) ---

struct handshake_input {
  bytes b;
  handshake_input& u8(std::uint8_t v) {
    b.push_back(std::byte{v});
    return *this;
  }
  handshake_input& u16(std::uint16_t v) {
    return u8(v & 0xFF).u8(static_cast<std::uint8_t>(v >> 8));
  }
  handshake_input& u32(std::uint32_t v) {
    return u16(v & 0xFFFF).u16(static_cast<std::uint16_t>(v >> 16));
  }
  handshake_input& u64(std::uint64_t v) {
    return u32(v & 0xFFFFFFFF).u32(static_cast<std::uint32_t>(v >> 32));
  }
  handshake_input& text(std::string_view s) {
    for (const char c : s) {
      u8(static_cast<std::uint8_t>(c));
    }
    return *this;
  }
};

// learner, mask, actor_id, num_envs (count < 0xF0); the caller adds the masked fields.
handshake_input handshake_front(std::uint8_t learner, std::uint8_t mask, std::uint8_t num_envs) {
  handshake_input in;
  in.u8(learner).u8(mask).u64(42).u8(num_envs);
  return in;
}

// max_payload mode and operand, cut, then the name.
bytes handshake_back(handshake_input in, std::uint8_t mode, std::uint8_t operand, std::uint16_t cut,
                     std::string_view name) {
  in.u8(mode).u8(operand).u16(cut).text(name);
  return in.b;
}

void write(const std::filesystem::path& dir, const std::string& name, const bytes& data) {
  std::filesystem::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!f) {
    throw std::runtime_error("cannot write " + (dir / name).string());
  }
}

void make_frame_corpus(const std::filesystem::path& dir) {
  using p::error_code;
  using p::message_type;
  const std::size_t cartpole_bytes = cartpole_obs.num_bytes();

  // Valid messages, one per file.
  write(dir, "hello_cartpole", cartpole_hello(1));
  write(dir, "hello_continuous",
        hello_frame(make_hello(2, {dtype::float32, tensor_shape{3}},
                               action_spec::continuous(tensor_shape{1}, -2.0, 2.0), "pendulum")));
  // Hello version 2: per-element bounds, one side unbounded.
  write(dir, "hello_continuous_v2",
        hello_frame(make_hello(
            2, {dtype::float32, tensor_shape{3}},
            action_spec::continuous(tensor_shape{2},
                                    {-1.0, -std::numeric_limits<double>::infinity()}, {1.0, 2.0}),
            "box")));
  write(dir, "step_one_env", step_frame(1, dtype::float32, cartpole_bytes));
  {
    bytes out(p::header_size + 4 + 8);
    const std::array<float, 2> a{-1.0f, 0.5f};
    p::encode_continuous_actions(out, 1, a);
    write(dir, "actions_continuous", out);
  }
  write(dir, "welcome", welcome_frame(8, 4));
  write(dir, "reject",
        status_frame(message_type::reject, error_code::spec_mismatch,
                     "observation shape: actor sends [3], learner expects [4]"));
  write(dir, "error_utf8",
        status_frame(message_type::error, error_code::bad_env_index,
                     "env_index 7 is outside [0, 4) \xc3\xa9\xe2\x82\xac"));
  write(dir, "keepalive", keepalive_frame());
  write(dir, "actor_stats", actor_stats_frame(0.5, 1.25));
  {
    // The authenticated handshake before hello (docs/security.md).
    std::array<std::byte, p::auth_field_size> nonce{}, proof{};
    for (std::size_t i = 0; i < nonce.size(); ++i) {
      nonce[i] = static_cast<std::byte>(i);
      proof[i] = static_cast<std::byte>(0xA0 + i);
    }
    bytes s, f;
    p::encode_auth_request(f);
    s += f;
    p::encode_auth_challenge(nonce, f);
    s += f;
    p::encode_auth_response(nonce, proof, f);
    s += f;
    p::encode_auth_confirm(proof, f);
    s += f;
    s += cartpole_hello(1);
    write(dir, "session_auth", s);
  }

  // Whole conversations, as the learner's side of the link sees them.
  {
    bytes s = cartpole_hello(4);
    s += welcome_frame(0, 4);
    s += step_frame(4, dtype::float32, cartpole_bytes);
    s += keepalive_frame();
    s += actions_frame({0, 1, 1, 0});
    s += actor_stats_frame(0.0, 0.0);
    // Records in another order, one episode ended and one cut by its time limit.
    bytes step = step_frame(4, dtype::float32, cartpole_bytes, {0, 1, 3, 0});
    const std::size_t record = p::step_record_size(cartpole_bytes);
    const std::size_t first = p::header_size + 4;
    std::swap_ranges(step.begin() + static_cast<std::ptrdiff_t>(first),
                     step.begin() + static_cast<std::ptrdiff_t>(first + record),
                     step.begin() + static_cast<std::ptrdiff_t>(first + 3 * record));
    s += step;
    s += status_frame(message_type::close, error_code::none, "bye");
    write(dir, "session_cartpole", s);
  }
  {
    bytes s = hello_frame(make_hello(1, atari_obs, action_spec::discrete(6), "atari"));
    s += step_frame(1, dtype::uint8, atari_obs.num_bytes(), {1});
    s += actions_frame({5});
    write(dir, "session_atari", s);
  }

  // Near-misses: one field off.
  const bytes hello = cartpole_hello(1, "abcde");
  const std::size_t name_at = hello.size() - 5;
  write(dir, "miss_hello_control_char", patched(hello, name_at, {0x1B, '[', '3', '1', 'm'}));
  write(dir, "miss_hello_overlong_utf8", patched(hello, name_at, {'a', 'b', 0xC0, 0xAF, 'e'}));
  write(dir, "miss_hello_rank7", patched(hello, p::header_size + 17, {7}));
  const bytes step = step_frame(1, dtype::float32, cartpole_bytes);
  write(dir, "miss_step_nan_reward",
        patched(step, p::header_size + 4 + 16, {0x00, 0x00, 0xC0, 0x7F}));
  write(dir, "miss_step_truncated_not_done", patched(step, p::header_size + 4 + 4, {2}));
  {
    bytes s = cartpole_hello(2);
    s += patched(step_frame(2, dtype::float32, cartpole_bytes),
                 p::header_size + 4 + p::step_record_size(cartpole_bytes), {0});
    write(dir, "miss_step_duplicate_env", s);
  }
  write(dir, "miss_header_http", from_text("GET / HTTP/1.1\r\nHost: learner\r\n\r\n"));
  // A step header claiming one byte over the fuzzer's 1 MiB limit.
  write(dir, "miss_header_too_large", patched(step, 8, {0x01, 0x00, 0x10, 0x00}));
  write(dir, "miss_actions_out_of_range", actions_frame({2}));
  write(dir, "miss_actor_stats_negative", actor_stats_frame(-0.5, 1.0));
  write(dir, "miss_welcome_slot_overflow", welcome_frame(0xFFFFFFFF, 2));

  // Regression: float32 [2^32-1, 2^32-1] is far over 2^31 bytes, but its byte count overflowed
  // to a small number in check_hello_fields, so decode_hello accepted it (found by
  // fuzz_handshake). Written byte by byte, since encode_hello accepts it too while the bug lasts.
  {
    bytes payload = from_text(std::string_view("\x01\x00\x00\x00", 4));  // version, reserved
    payload += bytes(8);                                                 // actor_id
    payload += from_text(std::string_view("\x01\x00\x00\x00", 4));       // num_envs
    payload += from_text(std::string_view("\x03\x02\x00\x00", 4));       // float32, rank 2
    payload += bytes(8, std::byte{0xFF});                                // dims
    payload += from_text(std::string_view("\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00", 10));
    bytes frame(p::header_size);
    p::encode_header(std::span<std::byte, p::header_size>(frame.data(), p::header_size),
                     message_type::hello, static_cast<std::uint32_t>(payload.size()));
    frame += payload;
    write(dir, "regression_hello_observation_bytes_overflow", frame);
  }
}

void make_handshake_corpus(const std::filesystem::path& dir) {
  // Each learner's own spec, accepted (1 MiB limit, default limit, exact limit).
  write(dir, "cartpole", handshake_back(handshake_front(0, 0, 1), 1, 0, 3, "host:1234"));
  write(dir, "atari_exact_limit", handshake_back(handshake_front(1, 0, 4), 2, 1, 30, "atari"));
  write(dir, "continuous", handshake_back(handshake_front(2, 0, 2), 0, 0, 40, "pendulum"));
  // One field off the learner's spec.
  {
    handshake_input in = handshake_front(0, 0x01, 1);
    in.u8(1);  // uint8 observations
    write(dir, "dtype_mismatch", handshake_back(in, 1, 0, 5, "x"));
  }
  {
    handshake_input in = handshake_front(0, 0x02, 1);
    in.u8(3).u8(0x44).u8(0x44).u8(0x40);  // [84, 84, 1]
    write(dir, "shape_mismatch", handshake_back(in, 1, 0, 5, "x"));
  }
  {
    handshake_input in = handshake_front(2, 0x60, 1);
    in.u8(1).u8(6);  // bounds [-0.0, inf]
    write(dir, "bounds", handshake_back(in, 1, 0, 5, "x"));
  }
  // Per-element bounds (hello version 2): the learner's own, then shape [2] with an unbounded
  // element, which the continuous learner does not have.
  {
    handshake_input in = handshake_front(2, 0x80, 1);
    in.u8(1).u8(5).u8(4);  // one pair: [-2, 2]
    write(dir, "per_element_bounds", handshake_back(in, 1, 0, 5, "x"));
  }
  {
    handshake_input in = handshake_front(2, 0x90, 1);
    in.u8(1).u8(1);                    // action shape [2]
    in.u8(2).u8(3).u8(2).u8(7).u8(6);  // [-1, 1], [-inf, inf]
    write(dir, "per_element_bounds_infinite", handshake_back(in, 1, 0, 7, "x"));
  }
  // Over-long count and a name with a UTF-16 surrogate: refused.
  {
    handshake_input in;
    in.u8(0).u8(0).u64(1).u8(0xF0).u32(1000000);
    write(dir, "bad_name", handshake_back(in, 3, 20, 9, "a\xed\xa0\x80z"));
  }
  // Regression: observation float32 [2^32-1, 2^32-1] (over 2^31 bytes) was accepted.
  {
    handshake_input in = handshake_front(0, 0x02, 1);
    in.u8(2).u8(0x45).u8(0x45);
    write(dir, "regression_observation_bytes_overflow", handshake_back(in, 1, 0, 0, ""));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR   (writes CORPUS_DIR/frame and /handshake)\n",
                 argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path root = argv[1];
    make_frame_corpus(root / "frame");
    make_handshake_corpus(root / "handshake");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seedrl_fuzz_make_corpus: %s\n", e.what());
    return 1;
  }
  return 0;
}
