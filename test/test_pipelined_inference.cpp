// Pipelined inference (seedrl::PipelinedInferenceEngine): the batcher's non-blocking take, and
// the inference loop driven directly, without sockets, by two scripted actors in lockstep, with
// a fake engine that computes a batch only at finish(). Against the same fake run one batch at a
// time, the pipelined loop must hand over batch k+1 before it finishes batch k, give the same
// answers, unrolls, log-probs and parameter versions (host and engine sampling), keep each
// batch's buffers untouched while it is in flight, and stop cleanly when finish() fails.

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "seedrl/core/counter_random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/any_inference_engine.hpp"
#include "seedrl/runtime/batcher.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/inference_loop.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/in_process.hpp"

using namespace std::chrono_literals;

namespace {

using net_t = seedrl::mlp_lstm_agent<float>;
constexpr std::size_t pipelined_obs_size = 4, pipelined_num_actions = 3;

TEST_CASE("try_next_batch hands over only a batch that is ready, in order, without waiting",
          "[pipelined]") {
  seedrl::batcher_config c;
  c.max_batch = 2;
  c.max_request_rows = 2;
  c.deadline = 1h;  // only full batches are ready
  c.num_buffers = 3;
  seedrl::dynamic_batcher<std::vector<int>> b(c, [](std::size_t n) { return std::vector<int>(n); });
  int who[3] = {};
  const auto put = [&](int i, std::size_t rows) {
    REQUIRE(b.submit(&who[i], rows, [&](std::vector<int>& p, std::size_t first) {
      for (std::size_t r = 0; r < rows; ++r)
        p[first + r] = i;
    }));
  };
  CHECK(b.try_next_batch() == nullptr);  // nothing at all
  put(0, 1);
  CHECK(b.try_next_batch() == nullptr);  // one row of two, deadline far: not ready
  put(0, 1);                             // full now
  auto* first = b.try_next_batch();
  REQUIRE(first != nullptr);
  CHECK(first->rows == 2);
  CHECK(first->payload[0] == 0);
  CHECK(b.try_next_batch() == nullptr);  // the next buffer is empty
  put(1, 2);
  put(2, 2);
  auto* second = b.try_next_batch();  // in the order they filled
  REQUIRE(second != nullptr);
  CHECK(second->entries.front().requester == &who[1]);
  b.answered(first);
  b.release(first);
  auto* third = b.next_batch();
  REQUIRE(third != nullptr);
  CHECK(third->entries.front().requester == &who[2]);
  b.answered(second);
  b.release(second);
  b.answered(third);
  b.release(third);
  // A partial batch past its deadline is ready too, as for next_batch.
  seedrl::batcher_config d = c;
  d.deadline = 1ms;
  seedrl::dynamic_batcher<std::vector<int>> late(d,
                                                 [](std::size_t n) { return std::vector<int>(n); });
  REQUIRE(late.submit(&who[0], 1, [](std::vector<int>&, std::size_t) {}));
  std::this_thread::sleep_for(5ms);
  auto* due = late.try_next_batch();
  REQUIRE(due != nullptr);
  CHECK(due->reason == seedrl::flush_reason::deadline);
  late.answered(due);
  late.release(due);
}

// --- the fake engine -------------------------------------------------------------------------

/// What the fake engine is told to do (set before the loop builds it) and what it saw.
struct fake_control {
  bool pipelined = true;     // pipelines(): false runs the same fake one batch at a time
  bool samples = false;      // samples(): the engine samples (begin_and_sample)
  long fail_finish_at = -1;  // finish() of this batch index throws
  /// Called in begin()/infer() of every batch, outside the log's lock (batch index, slots).
  std::function<void(std::size_t, std::span<const std::uint32_t>)> on_start;
  std::mutex mutex;
  std::vector<std::string> calls;  // "begin 3", "finish 3", "infer 3", "reset 5"
  std::string violation;           // the first broken rule of the pipelining contract
  std::size_t max_in_flight = 0;
};
fake_control& control() {
  static fake_control c;
  return c;
}
void reset_control(bool pipelined, bool samples) {
  auto& c = control();
  std::lock_guard lock(c.mutex);
  c.pipelined = pipelined;
  c.samples = samples;
  c.fail_finish_at = -1;
  c.on_start = nullptr;
  c.calls.clear();
  c.violation.clear();
  c.max_in_flight = 0;
}

template <class T>
bool overlaps(std::span<const T> a, std::span<const T> b) {
  return !a.empty() && !b.empty() && a.data() < b.data() + b.size() &&
         b.data() < a.data() + a.size();
}

/// A pipelined engine whose step happens in finish(), from the spans begin() was given: a loop
/// that touched a batch's buffers while it is in flight changes its outputs or is caught by the
/// input check. Each slot's state evolves as s = 0.5 s + f(observation, reward, previous action)
/// (zeros after a reset), the logits and value are functions of the new state, scaled by the
/// parameter version the batch began with; state_before() is NaN outside its validity window.
class pipelined_fake {
 public:
  using scalar_type = float;
  using S = float;

