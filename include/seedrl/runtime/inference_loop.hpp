#pragma once
/// \file
/// The learner's inference side: it takes validated steps from the actor server
/// (detail::step_request), batches them dynamically, runs the network one step with each
/// environment's recurrent state, chooses actions with the ActionSampler, answers every actor,
/// then appends each step to its environment's unroll and pushes completed unrolls to the
/// training queue. It also keeps the policy-lag bookkeeping: every step records the parameter
/// version that chose its action.
///
/// Threads: the actor server's readers call `submit` (their observations are copied straight into
/// the filling batch, outside the batcher's lock); one inference thread runs batches and is the
/// only one that answers with actions (requester::answer hands them to the connection's writer).
/// Environment slots are handed out under a lock and given back
/// through the inference thread, so that no batch ever refers to a freed slot.
/// The engine may infer on threads of its own (cpu_inference_engine's workers); it returns
/// before the inference thread goes on, so nothing else sees them.
///
/// Observations: uint8 frames (a uint8 observation spec, without observation normalization)
/// stay bytes in the batch and reach the engine so (agent_step_input::observations_u8), which
/// widens them at its first layer; the unroll builder widens them in its copy into the unroll.
/// Start states: the engine is asked only for the states the unroll builder will read
/// (agent_step_input::keep_state: rows whose step starts or completes an unroll; none when
/// inference_only), so an accelerator brings back only those.
///
/// Actions: one int32 per environment for a discrete action space; for a continuous one, D
/// floats per environment in arrays beside the int32 ones (which stay zero), with the actors
/// answered by continuous actions frames and the network fed the previous action's D values.
///
/// `Net` models LearnerNetwork; `Sampler` models ActionSampler; `Engine` models InferenceEngine
/// (seedrl/runtime/inference_engine.hpp) and runs the network step with each environment's
/// recurrent state: `cpu_inference_engine<Net>` (Eigen on this thread, or on
/// learner_config::inference_workers threads) by default.
///
/// Pipelining: with an engine that models PipelinedInferenceEngine (an accelerator), the loop
/// begins batch k, then takes batch k+1 if the batcher has it ready at that moment (never
/// waiting for it), does k+1's host bookkeeping and begins it, and only then finishes and
/// answers batch k: k+1's upload overlaps k's compute. Each batch has its own host buffers
/// (two sets, used in turn), and the batcher gets a third payload buffer to fill meanwhile.
/// Other engines run one batch at a time.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/batcher.hpp"
#include "seedrl/runtime/bounded_queue.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/runtime/detail/explorer_registry.hpp"
#include "seedrl/runtime/detail/stats_board.hpp"
#include "seedrl/runtime/detail/step_request.hpp"
#include "seedrl/runtime/env_state_store.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/input_normalizer.hpp"
#include "seedrl/runtime/learner_config.hpp"
#include "seedrl/runtime/learner_stats.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/runtime/thread_time_split.hpp"
#include "seedrl/runtime/unroll_builder.hpp"
#include "seedrl/runtime/unroll_replay.hpp"

namespace seedrl {

/// See the file comment.
template <class Net, class Sampler = categorical_sampler, class Engine = cpu_inference_engine<Net>>
class inference_loop {
  static_assert(InferenceEngine<Engine>,
                "seedrl::inference_loop: the engine type does not model seedrl::InferenceEngine "
                "(see seedrl/runtime/inference_engine.hpp)");
  static_assert(std::constructible_from<Engine, const Net&, const inference_engine_config&>,
                "seedrl::inference_loop: the engine cannot be built from (const Net&, const "
                "seedrl::inference_engine_config&)");

 public:
  using scalar = typename Net::scalar_type;
  using unroll_queue = bounded_queue<unroll<scalar>*>;
  using time_split = thread_time_split<3>;

