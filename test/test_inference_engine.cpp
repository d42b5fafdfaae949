// The InferenceEngine plug point: the CPU engine (1, 2 and 3 workers) against the network's
// own infer called one row at a time with a state table of its own, parameter swaps reaching
// every worker, and a recording engine plugged into the learner showing what the inference
// loop hands an engine and that every reply comes from the engine's outputs; uint8 frames
// through the CPU engine and the loop against float ones, and a loop that reads only the start
// states it asked for (agent_step_input::keep_state).

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "seedrl/core/counter_random.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/cuda/inference_engine.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/catch.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/any_inference_engine.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/transport/in_process.hpp"

using namespace std::chrono_literals;

namespace {

using net_t = seedrl::mlp_lstm_agent<float>;
using engine_t = seedrl::cpu_inference_engine<net_t>;
static_assert(seedrl::InferenceEngine<engine_t>);
static_assert(!seedrl::InferenceEngine<net_t>);

constexpr std::size_t obs_size = 4, num_actions = 3, max_envs = 9, max_batch = 7;

net_t make_engine_net(std::uint64_t seed) {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = obs_size;
  c.num_actions = num_actions;
  c.hidden_sizes = {16};
  c.lstm_size = 12;
  c.seed = seed;
  return net_t(c);
}

/// The reference: `net.infer` on one row at a time, each slot's state in a table of its own.
struct row_by_row {
  net_t net;
  std::vector<std::vector<float>> table;
  explicit row_by_row(const net_t& n)
      : net(n), table(max_envs, std::vector<float>(static_cast<std::size_t>(n.state_size()))) {}

  /// The outputs of one row and the state it started from.
  void step(std::uint32_t slot, std::span<const float> obs, float reward, std::uint8_t reset,
            std::int32_t prev_action, std::span<float> logits, float& value,
            std::vector<float>& before) {
    before = table[slot];
    auto state = net.initial_state(1);
    std::copy(before.begin(), before.end(), state.data.begin());
    const std::uint8_t resets[] = {reset};
    const float rewards[] = {reward};
    const std::int32_t prev[] = {prev_action};
    seedrl::agent_step_output<float> out{logits, std::span(&value, 1)};
    net.infer({obs, rewards, resets, prev}, state, out);
    std::copy(state.data.begin(), state.data.end(), table[slot].begin());
  }
};

/// The split the CPU engine documents: `workers` contiguous chunks, the first B mod W one row
/// longer, each through `net.infer` as one batch (the table is the slots' states).
void chunked_reference(net_t& net, std::vector<std::vector<float>>& table, std::size_t workers,
                       std::span<const std::uint32_t> slots, std::span<const float> obs,
                       std::span<const float> rewards, std::span<const std::uint8_t> resets,
                       std::span<const std::int32_t> prev, std::span<float> logits,
                       std::span<float> values) {
  const std::size_t B = slots.size(), P = num_actions;
  const auto W = static_cast<std::size_t>(net.state_size());
  for (std::size_t w = 0, b0 = 0; w < workers; ++w) {
    const std::size_t n = B / workers + (w < B % workers ? 1 : 0);
    if (n == 0)
      continue;
    auto state = net.initial_state(n);
    for (std::size_t r = 0; r < n; ++r)
      std::copy(table[slots[b0 + r]].begin(), table[slots[b0 + r]].end(),
                state.data.begin() + static_cast<std::ptrdiff_t>(r * W));
    seedrl::agent_step_output<float> out{logits.subspan(b0 * P, n * P), values.subspan(b0, n)};
    net.infer({obs.subspan(b0 * obs_size, n * obs_size), rewards.subspan(b0, n),
               resets.subspan(b0, n), prev.subspan(b0, n)},
              state, out);
    for (std::size_t r = 0; r < n; ++r)
      std::copy_n(state.data.begin() + static_cast<std::ptrdiff_t>(r * W), W,
                  table[slots[b0 + r]].begin());
    b0 += n;
  }
}

/// One batch: distinct slots in a random order, random inputs and resets.
struct batch {
  std::vector<std::uint32_t> slots;
  std::vector<float> obs, rewards;
  std::vector<std::uint8_t> resets;
  std::vector<std::int32_t> prev;
};

batch random_engine_batch(seedrl::random_generator& rng, std::size_t B) {
  std::vector<std::uint32_t> all(max_envs);
  std::iota(all.begin(), all.end(), 0u);
  for (std::size_t i = max_envs - 1; i > 0; --i)  // Fisher-Yates
    std::swap(all[i], all[rng.below(i + 1)]);
  batch b;
  b.slots.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(B));
  for (std::size_t i = 0; i < B * obs_size; ++i)
    b.obs.push_back(static_cast<float>(rng.uniform() * 2.0 - 1.0));
  for (std::size_t r = 0; r < B; ++r) {
    b.rewards.push_back(static_cast<float>(rng.uniform()));
    b.resets.push_back(rng.uniform() < 0.2 ? 1 : 0);
    b.prev.push_back(static_cast<std::int32_t>(rng.below(num_actions)));
  }
  return b;
}

