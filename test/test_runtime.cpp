// Learner runtime pieces without I/O: the dynamic batcher's flush rules, the per-env state
// store, the unroll builder's overlap and resets, the training queue and parameter publication.
#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/runtime/batcher.hpp"
#include "seedrl/runtime/bounded_queue.hpp"
#include "seedrl/runtime/detail/log_limiter.hpp"
#include "seedrl/runtime/env_state_store.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/runtime/policy.hpp"
#include "seedrl/runtime/thread_time_split.hpp"
#include "seedrl/runtime/unroll_builder.hpp"

namespace {

using namespace std::chrono_literals;

struct rows_payload {
  std::vector<int> values;  // one int per row: the requester's tag
};

using test_batcher = seedrl::dynamic_batcher<rows_payload>;

test_batcher make_batcher(std::size_t max_batch, std::chrono::microseconds deadline) {
  seedrl::batcher_config c;
  c.max_batch = max_batch;
  c.deadline = deadline;
  c.max_request_rows = 8;
  return test_batcher(c, [](std::size_t cap) { return rows_payload{std::vector<int>(cap, -1)}; });
}

/// Submits `rows` rows tagged `tag`; safe to call from any thread (no Catch assertion inside).
bool try_submit(test_batcher& b, int tag, std::size_t rows) {
  return b.submit(reinterpret_cast<void*>(static_cast<std::intptr_t>(tag + 1)), rows,
                  [&](rows_payload& p, std::size_t first) {
                    for (std::size_t r = 0; r < rows; ++r)
                      p.values[first + r] = tag;
                  });
}

void submit(test_batcher& b, int tag, std::size_t rows) {
  REQUIRE(try_submit(b, tag, rows));
}

}  // namespace

TEST_CASE("batcher flushes when max_batch rows are waiting", "[runtime][batcher]") {
  auto b = make_batcher(4, std::chrono::seconds(100));
  b.add_connected(100);  // many envs connected: only the size rule can fire
  submit(b, 0, 2);
  submit(b, 1, 2);
  auto* batch = b.next_batch();
  REQUIRE(batch != nullptr);
  CHECK(batch->reason == seedrl::flush_reason::full);
  CHECK(batch->rows == 4);
  REQUIRE(batch->entries.size() == 2);
  CHECK(batch->payload.values[0] == 0);
  CHECK(batch->payload.values[3] == 1);
  b.release(batch);
}

TEST_CASE("batcher puts a request that overflows into the next batch", "[runtime][batcher]") {
  auto b = make_batcher(4, std::chrono::seconds(100));
  b.add_connected(100);
  submit(b, 0, 3);
  submit(b, 1, 3);  // does not fit beside the first: seals it and starts the next batch
  auto* first = b.next_batch();
  CHECK(first->rows == 3);
  CHECK(first->reason == seedrl::flush_reason::full);
  b.release(first);
  submit(b, 2, 1);  // 3 + 1 = 4: full
  auto* second = b.next_batch();
  CHECK(second->rows == 4);
  CHECK(second->payload.values[0] == 1);
  CHECK(second->payload.values[3] == 2);
  b.release(second);
}

TEST_CASE("batcher flushes at the deadline with few actors", "[runtime][batcher]") {
  auto b = make_batcher(64, std::chrono::milliseconds(20));
  b.add_connected(100);
  const auto t0 = std::chrono::steady_clock::now();
  submit(b, 7, 1);
  auto* batch = b.next_batch();
  const auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(batch->reason == seedrl::flush_reason::deadline);
  CHECK(batch->rows == 1);
  CHECK(waited >= 20ms);
  b.release(batch);
}

TEST_CASE("batcher hands over requests that arrive after a deadline flush", "[runtime][batcher]") {
  // Regression: inference took the batch that was still receiving requests; the next request
  // then landed in a buffer behind the one inference waited on, and every actor stalled.
  auto b = make_batcher(64, std::chrono::milliseconds(5));
  b.add_connected(100);
  submit(b, 0, 1);
  auto* first = b.next_batch();
  REQUIRE(first != nullptr);
  b.release(first);
  submit(b, 1, 1);
  std::thread watchdog([&] {
    std::this_thread::sleep_for(1s);
    b.shutdown();  // turns a hang into a failed check below
  });
  auto* second = b.next_batch();
  REQUIRE(second != nullptr);
  CHECK(second->payload.values[0] == 1);
  CHECK(second->reason == seedrl::flush_reason::deadline);
  b.release(second);
  watchdog.join();
}

