// One-step inference must not touch the heap in steady state (DESIGN.md section 4). This file
// replaces the global operator new to count allocations, so it is its own test program.
//
// Eigen allocates with malloc, which that count cannot see. With EIGEN_RUNTIME_NO_MALLOC, each
// of Eigen's heap allocations first asserts that malloc is allowed; this program forbids it
// before main and routes Eigen's assertions to a handler that counts that one assertion (the
// allocation then goes ahead) and aborts on any other. Both are defined before Eigen is seen.
#define EIGEN_RUNTIME_NO_MALLOC
#define eigen_assert(x) ((x) ? void(0) : seedrl_test_eigen_assertion(#x, __FILE__, __LINE__))
void seedrl_test_eigen_assertion(const char* what, const char* file, int line);

#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/detail/dnnl_runtime.hpp"
#include "seedrl/detail/eigen_core.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/small_conv_lstm_agent.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"

namespace {
std::atomic<long> allocations{0};        // global operator new
std::atomic<long> eigen_allocations{0};  // Eigen's aligned_malloc and realloc

/// Every heap allocation either counter has seen.
long heap_allocations() {
  return allocations.load() + eigen_allocations.load();
}

/// Forbids Eigen's heap before main, while no other thread runs: the flag is a plain static
/// bool in Eigen 3.4, so it is never written again.
const bool eigen_malloc_forbidden = [] {
  Eigen::internal::set_is_malloc_allowed(false);
  return true;
}();
}  // namespace