/// Runs `batches` random batches (random sizes, slot orders, resets and run restarts) through
/// an engine with `workers` workers and the row-by-row reference; returns every output in order
/// and checks each against the reference and each state_before against the reference's.
std::vector<float> run_against_reference(std::size_t workers, std::uint64_t seed, int batches) {
  const net_t net = make_engine_net(7);
  engine_t engine(net, {max_envs, max_batch, num_actions, workers});
  REQUIRE(engine.workers() == workers);
  row_by_row ref(net);
  row_by_row chunked(net);  // its network and table, run through chunked_reference
  seedrl::random_generator rng(seed);
  std::vector<float> all;
  std::vector<float> logits(max_batch * num_actions), values(max_batch);
  std::vector<float> want_logits(num_actions), before;
  float want_value = 0.0f;
  const auto W = static_cast<std::size_t>(net.state_size());
  for (int k = 0; k < batches; ++k) {
    // A restarted env (run-id change) starts from zeros.
    for (std::uint32_t s = 0; s < max_envs; ++s) {
      if (rng.uniform() < 0.1) {
        engine.reset_state(s);
        std::fill(ref.table[s].begin(), ref.table[s].end(), 0.0f);
        std::fill(chunked.table[s].begin(), chunked.table[s].end(), 0.0f);
      }
    }
    const std::size_t B = 1 + rng.below(max_batch);
    const batch b = random_engine_batch(rng, B);
    engine.infer(b.slots, {b.obs, b.rewards, b.resets, b.prev},
                 {std::span(logits).first(B * num_actions), std::span(values).first(B)});
    // Bitwise equal to the same chunks through the network: the engine adds no arithmetic.
    std::vector<float> chunk_logits(B * num_actions), chunk_values(B);
    chunked_reference(chunked.net, chunked.table, workers, b.slots, b.obs, b.rewards, b.resets,
                      b.prev, chunk_logits, chunk_values);
    CHECK(std::equal(chunk_logits.begin(), chunk_logits.end(), logits.begin()));
    CHECK(std::equal(chunk_values.begin(), chunk_values.end(), values.begin()));
    for (std::size_t r = 0; r < B; ++r) {
      ref.step(b.slots[r], std::span(b.obs).subspan(r * obs_size, obs_size), b.rewards[r],
               b.resets[r], b.prev[r], want_logits, want_value, before);
      for (std::size_t a = 0; a < num_actions; ++a)
        CHECK(logits[r * num_actions + a] == Approx(want_logits[a]).margin(1e-5));
      CHECK(values[r] == Approx(want_value).margin(1e-5));
      const auto got_before = engine.state_before(r);
      REQUIRE(got_before.size() == W);
      for (std::size_t i = 0; i < W; ++i)
        CHECK(got_before[i] == Approx(before[i]).margin(1e-5));
    }
    all.insert(all.end(), logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(B * 3));
    all.insert(all.end(), values.begin(), values.begin() + static_cast<std::ptrdiff_t>(B));
  }
  return all;
}

}  // namespace

TEST_CASE("the CPU inference engine matches row-by-row inference with 1, 2 and 3 workers",
          "[inference_engine]") {
  const auto one = run_against_reference(1, 11, 30);
  const auto two = run_against_reference(2, 11, 30);
  const auto three = run_against_reference(3, 11, 30);
  REQUIRE(one.size() == two.size());
  REQUIRE(one.size() == three.size());
  // Same rows, same math: the split over workers changes no output beyond the network's own
  // batch-size dependence (Eigen sums a product in an order that depends on the row count, so
  // a row's outputs in a batch of 3 and of 7 may differ in the last bits), i.e. float rounding.
  for (std::size_t i = 0; i < one.size(); ++i) {
    CHECK(two[i] == Approx(one[i]).margin(1e-6));
    CHECK(three[i] == Approx(one[i]).margin(1e-6));
  }
}

TEST_CASE("a parameter swap between batches reaches every worker of the CPU engine",
          "[inference_engine]") {
  const net_t first = make_engine_net(1);
  net_t second = make_engine_net(2);
  engine_t engine(first, {max_envs, max_batch, num_actions, 3});
  seedrl::parameter_store<float> store;
  std::uint64_t version = 0;
  CHECK_FALSE(engine.update_parameters(store, &version));  // nothing published yet
  store.publish(second.parameters());
  CHECK(engine.update_parameters(store, &version));
  CHECK(version == store.version());
  CHECK_FALSE(engine.update_parameters(store, &version));  // nothing newer
  // Seven rows over three workers (3, 2, 2): every chunk must use the second network.
  seedrl::random_generator rng(5);
  const batch b = random_engine_batch(rng, max_batch);
  std::vector<float> logits(max_batch * num_actions), values(max_batch);
  engine.infer(b.slots, {b.obs, b.rewards, b.resets, b.prev}, {logits, values});
  row_by_row ref(second);
  row_by_row old(first);
  std::vector<float> want(num_actions), stale(num_actions), before;
  float want_value = 0.0f, stale_value = 0.0f;
  for (std::size_t r = 0; r < max_batch; ++r) {
    const auto obs = std::span(b.obs).subspan(r * obs_size, obs_size);
    ref.step(b.slots[r], obs, b.rewards[r], b.resets[r], b.prev[r], want, want_value, before);
    old.step(b.slots[r], obs, b.rewards[r], b.resets[r], b.prev[r], stale, stale_value, before);
    CHECK(values[r] == Approx(want_value).margin(1e-5));
    CHECK(std::abs(want_value - stale_value) > 1e-4);  // the swap is visible at all
    for (std::size_t a = 0; a < num_actions; ++a)
      CHECK(logits[r * num_actions + a] == Approx(want[a]).margin(1e-5));
  }
}

TEST_CASE("the CPU inference engine refuses sizes it cannot serve", "[inference_engine]") {
  const net_t net = make_engine_net(1);
  CHECK_THROWS_AS(engine_t(net, {max_envs, max_batch, num_actions + 1, 1}),
                  std::invalid_argument);  // the network writes 3 outputs per row
  CHECK_THROWS_AS(engine_t(net, {max_envs, max_batch, num_actions, 0}), std::invalid_argument);
  CHECK_THROWS_AS(engine_t(net, {max_envs, 0, num_actions, 1}), std::invalid_argument);
  engine_t engine(net, {max_envs, 2, num_actions, 2});
  std::vector<float> obs(3 * obs_size), rewards(3), logits(3 * num_actions), values(3);
  std::vector<std::uint8_t> resets(3);
  std::vector<std::int32_t> prev(3);
  const std::vector<std::uint32_t> three{0, 1, 2};
  CHECK_THROWS_AS(engine.infer(three, {obs, rewards, resets, prev}, {logits, values}),
                  std::invalid_argument);  // more rows than max_batch
  const std::vector<std::uint32_t> outside{0, static_cast<std::uint32_t>(max_envs)};
  CHECK_THROWS_AS(
      engine.infer(outside,
                   {std::span(obs).first(2 * obs_size), std::span(rewards).first(2),
                    std::span(resets).first(2), std::span(prev).first(2)},
                   {std::span(logits).first(2 * num_actions), std::span(values).first(2)}),
      std::out_of_range);
  CHECK_THROWS_AS(engine.reset_state(max_envs), std::out_of_range);
}