TEST_CASE("batcher flushes when every connected env is waiting", "[runtime][batcher]") {
  auto b = make_batcher(64, std::chrono::seconds(100));
  b.add_connected(3);
  submit(b, 0, 2);
  submit(b, 1, 1);  // 3 of 3 connected envs wait: no one else can add rows
  auto* batch = b.next_batch();
  CHECK(batch->reason == seedrl::flush_reason::all_waiting);
  CHECK(batch->rows == 3);
  b.release(batch);
  // A disconnect can complete the condition too.
  submit(b, 0, 2);
  b.add_connected(-1);
  auto* again = b.next_batch();
  CHECK(again->reason == seedrl::flush_reason::all_waiting);
  b.release(again);
}

TEST_CASE("batcher drains and stops on shutdown", "[runtime][batcher]") {
  auto b = make_batcher(64, std::chrono::seconds(100));
  b.add_connected(10);
  submit(b, 0, 1);
  b.shutdown();
  auto* batch = b.next_batch();
  REQUIRE(batch != nullptr);
  CHECK(batch->reason == seedrl::flush_reason::shutdown);
  b.release(batch);
  CHECK(b.next_batch() == nullptr);
  CHECK_FALSE(b.submit(nullptr, 1,
                       [](rows_payload&, std::size_t) { FAIL("must not fill after shutdown"); }));
}

TEST_CASE("batcher serves many concurrent submitters without losing a row",
          "[runtime][batcher][concurrency]") {
  auto b = make_batcher(16, std::chrono::milliseconds(1));
  const int threads = 8, per_thread = 300;
  b.add_connected(threads * 2);
  std::vector<std::thread> producers;
  std::atomic<int> answered{0}, refused{0};
  std::vector<std::atomic<int>> pending(threads);
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        pending[t].store(1);
        if (!try_submit(b, t, 2))
          ++refused;  // Catch assertions are not thread-safe
        while (pending[t].load() != 0)
          std::this_thread::yield();  // one request in flight, like an actor
      }
    });
  }
  std::size_t rows = 0;
  while (answered.load() < threads * per_thread) {
    auto* batch = b.next_batch();
    REQUIRE(batch != nullptr);
    REQUIRE(batch->rows <= 16);
    for (const auto& e : batch->entries) {
      const int tag = static_cast<int>(reinterpret_cast<std::intptr_t>(e.requester)) - 1;
      for (std::size_t r = 0; r < e.rows; ++r)
        REQUIRE(batch->payload.values[e.first_row + r] == tag);
      rows += e.rows;
      ++answered;
      pending[tag].store(0);
    }
    b.release(batch);
  }
  for (auto& p : producers)
    p.join();
  CHECK(rows == static_cast<std::size_t>(threads * per_thread * 2));
}

TEST_CASE("batches do not fragment when actors step again before their batch is released",
          "[runtime][batcher][concurrency][fragment]") {
  // Like the learner: inference answers every request of a batch, then does slower bookkeeping
  // before it releases the batch. Actors step again as soon as they have their answer. Rows
  // already answered are no longer waiting, so "every connected env is waiting" must not count
  // them: otherwise the first actor back seals a batch of one request and batches stay split
  // (1, 3, 1, 3, ... requests).
  constexpr int actors = 4;
  constexpr std::size_t rows_per_actor = 2;
  // The deadline is far longer than a round trip: only the all-waiting rule seals batches here.
  auto b = make_batcher(64, std::chrono::seconds(5));
  b.add_connected(actors * static_cast<std::ptrdiff_t>(rows_per_actor));
  std::atomic<bool> stop{false};
  std::vector<std::atomic<int>> answers(actors);  // answers each actor has received
  std::vector<std::thread> producers;
  for (int t = 0; t < actors; ++t) {
    producers.emplace_back([&, t] {
      for (int seen = 0; !stop.load(); ++seen) {
        if (!try_submit(b, t, rows_per_actor))
          return;  // shut down
        while (answers[t].load() == seen && !stop.load())
          std::this_thread::yield();  // one request in flight, like an actor
      }
    });
  }
  constexpr int batches = 12, warmup = 3;
  std::vector<std::size_t> requests;
  for (int i = 0; i < batches; ++i) {
    auto* batch = b.next_batch();
    if (batch == nullptr)  // never before shutdown(); checked once the producers are joined
      break;
    std::this_thread::sleep_for(20ms);  // inference
    b.answered(batch);
    for (const auto& e : batch->entries)
      ++answers[static_cast<std::size_t>(reinterpret_cast<std::intptr_t>(e.requester) - 1)];
    std::this_thread::sleep_for(20ms);  // bookkeeping: the actors step again meanwhile
    requests.push_back(batch->entries.size());
    b.release(batch);
  }
  stop = true;
  b.shutdown();
  for (auto& p : producers)
    p.join();
  INFO("requests per batch: " << Catch::Detail::stringify(requests));
  REQUIRE(requests.size() == static_cast<std::size_t>(batches));
  for (int i = warmup; i < batches; ++i)
    CHECK(requests[static_cast<std::size_t>(i)] == static_cast<std::size_t>(actors));
}