  /// `net` is copied; completed unrolls go to `queue`, parameters come from `params` (unless
  /// use_parameter_source says otherwise), counters go to `stats`. `created` is the learner's
  /// clock start. `normalizer` normalizes each batch's observations and rewards (when the config
  /// asks for it) before inference.
  inference_loop(const learner_config& config, const Net& net, const observation_spec& obs_spec,
                 const action_spec& act_spec, Sampler sampler, unroll_queue& queue,
                 const parameter_store<scalar>& params, detail::stats_board& stats,
                 std::chrono::steady_clock::time_point created,
                 input_normalizer<scalar>& normalizer)
      : inference_only_(config.inference_only),
        on_episode_(config.on_episode),
        log_(config.log),
        obs_type_(obs_spec.type),
        obs_size_(static_cast<std::size_t>(obs_spec.num_elements())),
        bytes_(obs_spec.type == dtype::uint8 && !normalizer.normalizes_observations()),
        sampler_(std::move(sampler)),
        policy_width_(sampler_.outputs_per_row(act_spec)),
        action_dim_(continuous_action_size(act_spec)),
        num_actions_(act_spec.is_discrete() ? act_spec.num_actions : 0),
        low_(action_dim_),
        high_(action_dim_),
        engine_(net,
                inference_engine_config{
                    config.max_envs,
                    std::max(config.batching.max_batch, config.batching.max_request_rows),
                    policy_width_, config.inference_workers, config.inference_device}),
        // The recurrent states live in the engine; the store keeps the rest of each slot.
        store_(config.max_envs, 0, action_dim_),
        builder_(config.max_envs, config.unroll_length, obs_size_,
                 static_cast<std::size_t>(net.state_size()),
                 (config.queue_batches + 2) * config.batch_size, action_dim_,
                 config.unroll_overlap),
        batcher_(batching(config.batching), [&](std::size_t cap) { return make_payload(cap); }),
        rng_(config.seed),
        queue_(queue),
        source_(std::make_shared<store_parameter_source<scalar>>(params)),
        stats_(stats),
        normalizer_(normalizer),
        time_(waiting_for_batch, created),
        explorer_of_slot_(config.max_envs),
        row_explorers_(std::max(config.batching.max_batch, config.batching.max_request_rows)) {
    sample_seed_ = static_cast<std::uint64_t>(config.seed);
    // The bounds the sampler keeps to, as float32 rounded inwards: actions travel as float32
    // and the actor checks them against the spec's double bounds, which a float rounded to
    // nearest (0.1f > 0.1) could leave.
    for (std::size_t i = 0; i < action_dim_; ++i) {
      low_[i] = static_cast<scalar>(inward_float(act_spec.low_at(i), true));
      high_[i] = static_cast<scalar>(inward_float(act_spec.high_at(i), false));
    }
  }

  inference_loop(const inference_loop&) = delete;
  inference_loop& operator=(const inference_loop&) = delete;
  ~inference_loop() { stop(); }

  /// Reserves `num_envs` environment slots for a new actor; nullopt when max_envs are taken.
  /// On success the actor's environments count as connected for the batcher. `actor_name`
  /// (from its hello) keeps its environments' explorer indices across reconnects
  /// (detail::explorer_registry), for a sampler that reads them (epsilon_greedy_sampler).
  std::optional<std::size_t> attach(std::size_t num_envs, std::string_view actor_name = {}) {
    std::optional<std::size_t> first;
    {
      std::lock_guard lock(slots_mutex_);
      first = store_.allocate(num_envs);
      if (first) {
        const std::uint32_t base = explorers_.attach(actor_name, num_envs, *first);
        for (std::size_t i = 0; i < num_envs; ++i)
          explorer_of_slot_[*first + i] = base + static_cast<std::uint32_t>(i);
      }
    }
    if (first)
      batcher_.add_connected(static_cast<std::ptrdiff_t>(num_envs));
    return first;
  }

  /// Gives back an actor's slots once it has no request in flight; the inference thread frees
  /// them (and drops their partial unrolls) before its next batch.
  void detach(std::size_t first_slot, std::size_t num_envs) {
    batcher_.add_connected(-static_cast<std::ptrdiff_t>(num_envs));
    std::lock_guard lock(slots_mutex_);
    releases_.push_back({first_slot, num_envs});
    explorers_.detach(first_slot);
  }

  /// Puts one actor's step into the filling batch; false once stopping (nothing was taken).
  bool submit(const detail::step_request& r) {
    return batcher_.submit(r.from, r.step->size(),
                           [&](payload& p, std::size_t first) { fill(r, p, first); });
  }

  /// Takes parameters from `source` instead of the store given to the constructor (e.g. the GPU
  /// trainer's device channel: seedrl/runtime/parameter_source.hpp). Call before start().
  void use_parameter_source(std::shared_ptr<parameter_source<scalar>> source) {
    source_ = std::move(source);
  }

  /// Sends completed unrolls into `replay` (a replay loss's, R2D2) instead of the training
  /// queue: each is copied in as one sequence and goes straight back to the pool. Insertion
  /// waits while actors are ahead of training (the replay ratio). Call before start().
  void use_replay(unroll_replay<scalar>* replay) noexcept { replay_ = replay; }

  /// Whether the engine takes parameter sets device to device (DeviceParameterEngine).
  bool engine_takes_device_parameters() const { return detail::takes_device_parameters(engine_); }