namespace {

/// What the recording engine saw: every row in order, and every reset_state call among them.
struct engine_log {
  struct event {
    bool reset_state = false;  // a reset_state(slot) call; else one row of a batch
    std::uint32_t slot = 0;
    std::uint8_t reset_flag = 0;
  };
  std::mutex mutex;
  std::vector<event> events;
  std::size_t engines_built = 0;
  std::size_t workers = 0;
};
engine_log& log_of_recording_engine() {
  static engine_log log;
  return log;
}

/// A test engine: logits that make the categorical sampler choose action (slot % 2) for
/// every row (exp(-200) is 0 in float), and zero states; it records what it is handed.
template <class Net>
struct recording_engine {
  using scalar_type = typename Net::scalar_type;
  std::size_t envs, batch, width, policy;
  std::vector<scalar_type> zeros;

  recording_engine(const Net& net, const seedrl::inference_engine_config& c)
      : envs(c.max_envs),
        batch(c.max_batch),
        width(static_cast<std::size_t>(net.state_size())),
        policy(c.policy_width),
        zeros(width) {
    auto& log = log_of_recording_engine();
    std::lock_guard lock(log.mutex);
    ++log.engines_built;
    log.workers = c.workers;
  }
  std::size_t max_envs() const { return envs; }
  std::size_t max_batch() const { return batch; }
  std::size_t state_width() const { return width; }
  std::size_t policy_width() const { return policy; }
  void reset_state(std::size_t slot) {
    auto& log = log_of_recording_engine();
    std::lock_guard lock(log.mutex);
    log.events.push_back({true, static_cast<std::uint32_t>(slot), 0});
  }
  void infer(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<scalar_type>& in,
             const seedrl::agent_step_output<scalar_type>& out) {
    auto& log = log_of_recording_engine();
    std::lock_guard lock(log.mutex);
    for (std::size_t r = 0; r < slots.size(); ++r) {
      log.events.push_back({false, slots[r], in.dones[r]});
      for (std::size_t a = 0; a < policy; ++a)
        out.logits[r * policy + a] = a == slots[r] % 2 ? 100.0f : -100.0f;
      out.values[r] = 0.0f;
    }
  }
  std::span<const scalar_type> state_before(std::size_t) const { return zeros; }
  bool update_parameters(const seedrl::parameter_store<scalar_type>&, std::uint64_t*) {
    return false;
  }
};
static_assert(seedrl::InferenceEngine<recording_engine<net_t>>);

/// CartPole that counts, per env, the actions it was sent.
struct action_counting_cartpole : seedrl::cartpole {
  std::shared_ptr<std::atomic<int>[]> counts;  // [env * 2 + action]
  std::size_t env;
  action_counting_cartpole(std::shared_ptr<std::atomic<int>[]> c, std::size_t e)
      : counts(std::move(c)), env(e) {}
  seedrl::step_result step(action_type action, std::span<float> observation) {
    ++counts[env * 2 + static_cast<std::size_t>(action)];
    return seedrl::cartpole::step(action, observation);
  }
};

}  // namespace

TEST_CASE("the learner's inference loop runs the engine it is given", "[inference_engine]") {
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport,
                                    seedrl::host_trainer, seedrl::impala_loss<float>,
                                    seedrl::categorical_sampler, recording_engine<net_t>>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  seedrl::learner_config lc;
  lc.max_envs = 8;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  lc.inference_workers = 3;  // handed to the engine
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"inference-engine"};
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  constexpr std::size_t num_envs = 2;  // even: the second actor's slots keep their parity
  std::shared_ptr<std::atomic<int>[]> counts(new std::atomic<int>[num_envs * 2] {});
  // Two actors one after the other: the second one's envs are new runs (run-id changes),
  // whichever slots they get.
  for (int run = 0; run < 2; ++run) {
    std::atomic<bool> stop{false};
    const auto frames_before = learner.stats().frames;
    std::thread actor([&] {
      seedrl::actor_config ac;
      ac.num_envs = num_envs;
      seedrl::actor<action_counting_cartpole, std::function<seedrl::in_process_connection()>> a(
          ac, [&](std::size_t i) { return action_counting_cartpole(counts, i); },
          [&] { return transport.connect(endpoint); });
      a.run(stop);
    });
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (learner.stats().frames < frames_before + 200 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    stop = true;
    actor.join();
  }
  learner.stop();
  const auto s = learner.stats();
  auto& log = log_of_recording_engine();
  std::lock_guard lock(log.mutex);
  CHECK(log.engines_built == 1);
  CHECK(log.workers == 3);
  // Every reply came from the engine's outputs: env i got action (slot % 2), which is i % 2
  // for either actor (slots 0-1, then 0-1 again or 2-3, as releases apply at the next batch).
  std::size_t rows = 0, reset_rows = 0, reset_calls = 0;
  for (const auto& e : log.events)
    (e.reset_state ? reset_calls : rows) += 1;
  CHECK(rows == static_cast<std::size_t>(s.frames));
  for (std::size_t i = 0; i < num_envs; ++i) {
    CHECK(counts[i * 2 + i % 2] > 0);
    CHECK(counts[i * 2 + (1 - i % 2)] == 0);
  }
  // Each env's run started with reset_state and a first row flagged reset; the other flagged
  // rows are the episode ends the learner counted.
  CHECK(reset_calls == 2 * num_envs);
  std::map<std::uint32_t, bool> just_reset;
  for (const auto& e : log.events) {
    if (e.reset_state) {
      just_reset[e.slot] = true;
      continue;
    }
    reset_rows += e.reset_flag;
    if (just_reset[e.slot])
      CHECK(e.reset_flag == 1);
    just_reset[e.slot] = false;
  }
  CHECK(s.episodes > 0);
  CHECK(reset_rows == reset_calls + static_cast<std::size_t>(s.episodes));
}