  pipelined_fake(const net_t& net, const seedrl::inference_engine_config& c)
      : envs_(c.max_envs),
        batch_(c.max_batch),
        width_(static_cast<std::size_t>(net.state_size())),
        policy_(c.policy_width),
        table_(envs_ * width_, 0.0f),
        before_(batch_ * width_, nan()),
        staging_(net_t(net).parameters().size()) {}

  std::size_t max_envs() const { return envs_; }
  std::size_t max_batch() const { return batch_; }
  std::size_t state_width() const { return width_; }
  std::size_t policy_width() const { return policy_; }
  bool pipelines() const { return control().pipelined; }
  bool samples() const { return control().samples; }

  void reset_state(std::size_t slot) {
    pending_resets_.push_back(slot);
    record("reset " + std::to_string(slot));
  }

  void infer(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<S>& in,
             const seedrl::agent_step_output<S>& out) {
    if (!flights_.empty())
      violate("infer() with a batch in flight");
    start("infer", slots, in, out, nullptr);
    complete();
  }
  void infer_and_sample(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<S>& in,
                        const seedrl::agent_step_output<S>& out, std::uint64_t seed,
                        std::uint64_t counter, std::span<std::int32_t> actions,
                        std::span<S> log_probs) {
    if (!flights_.empty())
      violate("infer_and_sample() with a batch in flight");
    const sample_args s{seed, counter, actions, log_probs};
    start("infer", slots, in, out, &s);
    complete();
  }
  void begin(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<S>& in,
             const seedrl::agent_step_output<S>& out) {
    start("begin", slots, in, out, nullptr);
  }
  void begin_and_sample(std::span<const std::uint32_t> slots, const seedrl::agent_step_input<S>& in,
                        const seedrl::agent_step_output<S>& out, std::uint64_t seed,
                        std::uint64_t counter, std::span<std::int32_t> actions,
                        std::span<S> log_probs) {
    const sample_args s{seed, counter, actions, log_probs};
    start("begin", slots, in, out, &s);
  }
  void finish() {
    if (flights_.empty()) {
      violate("finish() with no batch in flight");
      return;
    }
    const std::size_t index = flights_.front().index;
    record("finish " + std::to_string(index));
    if (static_cast<long>(index) == control().fail_finish_at)
      throw std::runtime_error("seedrl: lstm_step_fused_kernel failed in batch " +
                               std::to_string(index) + ": cudaErrorIllegalAddress");
    complete();
  }

  std::span<const S> state_before(std::size_t row) const {
    return std::span<const S>(before_).subspan(row * width_, width_);
  }
  bool update_parameters(const seedrl::parameter_store<S>& params, std::uint64_t* version) {
    if (!params.update_if_newer(version, staging_))
      return false;
    scale_ = 1.0f + 0.25f * static_cast<float>(*version);
    return true;
  }

 private:
  struct sample_args {
    std::uint64_t seed, counter;
    std::span<std::int32_t> actions;
    std::span<S> log_probs;
  };
  struct flight {
    std::size_t index = 0;
    std::span<const std::uint32_t> slots;
    seedrl::agent_step_input<S> in;
    seedrl::agent_step_output<S> out;
    // Copies of the inputs at begin(): they must read the same at finish().
    std::vector<std::uint32_t> slots_copy;
    std::vector<S> obs_copy, rewards_copy;
    std::vector<std::uint8_t> dones_copy;
    std::vector<std::int32_t> prev_copy;
    std::vector<std::size_t> resets;  // reset_state() calls made before this batch began
    float scale = 1.0f;
    bool sample = false;
    sample_args s{};
  };