  /// Starts the inference thread.
  void start() {
    thread_ = std::thread([this] { run(); });
  }

  /// Answers what is already batched, closes the training queue (so that inference never
  /// blocks on a full one) and joins the thread. Safe to call twice.
  void stop() {
    batcher_.shutdown();
    close_training_data();
    if (thread_.joinable())
      thread_.join();
  }

  /// Where the unrolls come from; the trainer gives them back here.
  unroll_builder<scalar>& unroll_pool() noexcept { return builder_; }

  /// Policy outputs per row: what the sampler reads (logits: one per action).
  std::size_t policy_width() const noexcept { return policy_width_; }

  /// Where the inference thread's time goes; see report_time.
  const time_split& thread_time() const noexcept { return time_; }

  /// Writes a reading of time() into the learner's counters.
  static void report_time(const std::array<double, 3>& seconds, learner_stats& s) noexcept {
    s.seconds_waiting_for_batch = seconds[waiting_for_batch];
    s.seconds_inference = seconds[inferring];
    s.seconds_blocked_on_queue = seconds[blocked_on_queue];
  }

 private:
  enum state : std::size_t { waiting_for_batch, inferring, blocked_on_queue };

  /// Closes where completed unrolls go, so that neither loop ever blocks on it again.
  void close_training_data() {
    queue_.close();
    if (replay_ != nullptr)
      replay_->close();
  }

  /// One inference batch's inputs, preallocated for `capacity` rows.
  struct payload {
    std::vector<std::uint32_t> slots;
    std::vector<std::uint64_t> run_ids;
    std::vector<scalar> rewards;
    std::vector<std::uint8_t> dones;      // as sent by the actor
    std::vector<std::uint8_t> truncated;  // as sent: the episode ended by a time limit
    std::vector<scalar> observations;     // [capacity, obs_size] unless bytes_
    std::vector<std::uint8_t> frames;     // [capacity, obs_size] when bytes_: as sent
  };

  payload make_payload(std::size_t capacity) const {
    payload p;
    p.slots.resize(capacity);
    p.run_ids.resize(capacity);
    p.rewards.resize(capacity);
    p.dones.resize(capacity);
    p.truncated.resize(capacity);
    if (bytes_)
      p.frames.resize(capacity * obs_size_);
    else
      p.observations.resize(capacity * obs_size_);
    return p;
  }

  /// Copies a step into the batch rows [first, first + k); runs outside the batcher lock.
  void fill(const detail::step_request& r, payload& p, std::size_t first) {
    const auto& v = *r.step;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::size_t row = first + v.env_index(i);
      p.slots[row] = static_cast<std::uint32_t>(r.first_slot + v.env_index(i));
      p.run_ids[row] = v.run_id(i);
      p.rewards[row] = static_cast<scalar>(v.reward(i));
      p.dones[row] = v.done(i);
      p.truncated[row] = v.truncated(i);
      if (bytes_)
        v.decode_observation(i, obs_type_, std::span(p.frames).subspan(row * obs_size_, obs_size_));
      else
        v.decode_observation(i, obs_type_,
                             std::span(p.observations).subspan(row * obs_size_, obs_size_));
    }
  }

  /// The float nearest `x` from the inside: at least `x` when `up`, else at most `x`.
  static float inward_float(double x, bool up) {
    float f = static_cast<float>(x);
    if (up && static_cast<double>(f) < x)
      f = std::nextafter(f, std::numeric_limits<float>::infinity());
    if (!up && static_cast<double>(f) > x)
      f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
  }

  void apply_releases() {
    std::lock_guard lock(slots_mutex_);
    for (const auto& [first, k] : releases_) {
      for (std::size_t j = first; j < first + k; ++j) {
        dropped_steps_ += static_cast<std::int64_t>(builder_.pending(j));
        builder_.reset(j);  // drop partial unrolls
      }
      store_.release(first, k);
    }
    releases_.clear();  // keeps its capacity: no allocation once actors come and go
  }