TEST_CASE("the learner serves and trains with two CPU inference workers", "[inference_engine]") {
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  seedrl::learner_config lc;
  lc.max_envs = 8;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  lc.inference_workers = 2;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"inference-workers"};
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = 3;
    seedrl::actor<seedrl::cartpole, std::function<seedrl::in_process_connection()>> a(
        ac, [](std::size_t) { return seedrl::cartpole(); },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto until = std::chrono::steady_clock::now() + 20s;
  // Several published parameter sets reach the two workers while they serve, and episodes end
  // (a random CartPole episode lasts about 22 steps: 5 training steps alone may come first).
  const auto served = [&] {
    const auto now = learner.stats();
    return now.train_steps >= 5 && now.episodes > 0;
  };
  while (!served() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  stop = true;
  actor.join();
  learner.stop();
  const auto s = learner.stats();
  CHECK(s.train_steps >= 5);
  CHECK(s.trainer_error.empty());
  CHECK(s.episodes > 0);
}

namespace {

/// A test engine whose step fails after `ok_batches` batches, as a CUDA engine reports a kernel
/// error (an exception naming the kernel).
template <class Net>
struct failing_engine : recording_engine<Net> {
  static constexpr int ok_batches = 5;
  static constexpr int most_frames = ok_batches * 2;  // 2 envs: no batch after the failure
  int batches = 0;
  failing_engine(const Net& net, const seedrl::inference_engine_config& c)
      : recording_engine<Net>(net, c) {}
  void infer(std::span<const std::uint32_t> slots,
             const seedrl::agent_step_input<typename Net::scalar_type>& in,
             const seedrl::agent_step_output<typename Net::scalar_type>& out) {
    if (++batches > ok_batches)
      throw std::runtime_error("seedrl: lstm_step_fused_kernel failed: cudaErrorLaunchFailure");
    recording_engine<Net>::infer(slots, in, out);
  }
};
static_assert(seedrl::InferenceEngine<failing_engine<net_t>>);

/// A learner on `Engine` with one CartPole actor of 2 envs: the engine fails after
/// Engine::ok_batches batches; the learner must keep the error (naming `what`), answer no later
/// batch, stop without hanging, and tell the actor it stops (not drop its link).
template <class Engine>
void check_engine_failure_stops_cleanly(const char* name, const char* what) {
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport,
                                    seedrl::host_trainer, seedrl::impala_loss<float>,
                                    seedrl::categorical_sampler, Engine>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  seedrl::learner_config lc;
  lc.max_envs = 8;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{std::string(name)};
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::mutex log_mutex;
  std::vector<std::string> actor_log;
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = 2;
    ac.log = [&](const std::string& line) {
      std::lock_guard lock(log_mutex);
      actor_log.push_back(line);
    };
    seedrl::actor<seedrl::cartpole, std::function<seedrl::in_process_connection()>> a(
        ac, [](std::size_t) { return seedrl::cartpole(); },
        [&] { return transport.connect(endpoint); });
    a.run(stop);  // must return when told to, not throw
  });
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (learner.stats().trainer_error.empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  const auto s = learner.stats();
  CHECK_THAT(s.trainer_error,
             Catch::Contains("the inference engine failed") && Catch::Contains(std::string(what)));
  // No batch after the failure was answered.
  CHECK(s.frames <= Engine::most_frames);
  learner.stop();  // must not hang on the unanswered batch
  const auto until_told = std::chrono::steady_clock::now() + 10s;
  const auto told = [&] {
    std::lock_guard lock(log_mutex);
    return std::any_of(actor_log.begin(), actor_log.end(), [](const std::string& l) {
      // The close frame learner::stop sends (code shutting_down), not a dropped link.
      return l.find("learner sent close: the learner is stopping") != std::string::npos;
    });
  };
  while (!told() && std::chrono::steady_clock::now() < until_told)
    std::this_thread::sleep_for(1ms);
  CHECK(told());
  stop = true;
  actor.join();
}

/// An engine that breaks the start-state contract after ok_batches batches: state_before()
/// comes back empty for the rows the loop asked for (a custom engine's bug).
template <class Net>
struct stateless_engine : recording_engine<Net> {
  using S = typename Net::scalar_type;
  static constexpr int ok_batches = 5;
  // 2 envs, unrolls of 4: the first batch after ok_batches that needs a start state comes
  // within 4 batches.
  static constexpr int most_frames = (ok_batches + 4) * 2;
  int batches = 0;
  stateless_engine(const Net& net, const seedrl::inference_engine_config& c)
      : recording_engine<Net>(net, c) {}
  void infer(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<S>& in,
             const seedrl::agent_step_output<S>& out) {
    ++batches;
    recording_engine<Net>::infer(slots, in, out);
  }
  std::span<const S> state_before(std::size_t row) const {
    if (batches > ok_batches)
      return {};
    return recording_engine<Net>::state_before(row);
  }
};
static_assert(seedrl::InferenceEngine<stateless_engine<net_t>>);

}  // namespace

TEST_CASE("an engine that throws stops the learner cleanly: the error is kept, actors are told",
          "[inference_engine][bad-input]") {
  check_engine_failure_stops_cleanly<failing_engine<net_t>>("inference-engine-fails",
                                                            "lstm_step_fused_kernel");
}

TEST_CASE("an engine that loses a start state it was asked for stops the learner cleanly",
          "[inference_engine][bad-input]") {
  check_engine_failure_stops_cleanly<stateless_engine<net_t>>(
      "inference-engine-stateless", "the engine did not keep a state asked for");
}