TEST_CASE("env_state_store resets on a new run id and accounts episodes", "[runtime][state]") {
  seedrl::env_state_store<float> store(4, 3);
  const auto first = store.allocate(2);
  REQUIRE(first.has_value());
  CHECK(*first == 0);
  CHECK(store.in_use() == 2);
  CHECK(store.observe(0, 11, 0.0, true).run_changed);  // first step of a run
  auto s = store.state(0);
  std::fill(s.begin(), s.end(), 1.0f);
  store.set_prev_action(0, 1);
  CHECK_FALSE(store.observe(0, 11, 1.0, false).run_changed);
  const auto end = store.observe(0, 11, 2.0, true);  // terminal reward, episode of 2 steps
  REQUIRE(end.finished.has_value());
  CHECK(end.finished->episode_return == 3.0);
  CHECK(end.finished->length == 2);
  CHECK(store.prev_action(0) == 0);
  CHECK(store.state(0)[0] == 1.0f);  // the network resets the state at done, not the store
  // The actor restarted the env: new run id -> state, stats and previous action cleared.
  store.set_prev_action(0, 1);
  CHECK(store.observe(0, 12, 5.0, false).run_changed);
  CHECK(store.state(0)[0] == 0.0f);
  CHECK(store.prev_action(0) == 0);
  CHECK_FALSE(store.observe(0, 12, 1.0, true).finished->episode_return != 1.0);
  // Slots: 2 left, not 3 in a row.
  CHECK_FALSE(store.allocate(3).has_value());
  store.release(0, 2);
  CHECK(store.allocate(4).has_value());
}

TEST_CASE("unroll_builder emits T+1 steps with one-step overlap and drops on reset",
          "[runtime][unroll]") {
  const std::size_t T = 3;
  seedrl::unroll_builder<float> builder(2, T, 1, 2, 4);
  std::vector<seedrl::unroll<float>*> out;
  auto step = [&](std::size_t slot, int t) {
    const float obs = static_cast<float>(t);
    const std::vector<float> state{static_cast<float>(10 * t), 0.0f};
    // Parameter version 100 + t chose step t's action; step 3's env output ended an episode
    // by a time limit.
    return builder.append(slot, std::span<const float>(&obs, 1), static_cast<float>(t), t == 3,
                          t == 3, t - 1, t, -0.5f, static_cast<std::uint64_t>(100 + t), state);
  };
  for (int t = 0; t < 3; ++t)
    CHECK(step(0, t) == nullptr);
  auto* u = step(0, 3);
  REQUIRE(u != nullptr);
  CHECK(u->length == T + 1);
  CHECK(u->observations == std::vector<float>{0, 1, 2, 3});
  CHECK(u->behaviour_versions == std::vector<std::uint64_t>{100, 101, 102, 103});
  CHECK(u->dones == std::vector<std::uint8_t>{0, 0, 0, 1});
  CHECK(u->truncated == std::vector<std::uint8_t>{0, 0, 0, 1});
  CHECK(u->start_state[0] == 0.0f);
  // The next unroll starts with step 3 and the state from before it.
  for (int t = 4; t < 6; ++t)
    CHECK(step(0, t) == nullptr);
  auto* v = step(0, 6);
  REQUIRE(v != nullptr);
  CHECK(v->observations == std::vector<float>{3, 4, 5, 6});
  CHECK(v->actions[0] == 3);
  CHECK(v->behaviour_versions == std::vector<std::uint64_t>{103, 104, 105, 106});
  CHECK(v->dones == std::vector<std::uint8_t>{1, 0, 0, 0});  // the overlap step keeps its flags
  CHECK(v->truncated == std::vector<std::uint8_t>{1, 0, 0, 0});
  CHECK(v->start_state[0] == 30.0f);
  builder.recycle(u);
  builder.recycle(v);
  // A run-id change drops the partial unroll; the next one starts fresh.
  CHECK(step(1, 0) == nullptr);
  CHECK(step(1, 1) == nullptr);
  CHECK(builder.pending(1) == 2);
  builder.reset(1);
  CHECK(builder.pending(1) == 0);
  for (int t = 10; t < 13; ++t)
    CHECK(step(1, t) == nullptr);
  auto* w = step(1, 13);
  REQUIRE(w != nullptr);
  CHECK(w->observations == std::vector<float>{10, 11, 12, 13});
  CHECK(w->start_state[0] == 100.0f);
}