  static float nan() { return std::numeric_limits<float>::quiet_NaN(); }

  void record(const std::string& call) {
    auto& c = control();
    std::lock_guard lock(c.mutex);
    c.calls.push_back(call);
  }
  void violate(const std::string& what) {
    auto& c = control();
    std::lock_guard lock(c.mutex);
    if (c.violation.empty())
      c.violation = what;
  }

  void start(const char* call, std::span<const std::uint32_t> slots,
             const seedrl::agent_step_input<S>& in, const seedrl::agent_step_output<S>& out,
             const sample_args* s) {
    const std::size_t index = next_index_++;
    record(std::string(call) + " " + std::to_string(index));
    std::fill(before_.begin(), before_.end(), nan());  // state_before is invalid from here on
    if (flights_.size() >= 2)
      violate("a third batch in flight");
    for (const auto& f : flights_) {
      for (const auto slot : slots) {
        if (std::find(f.slots_copy.begin(), f.slots_copy.end(), slot) != f.slots_copy.end())
          violate("slot " + std::to_string(slot) + " in two batches in flight");
      }
      if (overlaps<S>(out.logits, f.out.logits) || overlaps<S>(out.values, f.out.values) ||
          overlaps<std::uint8_t>(in.dones, f.in.dones) ||
          overlaps<std::int32_t>(in.prev_actions, f.in.prev_actions) ||
          overlaps<S>(in.observations, f.in.observations) ||
          (s != nullptr && f.sample &&
           (overlaps<std::int32_t>(s->actions, f.s.actions) ||
            overlaps<S>(s->log_probs, f.s.log_probs))))
        violate("two batches in flight share a buffer");
    }
    flight f;
    f.index = index;
    f.slots = slots;
    f.in = in;
    f.out = out;
    f.slots_copy.assign(slots.begin(), slots.end());
    f.obs_copy.assign(in.observations.begin(), in.observations.end());
    f.rewards_copy.assign(in.rewards.begin(), in.rewards.end());
    f.dones_copy.assign(in.dones.begin(), in.dones.end());
    f.prev_copy.assign(in.prev_actions.begin(), in.prev_actions.end());
    f.resets = std::move(pending_resets_);
    pending_resets_.clear();
    f.scale = scale_;
    f.sample = s != nullptr;
    if (s != nullptr)
      f.s = *s;
    flights_.push_back(std::move(f));
    {
      auto& c = control();
      std::lock_guard lock(c.mutex);
      c.max_in_flight = std::max(c.max_in_flight, flights_.size());
    }
    if (control().on_start)
      control().on_start(index, slots);
  }

  void complete() {
    flight f = std::move(flights_.front());
    flights_.pop_front();
    const std::size_t B = f.slots_copy.size();
    if (!std::equal(f.slots.begin(), f.slots.end(), f.slots_copy.begin(), f.slots_copy.end()) ||
        !std::equal(f.in.observations.begin(), f.in.observations.end(), f.obs_copy.begin(),
                    f.obs_copy.end()) ||
        !std::equal(f.in.rewards.begin(), f.in.rewards.end(), f.rewards_copy.begin(),
                    f.rewards_copy.end()) ||
        !std::equal(f.in.dones.begin(), f.in.dones.end(), f.dones_copy.begin(),
                    f.dones_copy.end()) ||
        !std::equal(f.in.prev_actions.begin(), f.in.prev_actions.end(), f.prev_copy.begin(),
                    f.prev_copy.end()))
      violate("the inputs of batch " + std::to_string(f.index) + " changed while in flight");
    for (const auto slot : f.resets)
      std::fill_n(table_.begin() + static_cast<std::ptrdiff_t>(slot * width_), width_, 0.0f);
    std::fill(before_.begin(), before_.end(), nan());
    for (std::size_t r = 0; r < B; ++r) {
      float* s = table_.data() + f.slots_copy[r] * width_;
      std::copy_n(s, width_, before_.begin() + static_cast<std::ptrdiff_t>(r * width_));
      if (f.in.dones[r] != 0)
        std::fill_n(s, width_, 0.0f);
      for (std::size_t j = 0; j < width_; ++j) {
        s[j] = 0.5f * s[j] + f.in.observations[r * pipelined_obs_size + j % pipelined_obs_size] +
               0.1f * f.in.rewards[r] + 0.05f * static_cast<float>(f.in.prev_actions[r]) +
               0.01f * static_cast<float>(j);
      }
      float* logits = f.out.logits.data() + r * policy_;
      for (std::size_t a = 0; a < policy_; ++a)
        logits[a] = f.scale * (s[0] * (static_cast<float>(a) - 1.0f) + 0.3f * s[1 % width_]);
      f.out.values[r] = s[1 % width_] + f.scale;
      if (f.sample) {
        f.s.actions[r] = seedrl::counter_categorical(
            logits, static_cast<int>(policy_), seedrl::counter_uniform(f.s.seed, f.s.counter, r),
            &f.s.log_probs[r]);
      }
    }
  }