namespace {

struct sampling_log {
  std::mutex mutex;
  std::vector<std::uint64_t> counters, seeds;
  int plain_infers = 0;
};
sampling_log& log_of_sampling_engine() {
  static sampling_log log;
  return log;
}

/// A test engine that samples "on its device": infer_and_sample chooses action 1 for every row
/// by the counter generator over logits that favour it overwhelmingly, while its plain infer's
/// logits (recording_engine's) would make the host sampler choose slot % 2.
template <class Net>
struct sampling_engine : recording_engine<Net> {
  using S = typename Net::scalar_type;
  sampling_engine(const Net& net, const seedrl::inference_engine_config& c)
      : recording_engine<Net>(net, c) {}
  void infer(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<S>& in,
             const seedrl::agent_step_output<S>& out) {
    {
      auto& log = log_of_sampling_engine();
      std::lock_guard lock(log.mutex);
      ++log.plain_infers;
    }
    recording_engine<Net>::infer(slots, in, out);
  }
  void infer_and_sample(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<S>& in,
                        const seedrl::agent_step_output<S>& out, std::uint64_t seed,
                        std::uint64_t counter, std::span<std::int32_t> actions,
                        std::span<S> log_probs) {
    recording_engine<Net>::infer(slots, in, out);
    const S logits[] = {S(-100), S(100)};
    for (std::size_t r = 0; r < slots.size(); ++r)
      actions[r] = seedrl::counter_categorical(logits, 2, seedrl::counter_uniform(seed, counter, r),
                                               &log_probs[r]);
    auto& log = log_of_sampling_engine();
    std::lock_guard lock(log.mutex);
    log.counters.push_back(counter);
    log.seeds.push_back(seed);
  }
};
static_assert(seedrl::SamplingInferenceEngine<sampling_engine<net_t>>);
static_assert(!seedrl::SamplingInferenceEngine<recording_engine<net_t>>);

}  // namespace