TEST_CASE("unroll_builder reads a step's state only where an unroll starts or completes",
          "[runtime][unroll]") {
  const std::size_t T = 2;
  seedrl::unroll_builder<float> builder(1, T, 1, 2, 3);
  const std::vector<float> state{1.0f, 2.0f};
  const std::array<std::uint8_t, 1> frame{200};
  // Steps 0..5 of one env: an unroll opens at 0 and completes at 2 and 4 (T + 1 = 3 steps, the
  // last of each the first of the next); the steps between read no state.
  const bool needed[] = {true, false, true, false, true, false};
  for (int t = 0; t < 6; ++t) {
    INFO("step " << t);
    REQUIRE(builder.needs_state_before(0) == needed[t]);
    // uint8 frames are widened into the unroll; a step that needs no state may come without one.
    auto* u =
        builder.append(0, std::span<const std::uint8_t>(frame), 0.0f, false, false, 0, 0, 0.0f, 0,
                       needed[t] ? std::span<const float>(state) : std::span<const float>());
    if (u != nullptr) {
      CHECK(u->observations == std::vector<float>{200.0f, 200.0f, 200.0f});
      CHECK(u->start_state == state);
      builder.recycle(u);
    }
  }
  // Where a state is needed, one of the wrong width (a row the engine was not asked for) is
  // refused before anything changes.
  REQUIRE(builder.needs_state_before(0));
  CHECK_THROWS_AS(builder.append(0, std::span<const std::uint8_t>(frame), 0.0f, false, false, 0, 0,
                                 0.0f, 0, std::span<const float>()),
                  std::logic_error);
  CHECK(builder.pending(0) == 2);
  builder.reset(0);
  CHECK(builder.needs_state_before(0));
}