  /// Why the batch's actions must not be sent (a NaN element, or a discrete index outside
  /// [0, num_actions)), naming the step; nullopt when they can be. Clips continuous elements
  /// outside the bounds into them (a custom sampler's; gaussian_sampler keeps to them) and
  /// counts them.
  std::optional<std::string> unsendable_action(std::size_t B,
                                               const std::vector<std::uint32_t>& slots,
                                               const std::vector<std::int32_t>& actions,
                                               std::vector<scalar>& env_actions,
                                               std::uint64_t version) {
    const std::size_t D = action_dim_;
    const auto where = [&](std::size_t r) {
      return "for env slot " + std::to_string(slots[r]) + " at frame " +
             std::to_string(frames_ + static_cast<std::int64_t>(r)) +
             " (parameters of training step " + std::to_string(version) + ")";
    };
    for (std::size_t r = 0; r < B; ++r) {
      if (D == 0) {
        if (actions[r] < 0 || actions[r] >= num_actions_) {
          return "the action sampler chose action " + std::to_string(actions[r]) +
                 ", outside [0, " + std::to_string(num_actions_) + "), " + where(r);
        }
        continue;
      }
      for (std::size_t i = 0; i < D; ++i) {
        scalar& x = env_actions[r * D + i];
        if (std::isnan(x)) {
          return "the action sampler chose NaN for action element " + std::to_string(i) + " " +
                 where(r) + "; the policy's outputs or parameters are not finite";
        }
        if (x < low_[i] || x > high_[i]) {
          x = std::clamp(x, low_[i], high_[i]);
          ++clipped_actions_;
        }
      }
    }
    return std::nullopt;
  }

  using batch_type = typename dynamic_batcher<payload>::batch;

  /// One batch's host buffers, preallocated for the batcher's capacity. The loop keeps two: with
  /// a pipelined engine, batch k+1 is prepared and begun while batch k computes, and each
  /// batch's buffers stay untouched until its finish() (see PipelinedInferenceEngine).
  struct batch_buffers {
    batch_buffers(std::size_t cap, std::size_t policy_width, std::size_t D)
        : outputs(cap * policy_width),
          values(cap),
          logp(cap),
          resets(cap),
          keep_state(cap),
          run_starts(cap),
          prev_actions(cap),
          actions(cap),
          prev_env_actions(cap * D),
          env_actions(cap * D),
          raw_actions(cap * D),
          wire_actions(cap * D) {
      finished.reserve(cap);
    }
    std::vector<scalar> outputs, values, logp;
    std::vector<std::uint8_t> resets, keep_state, run_starts;
    std::vector<std::int32_t> prev_actions, actions;
    // Continuous actions, D per row (empty when discrete): the previous ones fed to the
    // network, the env's (as sent, in float) and the raw samples the loss evaluates.
    std::vector<scalar> prev_env_actions, env_actions, raw_actions;
    std::vector<float> wire_actions;
    std::vector<finished_episode> finished;           // reused: no allocation per batch
    batch_type* batch = nullptr;                      // the batch in these buffers; null: free
    std::chrono::steady_clock::time_point t_start{};  // when inference took it
    std::uint64_t version = 0;                        // the parameters it was inferred with
    bool sampled_by_engine = false;
  };

  /// Stops serving after an action that must not be sent: the batch is left unanswered (its
  /// actors wait until the learner stops and tells them so), training stops (the queue closes)
  /// and the error is where programs look for it (learner_stats::trainer_error). `also`: a
  /// second batch taken from the batcher (a pipelined engine's next one), left the same way.
  void fail(const std::string& why, batch_type* batch, batch_type* also = nullptr) {
    const std::string message = "seedrl learner: inference stopped: " + why;
    if (log_)
      log_(message);
    stats_.update([&](learner_stats& s) { s.trainer_error = why; });
    close_training_data();
    for (batch_type* b : {batch, also}) {
      if (b == nullptr)
        continue;
      batcher_.answered(b);
      for (const auto& e : b->entries)
        static_cast<detail::requester*>(e.requester)->request_done();
      batcher_.release(b);
    }
    // Later requests are never taken: submit() is refused once the batcher shuts down.
    batcher_.shutdown();
    for (auto* next = batcher_.next_batch(); next != nullptr; next = batcher_.next_batch()) {
      batcher_.answered(next);
      for (const auto& e : next->entries)
        static_cast<detail::requester*>(e.requester)->request_done();
      batcher_.release(next);
    }
  }