void seedrl_test_eigen_assertion(const char* what, const char* file, int line) {
  if (std::strstr(what, "heap allocation is forbidden") != nullptr) {
    eigen_allocations.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::fprintf(stderr, "%s:%d: Eigen assertion failed: %s\n", file, line, what);
  std::abort();
}

// The replacements below pair malloc with free behind operator new and delete; GCC sees the
// free through inlining and takes it for a mismatch.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// Every replaceable form is replaced, nothrow and aligned ones too: an allocation through a form
// left out would go uncounted, and under Clang's TSan, whose static runtime defines all of them
// together, one form left out pulls in its definitions of the others and the link fails.
namespace {
void* counted_allocation(std::size_t n, std::size_t alignment) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0)
    n = 1;
  if (alignment <= alignof(std::max_align_t))
    return std::malloc(n);
  return std::aligned_alloc(alignment, (n + alignment - 1) / alignment * alignment);
}
void* counted_allocation_or_throw(std::size_t n, std::size_t alignment) {
  if (void* p = counted_allocation(n, alignment))
    return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) {
  return counted_allocation_or_throw(n, 0);
}
void* operator new[](std::size_t n) {
  return counted_allocation_or_throw(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_allocation_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_allocation_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted_allocation(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted_allocation(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_allocation(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_allocation(n, static_cast<std::size_t>(a));
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
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

// GCC says __SANITIZE_ADDRESS__, Clang 14 only __has_feature (the ASan tree builds with Clang).
#if defined(__SANITIZE_ADDRESS__)
#define SEEDRL_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SEEDRL_TEST_UNDER_ASAN 1
#endif
#endif

#if defined(SEEDRL_TEST_UNDER_ASAN)
// Under ASan, the sanitizer's own operator new may allocate what our replacement frees. ctest
// sets the option for the tests, but the build's test discovery runs this program too: ASan
// reads this hook at start-up, so the option holds wherever the program runs.
extern "C" const char* __asan_default_options() {
  return "alloc_dealloc_mismatch=0";
}
#endif

namespace {

/// Counts heap allocations made by `steps` inference calls of `net` on `obs` (B rows) after
/// two warm-up calls.
template <class Net>
long allocations_during_inference_of(Net& net, const std::vector<float>& obs, std::size_t B,
                                     int steps) {
  auto state = net.initial_state(B);
  std::vector<float> rewards(B, 1.0f), logits(B * static_cast<std::size_t>(net.policy_size())),
      values(B);
  std::vector<std::uint8_t> dones(B, 0);
  std::vector<std::int32_t> prev(B, 0);
  seedrl::agent_step_output<float> out{logits, values};
  net.infer({obs, rewards, dones, prev}, state, out);
  net.infer({obs, rewards, dones, prev}, state, out);
  const long before = heap_allocations();
  for (int i = 0; i < steps; ++i) {
    dones[static_cast<std::size_t>(i) % B] = static_cast<std::uint8_t>(i % 3 == 0);
    net.infer({obs, rewards, dones, prev}, state, out);
  }
  return heap_allocations() - before;
}

/// The same for an `mlp_lstm_agent` on observations in [-1, 1].
long allocations_during_inference(const seedrl::mlp_lstm_agent_config& config, std::size_t B,
                                  int steps) {
  seedrl::mlp_lstm_agent<float> net(config);
  seedrl::random_generator rng(1);
  std::vector<float> obs(B * static_cast<std::size_t>(config.observation_size));
  for (auto& x : obs)
    x = static_cast<float>(rng.uniform(-1, 1));
  return allocations_during_inference_of(net, obs, B, steps);
}

}  // namespace

TEST_CASE("the counting allocator sees allocations", "[alloc]") {
  // The pointer escapes through a volatile: an optimiser may otherwise elide a new/delete pair
  // (C++14 allows it), and GCC -O2 did.
  static std::vector<int>* volatile sink = nullptr;
  const long before = allocations.load();
  sink = new std::vector<int>(100);
  delete sink;
  CHECK(allocations.load() - before >= 2);
}

TEST_CASE("the Eigen count sees a planted Eigen temporary", "[alloc]") {
  REQUIRE(eigen_malloc_forbidden);
  Eigen::MatrixXf a = Eigen::MatrixXf::Constant(24, 24, 0.5f);
  const long new_before = allocations.load(), eigen_before = eigen_allocations.load();
  // A product of dynamic matrices evaluates into a heap temporary: what a careless line in an
  // inference path would do. operator new never sees it; the Eigen count does.
  const float sum = (a * a).eval().sum();
  CHECK(sum == Approx(24 * 24 * 24 * 0.25f));
  CHECK(allocations.load() == new_before);
  CHECK(eigen_allocations.load() - eigen_before >= 1);
}

TEST_CASE("ppo_loss allocates nothing after its first call at a batch size", "[alloc][ppo]") {
  constexpr std::size_t T = 8, B = 4, A = 3, steps = (T + 1) * B;
  seedrl::random_generator rng(9);
  std::vector<float> logits(steps * A), values(steps), old_values(steps), mu(steps, -1.0f),
      rewards(steps), grad_logits(steps * A), grad_values(steps);
  std::vector<std::int32_t> actions(steps, 1);
  std::vector<std::uint8_t> dones(steps, 0), truncated(steps, 0);
  for (auto& x : logits)
    x = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (auto& x : values)
    x = static_cast<float>(rng.uniform(-1.0, 1.0));
  dones[3 * B] = truncated[3 * B] = 1;
  const seedrl::ppo_batch<float> batch{T,  B,       A,     logits,    values,    actions,
                                       mu, rewards, dones, truncated, old_values};
  seedrl::impala_gradients<float> grad{grad_logits, grad_values};
  for (const auto advantage : {seedrl::ppo_advantage::gae, seedrl::ppo_advantage::vtrace}) {
    seedrl::ppo_loss_config<float> config;
    config.advantage = advantage;
    config.value_clip = 0.2f;
    const seedrl::ppo_loss<float> loss(config);
    loss(batch, grad);  // sizes its scratch
    const long before = heap_allocations();
    for (int i = 0; i < 5; ++i)
      loss(batch, grad);
    CHECK(heap_allocations() == before);
  }
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
  for (std::size_t B : {8u, 32u, 64u}) {  // the gates' product as its transpose, then directly
    INFO("batch " << B);
    CHECK(allocations_during_inference(config, B, 10) == 0);
  }
}

TEST_CASE("the CPU inference engine allocates nothing per batch, with 1 or 3 workers", "[alloc]") {
  // The worker hand-off (mutex, condition variables) must not allocate either.
  seedrl::mlp_lstm_agent_config config;
  const seedrl::mlp_lstm_agent<float> net(config);
  constexpr std::size_t B = 32;
  std::vector<float> obs(B * 4, 0.5f), rewards(B, 1.0f), logits(B * 2), values(B);
  std::vector<std::uint8_t> dones(B, 0);
  std::vector<std::int32_t> prev(B, 0);
  std::vector<std::uint32_t> slots(B);
  for (std::size_t workers : {1u, 3u}) {
    INFO("workers " << workers);
    seedrl::cpu_inference_engine<seedrl::mlp_lstm_agent<float>> engine(net, {64, B, 2, workers});
    const auto step = [&](std::size_t k) {
      for (std::size_t r = 0; r < B; ++r)
        slots[r] = static_cast<std::uint32_t>((r * 7 + k) % 64);  // a different order each time
      dones[k % B] = static_cast<std::uint8_t>(k % 3 == 0);
      engine.reset_state(k % 64);
      engine.infer(std::span<const std::uint32_t>(slots).first(B - k % 5),
                   {std::span<const float>(obs).first((B - k % 5) * 4),
                    std::span<const float>(rewards).first(B - k % 5),
                    std::span<const std::uint8_t>(dones).first(B - k % 5),
                    std::span<const std::int32_t>(prev).first(B - k % 5)},
                   {std::span(logits).first((B - k % 5) * 2), std::span(values).first(B - k % 5)});
    };
    step(0);
    step(1);
    const long before = heap_allocations();
    for (std::size_t k = 2; k < 40; ++k)
      step(k);
    CHECK(heap_allocations() - before == 0);
  }
}

namespace {

/// Observations for `net`: B rows of pixel values in 0..255.
template <class Net>
std::vector<float> pixel_rows(const Net& net, std::size_t B) {
  seedrl::random_generator rng(2);
  std::vector<float> obs(B * static_cast<std::size_t>(net.observation_size()));
  for (auto& x : obs)
    x = static_cast<float>(rng.below(256));
  return obs;
}

}  // namespace

TEST_CASE("composed agents infer without allocating in steady state", "[alloc]") {
  // The small conv agent on 10x10x4 channels-last images, with an LSTM core.
  seedrl::small_conv_lstm_agent_config c;
  c.height = c.width = 10;
  c.channels = 4;
  c.channels_last = true;
  c.num_actions = 5;
  c.dense_size = 128;
  c.lstm_size = 64;
  seedrl::small_conv_lstm_agent<float> conv(c);
  const auto obs = pixel_rows(conv, 32);
#ifdef SEEDRL_DNNL_CONV
  // oneDNN allocates its argument map inside every primitive call, out of our reach: seedrl's
  // own code is checked with oneDNN's convolutions off, and with them on the count must be the
  // same small number every step (nothing grows, nothing is rebuilt).
  seedrl::set_dnnl_convolutions(false);
  CHECK(allocations_during_inference_of(conv, obs, 32, 20) == 0);
  seedrl::set_dnnl_convolutions(true);
  const long ten = allocations_during_inference_of(conv, obs, 32, 10);
  const long twenty = allocations_during_inference_of(conv, obs, 32, 20);
  CHECK(twenty == 2 * ten);
  CHECK(ten <= 10 * 2 * 25);  // two convolutions, at most 25 blocks each per step
  UNSCOPED_INFO("oneDNN allocations per inference step: " << ten / 10);
#else
  CHECK(allocations_during_inference_of(conv, obs, 32, 20) == 0);
#endif
  // A tanh MLP with no core and no reward or action inputs.
  using tanh_mlp = seedrl::backend_mlp_torso<seedrl::host_backend, float, seedrl::tanh_activation>;
  seedrl::mlp_lstm_agent_config m;
  m.observation_size = 6;
  m.num_actions = 3;
  m.hidden_sizes = {64, 64};
  m.lstm_size = 0;
  m.reward_and_action_inputs = false;
  seedrl::actor_critic_agent<float, tanh_mlp, seedrl::mlp_lstm_agent_config> mlp(
      {}, seedrl::mlp_torso_init<float, seedrl::tanh_activation>(), m);
  CHECK(allocations_during_inference_of(mlp, pixel_rows(mlp, 64), 64, 50) == 0);
}

#ifdef SEEDRL_ALLOC_TEST_TCP
#include <chrono>
#include <functional>
#include <thread>

#include "seedrl/env/cartpole.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/tcp.hpp"

TEST_CASE("the step path over TCP allocates nothing in steady state", "[alloc]") {
  // Actor, TCP link both ways, the learner's connection and inference threads, the unroll
  // builder and the training queue: every thread of the process is counted. The trainer is
  // kept idle (its batch never fills) because the loss allocates scratch per training step.
  using namespace std::chrono_literals;
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::tcp_transport>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {16};
  nc.lstm_size = 16;
  seedrl::learner_config lc;
  lc.unroll_length = 4;
  lc.batch_size = 1000;  // never reached in this test
  lc.queue_batches = 1;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 4;
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  seedrl::tcp_transport transport;
  auto listener = transport.listen({"127.0.0.1", 0});
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));
  std::atomic<bool> stop{false};
  std::thread actor_thread([&] {
    seedrl::actor_config ac;
    ac.num_envs = 2;
    ac.stats_interval = 5ms;  // its reports are on the measured path too
    seedrl::actor<seedrl::cartpole, std::function<seedrl::tcp_connection()>> a(
        ac, [](std::size_t) { return seedrl::cartpole{}; },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  auto frames_reach = [&](std::int64_t n) {
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (learner.stats().frames < n && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    return learner.stats().frames >= n;
  };
  REQUIRE(frames_reach(200));  // warm-up: connection set up, buffers grown
  const long before = heap_allocations();
  const auto start = learner.stats().frames;
  REQUIRE(frames_reach(start + 600));
  const long during = heap_allocations() - before;
  stop = true;
  actor_thread.join();
  learner.stop();
  CHECK(during == 0);
}
#endif