TEST_CASE("unroll_builder overlaps R2D2's sequences by several steps and their start states",
          "[runtime][unroll]") {
  // Unrolls of T + 1 = 6 steps, each repeating the last 3 of the one before: they start every
  // 3 steps, from the state before their first step.
  const std::size_t T = 5;
  seedrl::unroll_builder<float> builder(1, T, 1, 1, 4, 0, 3);
  CHECK_THROWS_AS(seedrl::unroll_builder<float>(1, T, 1, 1, 4, 0, 6), std::invalid_argument);
  CHECK_THROWS_AS(seedrl::unroll_builder<float>(1, T, 1, 1, 4, 0, 0), std::invalid_argument);
  std::vector<std::vector<float>> observations, starts;
  std::vector<std::vector<std::uint8_t>> dones;
  for (int t = 0; t < 15; ++t) {
    const float obs = static_cast<float>(t);
    const float state = 100.0f + static_cast<float>(t);
    // Which steps are asked for their state: 0 (the first unroll), then 3, 6, 9, 12.
    REQUIRE(builder.needs_state_before(0) == (t % 3 == 0));
    auto* u = builder.append(0, std::span<const float>(&obs, 1), 0.0f, t == 7, false, 0, t, 0.0f, 0,
                             std::span<const float>(&state, 1));
    if (u != nullptr) {
      observations.push_back(u->observations);
      starts.push_back(u->start_state);
      dones.push_back(u->dones);
      builder.recycle(u);
    }
  }
  REQUIRE(observations.size() == 4);  // complete at steps 5, 8, 11, 14
  CHECK(observations[0] == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(observations[1] == std::vector<float>{3, 4, 5, 6, 7, 8});
  CHECK(observations[3] == std::vector<float>{9, 10, 11, 12, 13, 14});
  CHECK(starts[0] == std::vector<float>{100});
  CHECK(starts[1] == std::vector<float>{103});
  CHECK(starts[3] == std::vector<float>{109});
  CHECK(dones[1] == std::vector<std::uint8_t>{0, 0, 0, 0, 1, 0});
  CHECK(dones[2] == std::vector<std::uint8_t>{0, 1, 0, 0, 0, 0});  // repeated with the steps
}

TEST_CASE("bounded_queue applies backpressure and closes cleanly",
          "[runtime][queue][concurrency]") {
  seedrl::bounded_queue<int> q(2);
  REQUIRE(q.push(1));
  REQUIRE(q.push(2));
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    q.push(3);  // blocks until the consumer makes room
    pushed = true;
  });
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(pushed.load());
  CHECK(q.pop() == 1);
  producer.join();
  CHECK(pushed.load());
  CHECK(q.size() == 2);
  q.close();
  CHECK_FALSE(q.push(4));
  CHECK(q.pop() == 2);
  CHECK(q.pop() == 3);
  CHECK_FALSE(q.pop().has_value());
}

TEST_CASE("parameter_store readers never see a torn update", "[runtime][params][concurrency]") {
  seedrl::parameter_store<float> store;
  const std::size_t n = 4096;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::vector<float> p(n);
    for (int v = 1; v <= 200; ++v) {
      std::fill(p.begin(), p.end(), static_cast<float>(v));
      store.publish(p);
    }
    stop = true;
  });
  std::vector<float> mine(n, 0.0f);
  std::uint64_t version = 0;
  int updates = 0;
  while (!stop.load() || store.version() != version) {
    if (store.update_if_newer(&version, mine)) {
      ++updates;
      for (float x : mine)
        REQUIRE(x == mine[0]);  // every element from the same snapshot
    }
  }
  writer.join();
  CHECK(updates > 0);
  CHECK(mine[0] == 200.0f);
}

TEST_CASE("policy keeps per-env LSTM state and resets it where an episode starts",
          "[runtime][policy]") {
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 6;
  nc.seed = 4;
  using net_t = seedrl::mlp_lstm_agent<double>;
  const net_t net(nc);
  constexpr std::size_t B = 3, O = 4, A = 2;
  seedrl::policy<net_t> policy(net, B);

  // Reference: the same network driven by hand, one environment at a time, with the state
  // and previous action kept here.
  net_t ref(net);
  std::vector<net_t::state_type> states;
  for (std::size_t i = 0; i < B; ++i)
    states.push_back(ref.initial_state(1));
  std::vector<std::int32_t> prev(B, 0);
  seedrl::random_generator rng(9);
  std::vector<double> obs(B * O), rewards(B);
  std::vector<std::uint8_t> dones(B, 1);
  for (int t = 0; t < 12; ++t) {
    for (auto& x : obs)
      x = rng.uniform() - 0.5;
    for (auto& r : rewards)
      r = rng.uniform();
    if (t == 5)
      dones[1] = 1;  // env 1 starts a new episode mid-run
    const auto actions = policy.act(obs, rewards, dones);
    for (std::size_t i = 0; i < B; ++i) {
      if (dones[i] != 0)
        prev[i] = 0;
      std::vector<double> logits(A), value(1);
      seedrl::agent_step_output<double> out{logits, value};
      const std::int32_t p = prev[i];
      const std::uint8_t d = dones[i];
      ref.infer(
          {std::span<const double>(obs).subspan(i * O, O),
           std::span<const double>(rewards).subspan(i, 1), std::span(&d, 1), std::span(&p, 1)},
          states[i], out);
      const std::int32_t greedy = logits[1] > logits[0] ? 1 : 0;
      INFO("step " << t << " env " << i);
      CHECK(actions[i] == greedy);
      CHECK(policy.values()[i] == Approx(value[0]).epsilon(1e-12));
      prev[i] = actions[i];
    }
    std::fill(dones.begin(), dones.end(), 0);
  }
  CHECK_THROWS_AS(policy.act(obs, std::span<const double>(rewards).first(2), dones),
                  std::invalid_argument);
}