  /// The host bookkeeping before a batch's step: releases, the parameter swap, each row's slot
  /// (run changes, episode ends, previous actions) and the normalizer. For a pipelined engine
  /// it runs for batch k+1 before batch k's replies and unroll appends. That order is safe: the
  /// slots of the two batches are disjoint (an actor steps again only once answered), so
  /// k+1's run changes, resets and previous actions never touch k's rows; released slots have
  /// no request in flight; the normalizer sees the batches in the order they came.
  void prepare(batch_buffers& b) {
    apply_releases();
    const std::size_t B = b.batch->rows;
    const std::size_t D = action_dim_;
    payload& p = b.batch->payload;
    b.finished.clear();
    source_->update(target_, &version_);  // between batches: the step uses one whole set
    b.version = version_;
    {
      std::lock_guard slots(slots_mutex_);  // slots cannot be released under our feet
      for (std::size_t r = 0; r < B; ++r) {
        const std::size_t slot = p.slots[r];
        const auto seen =
            store_.observe(slot, p.run_ids[r], static_cast<double>(p.rewards[r]), p.dones[r] != 0);
        if (seen.run_changed) {
          dropped_steps_ += static_cast<std::int64_t>(builder_.pending(slot));
          builder_.reset(slot);
          engine_.reset_state(slot);  // a new or restarted env starts from zeros
        }
        if (seen.finished)
          b.finished.push_back(*seen.finished);
        // The engine brings back the start states the unrolls read, and no others.
        b.keep_state[r] =
            static_cast<std::uint8_t>(!inference_only_ && builder_.needs_state_before(slot));
        b.resets[r] = static_cast<std::uint8_t>(p.dones[r] != 0 || seen.run_changed);
        b.run_starts[r] = static_cast<std::uint8_t>(seen.run_changed);
        b.prev_actions[r] = store_.prev_action(slot);
        const auto prev_env = store_.prev_env_action(slot);
        std::copy(prev_env.begin(), prev_env.end(),
                  b.prev_env_actions.begin() + static_cast<std::ptrdiff_t>(r * D));
      }
    }
    // Normalized observations and scaled rewards (when asked for) are what the network sees
    // and the unrolls keep; the episode returns above were counted from the raw rewards.
    normalizer_.apply(B, std::span<const std::uint32_t>(p.slots).first(B),
                      bytes_ ? std::span<scalar>() : std::span(p.observations).first(B * obs_size_),
                      std::span(p.rewards).first(B),
                      std::span<const std::uint8_t>(p.dones).first(B),
                      std::span<const std::uint8_t>(b.run_starts).first(B));
  }

  /// The batch's step on the engine: infer() (or infer_and_sample()), or, pipelined, begin()
  /// (or begin_and_sample()), whose outputs finish() delivers.
  void launch(batch_buffers& b, bool pipelined) {
    const std::size_t B = b.batch->rows;
    const std::size_t D = action_dim_;
    const payload& p = b.batch->payload;
    // Inference on the first B rows of the preallocated buffers; the engine steps each
    // slot's state and keeps the state each row started from for the unrolls.
    const agent_step_input<scalar> in{
        bytes_ ? std::span<const scalar>()
               : std::span<const scalar>(p.observations).first(B * obs_size_),
        std::span<const scalar>(p.rewards).first(B),
        std::span<const std::uint8_t>(b.resets).first(B),
        std::span<const std::int32_t>(b.prev_actions).first(B),
        std::span<const scalar>(b.prev_env_actions).first(B * D),
        bytes_ ? std::span<const std::uint8_t>(p.frames).first(B * obs_size_)
               : std::span<const std::uint8_t>(),
        std::span<const std::uint8_t>(b.keep_state).first(B)};
    const agent_step_output<scalar> out{std::span(b.outputs).first(B * policy_width_),
                                        std::span(b.values).first(B)};
    const auto slot_span = std::span<const std::uint32_t>(p.slots).first(B);
    b.sampled_by_engine = false;
    if constexpr (engine_samples) {
      if (sampler_.selection == action_selection::sample && engine_samples_now()) {
        // The engine samples where it computes, from the counter generator.
        const auto actions = std::span(b.actions).first(B);
        const auto logp = std::span(b.logp).first(B);
        if constexpr (engine_pipelines) {
          if (pipelined)
            engine_.begin_and_sample(slot_span, in, out, sample_seed_, batches_, actions, logp);
          else
            engine_.infer_and_sample(slot_span, in, out, sample_seed_, batches_, actions, logp);
        } else {
          engine_.infer_and_sample(slot_span, in, out, sample_seed_, batches_, actions, logp);
        }
        b.sampled_by_engine = true;
      }
    }
    if (!b.sampled_by_engine) {
      if constexpr (engine_pipelines) {
        if (pipelined)
          engine_.begin(slot_span, in, out);
        else
          engine_.infer(slot_span, in, out);
      } else {
        engine_.infer(slot_span, in, out);
      }
    }
    ++batches_;
  }

  /// After the batch's step, before any reply: the start states the loop asked for
  /// (keep_state) have the network's state width. An engine that breaks that contract (a
  /// custom engine's bug) stops serving cleanly here instead of failing in the unroll builder
  /// after the actors were answered.
  void check_states_before(const batch_buffers& b) const {
    if (inference_only_)
      return;
    const std::size_t W = builder_.state_width();
    for (std::size_t r = 0; r < b.batch->rows; ++r) {
      if (b.keep_state[r] == 0)
        continue;
      const std::size_t got = engine_.state_before(r).size();
      if (got != W) {
        throw std::runtime_error("state_before(" + std::to_string(r) + ") (env slot " +
                                 std::to_string(b.batch->payload.slots[r]) + ") has " +
                                 std::to_string(got) + " values where the network's state has " +
                                 std::to_string(W) + ": the engine did not keep a state asked for");
      }
    }
  }