  std::size_t envs_, batch_, width_, policy_;
  std::vector<float> table_, before_, staging_;
  std::vector<std::size_t> pending_resets_;
  std::deque<flight> flights_;
  std::size_t next_index_ = 0;
  float scale_ = 1.0f;
};
static_assert(seedrl::PipelinedInferenceEngine<pipelined_fake>);
static_assert(seedrl::SamplingInferenceEngine<pipelined_fake>);
static_assert(!seedrl::PipelinedInferenceEngine<seedrl::cpu_inference_engine<net_t>>);
static_assert(seedrl::PipelinedInferenceEngine<seedrl::any_inference_engine<net_t>>);

// --- driving the loop ------------------------------------------------------------------------

/// An actor as the inference loop sees it: it records the actions it is answered.
class scripted_requester final : public seedrl::detail::requester {
 public:
  ~scripted_requester() = default;
  std::size_t answers() {
    std::lock_guard lock(mutex_);
    return actions_.size();
  }
  bool wait_answers(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return actions_.size() >= n; });
  }
  std::vector<std::vector<std::int32_t>> actions() {
    std::lock_guard lock(mutex_);
    return actions_;
  }

 private:
  void send_actions(std::span<const std::int32_t> a) noexcept override {
    std::lock_guard lock(mutex_);
    actions_.emplace_back(a.begin(), a.end());
    cv_.notify_all();
  }
  void send_continuous_actions(std::size_t, std::span<const float>) noexcept override {}
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::vector<std::int32_t>> actions_;
};

using loop_t = seedrl::inference_loop<net_t, seedrl::categorical_sampler, pipelined_fake>;

struct unroll_record {
  std::size_t slot;
  std::vector<float> observations, rewards, log_probs, start_state;
  std::vector<std::uint8_t> dones;
  std::vector<std::int32_t> prev_actions, actions;
  std::vector<std::uint64_t> versions;
  bool operator==(const unroll_record&) const = default;
};

struct pipelined_run_result {
  std::vector<std::vector<std::int32_t>> answers[2];  // per actor, per step
  std::vector<unroll_record> unrolls;
  std::vector<std::string> calls;
  std::string violation;
  std::size_t max_in_flight = 0;
  seedrl::learner_stats stats;
  bool all_answered = true;
};

constexpr std::size_t envs_per_actor = 2, rounds = 14;

/// Actor a's step t: observations, rewards, an episode end of actor 0's env 0 at t = 5 and a
/// restart (new run id) of actor 1's env 1 at t = 7.
std::vector<std::byte> step_frame(std::size_t a, std::size_t t) {
  std::uint64_t run_ids[envs_per_actor];
  float rewards[envs_per_actor];
  std::uint8_t dones[envs_per_actor], truncated[envs_per_actor] = {};
  float obs[envs_per_actor * pipelined_obs_size];
  for (std::size_t e = 0; e < envs_per_actor; ++e) {
    run_ids[e] = 100 * a + e + (a == 1 && e == 1 && t >= 7 ? 50 : 0);
    rewards[e] = std::sin(static_cast<float>(3 * t + 5 * a + e));
    dones[e] = static_cast<std::uint8_t>(t == 0 || (a == 0 && e == 0 && t == 5));
    for (std::size_t j = 0; j < pipelined_obs_size; ++j)
      obs[e * pipelined_obs_size + j] = std::cos(static_cast<float>(t * 7 + a * 3 + e * 11 + j));
  }
  std::vector<std::byte> frame(seedrl::protocol::step_frame_size(envs_per_actor, sizeof(obs)));
  const seedrl::protocol::step_input in{run_ids, rewards, dones, truncated,
                                        std::as_bytes(std::span(obs))};
  frame.resize(seedrl::protocol::encode_step(frame, seedrl::dtype::float32, in));
  return frame;
}

