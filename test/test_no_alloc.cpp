// One-step inference must not touch the heap in steady state (DESIGN.md section 4). This file
// replaces the global operator new to count allocations, so it is its own test program.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"

namespace {
std::atomic<long> allocations{0};
}

// The replacements below pair malloc with free behind operator new and delete; GCC sees the
// free through inlining and takes it for a mismatch.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n))
    return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace {

/// Counts heap allocations made by `steps` inference calls after two warm-up calls.
long allocations_during_inference(const seedrl::mlp_lstm_agent_config& config, std::size_t B,
                                  int steps) {
  seedrl::mlp_lstm_agent<float> net(config);
  auto state = net.initial_state(B);
  seedrl::random_generator rng(1);
  std::vector<float> obs(B * static_cast<std::size_t>(config.observation_size));
  for (auto& x : obs)
    x = static_cast<float>(rng.uniform(-1, 1));
  std::vector<float> rewards(B, 1.0f), logits(B * static_cast<std::size_t>(config.num_actions)),
      values(B);
  std::vector<std::uint8_t> dones(B, 0);
  std::vector<std::int32_t> prev(B, 0);
  seedrl::agent_step_output<float> out{logits, values};
  net.infer({obs, rewards, dones, prev}, state, out);
  net.infer({obs, rewards, dones, prev}, state, out);
  const long before = allocations.load();
  for (int i = 0; i < steps; ++i) {
    dones[static_cast<std::size_t>(i) % B] = static_cast<std::uint8_t>(i % 3 == 0);
    net.infer({obs, rewards, dones, prev}, state, out);
  }
  return allocations.load() - before;
}

}  // namespace

TEST_CASE("the counting allocator sees allocations", "[alloc]") {
  const long before = allocations.load();
  auto* v = new std::vector<int>(100);
  delete v;
  CHECK(allocations.load() - before >= 2);
}

TEST_CASE("CartPole agent inference allocates nothing in steady state", "[alloc]") {
  seedrl::mlp_lstm_agent_config config;  // MLP 64-64, LSTM 64
  for (std::size_t B : {1u, 32u, 256u}) {
    INFO("batch " << B);
    CHECK(allocations_during_inference(config, B, 50) == 0);
  }
  config.lstm_size = 0;
  CHECK(allocations_during_inference(config, 32, 50) == 0);
}

TEST_CASE("wide LSTM inference allocates nothing in steady state", "[alloc]") {
  seedrl::mlp_lstm_agent_config config;
  config.observation_size = 32;
  config.num_actions = 6;
  config.hidden_sizes = {256};
  config.lstm_size = 256;
  CHECK(allocations_during_inference(config, 64, 10) == 0);
}