  /// prepare() and launch() for the batch in `b`. The engine's calls (parameter swap, state
  /// resets, the step) may fail (a CUDA error, a lost device): that stops serving as an
  /// unsendable action does, so the actors hear shutting_down from a learner that stops cleanly
  /// instead of losing their sockets. Then it returns false; `in_flight` (the batch begun before
  /// this one, if any) is left unanswered with it.
  bool start(batch_buffers& b, bool pipelined, batch_type* in_flight) {
    try {
      prepare(b);
      launch(b, pipelined);
      if (!pipelined)
        check_states_before(b);
      return true;
    } catch (const std::exception& e) {
      fail("the inference engine failed: " + std::string(e.what()), in_flight, b.batch);
      return false;
    }
  }

  /// A pipelined engine's finish() for the batch in `b` (the oldest in flight); as start(), a
  /// failure stops serving (`next`: the batch begun after it) and returns false.
  bool finish(batch_buffers& b, batch_type* next) {
    if constexpr (engine_pipelines) {
      try {
        engine_.finish();
        check_states_before(b);
      } catch (const std::exception& e) {
        fail("the inference engine failed: " + std::string(e.what()), b.batch, next);
        return false;
      }
    }
    return true;
  }

  /// After the batch's step: the actions (sampled here unless the engine did), every reply,
  /// then the unroll appends and the counters; the batch goes back to the batcher. False when
  /// an action must not be sent: serving stopped (fail(), with `next`, a batch begun after it).
  bool complete(batch_buffers& b, batch_type* next) {
    batch_type* batch = b.batch;
    const std::size_t B = batch->rows;
    const std::size_t D = action_dim_;
    payload& p = batch->payload;
    const action_buffers<scalar> chosen{
        D == 0 ? std::span(b.actions).first(B) : std::span<std::int32_t>(),
        std::span(b.env_actions).first(B * D),
        std::span(b.raw_actions).first(B * D),
        low_,
        high_,
        D};
    if (!b.sampled_by_engine) {
      const auto outputs = std::span<const scalar>(b.outputs).first(B * policy_width_);
      const auto logp = std::span(b.logp).first(B);
      if (reads_explorers()) {
        for (std::size_t r = 0; r < B; ++r)  // written before the actor's first step
          row_explorers_[r] = explorer_of_slot_[p.slots[r]];
        if constexpr (ExplorerSampler<Sampler, scalar>)
          sampler_.sample(outputs, B, policy_width_, rng_, chosen, logp,
                          std::span<const std::uint32_t>(row_explorers_).first(B));
      } else {
        sampler_.sample(outputs, B, policy_width_, rng_, chosen, logp);
      }
    }
    if (const auto bad = unsendable_action(B, p.slots, b.actions, b.env_actions, b.version)) {
      fail(*bad, batch, next);
      return false;
    }
    // What the env gets travels as float32; the learner keeps that value as the env's
    // previous action, so both sides see the same one.
    for (std::size_t j = 0; j < B * D; ++j) {
      b.wire_actions[j] = static_cast<float>(b.env_actions[j]);
      b.env_actions[j] = static_cast<scalar>(b.wire_actions[j]);
    }
    // Answer every request before the slower bookkeeping, to keep the actors' round trip short.
    // The batch's rows stop counting as waiting first: an actor steps again as soon as it has
    // its actions, and its old rows must not look "waiting" still (see answered()).
    batcher_.answered(batch);
    double batching_seconds = 0.0, answer_seconds = 0.0;
    for (const auto& e : batch->entries) {
      auto& from = *static_cast<detail::requester*>(e.requester);
      // Read before answering: once answered, the actor's next step overwrites it.
      batching_seconds += std::chrono::duration<double>(b.t_start - from.received()).count();
      if (D == 0)
        from.answer(std::span<const std::int32_t>(b.actions).subspan(e.first_row, e.rows));
      else
        from.answer(e.rows,
                    std::span<const float>(b.wire_actions).subspan(e.first_row * D, e.rows * D));
      const auto answered = std::chrono::steady_clock::now();
      answer_seconds += std::chrono::duration<double>(answered - b.t_start).count();
    }
    std::unique_lock slots(slots_mutex_);
    for (std::size_t r = 0; r < B; ++r) {
      const std::size_t slot = p.slots[r];
      store_.set_prev_action(slot, b.actions[r]);
      store_.set_prev_env_action(slot, std::span<const scalar>(b.env_actions).subspan(r * D, D));
      if (inference_only_)
        continue;
      // Only the rows asked for: another row's state_before is unspecified (the builder
      // refuses an empty one where it needs it).
      const auto before = b.keep_state[r] != 0 ? std::span<const scalar>(engine_.state_before(r))
                                               : std::span<const scalar>();
      const auto prev_env = std::span<const scalar>(b.prev_env_actions).subspan(r * D, D);
      const auto raw = std::span<const scalar>(b.raw_actions).subspan(r * D, D);
      // uint8 frames are widened in the builder's one copy into the unroll.
      unroll<scalar>* done_unroll =
          bytes_
              ? builder_.append(
                    slot, std::span<const std::uint8_t>(p.frames).subspan(r * obs_size_, obs_size_),
                    p.rewards[r], b.resets[r] != 0, p.truncated[r] != 0, b.prev_actions[r],
                    b.actions[r], b.logp[r], b.version, before, prev_env, raw)
              : builder_.append(
                    slot, std::span<const scalar>(p.observations).subspan(r * obs_size_, obs_size_),
                    p.rewards[r], b.resets[r] != 0, p.truncated[r] != 0, b.prev_actions[r],
                    b.actions[r], b.logp[r], b.version, before, prev_env, raw);
      if (done_unroll != nullptr) {
        slots.unlock();
        // Backpressure from a full training queue (or a replay ahead of training) is the
        // trainer's limit, not inference work.
        time_.enter(blocked_on_queue);
        if (replay_ != nullptr) {
          replay_->insert(*done_unroll);  // copied in (or closed: shutting down)
          builder_.recycle(done_unroll);
        } else if (!queue_.push(done_unroll)) {
          builder_.recycle(done_unroll);  // shutting down
        }
        time_.enter(inferring);
        slots.lock();
      }
    }
    slots.unlock();
    for (const auto& e : batch->entries)
      static_cast<detail::requester*>(e.requester)->request_done();
    frames_ += static_cast<std::int64_t>(B);
    const auto requests = static_cast<std::int64_t>(batch->entries.size());
    batcher_.release(batch);
    b.batch = nullptr;
    time_.enter(waiting_for_batch);
    for (const auto& f : b.finished) {
      episodes_.add(f.episode_return, static_cast<double>(f.length));
      if (on_episode_)
        on_episode_(f.episode_return, static_cast<std::int64_t>(f.length));
    }
    stats_.update([&](learner_stats& s) {
      s.frames += static_cast<std::int64_t>(B);
      s.batches += 1;
      s.batch_rows += static_cast<std::int64_t>(B);
      s.requests += requests;
      s.dropped_unroll_steps = dropped_steps_;
      s.clipped_actions = clipped_actions_;
      s.request_seconds_batching += batching_seconds;
      s.request_seconds_inference += answer_seconds;
      s.episodes += static_cast<std::int64_t>(b.finished.size());
      episodes_.report(s);
    });
    return true;
  }