TEST_CASE("policy normalizes observations and scales rewards with frozen statistics",
          "[runtime][policy]") {
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 5;
  nc.seed = 7;
  using net_t = seedrl::mlp_lstm_agent<double>;
  const net_t net(nc);
  constexpr std::size_t B = 2, O = 4, A = 2;
  const std::vector<double> mean{0.5, -1.0, 2.0, 0.0}, var{4.0, 0.25, 1e-3, 9.0};
  constexpr double return_var = 2.5, clip = 3.0, epsilon = 1e-8;
  seedrl::running_mean_std stats(O);
  stats.assign(50.0, mean, var);
  seedrl::policy<net_t> policy(net, B);
  seedrl::observation_normalization_config obs_how;
  obs_how.clip = clip;
  policy.normalize_observations(stats, obs_how);
  seedrl::reward_scaling_config reward_how;
  reward_how.clip = clip;
  policy.scale_rewards(return_var, reward_how);

  // Reference: the network fed inputs normalized here, in double, one env at a time.
  net_t ref(net);
  std::vector<net_t::state_type> states;
  for (std::size_t i = 0; i < B; ++i)
    states.push_back(ref.initial_state(1));
  std::vector<std::int32_t> prev(B, 0);
  seedrl::random_generator rng(3);
  std::vector<double> obs(B * O), rewards(B);
  std::vector<std::uint8_t> dones(B, 1);
  for (int t = 0; t < 6; ++t) {
    for (auto& x : obs)
      x = 6.0 * (rng.uniform() - 0.5);  // some values normalize beyond the clip
    for (auto& r : rewards)
      r = 12.0 * (rng.uniform() - 0.5);
    const auto actions = policy.act(obs, rewards, dones);
    for (std::size_t i = 0; i < B; ++i) {
      std::vector<double> x(O);
      for (std::size_t k = 0; k < O; ++k)
        x[k] = std::clamp((obs[i * O + k] - mean[k]) / std::sqrt(var[k] + epsilon), -clip, clip);
      const double r = std::clamp(rewards[i] / std::sqrt(return_var + epsilon), -clip, clip);
      std::vector<double> logits(A), value(1);
      seedrl::agent_step_output<double> out{logits, value};
      const std::int32_t p = dones[i] != 0 ? 0 : prev[i];
      const std::uint8_t d = dones[i];
      ref.infer({x, std::span(&r, 1), std::span(&d, 1), std::span(&p, 1)}, states[i], out);
      INFO("step " << t << " env " << i);
      CHECK(actions[i] == (logits[1] > logits[0] ? 1 : 0));
      CHECK(policy.values()[i] == Approx(value[0]).epsilon(1e-12));
      prev[i] = actions[i];
    }
    std::fill(dones.begin(), dones.end(), 0);
  }
  // Observations of another size than the statistics' are refused, as are bad settings.
  CHECK_THROWS_AS(policy.act(std::span<const double>(obs).first(B * 3), rewards, dones),
                  std::invalid_argument);
  CHECK_THROWS_AS(policy.scale_rewards(-1.0), std::invalid_argument);
  obs_how.clip = 0.0;
  CHECK_THROWS_AS(policy.normalize_observations(stats, obs_how), std::invalid_argument);
}