/// Two actors of two envs each, in lockstep for `steps` rounds (both send step t once both
/// have their actions for step t - 1), against a loop whose fake engine pipelines or not. Each
/// batch is one actor's step (max_batch 2): batch 2t is actor 0's step t, batch 2t + 1 actor
/// 1's. Batch 2t holds its begin until actor 1's step t is in the batcher, so with pipelining
/// batch 2t + 1 is ready while batch 2t computes, and nothing else can be (no actor steps
/// before round t is answered). A parameter set is published during batch 4 and batch 9 (on
/// the inference thread: the same batches see it in either run).
pipelined_run_result run_loop(bool pipelined, bool engine_samples, long fail_finish_at = -1,
                              std::size_t steps = rounds) {
  reset_control(pipelined, engine_samples);
  seedrl::learner_config lc;
  lc.max_envs = 2 * envs_per_actor;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.queue_batches = 16;
  lc.batching.max_batch = envs_per_actor;
  lc.batching.max_request_rows = envs_per_actor;
  lc.batching.deadline = 1h;  // full batches only: the script decides what is in each
  lc.seed = 777;
  lc.normalize_observations.enabled = true;  // order-sensitive host bookkeeping
  lc.scale_rewards.enabled = true;
  seedrl::mlp_lstm_agent_config nc;
  nc.observation_size = pipelined_obs_size;
  nc.num_actions = pipelined_num_actions;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  const net_t net(nc);
  const std::size_t num_params = net_t(net).parameters().size();
  const seedrl::observation_spec obs_spec{seedrl::dtype::float32,
                                          {static_cast<int>(pipelined_obs_size)}};
  const auto act_spec =
      seedrl::action_spec::discrete(static_cast<std::int32_t>(pipelined_num_actions));
  loop_t::unroll_queue queue(lc.queue_batches * lc.batch_size);
  seedrl::parameter_store<float> params;
  seedrl::detail::stats_board stats;
  seedrl::input_normalizer<float> normalizer(lc.normalize_observations, lc.scale_rewards, obs_spec,
                                             lc.max_envs, false);
  loop_t loop(lc, net, obs_spec, act_spec, seedrl::categorical_sampler{}, queue, params, stats,
              std::chrono::steady_clock::now(), normalizer);

  std::mutex m;
  std::condition_variable cv;
  std::size_t actor1_submitted = 0;  // actor 1's steps in the batcher
  {
    auto& c = control();
    std::lock_guard lock(c.mutex);
    c.fail_finish_at = fail_finish_at;
    c.on_start = [&](std::size_t index, std::span<const std::uint32_t> slots) {
      if (index == 4 || index == 9)
        params.publish(std::vector<float>(num_params, static_cast<float>(index)));
      if (slots.front() >= envs_per_actor)
        return;  // actor 1's batch
      const std::size_t t = index / 2;
      std::unique_lock lock(m);
      cv.wait_for(lock, 10s, [&] { return actor1_submitted > t; });
    };
  }
  scripted_requester actors[2];
  std::size_t first_slot[2];
  for (std::size_t a = 0; a < 2; ++a) {
    const auto slot = loop.attach(envs_per_actor);
    REQUIRE(slot);
    first_slot[a] = *slot;
  }
  loop.start();
  pipelined_run_result result;
  seedrl::protocol::step_view view;
  // Waits until both actors have n answers; false once inference stopped or after 10 s.
  const auto wait_round = [&](std::size_t n) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    for (auto& a : actors) {
      while (!a.wait_answers(n, 2ms)) {
        if (!stats.read().trainer_error.empty() || std::chrono::steady_clock::now() > until)
          return false;
      }
    }
    return true;
  };
  for (std::size_t t = 0; t < steps && result.all_answered; ++t) {
    if (!wait_round(t)) {
      result.all_answered = false;
      break;
    }
    for (std::size_t a = 0; a < 2; ++a) {
      const auto frame = step_frame(a, t);
      REQUIRE(seedrl::protocol::parse_step(std::span(frame).subspan(seedrl::protocol::header_size),
                                           envs_per_actor, pipelined_obs_size * sizeof(float),
                                           view) == seedrl::protocol::error_code::none);
      actors[a].begin_request();
      if (!loop.submit({&actors[a], first_slot[a], &view})) {
        actors[a].cancel_request();
        result.all_answered = false;
        break;
      }
      if (a == 1) {
        std::lock_guard lock(m);
        ++actor1_submitted;
        cv.notify_all();
      }
    }
  }
  if (result.all_answered)
    result.all_answered = wait_round(steps);
  {  // release a begin() still waiting for a step that will not come
    std::lock_guard lock(m);
    actor1_submitted = steps + 1;
    cv.notify_all();
  }
  loop.stop();
  for (std::size_t a = 0; a < 2; ++a)
    result.answers[a] = actors[a].actions();
  while (auto u = queue.pop()) {
    const auto& x = **u;
    result.unrolls.push_back({x.slot, x.observations, x.rewards, x.behaviour_log_probs,
                              x.start_state, x.dones, x.prev_actions, x.actions,
                              x.behaviour_versions});
    loop.unroll_pool().recycle(*u);
  }
  result.stats = stats.read();
  auto& c = control();
  std::lock_guard lock(c.mutex);
  c.on_start = nullptr;
  result.calls = c.calls;
  result.violation = c.violation;
  result.max_in_flight = c.max_in_flight;
  return result;
}