  void run() {
    const std::size_t cap = batcher_.capacity();
    // A pipelined engine gets batch k+1 while batch k computes; other engines run one batch
    // at a time in buffers[0] (buffers[1] stays empty).
    const bool pipelined = engine_pipelines_now();
    std::array<batch_buffers, 2> buffers{
        batch_buffers(cap, policy_width_, action_dim_),
        batch_buffers(pipelined ? cap : 0, policy_width_, action_dim_)};
    std::size_t oldest = 0;  // buffers[oldest]: the batch to answer next, begun when it is set
    for (;;) {
      batch_buffers& cur = buffers[oldest];
      batch_buffers& next = buffers[1 - oldest];
      if (cur.batch == nullptr) {
        cur.batch = batcher_.next_batch();
        cur.t_start = std::chrono::steady_clock::now();
        if (cur.batch == nullptr)
          break;
        time_.enter(inferring);
        if (!start(cur, pipelined, nullptr))
          break;
      }
      if (pipelined) {
        // Batch k+1 only when it is ready now: batch k's replies never wait for a batch.
        next.batch = batcher_.try_next_batch();
        if (next.batch != nullptr) {
          next.t_start = std::chrono::steady_clock::now();
          if (!start(next, true, cur.batch))
            break;
        }
        if (!finish(cur, next.batch))
          break;
      }
      if (!complete(cur, next.batch))
        break;
      if (next.batch != nullptr) {  // already begun: answered next
        time_.enter(inferring);
        oldest = 1 - oldest;
      }
    }
  }