TEST_CASE("thread_time_split counts the stretch in progress into every reading",
          "[runtime][stages]") {
  using clock = std::chrono::steady_clock;
  const clock::time_point t0{};
  enum : std::size_t { idle, busy };
  seedrl::thread_time_split<2> split(idle, t0);
  split.enter(busy, t0 + 100ms);
  // A busy stretch from 100 ms to 700 ms, read every 200 ms: each window gets only its part.
  const auto at = [&](auto d) { return split.seconds(t0 + d); };
  const auto r300 = at(300ms), r500 = at(500ms);
  CHECK(r300[busy] == Approx(0.2));
  CHECK(r500[busy] - r300[busy] == Approx(0.2));
  split.enter(idle, t0 + 700ms);
  const auto r700 = at(700ms), r900 = at(900ms);
  CHECK(r700[busy] - r500[busy] == Approx(0.2));
  CHECK(r900[busy] - r700[busy] == Approx(0.0));
  CHECK(r900[idle] == Approx(0.3));
  // Each reading accounts for the whole time once.
  CHECK(r900[idle] + r900[busy] == Approx(0.9));
  CHECK(r300[idle] + r300[busy] == Approx(0.3));
  // A reading from before the stretch in progress began counts that stretch as 0, never less.
  CHECK(at(600ms)[idle] == Approx(0.1));
  CHECK(split.state() == idle);
  CHECK_THROWS_AS(split.enter(2, t0 + 1s), std::out_of_range);
}

TEST_CASE("read_at_one_instant: states sum to the clock while threads switch states",
          "[runtime][stages]") {
  // Two threads switch states as fast as they can; every joint reading must account for exactly
  // the time since the start in each split. (With the clock read before the locks, a stretch
  // begun just after that read made a reading sum to more than the clock: CI saw 26 us.)
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  seedrl::thread_time_split<3> a(0, t0);
  seedrl::thread_time_split<2> b(0, t0);
  std::atomic<bool> stop{false};
  std::thread ta([&] {
    for (std::size_t i = 0; !stop; ++i)
      a.enter(i % 3);
  });
  std::thread tb([&] {
    for (std::size_t i = 0; !stop; ++i)
      b.enter(i % 2);
  });
  std::size_t bad = 0;
  for (int i = 0; i < 20000; ++i)
    seedrl::read_at_one_instant(
        [&](clock::time_point now, const std::array<double, 3>& sa,
            const std::array<double, 2>& sb) {
          const double wall = std::chrono::duration<double>(now - t0).count();
          bad += std::abs(sa[0] + sa[1] + sa[2] - wall) > 1e-9 * (1.0 + wall);
          bad += std::abs(sb[0] + sb[1] - wall) > 1e-9 * (1.0 + wall);
        },
        a, b);
  stop = true;
  ta.join();
  tb.join();
  CHECK(bad == 0);
}

TEST_CASE("log_limiter: one line per address per interval, counting what it held back",
          "[runtime]") {
  using seedrl::detail::log_limiter;
  using namespace std::chrono_literals;
  log_limiter limit(60s, 3);
  const auto t0 = log_limiter::clock::time_point{} + 1000s;
  CHECK(limit.admit("10.0.0.7", t0) == std::optional<std::size_t>(0));
  CHECK_FALSE(limit.admit("10.0.0.7", t0 + 1s));
  CHECK_FALSE(limit.admit("10.0.0.7", t0 + 59s));
  CHECK(limit.admit("10.0.0.8", t0 + 2s) == std::optional<std::size_t>(0));  // its own key
  // A minute after its last line: logged again, saying two were held back.
  CHECK(limit.admit("10.0.0.7", t0 + 60s) == std::optional<std::size_t>(2));
  CHECK_FALSE(limit.admit("10.0.0.7", t0 + 61s));
  // Bounded: past max_keys it forgets expired keys first, then all.
  CHECK(limit.admit("a", t0 + 62s));
  CHECK(limit.admit("b", t0 + 63s));  // 10.0.0.8 (expired) is forgotten to make room
  CHECK(limit.admit("c", t0 + 64s));  // nothing expired: everything is forgotten
  CHECK(limit.admit("10.0.0.7", t0 + 65s) == std::optional<std::size_t>(0));
  CHECK(log_limiter::address_of("10.0.0.7:51234") == "10.0.0.7");
  CHECK(log_limiter::address_of("[::1]:9000") == "[::1]");
  CHECK(log_limiter::address_of("::1") == "::1");
  CHECK(log_limiter::address_of("unix:/run/l.sock#12") == "unix:/run/l.sock");
  CHECK(log_limiter::address_of("inproc:learner#3") == "inproc:learner");
  CHECK(log_limiter::address_of("host:") == "host:");
}