TEST_CASE("the loop lets an engine that samples choose the actions, with its seed and counter",
          "[inference_engine]") {
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport,
                                    seedrl::host_trainer, seedrl::impala_loss<float>,
                                    seedrl::categorical_sampler, sampling_engine<net_t>>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  seedrl::learner_config lc;
  lc.max_envs = 8;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  lc.seed = 1234;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"inference-engine-samples"};
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  constexpr std::size_t num_envs = 2;
  std::shared_ptr<std::atomic<int>[]> counts(new std::atomic<int>[num_envs * 2] {});
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = num_envs;
    seedrl::actor<action_counting_cartpole, std::function<seedrl::in_process_connection()>> a(
        ac, [&](std::size_t i) { return action_counting_cartpole(counts, i); },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (learner.stats().frames < 100 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  stop = true;
  actor.join();
  learner.stop();
  const auto s = learner.stats();
  CHECK(s.trainer_error.empty());
  // Every env got the engine's action 1, never the host sampler's slot % 2 choice of 0.
  for (std::size_t i = 0; i < num_envs; ++i) {
    CHECK(counts[i * 2 + 1] > 0);
    CHECK(counts[i * 2] == 0);
  }
  auto& log = log_of_sampling_engine();
  std::lock_guard lock(log.mutex);
  CHECK(log.plain_infers == 0);
  REQUIRE(!log.counters.empty());
  CHECK(log.counters.size() == static_cast<std::size_t>(s.batches));
  for (std::size_t k = 0; k < log.counters.size(); ++k) {
    CHECK(log.counters[k] == k);  // the batch index: a run draws the same numbers again
    CHECK(log.seeds[k] == 1234);
  }
}

TEST_CASE("CUDA graph buckets: powers of two up to the batch cap, none past 256 rows",
          "[inference_engine]") {
  using seedrl::cuda::detail::graph_bucket;
  CHECK(graph_bucket(0, 64) == 0);
  CHECK(graph_bucket(1, 64) == 1);
  CHECK(graph_bucket(2, 64) == 2);
  CHECK(graph_bucket(3, 64) == 4);
  CHECK(graph_bucket(33, 64) == 64);
  CHECK(graph_bucket(64, 64) == 64);
  CHECK(graph_bucket(20, 33) == 32);
  CHECK(graph_bucket(33, 33) == 33);  // never more rows than the buffers hold
  CHECK(graph_bucket(34, 33) == 0);
  CHECK(graph_bucket(256, 1024) == 256);
  CHECK(graph_bucket(257, 1024) == 0);  // the GEMM path's workspace may move: plain launches
  for (std::size_t B = 1; B <= 300; ++B) {
    const std::size_t g = graph_bucket(B, 200);
    if (g != 0) {
      CHECK(g >= B);
      CHECK(g <= 200);
      CHECK(g < 2 * B);  // at most twice the work
    }
  }
}

namespace {

using any_cpu_t = seedrl::any_inference_engine<net_t>;
using any_fake_gpu_t = seedrl::any_inference_engine<net_t, sampling_engine<net_t>>;
static_assert(seedrl::InferenceEngine<any_cpu_t>);
static_assert(seedrl::SamplingInferenceEngine<any_fake_gpu_t>);

}  // namespace

TEST_CASE("any_inference_engine on the CPU gives the plain CPU engine's outputs, bit for bit",
          "[inference_engine]") {
  const net_t first = make_engine_net(7), second = make_engine_net(8);
  for (const std::size_t workers : {std::size_t{1}, std::size_t{2}}) {
    const seedrl::inference_engine_config config{max_envs, max_batch, num_actions, workers,
                                                 seedrl::compute_device::cpu};
    engine_t plain(first, config);
    any_cpu_t any(first, config);
    CHECK(any.device() == seedrl::compute_device::cpu);
    CHECK_FALSE(any.samples());  // the loop samples on the host, as with the plain engine
    CHECK(any.max_envs() == max_envs);
    CHECK(any.max_batch() == max_batch);
    CHECK(any.policy_width() == num_actions);
    REQUIRE(any.state_width() == plain.state_width());
    const std::size_t W = plain.state_width();
    seedrl::parameter_store<float> store;
    std::uint64_t plain_version = 0, any_version = 0;
    seedrl::random_generator rng(21);
    std::vector<float> logits(max_batch * num_actions), values(max_batch);
    std::vector<float> want_logits(max_batch * num_actions), want_values(max_batch);
    for (int k = 0; k < 12; ++k) {
      if (k == 6) {  // new parameters between batches reach both engines
        net_t src = second;
        store.publish(src.parameters());
        CHECK(plain.update_parameters(store, &plain_version));
        CHECK(any.update_parameters(store, &any_version));
        CHECK(any_version == plain_version);
        CHECK_FALSE(any.update_parameters(store, &any_version));  // nothing newer
      }
      const auto restarted = static_cast<std::uint32_t>(rng.below(max_envs));
      plain.reset_state(restarted);
      any.reset_state(restarted);
      const std::size_t B = 1 + rng.below(max_batch);
      const batch b = random_engine_batch(rng, B);
      plain.infer(b.slots, {b.obs, b.rewards, b.resets, b.prev},
                  {std::span(want_logits).first(B * num_actions), std::span(want_values).first(B)});
      any.infer(b.slots, {b.obs, b.rewards, b.resets, b.prev},
                {std::span(logits).first(B * num_actions), std::span(values).first(B)});
      CHECK(std::equal(want_logits.begin(), want_logits.begin() + B * num_actions, logits.begin()));
      CHECK(std::equal(want_values.begin(), want_values.begin() + B, values.begin()));
      for (std::size_t r = 0; r < B; ++r) {
        const auto want = plain.state_before(r), got = any.state_before(r);
        REQUIRE(got.size() == W);
        CHECK(std::equal(want.begin(), want.end(), got.begin()));
      }
    }
    // The parameters changed the outputs (so the update above was not a no-op).
    engine_t untouched(first, config);
    const batch b = random_engine_batch(rng, 3);
    std::vector<float> old_logits(3 * num_actions), old_values(3);
    untouched.infer(b.slots, {b.obs, b.rewards, b.resets, b.prev}, {old_logits, old_values});
    any.infer(b.slots, {b.obs, b.rewards, b.resets, b.prev},
              {std::span(logits).first(3 * num_actions), std::span(values).first(3)});
    CHECK_FALSE(std::equal(old_values.begin(), old_values.end(), values.begin()));
  }
}

TEST_CASE("any_inference_engine builds the GPU model the config names, or refuses without one",
          "[inference_engine]") {
  const net_t net = make_engine_net(7);
  const seedrl::inference_engine_config cuda{max_envs, max_batch, num_actions, 1,
                                             seedrl::compute_device::cuda};
  // No GPU engine in the program: asking for cuda is refused with a message.
  CHECK_THROWS_WITH(any_cpu_t(net, cuda), Catch::Contains("no GPU inference engine"));
  // The fake GPU engine samples where it computes; the CPU model does not.
  any_fake_gpu_t gpu(net, cuda);
  CHECK(gpu.device() == seedrl::compute_device::cuda);
  CHECK(gpu.samples());
  auto cpu_config = cuda;
  cpu_config.device = seedrl::compute_device::cpu;
  any_fake_gpu_t cpu(net, cpu_config);
  CHECK_FALSE(cpu.samples());
  const std::uint32_t slots[] = {0, 1};
  const float obs[2 * obs_size] = {}, rewards[2] = {};
  const std::uint8_t resets[2] = {};
  const std::int32_t prev[2] = {};
  std::vector<float> logits(2 * num_actions), values(2), log_probs(2);
  std::vector<std::int32_t> actions(2, -1);
  CHECK_THROWS_AS(cpu.infer_and_sample(slots, {obs, rewards, resets, prev}, {logits, values}, 1, 0,
                                       actions, log_probs),
                  std::logic_error);
}

namespace {

/// Actions each env took (env * 2 + action) in a short run of a learner with engine
/// any_fake_gpu_t on `device`, and the run's error, if any.
std::pair<std::vector<int>, std::string> run_fake_gpu_learner(seedrl::compute_device device,
                                                              const std::string& name) {
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport,
                                    seedrl::host_trainer, seedrl::impala_loss<float>,
                                    seedrl::categorical_sampler, any_fake_gpu_t>;
  seedrl::mlp_lstm_agent_config nc;
  nc.num_actions = 2;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  seedrl::learner_config lc;
  lc.max_envs = 8;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  lc.seed = 99;
  lc.inference_device = device;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{name};
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  constexpr std::size_t num_envs = 2;
  std::shared_ptr<std::atomic<int>[]> counts(new std::atomic<int>[num_envs * 2] {});
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = num_envs;
    seedrl::actor<action_counting_cartpole, std::function<seedrl::in_process_connection()>> a(
        ac, [&](std::size_t i) { return action_counting_cartpole(counts, i); },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (learner.stats().frames < 200 && learner.stats().trainer_error.empty() &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  stop = true;
  actor.join();
  learner.stop();
  std::vector<int> out;
  for (std::size_t i = 0; i < num_envs * 2; ++i)
    out.push_back(counts[i]);
  return {out, learner.stats().trainer_error};
}

}  // namespace

TEST_CASE("learner_config::inference_device picks the engine a learner infers with",
          "[inference_engine]") {
  auto& log = log_of_sampling_engine();
  const auto clear_log = [&] {
    std::lock_guard lock(log.mutex);
    log.counters.clear();
    log.seeds.clear();
    log.plain_infers = 0;
  };
  clear_log();
  // cuda: the (fake) GPU engine samples, and it always picks action 1.
  const auto [gpu_counts, gpu_error] =
      run_fake_gpu_learner(seedrl::compute_device::cuda, "any-engine-cuda");
  CHECK(gpu_error.empty());
  CHECK(gpu_counts[1] + gpu_counts[3] >= 200);
  CHECK(gpu_counts[0] + gpu_counts[2] == 0);
  {
    std::lock_guard lock(log.mutex);
    CHECK_FALSE(log.counters.empty());
    CHECK(log.seeds.front() == 99);
  }
  clear_log();
  // cpu: the CPU engine's network and the host sampler: both actions show up, and the
  // loop never asks the CPU model to sample (that would throw, and stop the learner).
  const auto [cpu_counts, cpu_error] =
      run_fake_gpu_learner(seedrl::compute_device::cpu, "any-engine-cpu");
  CHECK(cpu_error.empty());
  CHECK(cpu_counts[0] + cpu_counts[2] > 0);
  CHECK(cpu_counts[1] + cpu_counts[3] > 0);
  {
    std::lock_guard lock(log.mutex);
    CHECK(log.counters.empty());
  }
  clear_log();  // the loop's sampling test counts from an empty log
}

TEST_CASE("the CPU engine on uint8 frames equals it on the same frames as floats, bit for bit",
          "[inference_engine]") {
  // A frame-stacked Nature CNN + LSTM, so the widened frames feed the frame history too.
  using pixel_t = seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>;
  seedrl::frame_stack_config stack{.height = 44, .width = 52, .channels = 1, .depth = 3};
  seedrl::pixel_lstm_agent_config<seedrl::nature_cnn_config> agent;
  agent.height = 44;
  agent.width = 52;
  agent.channels = 3;
  agent.num_actions = 4;
  agent.torso.channels = {4, 5, 3};
  agent.dense_size = 7;
  agent.lstm_size = 6;
  agent.seed = 12;
  const pixel_t net(stack, agent);
  const std::size_t A = 4, F = 44 * 52;
  for (const std::size_t workers : {1, 2}) {
    seedrl::cpu_inference_engine<pixel_t> wide(net, {max_envs, max_batch, A, workers});
    seedrl::cpu_inference_engine<pixel_t> bytes(net, {max_envs, max_batch, A, workers});
    const std::size_t W = wide.state_width();
    seedrl::random_generator rng(31);
    std::vector<float> logits_f(max_batch * A), values_f(max_batch);
    std::vector<float> logits_u(max_batch * A), values_u(max_batch);
    for (int k = 0; k < 6; ++k) {
      for (std::uint32_t s = 0; s < max_envs; ++s) {
        if (rng.uniform() < 0.1) {  // run restarts
          wide.reset_state(s);
          bytes.reset_state(s);
        }
      }
      const std::size_t B = 1 + rng.below(max_batch);
      batch b = random_engine_batch(rng, B);  // its slots, rewards, resets and previous actions
      std::vector<std::uint8_t> frames(B * F);
      std::vector<float> as_float(B * F);
      for (std::size_t i = 0; i < B * F; ++i) {
        frames[i] = static_cast<std::uint8_t>(rng.below(256));
        as_float[i] = static_cast<float>(frames[i]);
      }
      wide.infer(b.slots, {as_float, b.rewards, b.resets, b.prev},
                 {std::span(logits_f).first(B * A), std::span(values_f).first(B)});
      seedrl::agent_step_input<float> in{{}, b.rewards, b.resets, b.prev};
      in.observations_u8 = frames;
      bytes.infer(b.slots, in, {std::span(logits_u).first(B * A), std::span(values_u).first(B)});
      INFO(workers << " workers, batch " << k << ", B = " << B);
      CHECK(std::equal(logits_f.begin(), logits_f.begin() + static_cast<std::ptrdiff_t>(B * A),
                       logits_u.begin()));
      CHECK(std::equal(values_f.begin(), values_f.begin() + static_cast<std::ptrdiff_t>(B),
                       values_u.begin()));
      for (std::size_t r = 0; r < B; ++r) {
        const auto f = wide.state_before(r), u = bytes.state_before(r);
        REQUIRE(u.size() == W);
        CHECK(std::equal(f.begin(), f.end(), u.begin()));
      }
    }
  }
}

namespace {

/// Catch's frames as float32 observations: the same game, so that a learner takes the float
/// path (agent_step_input::observations) where Catch takes the uint8 one.
struct float_catch {
  using observation_type = float;
  using action_type = std::int32_t;
  seedrl::catch_game game;
  std::vector<std::uint8_t> frame = std::vector<std::uint8_t>(84 * 84);

  static seedrl::observation_spec observation_spec() {
    auto s = seedrl::catch_game::observation_spec();
    s.type = seedrl::dtype::float32;
    return s;
  }
  static seedrl::action_spec action_spec() { return seedrl::catch_game::action_spec(); }
  void seed(std::uint64_t s) { game.seed(s); }
  void reset(std::span<float> observation) {
    game.reset(frame);
    std::copy(frame.begin(), frame.end(), observation.begin());
  }
  seedrl::step_result step(action_type action, std::span<float> observation) {
    const auto r = game.step(action, frame);
    std::copy(frame.begin(), frame.end(), observation.begin());
    return r;
  }
};
static_assert(seedrl::Environment<float_catch>);

/// What a probe engine saw over a learner's run.
struct probe_log {
  std::mutex mutex;
  std::size_t batches = 0, byte_batches = 0, rows = 0, kept_rows = 0, bad_keep = 0;
};

/// cpu_inference_engine, recording which observations and start states the loop hands it; with
/// `Poison`, a row whose state_before was not asked for (agent_step_input::keep_state) reads
/// NaNs, as an engine that leaves those rows unspecified may.
template <class Net, bool Poison>
struct probe_engine {
  using scalar_type = float;
  seedrl::cpu_inference_engine<Net> inner;
  std::vector<std::uint8_t> kept;
  std::vector<float> poison;

  static probe_log& log() {
    static probe_log l;
    return l;
  }
  probe_engine(const Net& net, const seedrl::inference_engine_config& c)
      : inner(net, c), kept(c.max_batch), poison(inner.state_width(), std::nanf("")) {}
  std::size_t max_envs() const { return inner.max_envs(); }
  std::size_t max_batch() const { return inner.max_batch(); }
  std::size_t state_width() const { return inner.state_width(); }
  std::size_t policy_width() const { return inner.policy_width(); }
  void reset_state(std::size_t slot) { inner.reset_state(slot); }
  void infer(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<float>& in,
             const seedrl::agent_step_output<float>& out) {
    const std::size_t B = slots.size();
    {
      auto& l = log();
      std::lock_guard lock(l.mutex);
      ++l.batches;
      l.rows += B;
      if (in.observations.empty() && in.observations_u8.size() == B * 84 * 84)
        ++l.byte_batches;
      l.bad_keep += in.keep_state.size() == B ? 0 : 1;  // (Catch's REQUIRE is not for threads)
      for (const auto k : in.keep_state)
        l.kept_rows += k;
    }
    std::copy(in.keep_state.begin(), in.keep_state.end(), kept.begin());
    inner.infer(slots, in, out);
  }
  std::span<const float> state_before(std::size_t row) const {
    if (Poison && kept[row] == 0)
      return poison;
    return inner.state_before(row);
  }
  bool update_parameters(const seedrl::parameter_store<float>& p, std::uint64_t* version) {
    return inner.update_parameters(p, version);
  }
};

/// One unroll as the trainer got it.
struct trained_unroll {
  std::vector<float> observations, rewards, start_state;
  std::vector<std::uint8_t> dones;
  std::vector<std::int32_t> actions;
  bool operator==(const trained_unroll&) const = default;
};

/// A Trainer that keeps the first unrolls it is given, in order, and changes no parameter.
struct unroll_keeper {
  struct record {
    std::mutex mutex;
    std::vector<trained_unroll> unrolls;
  };
  std::shared_ptr<record> r = std::make_shared<record>();

  template <class Net, class Opt>
  seedrl::train_step_result train_step(const seedrl::training_batch<float>& b, Net&, Opt&,
                                       const seedrl::impala_loss<float>&, double) {
    const std::size_t obs = b.observations.size() / ((b.T + 1) * b.B);
    const std::size_t W = b.start_state.size() / b.B;
    std::lock_guard lock(r->mutex);
    for (std::size_t u = 0; u < b.B; ++u) {
      trained_unroll t;
      for (std::size_t s = 0; s <= b.T; ++s) {  // time-major: row s * B + u
        const std::size_t row = s * b.B + u;
        t.observations.insert(t.observations.end(), b.observations.begin() + row * obs,
                              b.observations.begin() + (row + 1) * obs);
        t.rewards.push_back(b.rewards[row]);
        t.dones.push_back(b.dones[row]);
        t.actions.push_back(b.actions[row]);
      }
      t.start_state.assign(b.start_state.begin() + u * W, b.start_state.begin() + (u + 1) * W);
      r->unrolls.push_back(std::move(t));
    }
    return {};
  }
  template <class Net, class Opt>
  void sync_to_host(Net&, Opt&) noexcept {}
  template <class Net, class Opt>
  void load_from_host(Net&, Opt&) noexcept {}
};

/// The first `n` unrolls a learner over Env (Catch's game, as uint8 or float frames) trains on,
/// inferring with Engine: one actor of 3 envs, so every batch is its one request and the run
/// is the same whatever the timing. With `inference_only`, none: the learner serves n frames.
template <class Env, class Engine>
std::vector<trained_unroll> first_unrolls(std::size_t n, const char* endpoint_name,
                                          bool inference_only = false) {
  using catch_net = seedrl::mlp_lstm_agent<float>;
  using learner_t =
      seedrl::learner<catch_net, seedrl::adam<float>, seedrl::in_process_transport, unroll_keeper,
                      seedrl::impala_loss<float>, seedrl::categorical_sampler, Engine>;
  seedrl::mlp_lstm_agent_config nc;
  nc.observation_size = 84 * 84;
  nc.num_actions = 3;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  nc.seed = 3;
  seedrl::learner_config lc;
  lc.max_envs = 4;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 4;
  lc.seed = 17;
  lc.inference_only = inference_only;
  unroll_keeper keeper;
  const auto record = keeper.r;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{endpoint_name};
  learner_t learner(lc, catch_net(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    Env::observation_spec(), Env::action_spec(), keeper);
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = 3;
    ac.seed = 5;
    seedrl::actor<Env, std::function<seedrl::in_process_connection()>> a(
        ac, [](std::size_t) { return Env(); }, [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto kept = [&] {
    std::lock_guard lock(record->mutex);
    return record->unrolls.size();
  };
  const auto done = [&] {
    return inference_only ? learner.stats().frames >= static_cast<std::int64_t>(n) : kept() >= n;
  };
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (!done() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  stop = true;
  actor.join();
  learner.stop();
  REQUIRE(done());
  std::lock_guard lock(record->mutex);
  if (inference_only)
    return {};
  return {record->unrolls.begin(), record->unrolls.begin() + static_cast<std::ptrdiff_t>(n)};
}

}  // namespace

TEST_CASE(
    "the loop keeps uint8 frames as bytes up to the engine and asks only for the start states "
    "it keeps: unrolls as with float frames and every state",
    "[inference_engine]") {
  using catch_net = seedrl::mlp_lstm_agent<float>;
  using plain = probe_engine<catch_net, false>;
  using poisoned = probe_engine<catch_net, true>;
  constexpr std::size_t n = 12;
  const auto as_float = first_unrolls<float_catch, plain>(n, "busdata-float");
  {
    std::lock_guard lock(plain::log().mutex);
    CHECK(plain::log().byte_batches == 0);  // float frames travel as floats
    CHECK(plain::log().bad_keep == 0);
    // Only rows that open or complete an unroll keep their state: with T = 4, about 1 in 4.
    CHECK(plain::log().kept_rows > 0);
    CHECK(plain::log().kept_rows * 2 < plain::log().rows);
  }
  const auto as_bytes = first_unrolls<seedrl::catch_game, poisoned>(n, "busdata-bytes");
  {
    std::lock_guard lock(poisoned::log().mutex);
    CHECK(poisoned::log().batches > 0);
    CHECK(poisoned::log().byte_batches == poisoned::log().batches);
    CHECK(poisoned::log().bad_keep == 0);
    CHECK(poisoned::log().kept_rows > 0);
    CHECK(poisoned::log().kept_rows * 2 < poisoned::log().rows);  // the poison is read if misused
  }
  // The same run: frames widened into the unrolls, the same actions (the same logits), and start
  // states never read from a row that was not asked for (they would be NaN).
  REQUIRE(as_bytes.size() == as_float.size());
  for (std::size_t i = 0; i < n; ++i) {
    INFO("unroll " << i);
    CHECK(as_bytes[i] == as_float[i]);
    CHECK(std::all_of(as_bytes[i].start_state.begin(), as_bytes[i].start_state.end(),
                      [](float x) { return std::isfinite(x); }));
  }
  // The frames arrived: Catch draws the paddle (128) in every frame.
  CHECK(std::count(as_bytes[0].observations.begin(), as_bytes[0].observations.end(), 128.0f) > 0);
  // A learner that only serves builds no unrolls and asks for no state.
  std::size_t rows_before = 0;
  {
    std::lock_guard lock(poisoned::log().mutex);
    rows_before = poisoned::log().rows;
    poisoned::log().kept_rows = 0;
  }
  first_unrolls<seedrl::catch_game, poisoned>(60, "busdata-serving", true);
  std::lock_guard lock(poisoned::log().mutex);
  CHECK(poisoned::log().rows >= rows_before + 60);
  CHECK(poisoned::log().kept_rows == 0);
}