  bool inference_only_;  // no unrolls (learner_config::inference_only)
  std::function<void(double, std::int64_t)> on_episode_;
  std::function<void(const std::string&)> log_;
  dtype obs_type_;
  std::size_t obs_size_;
  bool bytes_;  // uint8 frames stay bytes up to the engine (no observation normalization)
  Sampler sampler_;
  std::size_t policy_width_;        // policy outputs per row (logits: one per action)
  std::size_t action_dim_;          // D for continuous actions, 0 for discrete
  std::int32_t num_actions_;        // discrete: the action count; 0 for continuous
  std::vector<scalar> low_, high_;  // [D] the action bounds, for the sampler
  Engine engine_;                   // the network step and every slot's recurrent state
  detail::engine_parameter_target<Engine> target_{engine_};  // how source_ hands it sets
  env_state_store<scalar> store_;
  unroll_builder<scalar> builder_;
  dynamic_batcher<payload> batcher_;
  random_generator rng_;
  unroll_queue& queue_;
  unroll_replay<scalar>* replay_ = nullptr;           // set: unrolls go here instead (use_replay)
  std::shared_ptr<parameter_source<scalar>> source_;  // where the parameters come from
  detail::stats_board& stats_;
  input_normalizer<scalar>& normalizer_;
  time_split time_;
  std::thread thread_;

  std::mutex slots_mutex_;               // slot allocation and release vs. the inference thread
  detail::explorer_registry explorers_;  // under slots_mutex_
  std::vector<std::uint32_t> explorer_of_slot_;  // [max_envs]; set at attach, before any step
  std::vector<std::uint32_t> row_explorers_;     // inference thread only: one batch's
  std::vector<std::pair<std::size_t, std::size_t>> releases_;
  detail::episode_window episodes_;   // inference thread only
  std::int64_t dropped_steps_ = 0;    // inference thread only; copied into the counters
  std::int64_t clipped_actions_ = 0;  // inference thread only; copied into the counters
  std::int64_t frames_ = 0;           // inference thread only: steps answered so far
  /// Engines that sample on their device get the learner's seed and the batch index; they
  /// sample categorical policies (spec_sampler's too, when the actions are discrete).
  static constexpr bool engine_samples =
      SamplingInferenceEngine<Engine> &&
      (std::same_as<Sampler, categorical_sampler> || std::same_as<Sampler, spec_sampler>);
  std::uint64_t sample_seed_ = 0;
  std::uint64_t batches_ = 0;  // inference thread only: batches inferred so far
  std::uint64_t version_ =
      0;  // inference thread only: the engine's parameter version (source_'s numbering)
  /// Engines that can have two batches in flight (PipelinedInferenceEngine).
  static constexpr bool engine_pipelines = PipelinedInferenceEngine<Engine>;

  /// Whether a sampling engine samples in this run (any_inference_engine decides at run time;
  /// continuous actions are sampled on the host).
  /// Whether the sampler reads each row's explorer index now: an ExplorerSampler, unless it
  /// samples the policy's own distribution this run (spec_sampler without epsilon-greedy).
  bool reads_explorers() const {
    if constexpr (!ExplorerSampler<Sampler, scalar>)
      return false;
    else if constexpr (requires { sampler_.samples_categorically(); })
      return !sampler_.samples_categorically();
    else
      return true;
  }

  bool engine_samples_now() const {
    if (action_dim_ > 0)
      return false;
    if constexpr (requires { sampler_.samples_categorically(); }) {
      if (!sampler_.samples_categorically())  // e.g. epsilon-greedy: the sampler's own draw
        return false;
    }
    if constexpr (requires(const Engine& e) {
                    { e.samples() } -> std::convertible_to<bool>;
                  })
      return engine_.samples();
    else
      return true;
  }

  /// The batcher's settings: with a pipelined engine, at least three buffers, so that actors
  /// answered from batch k fill a third while batches k and k+1 are in flight. Runs in the
  /// constructor, after engine_ is built.
  batcher_config batching(batcher_config c) const {
    if (engine_pipelines_now())
      c.num_buffers = std::max<std::size_t>(c.num_buffers, 3);
    return c;
  }

  /// Whether this run pipelines (any_inference_engine decides at run time).
  bool engine_pipelines_now() const {
    if constexpr (!engine_pipelines)
      return false;
    else if constexpr (requires(const Engine& e) {
                         { e.pipelines() } -> std::convertible_to<bool>;
                       })
      return engine_.pipelines();
    else
      return true;
  }
};

}  // namespace seedrl