std::size_t position(const std::vector<std::string>& calls, const std::string& call) {
  return static_cast<std::size_t>(std::find(calls.begin(), calls.end(), call) - calls.begin());
}

}  // namespace

TEST_CASE(
    "the loop begins batch k+1 before it finishes batch k when k+1 is ready, and answers "
    "as the same engine run one batch at a time",
    "[pipelined]") {
  for (const bool engine_samples : {false, true}) {
    INFO((engine_samples ? "sampled by the engine" : "sampled on the host"));
    const pipelined_run_result sync = run_loop(false, engine_samples);
    const pipelined_run_result piped = run_loop(true, engine_samples);
    for (const auto* r : {&sync, &piped}) {
      CHECK(r->violation.empty());
      CHECK(r->all_answered);
      CHECK(r->stats.trainer_error.empty());
      CHECK(r->stats.frames == static_cast<std::int64_t>(2 * envs_per_actor * rounds));
    }
    INFO(sync.violation << piped.violation);
    // The synchronous run only infers; the pipelined one only begins and finishes.
    CHECK(position(sync.calls, "begin 0") == sync.calls.size());
    CHECK(sync.max_in_flight == 1);
    CHECK(position(piped.calls, "infer 0") == piped.calls.size());
    CHECK(piped.max_in_flight == 2);
    // Actor 1's step t is in the batcher before actor 0's begins, so every batch 2t + 1 is
    // begun before batch 2t is finished, and nothing else overlaps.
    for (std::size_t t = 0; t < rounds; ++t) {
      const auto k = std::to_string(2 * t), k1 = std::to_string(2 * t + 1);
      INFO("round " << t);
      CHECK(position(piped.calls, "begin " + k) < position(piped.calls, "begin " + k1));
      CHECK(position(piped.calls, "begin " + k1) < position(piped.calls, "finish " + k));
      CHECK(position(piped.calls, "finish " + k) < position(piped.calls, "finish " + k1));
      CHECK(position(piped.calls, "finish " + k1) < piped.calls.size());
      if (t + 1 < rounds) {
        CHECK(position(piped.calls, "finish " + k1) <
              position(piped.calls, "begin " + std::to_string(2 * t + 2)));
      }
    }
    // The same answers, unrolls (observations after normalization, rewards after scaling,
    // log-probs, start states from state_before, parameter versions) and counters.
    for (std::size_t a = 0; a < 2; ++a) {
      CHECK(piped.answers[a].size() == rounds);
      CHECK(piped.answers[a] == sync.answers[a]);
    }
    REQUIRE(sync.unrolls.size() >= 8);
    CHECK(piped.unrolls == sync.unrolls);
    CHECK(piped.stats.episodes == sync.stats.episodes);
    CHECK(piped.stats.dropped_unroll_steps == sync.stats.dropped_unroll_steps);
    CHECK(sync.stats.dropped_unroll_steps > 0);  // actor 1's restart dropped a partial unroll
    // Every start state is finite: state_before was read while it was valid.
    bool finite = true;
    std::uint64_t newest = 0;
    for (const auto& u : sync.unrolls) {
      for (const float x : u.start_state)
        finite = finite && std::isfinite(x);
      for (const auto v : u.versions)
        newest = std::max(newest, v);
    }
    CHECK(finite);
    CHECK(newest == 2);  // both published sets reached the batches after them
    // Not every action is the same: the answers carry information to compare.
    std::vector<std::int32_t> seen;
    for (const auto& step : sync.answers[0])
      seen.insert(seen.end(), step.begin(), step.end());
    CHECK(std::count(seen.begin(), seen.end(), seen.front()) < static_cast<long>(seen.size()));
  }
}

