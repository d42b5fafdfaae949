// Writes the wire protocol's golden vectors (test/fixtures/protocol/*.bin) with the C++
// encoders of seedrl/protocol/frame.hpp, so that clients in other languages (python/) test
// against bytes the C++ side really produces. test/fixtures/protocol/README.md lists what each
// file holds; test/test_protocol_vectors.cpp and python/tests/test_protocol_vectors.py check
// every file against those values, byte for byte.
//
//   g++ -std=c++20 -Wall -Wextra -Wpedantic -Werror -I include -o /tmp/gen_protocol_vectors
//       tools/gen_protocol_vectors.cpp && /tmp/gen_protocol_vectors test/fixtures/protocol
//
// Regenerating changes nothing unless the encoders changed; when they did, the fixtures'
// git diff shows exactly which bytes moved, and both test suites say which values no longer
// match.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/core/spec.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/security/challenge.hpp"

namespace {

namespace p = seedrl::protocol;
namespace sec = seedrl::security;
using bytes = std::vector<std::byte>;
using seedrl::dtype;

/// Bytes `first`, `first + 1`, ...: the nonces of docs/security.md's test vector.
std::array<std::byte, 32> counting(unsigned first) {
  std::array<std::byte, 32> out{};
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::byte>(first + i);
  return out;
}

/// The 32-byte secret of docs/security.md's test vector.
std::span<const std::byte> example_secret() {
  static constexpr std::string_view text = "seedrl-example-secret-0123456789";
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

bytes hello_frame(p::hello h) {
  bytes f;
  p::encode_hello(h, f);
  return f;
}

bytes status_frame(p::message_type type, p::error_code code, std::string message) {
  bytes f;
  p::encode_status(type, {code, std::move(message)}, f);
  return f;
}

template <class T>
std::span<const std::byte> raw(const std::vector<T>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(T)};
}

bytes step_frame(dtype type, const std::vector<std::uint64_t>& run_ids,
                 const std::vector<float>& rewards, const std::vector<std::uint8_t>& dones,
                 const std::vector<std::uint8_t>& truncateds, std::span<const std::byte> obs) {
  bytes f(p::step_frame_size(run_ids.size(), obs.size() / run_ids.size()));
  f.resize(p::encode_step(f, type, {run_ids, rewards, dones, truncateds, obs}));
  return f;
}

/// Every vector, by file name. Keep in step with test/fixtures/protocol/README.md.
std::vector<std::pair<std::string, bytes>> vectors() {
  std::vector<std::pair<std::string, bytes>> out;
  const seedrl::observation_spec cartpole_obs{dtype::float32, {4}};
  const auto cartpole_act = seedrl::action_spec::discrete(2);

  out.emplace_back("hello_cartpole.bin",
                   hello_frame({0x0102030405060708ull, 2, cartpole_obs, cartpole_act, "t"}));
  out.emplace_back(
      "hello_atari.bin",
      hello_frame(
          {42, 8, {dtype::uint8, {84, 84, 1}}, seedrl::action_spec::discrete(6), "pong:7"}));
  out.emplace_back(
      "hello_continuous.bin",
      hello_frame(
          {7, 1, {dtype::float32, {3}}, seedrl::action_spec::continuous({1}, -2.0, 2.0), ""}));
  // Hello version 2: a gymnasium Box with per-dimension bounds, one dimension unbounded.
  {
    constexpr double inf = std::numeric_limits<double>::infinity();
    out.emplace_back(
        "hello_continuous_v2.bin",
        hello_frame({9,
                     2,
                     {dtype::float32, {3}},
                     seedrl::action_spec::continuous({3}, {-1.0, -2.0, -inf}, {1.0, 0.5, inf}),
                     "box"}));
  }
  {
    bytes f;
    p::encode_welcome({8, 2, p::default_max_payload, 1000}, f);
    out.emplace_back("welcome.bin", f);
  }
  // What a CartPole learner answers an actor stepping MountainCar-v0.
  out.emplace_back(
      "reject_spec_mismatch.bin",
      status_frame(p::message_type::reject, p::error_code::spec_mismatch,
                   p::describe_spec_mismatch(cartpole_obs, cartpole_act, {dtype::float32, {2}},
                                             seedrl::action_spec::discrete(3))));
  out.emplace_back(
      "error_auth_failed.bin",
      status_frame(p::message_type::error, p::error_code::auth_failed, "authentication failed"));
  out.emplace_back("close.bin",
                   status_frame(p::message_type::close, p::error_code::none, "actor stopping"));
  out.emplace_back("close_shutting_down.bin",
                   status_frame(p::message_type::close, p::error_code::shutting_down,
                                "the learner is stopping"));
  {
    const std::vector<float> obs{0.5f, -1.0f, 2.0f, 0.0f, 0.25f, 1.5f, -2.0f, 3.0f};
    out.emplace_back("step_cartpole.bin",
                     step_frame(dtype::float32, {0xDEADBEEFull, 0x0123456789ABCDEFull},
                                {1.0f, -0.5f}, {0, 1}, {0, 1}, raw(obs)));
  }
  {
    const std::vector<std::uint8_t> obs{0, 1, 2, 127, 128, 255, 255, 254, 253, 3, 2, 1};
    out.emplace_back("step_uint8.bin", step_frame(dtype::uint8, {1, 0xFFFFFFFFFFFFFFFFull},
                                                  {0.0f, 21.0f}, {0, 1}, {0, 0}, raw(obs)));
  }
  {
    const std::vector<std::int32_t> actions{1, 0};
    bytes f(p::actions_frame_size(2, cartpole_act));
    f.resize(p::encode_discrete_actions(f, actions));
    out.emplace_back("actions_discrete.bin", f);
  }
  {
    const std::vector<float> actions{0.5f, -1.0f};
    bytes f(p::actions_frame_size(1, seedrl::action_spec::continuous({2}, -1.0, 1.0)));
    f.resize(p::encode_continuous_actions(f, 1, actions));
    out.emplace_back("actions_continuous.bin", f);
  }
  {
    std::array<std::byte, p::header_size> f{};
    p::encode_header(f, p::message_type::keepalive, 0);
    out.emplace_back("keepalive.bin", bytes(f.begin(), f.end()));
  }
  {
    std::array<std::byte, p::header_size + p::actor_stats_payload_size> f{};
    p::encode_actor_stats(f, {3, 0.5, 2.0});
    out.emplace_back("actor_stats.bin", bytes(f.begin(), f.end()));
  }
  const auto nl = counting(0x00), na = counting(0x20);
  const auto pa = sec::compute_proof(example_secret(), sec::auth_role::actor, nl, na);
  const auto pl = sec::compute_proof(example_secret(), sec::auth_role::learner, nl, na);
  bytes f;
  p::encode_auth_request(f);
  out.emplace_back("auth_request.bin", f);
  p::encode_auth_challenge(nl, f);
  out.emplace_back("auth_challenge.bin", f);
  p::encode_auth_response(na, pa, f);
  out.emplace_back("auth_response.bin", f);
  p::encode_auth_confirm(pl, f);
  out.emplace_back("auth_confirm.bin", f);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR (e.g. test/fixtures/protocol)\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  for (const auto& [name, frame] : vectors()) {
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(frame.data()),
              static_cast<std::streamsize>(frame.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", (dir / name).c_str());
      return 1;
    }
    std::printf("%-26s %6zu bytes\n", name.c_str(), frame.size());
  }
  return 0;
}