TEST_CASE("a failed finish() stops the pipelined loop cleanly, with the batch begun after it",
          "[pipelined][bad-input]") {
  // Batch 6 (actor 0's step 3) fails while batch 7 (actor 1's step 3) is in flight.
  const pipelined_run_result r = run_loop(true, false, 6, 6);
  CHECK(r.violation.empty());
  CHECK_THAT(r.stats.trainer_error, Catch::Contains("the inference engine failed") &&
                                        Catch::Contains("lstm_step_fused_kernel"));
  CHECK(position(r.calls, "begin 7") < position(r.calls, "finish 6"));
  CHECK(position(r.calls, "finish 7") == r.calls.size());  // never finished
  CHECK(!r.all_answered);
  for (std::size_t a = 0; a < 2; ++a)
    CHECK(r.answers[a].size() == 3);  // steps 0-2 only
  CHECK(r.stats.frames == static_cast<std::int64_t>(3 * 2 * envs_per_actor));
}

namespace {

/// A learner with the fake engine, pipelined, whose finish() of batch 8 throws.
struct failing_learner_engine : pipelined_fake {
  failing_learner_engine(const net_t& net, const seedrl::inference_engine_config& c)
      : pipelined_fake(net, c) {
    auto& ctl = control();
    std::lock_guard lock(ctl.mutex);
    ctl.fail_finish_at = 8;
  }
};

}  // namespace

TEST_CASE(
    "a pipelined engine that fails in finish() stops the learner cleanly: the error is "
    "kept, actors are told",
    "[pipelined][bad-input]") {
  reset_control(true, false);
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport,
                                    seedrl::host_trainer, seedrl::impala_loss<float>,
                                    seedrl::categorical_sampler, failing_learner_engine>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 4;
  seedrl::learner_config lc;
  lc.max_envs = 8;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 2;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"pipelined-engine-fails"};
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::mutex log_mutex;
  std::vector<std::string> actor_log[2];
  std::atomic<bool> stop{false};
  std::vector<std::thread> actors;
  for (std::size_t i = 0; i < 2; ++i) {
    actors.emplace_back([&, i] {
      seedrl::actor_config ac;
      ac.num_envs = 2;
      ac.log = [&, i](const std::string& line) {
        std::lock_guard lock(log_mutex);
        actor_log[i].push_back(line);
      };
      seedrl::actor<seedrl::cartpole, std::function<seedrl::in_process_connection()>> a(
          ac, [](std::size_t) { return seedrl::cartpole(); },
          [&] { return transport.connect(endpoint); });
      a.run(stop);  // must return when told to, not throw
    });
  }
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (learner.stats().trainer_error.empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  const auto s = learner.stats();
  CHECK_THAT(s.trainer_error, Catch::Contains("the inference engine failed") &&
                                  Catch::Contains("lstm_step_fused_kernel"));
  CHECK(s.batches == 8);  // batches 0-7 answered, 8 failed
  learner.stop();         // must not hang on the unanswered batches
  const auto until_told = std::chrono::steady_clock::now() + 10s;
  const auto told = [&] {
    std::lock_guard lock(log_mutex);
    // The close frame learner::stop sends (code shutting_down), not a dropped link, to the
    // actor of the failed batch (the other one may be between steps, its write refused).
    return std::any_of(std::begin(actor_log), std::end(actor_log), [](const auto& log) {
      return std::any_of(log.begin(), log.end(), [](const std::string& l) {
        return l.find("learner sent close: the learner is stopping") != std::string::npos;
      });
    });
  };
  while (!told() && std::chrono::steady_clock::now() < until_told)
    std::this_thread::sleep_for(1ms);
  CHECK(told());
  stop = true;
  for (auto& t : actors)
    t.join();
  std::lock_guard lock(control().mutex);
  CHECK(control().violation.empty());
}
