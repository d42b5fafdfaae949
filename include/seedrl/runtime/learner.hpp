#pragma once
/// \file
/// The SEED learner: it accepts actors over any Transport, batches their requests dynamically,
/// runs inference with per-environment recurrent state, builds unrolls and trains on them with
/// the IMPALA loss, publishing new parameters to inference as it goes.
///
/// Threads: one per connection (reads and validates frames, copies observations into the
/// filling batch), one inference thread (runs batches, writes every reply, builds unrolls),
/// one trainer thread (assembles batches of unrolls, trains, publishes). A connection thread
/// is the only one that reads its socket; the inference thread is the only one that writes
/// actions to it, so no lock is taken per request beyond the batcher's row reservation.
///
/// `Net` is an agent network with `agent_io.hpp`'s inputs and outputs (e.g. mlp_lstm_agent);
/// `Opt` models Optimizer; `Tr` models Transport; `Trn` models Trainer
/// (seedrl/runtime/trainer.hpp): where training steps run, `host_trainer` (the CPU, the default) or
/// e.g. `cuda::mlp_lstm_trainer` (a GPU).

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/io/checkpoint_schedule.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/optim/clip.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/batcher.hpp"
#include "seedrl/runtime/bounded_queue.hpp"
#include "seedrl/runtime/env_state_store.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/runtime/thread_time_split.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/unroll_builder.hpp"
#include "seedrl/security/challenge.hpp"
#include "seedrl/security/shared_secret.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl {

/// Learner settings.
struct learner_config {
  std::size_t max_envs = 4096;     ///< environment slots across all actors
  std::size_t unroll_length = 20;  ///< T; unrolls hold T + 1 steps
  std::size_t batch_size = 16;     ///< unrolls per training step
  /// Training queue capacity, in training batches. Every env of an actor finishes an unroll
  /// on the same step, so size it to hold such a burst (actors x envs per actor / batch_size):
  /// a full queue blocks inference and starves the trainer (docs/performance.md, (d)).
  std::size_t queue_batches = 2;
  batcher_config batching{};    ///< inference batch size and deadline
  double max_grad_norm = 40.0;  ///< global-norm clipping
  std::uint32_t max_payload = protocol::default_max_payload;
  std::uint64_t seed = 0;  ///< action sampling
  /// When set, every actor must pass the challenge-response of docs/security.md before hello.
  std::shared_ptr<const security::shared_secret> auth_secret;
  /// Longest time from accepting a connection to its welcome; a silent or slow peer is refused
  /// with idle_timeout so it cannot hold a connection thread.
  std::chrono::milliseconds handshake_timeout{10000};
  /// Most connections held at once (open or in handshake); more are refused at accept.
  std::size_t max_connections = 4096;
  /// Where the trainer saves checkpoints (docs/checkpoints.md); empty turns them off. It must
  /// hold no checkpoints unless the learner was restored (not weights only) from one of them:
  /// start() refuses another run's directory (see require_no_checkpoints).
  std::filesystem::path checkpoint_dir;
  /// When to save: every N training steps and/or S seconds, and at stop().
  checkpoint_schedule_config checkpointing{1000, 60.0, true};
  /// Checkpoints kept in checkpoint_dir, the newest included (0 keeps all).
  std::size_t keep_checkpoints = 5;
  /// Strings stored in every checkpoint, e.g. "network" describing the architecture so that
  /// an evaluation program can rebuild it.
  std::map<std::string, std::string, std::less<>> checkpoint_meta;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

/// Counters for the progress line; every field is a running total unless said otherwise.
struct learner_stats {
  std::int64_t frames = 0;  ///< env steps answered
  std::int64_t episodes = 0;
  double mean_return = 0.0;          ///< over the last 100 episodes
  double mean_episode_length = 0.0;  ///< over the last 100 episodes
  std::size_t returns_counted = 0;   ///< how many of those 100 exist
  std::int64_t batches = 0;          ///< inference batches
  std::int64_t batch_rows = 0;  ///< rows over all inference batches (fill = rows / batches / max)
  std::int64_t train_steps = 0;
  loss_terms last_loss{};
  double last_grad_norm = 0.0;  ///< before clipping
  double learning_rate = 0.0;   ///< of the last training step, when the optimizer reports it
  std::int64_t checkpoints_saved = 0;
  /// Policy lag of the last training batch: the trainer's parameter version minus the version
  /// that chose each action (over the T steps of every unroll), mean and max.
  double policy_lag_mean = 0.0;
  std::uint64_t policy_lag_max = 0;
  /// Set when the trainer failed (e.g. a GPU error): training has stopped, inference goes on
  /// with the last parameters. Programs should report it and exit.
  std::string trainer_error;
  /// Steps of partial unrolls thrown away because their actor left or restarted (run id).
  std::int64_t dropped_unroll_steps = 0;
  std::size_t queue_depth = 0;       ///< now
  std::size_t connected_actors = 0;  ///< now
  std::int64_t rejected_connections = 0;
  // Where the inference and trainer threads' time went, up to the snapshot (the stretch in
  // progress included), and the learner's clock then: shares of a window between two
  // snapshots are in [0, 1].
  double seconds_since_start = 0.0;        ///< learner clock at the snapshot
  double seconds_waiting_for_batch = 0.0;  ///< inference thread idle
  double seconds_inference = 0.0;          ///< inference thread busy
  double seconds_blocked_on_queue = 0.0;   ///< inference thread blocked: training queue full
  double seconds_waiting_for_data = 0.0;   ///< trainer idle
  double seconds_training = 0.0;           ///< trainer busy (training steps and checkpoints)
  // Per request (one actor step), from the learner's side: arrival to the start of its batch's
  // inference, and from there to its actions being written.
  std::int64_t requests = 0;
  double request_seconds_batching = 0.0;   ///< summed over requests
  double request_seconds_inference = 0.0;  ///< summed over requests
  // As reported by actors (actor_stats messages); round trips, time stepping environments and
  // time from writing a step until its actions were read (link + batching + inference).
  std::int64_t actor_steps = 0;
  double actor_seconds_env = 0.0;
  double actor_seconds_waiting = 0.0;
};

/// The stage that limits a run, judged from two snapshots of learner_stats (see
/// `binding_stage`).
enum class run_bound : std::uint8_t { unknown, env, link, batching, inference, training };

/// A readable name: "env-bound", "link-bound", ...
constexpr const char* to_string(run_bound b) noexcept {
  switch (b) {
    case run_bound::env:
      return "env-bound";
    case run_bound::link:
      return "link-bound";
    case run_bound::batching:
      return "batching-bound";
    case run_bound::inference:
      return "inference-bound";
    case run_bound::training:
      return "training-bound";
    case run_bound::unknown:
      break;
  }
  return "unknown";
}

/// Mean time per actor round trip in each stage between two snapshots, in seconds.
struct stage_times {
  double env = 0.0;             ///< actor stepping its environments
  double link = 0.0;            ///< on the wire both ways (actor's wait minus the learner's time)
  double batching = 0.0;        ///< in the learner, waiting for the request's batch to start
  double inference = 0.0;       ///< in the learner, batch inference until the actions are written
  double inference_busy = 0.0;  ///< fraction of wall time the inference thread worked
  double queue_blocked = 0.0;   ///< fraction it was blocked on the full training queue
  double training_busy = 0.0;   ///< fraction of wall time the trainer worked
};

/// Stage times between snapshots `before` and `after`, taken `seconds` apart. Busy shares are
/// over the learner's own clock between the snapshots when both carry it (the same clock as the
/// busy times, so each share is in [0, 1]), else over `seconds`.
inline stage_times stage_times_between(const learner_stats& before, const learner_stats& after,
                                       double seconds) {
  stage_times t;
  const auto per = [](double sum, std::int64_t n) {
    return n > 0 ? sum / static_cast<double>(n) : 0.0;
  };
  const std::int64_t steps = after.actor_steps - before.actor_steps;
  const std::int64_t requests = after.requests - before.requests;
  t.env = per(after.actor_seconds_env - before.actor_seconds_env, steps);
  const double wait = per(after.actor_seconds_waiting - before.actor_seconds_waiting, steps);
  t.batching = per(after.request_seconds_batching - before.request_seconds_batching, requests);
  t.inference = per(after.request_seconds_inference - before.request_seconds_inference, requests);
  t.link = std::max(0.0, wait - t.batching - t.inference);
  const double clock = after.seconds_since_start - before.seconds_since_start;
  const double wall = before.seconds_since_start > 0.0 && clock > 0.0 ? clock : seconds;
  if (wall > 0.0) {
    t.inference_busy = (after.seconds_inference - before.seconds_inference) / wall;
    t.queue_blocked = (after.seconds_blocked_on_queue - before.seconds_blocked_on_queue) / wall;
    t.training_busy = (after.seconds_training - before.seconds_training) / wall;
  }
  return t;
}

/// Which stage limits throughput: training when the trainer is busy over 90% of the time or
/// inference spends over 10% of it blocked on the full training queue (unrolls come faster than
/// they are trained on); inference when that thread is busy over 90%; otherwise the largest
/// share of an actor's round trip. Unknown before any actor reported its times.
inline run_bound binding_stage(const stage_times& t) noexcept {
  if (t.training_busy > 0.9 || t.queue_blocked > 0.1)
    return run_bound::training;
  if (t.inference_busy > 0.9)
    return run_bound::inference;
  const double parts[] = {t.env, t.link, t.batching, t.inference};
  if (parts[0] + parts[1] + parts[2] + parts[3] <= 0.0)
    return run_bound::unknown;
  const auto i = static_cast<std::size_t>(std::max_element(std::begin(parts), std::end(parts)) -
                                          std::begin(parts));
  constexpr run_bound bounds[] = {run_bound::env, run_bound::link, run_bound::batching,
                                  run_bound::inference};
  return bounds[i];
}

/// See the file comment.
template <class Net, class Opt, class Tr, class Trn = host_trainer>
class learner {
  static_assert(Trainer<Trn, Net, Opt>,
                "seedrl::learner: the trainer type does not model seedrl::Trainer for this "
                "network and optimizer (see seedrl/runtime/trainer.hpp)");

 public:
  using scalar = typename Net::scalar_type;
  using connection_type = typename Tr::connection_type;
  using listener_type = typename Tr::listener_type;

  /// `net` gives the architecture and initial parameters (copied for training and inference).
  /// `trainer` runs the training steps (the CPU by default).
  learner(const learner_config& config, const Net& net, Opt optimizer, impala_loss<scalar> loss,
          observation_spec obs_spec, action_spec act_spec, Trn trainer = Trn())
      : config_(config),
        obs_spec_(obs_spec),
        act_spec_(act_spec),
        obs_size_(static_cast<std::size_t>(obs_spec.num_elements())),
        num_actions_(static_cast<std::size_t>(act_spec.num_actions)),
        infer_net_(net),
        train_net_(net),
        optimizer_(std::move(optimizer)),
        trainer_(std::move(trainer)),
        loss_(std::move(loss)),
        store_(config.max_envs, net.state_size()),
        builder_(config.max_envs, config.unroll_length, obs_size_,
                 static_cast<std::size_t>(net.state_size()),
                 (config.queue_batches + 2) * config.batch_size),
        queue_(config.queue_batches * config.batch_size),
        batcher_(config.batching, [&](std::size_t cap) { return make_payload(cap); }),
        rng_(config.seed),
        created_(std::chrono::steady_clock::now()),
        inference_time_(waiting_for_batch, created_),
        trainer_time_(waiting_for_data, created_) {
    if (!act_spec.is_discrete()) {
      throw std::invalid_argument(
          "seedrl::learner: only discrete action spaces are supported so far");
    }
    params_.publish(train_net_.parameters());
  }

  learner(const learner&) = delete;
  learner& operator=(const learner&) = delete;
  ~learner() { stop(); }

  /// Restores a checkpoint; call before start(). Always the parameters (checked against this
  /// network's size and scalar type); unless `weights_only`, also the optimizer state (so its
  /// step count and learning-rate schedule continue) and the frame, episode and training-step
  /// counters. Throws checkpoint_error and changes nothing on a mismatch. A full restore from a
  /// file in checkpoint_dir continues the run there; anything else is a new run, which start()
  /// refuses to save beside another run's checkpoints.
  void restore(const checkpoint& c, bool weights_only = false) {
    Net restored(train_net_);
    restore_parameters(c, restored);
    Opt optimizer = optimizer_;
    std::int64_t frames = 0, episodes = 0, steps = 0;
    if (!weights_only) {
      restore_optimizer(c, optimizer);
      frames = c.int_counter("frames");
      episodes = c.int_counter("episodes");
      steps = c.int_counter("train_steps");
    }
    // Everything parsed and checked: now apply it all.
    std::copy(restored.parameters().begin(), restored.parameters().end(),
              train_net_.parameters().begin());
    std::copy(restored.parameters().begin(), restored.parameters().end(),
              infer_net_.parameters().begin());
    if (!weights_only)
      optimizer_ = std::move(optimizer);
    trainer_.load_from_host(train_net_, optimizer_);
    params_.publish(train_net_.parameters());
    if (!weights_only) {
      std::lock_guard lock(stats_mutex_);
      stats_.frames = frames;
      stats_.episodes = episodes;
      stats_.train_steps = steps;
    }
    if (!weights_only)
      resumed_from_ = c.source;
  }

  /// Starts the inference and trainer threads. Throws checkpoint_error, and starts nothing, if
  /// checkpoint_dir holds checkpoints and this learner was not restored in full from one of
  /// them: a new run must not save beside another run's (require_no_checkpoints).
  void start() {
    if (!config_.checkpoint_dir.empty()) {
      if (!continues_checkpoint_dir())
        require_no_checkpoints(config_.checkpoint_dir);
      checkpoints_.emplace(config_.checkpointing, stats().train_steps);
    }
    inference_thread_ = std::thread([this] { inference_loop(); });
    trainer_thread_ = std::thread([this] { trainer_loop(); });
    watchdog_thread_ = std::thread([this] { watchdog_loop(); });
  }

  /// Accepts actors on `listener` in a thread of its own until `stop()`.
  void serve(listener_type listener) {
    std::lock_guard lock(connections_mutex_);
    listeners_.push_back(std::make_unique<listener_type>(std::move(listener)));
    listener_type* l = listeners_.back().get();
    accept_threads_.emplace_back([this, l] { accept_loop(*l); });
  }

  /// Serves one already-connected actor (e.g. from a test) in a thread of its own.
  void serve_connection(connection_type c) { spawn_connection(std::move(c)); }

  /// Graceful shutdown: stop accepting, answer what is already batched, tell every actor with
  /// a close frame (`shutting_down`, so that it reconnects to the next learner), close every
  /// connection, stop the trainer, join every thread. Safe to call twice.
  void stop() {
    if (stopping_.exchange(true))
      return;
    {
      std::lock_guard lock(connections_mutex_);
      for (auto& l : listeners_)
        l->close();
    }
    watchdog_wake_.notify_all();
    if (watchdog_thread_.joinable())
      watchdog_thread_.join();
    for (auto& t : accept_threads_)
      t.join();
    batcher_.shutdown();  // requests already batched are still answered
    queue_.close();       // so that inference never blocks on a full training queue
    if (inference_thread_.joinable())
      inference_thread_.join();
    std::vector<std::byte> goodbye;
    protocol::encode_close({protocol::error_code::shutting_down, "the learner is stopping"},
                           goodbye);
    {
      std::lock_guard lock(connections_mutex_);
      for (auto& c : connections_) {
        std::lock_guard write(c->write_mutex);
        if (c->open && c->conn.is_open()) {
          try {
            const std::span<const std::byte> bufs[] = {goodbye};
            c->conn.write(bufs);
          } catch (const std::exception&) {
            // Best effort: the actor may be gone already.
          }
        }
        c->conn.close();
      }
    }
    if (trainer_thread_.joinable())
      trainer_thread_.join();
    // Always at exit (when asked for), even with no new training step: the frame and episode
    // counters moved on, and a resumed run should continue from them.
    if (checkpoints_ && config_.checkpointing.at_exit)
      save_checkpoint("at exit");
    std::lock_guard lock(connections_mutex_);
    for (auto& c : connections_) {
      if (c->thread.joinable())
        c->thread.join();
    }
  }

  /// Connections the learner still holds (open, or finished and not yet joined); for tests.
  std::size_t held_connections() const {
    std::lock_guard lock(connections_mutex_);
    return connections_.size();
  }

  /// A consistent copy of the counters.
  learner_stats stats() const {
    std::lock_guard lock(stats_mutex_);
    learner_stats s = stats_;
    s.queue_depth = queue_.size();
    s.connected_actors = connected_.load();
    // One instant for the clock and both threads' splits, so their states sum to the clock.
    read_at_one_instant(
        [&](auto now, const auto& inference, const auto& trainer) {
          s.seconds_since_start = std::chrono::duration<double>(now - created_).count();
          s.seconds_waiting_for_batch = inference[waiting_for_batch];
          s.seconds_inference = inference[inferring];
          s.seconds_blocked_on_queue = inference[blocked_on_queue];
          s.seconds_waiting_for_data = trainer[waiting_for_data];
          s.seconds_training = trainer[training];
        },
        inference_time_, trainer_time_);
    return s;
  }

  /// The parameters most recently published by the trainer.
  std::uint64_t parameter_version() const { return params_.version(); }

  /// Copies the newest published parameters into `net` (e.g. to evaluate or save them).
  void copy_parameters(Net& net) const {
    std::uint64_t v = 0;
    params_.update_if_newer(&v, net.parameters());
  }

 private:
  /// One inference batch's inputs and outputs, preallocated for `capacity` rows.
  struct payload {
    std::vector<std::uint32_t> slots;
    std::vector<std::uint64_t> run_ids;
    std::vector<scalar> rewards;
    std::vector<std::uint8_t> dones;      // as sent by the actor
    std::vector<std::uint8_t> truncated;  // as sent: the episode ended by a time limit
    std::vector<scalar> observations;
  };

  /// One actor connection. Kept until the learner stops, so that a batch in flight can still
  /// point at it after its actor has gone.
  struct connection_state {
    explicit connection_state(connection_type c)
        : conn(std::move(c)), accepted(std::chrono::steady_clock::now()) {}
    connection_type conn;
    std::thread thread;
    std::string name;
    std::size_t first_slot = 0;
    std::size_t num_envs = 0;
    std::vector<std::byte> frame;  // incoming frame payload
    std::vector<std::byte> reply;  // outgoing actions frame
    protocol::step_view step;
    std::chrono::steady_clock::time_point received;  // when the step in the batcher arrived
    // A step of this actor is in the batcher and its actions are not written yet. Set by the
    // connection thread before it submits; cleared by the inference thread (release) once it
    // has read `received`, before it writes the actions. A step that arrives while it is set
    // breaks "one request in flight per actor" (docs/protocol.md): unexpected_message.
    std::atomic<bool> awaiting_actions{false};
    std::mutex write_mutex;  // the inference thread, refusals and stop() may all write
    std::atomic<bool> open{true};
    std::atomic<bool> finished{false};  // its thread has nothing left to do: may be joined
    std::chrono::steady_clock::time_point accepted;
    std::atomic<bool> welcomed{false};  // handshake done: the watchdog leaves it alone
    std::mutex mutex;                   // guards in_flight for the closing handshake
    std::condition_variable idle;
    int in_flight = 0;
  };

  payload make_payload(std::size_t capacity) const {
    payload p;
    p.slots.resize(capacity);
    p.run_ids.resize(capacity);
    p.rewards.resize(capacity);
    p.dones.resize(capacity);
    p.truncated.resize(capacity);
    p.observations.resize(capacity * obs_size_);
    return p;
  }

  void log(const std::string& line) const { config_.log(line); }

  void accept_loop(listener_type& listener) {
    while (!stopping_) {
      try {
        spawn_connection(listener.accept());
      } catch (const transport_error& e) {
        if (!stopping_)
          log(std::string("seedrl learner: accept failed: ") + e.what());
        return;
      }
    }
  }

  void spawn_connection(connection_type c) {
    std::lock_guard lock(connections_mutex_);
    if (stopping_)
      return;
    reap_finished_connections();
    if (connections_.size() >= config_.max_connections) {
      connection_state refused(std::move(c));
      refuse(refused, protocol::message_type::reject, protocol::error_code::too_many_envs,
             "the learner already holds its maximum of " + std::to_string(config_.max_connections) +
                 " connections");
      return;
    }
    connections_.push_back(std::make_unique<connection_state>(std::move(c)));
    connection_state* s = connections_.back().get();
    s->thread = std::thread([this, s] { connection_loop(*s); });
  }

  /// Joins and frees connections whose thread has finished, so that actors that come and go
  /// (reconnects, restarts) do not accumulate. A finished connection has no request left in
  /// any batch (its thread waited for that), so nothing else refers to it. Called with
  /// connections_mutex_ held.
  void reap_finished_connections() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->finished.load(std::memory_order_acquire)) {
        (*it)->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// Sends an error (or reject) frame best effort, logs, and closes the connection.
  void refuse(connection_state& s, protocol::message_type type, protocol::error_code code,
              const std::string& why) {
    if (type == protocol::message_type::reject) {
      std::lock_guard lock(stats_mutex_);
      ++stats_.rejected_connections;
    }
    log("seedrl learner: closing " + s.conn.peer() + (s.name.empty() ? "" : " (" + s.name + ")") +
        ": " + protocol::to_string(code) + ": " + why);
    try {
      std::vector<std::byte> frame;
      protocol::encode_status(type, {code, why}, frame);
      const std::span<const std::byte> bufs[] = {frame};
      std::lock_guard lock(s.write_mutex);
      s.conn.write(bufs);
    } catch (const std::exception&) {
      // The peer may already be gone; the log line above is what matters.
    }
    s.conn.close();
  }

  /// Reads one whole frame into `s.frame`; false on a closed link or a header violation.
  bool read_frame(connection_state& s, protocol::frame_header& h, bool handshaken) {
    std::array<std::byte, protocol::header_size> header{};
    s.conn.read(header);
    std::string why;
    const auto code = protocol::decode_header(header, config_.max_payload, h, &why);
    if (code != protocol::error_code::none) {
      refuse(s, handshaken ? protocol::message_type::error : protocol::message_type::reject, code,
             why);
      return false;
    }
    s.frame.resize(h.payload_length);
    if (h.payload_length > 0)
      s.conn.read(s.frame);
    return true;
  }

  /// The learner's side of docs/security.md's challenge-response; true once the actor proved
  /// it knows the secret and the learner's own proof was sent. Refuses and returns false
  /// otherwise, so a peer without the secret never reaches hello, let alone the batcher.
  bool authenticate(connection_state& s) {
    protocol::frame_header h{};
    if (!read_frame(s, h, false))
      return false;
    if (h.type == protocol::message_type::hello) {
      refuse(s, protocol::message_type::reject, protocol::error_code::auth_required,
             "this learner requires authentication: give the actor the shared secret "
             "(SEEDRL_AUTH_SECRET or a secret file)");
      return false;
    }
    if (h.type != protocol::message_type::auth_request) {
      refuse(s, protocol::message_type::reject, protocol::error_code::unexpected_message,
             std::string("expected auth_request first, got ") + protocol::to_string(h.type));
      return false;
    }
    std::string why;
    if (const auto code = protocol::decode_auth_request(s.frame, &why);
        code != protocol::error_code::none) {
      refuse(s, protocol::message_type::reject, code, why);
      return false;
    }
    security::learner_handshake handshake(*config_.auth_secret);
    std::vector<std::byte> frame;
    protocol::encode_auth_challenge(handshake.challenge(), frame);
    write_frame(s, frame);
    if (!read_frame(s, h, false))
      return false;
    if (h.type != protocol::message_type::auth_response) {
      refuse(s, protocol::message_type::reject, protocol::error_code::unexpected_message,
             std::string("expected auth_response, got ") + protocol::to_string(h.type));
      return false;
    }
    security::auth_nonce actor_nonce{};
    security::auth_proof actor_proof{};
    if (const auto code = protocol::decode_auth_response(s.frame, actor_nonce, actor_proof, &why);
        code != protocol::error_code::none) {
      refuse(s, protocol::message_type::reject, code, why);
      return false;
    }
    const auto learner_proof = handshake.verify_actor(actor_nonce, actor_proof);
    if (!learner_proof) {
      // The same text whatever failed: the peer learns nothing from it.
      refuse(s, protocol::message_type::reject, protocol::error_code::auth_failed,
             "authentication failed");
      return false;
    }
    protocol::encode_auth_confirm(*learner_proof, frame);
    write_frame(s, frame);
    return true;
  }

  void write_frame(connection_state& s, std::span<const std::byte> frame) {
    const std::span<const std::byte> bufs[] = {frame};
    std::lock_guard lock(s.write_mutex);
    s.conn.write(bufs);
  }

  /// Refuses connections whose handshake takes longer than handshake_timeout: without it a
  /// peer that connects and sends nothing would hold a thread until the learner stops.
  void watchdog_loop() {
    std::unique_lock wake_lock(watchdog_mutex_);
    while (!stopping_) {
      watchdog_wake_.wait_for(wake_lock, std::chrono::milliseconds(20));
      if (stopping_)
        break;
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard lock(connections_mutex_);
      for (auto& c : connections_) {
        if (!c->welcomed && c->open && !c->finished &&
            now - c->accepted > config_.handshake_timeout) {
          c->open = false;
          refuse(*c, protocol::message_type::reject, protocol::error_code::idle_timeout,
                 "no complete handshake within " +
                     std::to_string(config_.handshake_timeout.count()) + " ms");
        }
      }
    }
  }

  void connection_loop(connection_state& s) {
    serve_actor(s);
    s.finished.store(true, std::memory_order_release);
  }

  /// Handshake, then steps until the actor leaves, misbehaves or the learner stops.
  void serve_actor(connection_state& s) {
    bool registered = false;
    try {
      protocol::frame_header h{};
      if (config_.auth_secret && !authenticate(s))
        return;
      if (!read_frame(s, h, false))
        return;
      if (h.type != protocol::message_type::hello) {
        std::string why = std::string("expected hello first, got ") + protocol::to_string(h.type);
        if (h.type == protocol::message_type::auth_request)
          why +=
              ": this learner runs without authentication (give it the shared secret too, or "
              "start the actor without one)";
        refuse(s, protocol::message_type::reject, protocol::error_code::unexpected_message, why);
        return;
      }
      protocol::hello hello;
      std::string why;
      auto code = protocol::decode_hello(s.frame, hello, &why);
      if (code == protocol::error_code::none) {
        code = protocol::check_hello(hello, obs_spec_, act_spec_, config_.max_payload, &why);
      }
      if (code != protocol::error_code::none) {
        refuse(s, protocol::message_type::reject, code, why);
        return;
      }
      s.name = hello.name;
      s.num_envs = hello.num_envs;
      if (s.num_envs > config_.batching.max_request_rows) {
        refuse(s, protocol::message_type::reject, protocol::error_code::too_many_envs,
               "an actor may step at most " + std::to_string(config_.batching.max_request_rows) +
                   " envs, got " + std::to_string(s.num_envs));
        return;
      }
      {
        std::lock_guard lock(slots_mutex_);
        const auto first = store_.allocate(s.num_envs);
        if (!first) {
          refuse(s, protocol::message_type::reject, protocol::error_code::too_many_envs,
                 "no room for " + std::to_string(s.num_envs) + " more envs (max_envs " +
                     std::to_string(config_.max_envs) + ")");
          return;
        }
        s.first_slot = *first;
      }
      // Counted before the welcome goes out: the cleanup below undoes exactly this if the write
      // fails, and an actor that has its welcome is already in the counters.
      registered = true;
      s.welcomed = true;
      ++connected_;
      batcher_.add_connected(static_cast<std::ptrdiff_t>(s.num_envs));
      s.reply.resize(protocol::actions_frame_size(s.num_envs, act_spec_));
      {
        std::vector<std::byte> frame;
        protocol::encode_welcome({static_cast<std::uint32_t>(s.first_slot),
                                  static_cast<std::uint32_t>(s.num_envs), config_.max_payload, 0},
                                 frame);
        write_frame(s, frame);
      }
      log("seedrl learner: actor " + s.name + " from " + s.conn.peer() + " connected with " +
          std::to_string(s.num_envs) + " envs");
      const std::size_t obs_bytes = obs_spec_.num_bytes();
      const std::size_t expected = protocol::step_payload_size(s.num_envs, obs_bytes);
      for (;;) {  // until the actor leaves or stop() closes the link (after its goodbye)
        if (!read_frame(s, h, true))
          break;
        if (h.type == protocol::message_type::keepalive)
          continue;
        if (h.type == protocol::message_type::actor_stats) {
          protocol::actor_stats m;
          code = protocol::decode_actor_stats(s.frame, m, &why);
          if (code != protocol::error_code::none) {
            refuse(s, protocol::message_type::error, code, why);
            break;
          }
          std::lock_guard lock(stats_mutex_);
          stats_.actor_steps += static_cast<std::int64_t>(m.steps);
          stats_.actor_seconds_env += m.env_seconds;
          stats_.actor_seconds_waiting += m.wait_seconds;
          continue;
        }
        if (h.type == protocol::message_type::close) {
          log("seedrl learner: actor " + s.name + " said goodbye");
          break;
        }
        if (h.type != protocol::message_type::step) {
          refuse(s, protocol::message_type::error, protocol::error_code::unexpected_message,
                 std::string("expected step, got ") + protocol::to_string(h.type));
          break;
        }
        if (s.awaiting_actions.load(std::memory_order_acquire)) {
          // Submitting it would race with the inference thread on `received` and put the same
          // env slots twice into one batch. Only this connection ends; the cleanup below waits
          // for the step still in flight.
          refuse(s, protocol::message_type::error, protocol::error_code::unexpected_message,
                 "a step arrived while the previous one still awaits its actions: one request in "
                 "flight per actor");
          break;
        }
        if (h.payload_length != expected) {
          refuse(s, protocol::message_type::error, protocol::error_code::wrong_observation_size,
                 "step payload is " + std::to_string(h.payload_length) + " bytes, expected " +
                     std::to_string(expected) + " for " + std::to_string(s.num_envs) + " envs of " +
                     std::to_string(obs_bytes) + "-byte observations");
          break;
        }
        code = protocol::parse_step(s.frame, static_cast<std::uint32_t>(s.num_envs), obs_bytes,
                                    s.step, &why);
        if (code != protocol::error_code::none) {
          refuse(s, protocol::message_type::error, code, why);
          break;
        }
        {
          std::lock_guard lock(s.mutex);
          ++s.in_flight;
        }
        // The batcher's lock publishes both to the inference thread.
        s.awaiting_actions.store(true, std::memory_order_relaxed);
        s.received = std::chrono::steady_clock::now();
        const bool accepted = batcher_.submit(
            &s, s.num_envs, [&](payload& p, std::size_t first) { fill(s, p, first); });
        if (!accepted) {  // the learner is stopping: tell the actor, as stop() does
          s.awaiting_actions.store(false, std::memory_order_relaxed);
          {
            std::lock_guard lock(s.mutex);
            --s.in_flight;
          }
          std::vector<std::byte> goodbye;
          protocol::encode_close({protocol::error_code::shutting_down, "the learner is stopping"},
                                 goodbye);
          try {
            write_frame(s, goodbye);
          } catch (const std::exception&) {
          }
          break;
        }
      }
    } catch (const transport_error& e) {
      if (!stopping_)
        log("seedrl learner: actor " + (s.name.empty() ? s.conn.peer() : s.name) +
            " went away: " + e.what());
    } catch (const std::exception& e) {
      refuse(s, protocol::message_type::error, protocol::error_code::internal, e.what());
    }
    s.open = false;
    s.conn.close();
    if (registered) {
      // Wait until inference has answered (or skipped) our last request, then hand the slots
      // back through the inference thread so that no batch still refers to them.
      std::unique_lock lock(s.mutex);
      s.idle.wait(lock, [&] { return s.in_flight == 0; });
      lock.unlock();
      --connected_;
      batcher_.add_connected(-static_cast<std::ptrdiff_t>(s.num_envs));
      std::lock_guard slots(slots_mutex_);
      releases_.push_back({s.first_slot, s.num_envs});
    }
  }

  /// Copies a parsed step into the batch rows [first, first + k); runs outside the batcher lock.
  void fill(connection_state& s, payload& p, std::size_t first) {
    const auto& v = s.step;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::size_t row = first + v.env_index(i);
      p.slots[row] = static_cast<std::uint32_t>(s.first_slot + v.env_index(i));
      p.run_ids[row] = v.run_id(i);
      p.rewards[row] = static_cast<scalar>(v.reward(i));
      p.dones[row] = v.done(i);
      p.truncated[row] = v.truncated(i);
      scalar* dst = p.observations.data() + row * obs_size_;
      const auto src = v.observation(i);
      switch (obs_spec_.type) {
        case dtype::float32:
          for (std::size_t j = 0; j < obs_size_; ++j)
            dst[j] = static_cast<scalar>(protocol::detail::load_f32(src.data() + 4 * j));
          break;
        case dtype::float64:
          for (std::size_t j = 0; j < obs_size_; ++j)
            dst[j] = static_cast<scalar>(protocol::detail::load_f64(src.data() + 8 * j));
          break;
        case dtype::uint8:
          for (std::size_t j = 0; j < obs_size_; ++j)
            dst[j] = static_cast<scalar>(std::to_integer<std::uint8_t>(src[j]));
          break;
        case dtype::int32:
          for (std::size_t j = 0; j < obs_size_; ++j) {
            dst[j] = static_cast<scalar>(
                static_cast<std::int32_t>(protocol::detail::load_u32(src.data() + 4 * j)));
          }
          break;
      }
    }
  }

  void apply_releases() {
    std::vector<std::pair<std::size_t, std::size_t>> todo;
    {
      std::lock_guard lock(slots_mutex_);
      todo.swap(releases_);
      for (const auto& [first, k] : todo) {
        for (std::size_t j = first; j < first + k; ++j) {
          dropped_steps_ += static_cast<std::int64_t>(builder_.pending(j));
          builder_.reset(j);  // drop partial unrolls
        }
        store_.release(first, k);
      }
    }
  }

  void inference_loop() {
    const std::size_t cap = batcher_.capacity();
    const auto W = static_cast<std::size_t>(infer_net_.state_size());
    auto state = infer_net_.initial_state(cap);
    std::vector<scalar> state_before(cap * W), logits(cap * num_actions_), values(cap), logp(cap);
    std::vector<std::uint8_t> resets(cap);
    std::vector<std::int32_t> prev_actions(cap), actions(cap);
    std::uint64_t version = 0;
    std::vector<finished_episode> finished;  // reused: no allocation per batch
    finished.reserve(cap);
    for (;;) {
      auto* batch = batcher_.next_batch();
      const auto t_start = std::chrono::steady_clock::now();
      if (batch == nullptr)
        break;
      inference_time_.enter(inferring);
      apply_releases();
      params_.update_if_newer(&version, infer_net_.parameters());
      const std::size_t B = batch->rows;
      payload& p = batch->payload;
      finished.clear();
      std::unique_lock slots(slots_mutex_);  // slots cannot be released under our feet
      for (std::size_t r = 0; r < B; ++r) {
        const std::size_t slot = p.slots[r];
        const auto seen =
            store_.observe(slot, p.run_ids[r], static_cast<double>(p.rewards[r]), p.dones[r] != 0);
        if (seen.run_changed) {
          dropped_steps_ += static_cast<std::int64_t>(builder_.pending(slot));
          builder_.reset(slot);
        }
        if (seen.finished)
          finished.push_back(*seen.finished);
        resets[r] = static_cast<std::uint8_t>(p.dones[r] != 0 || seen.run_changed);
        prev_actions[r] = store_.prev_action(slot);
        const auto row = store_.state(slot);
        std::copy(row.begin(), row.end(),
                  state_before.begin() + static_cast<std::ptrdiff_t>(r * W));
      }
      slots.unlock();
      // Inference on the first B rows of the preallocated buffers.
      state.batch = static_cast<std::ptrdiff_t>(B);
      std::copy_n(state_before.begin(), B * W, state.data.begin());
      agent_step_output<scalar> out{std::span(logits).first(B * num_actions_),
                                    std::span(values).first(B)};
      infer_net_.infer({std::span<const scalar>(p.observations).first(B * obs_size_),
                        std::span<const scalar>(p.rewards).first(B),
                        std::span<const std::uint8_t>(resets).first(B),
                        std::span<const std::int32_t>(prev_actions).first(B)},
                       state, out);
      sample_actions<scalar>(out.logits, B, num_actions_, rng_, std::span(actions).first(B));
      categorical_log_probs<scalar>(out.logits, B, num_actions_,
                                    std::span<const std::int32_t>(actions).first(B),
                                    std::span(logp).first(B));
      // Answer every request before the slower bookkeeping, to keep the actors' round trip short.
      // The batch's rows stop counting as waiting first: an actor steps again as soon as it has
      // its actions, and its old rows must not look "waiting" still (see answered()).
      batcher_.answered(batch);
      double batching_seconds = 0.0, answer_seconds = 0.0;
      for (const auto& e : batch->entries) {
        auto& s = *static_cast<connection_state*>(e.requester);
        // Read before answering: once answered, the actor's next step overwrites `received`.
        batching_seconds += std::chrono::duration<double>(t_start - s.received).count();
        // Cleared before the write, not after: the actor may send its next step as soon as it
        // reads these actions, and that step is legal. Release: our read of `received` comes
        // before the connection thread's next write of it.
        s.awaiting_actions.store(false, std::memory_order_release);
        if (s.open) {
          try {
            protocol::encode_discrete_actions(
                s.reply, std::span<const std::int32_t>(actions).subspan(e.first_row, e.rows));
            const std::span<const std::byte> bufs[] = {s.reply};
            std::lock_guard lock(s.write_mutex);
            s.conn.write(bufs);
          } catch (const std::exception&) {
            s.conn.close();  // its reader notices and cleans up
          }
        }
        const auto answered = std::chrono::steady_clock::now();
        answer_seconds += std::chrono::duration<double>(answered - t_start).count();
      }
      slots.lock();
      for (std::size_t r = 0; r < B; ++r) {
        const std::size_t slot = p.slots[r];
        const auto row = store_.state(slot);
        std::copy_n(state.data.begin() + static_cast<std::ptrdiff_t>(r * W), W, row.begin());
        store_.set_prev_action(slot, actions[r]);
        unroll<scalar>* done_unroll = builder_.append(
            slot, std::span<const scalar>(p.observations).subspan(r * obs_size_, obs_size_),
            p.rewards[r], resets[r] != 0, p.truncated[r] != 0, prev_actions[r], actions[r], logp[r],
            version, std::span<const scalar>(state_before).subspan(r * W, W));
        if (done_unroll != nullptr) {
          slots.unlock();
          // Backpressure from a full training queue is the trainer's limit, not inference work.
          inference_time_.enter(blocked_on_queue);
          if (!queue_.push(done_unroll))
            builder_.recycle(done_unroll);  // shutting down
          inference_time_.enter(inferring);
          slots.lock();
        }
      }
      slots.unlock();
      for (const auto& e : batch->entries) {
        auto& s = *static_cast<connection_state*>(e.requester);
        std::lock_guard lock(s.mutex);
        if (--s.in_flight == 0 && !s.open)
          s.idle.notify_all();
      }
      const auto requests = static_cast<std::int64_t>(batch->entries.size());
      batcher_.release(batch);
      inference_time_.enter(waiting_for_batch);
      std::lock_guard lock(stats_mutex_);
      stats_.frames += static_cast<std::int64_t>(B);
      stats_.batches += 1;
      stats_.batch_rows += static_cast<std::int64_t>(B);
      stats_.requests += requests;
      stats_.dropped_unroll_steps = dropped_steps_;
      stats_.request_seconds_batching += batching_seconds;
      stats_.request_seconds_inference += answer_seconds;
      for (const auto& f : finished) {
        ++stats_.episodes;
        // Ring of the last 100 returns with a running sum: O(1) and allocation-free per episode.
        if (returns_counted_ == recent_returns_.size()) {
          returns_sum_ -= recent_returns_[returns_next_];
          lengths_sum_ -= recent_lengths_[returns_next_];
        } else {
          ++returns_counted_;
        }
        recent_returns_[returns_next_] = f.episode_return;
        recent_lengths_[returns_next_] = static_cast<double>(f.length);
        returns_sum_ += f.episode_return;
        lengths_sum_ += static_cast<double>(f.length);
        returns_next_ = (returns_next_ + 1) % recent_returns_.size();
      }
      if (returns_counted_ > 0) {
        stats_.mean_return = returns_sum_ / static_cast<double>(returns_counted_);
        stats_.mean_episode_length = lengths_sum_ / static_cast<double>(returns_counted_);
        stats_.returns_counted = returns_counted_;
      }
    }
  }

  void trainer_loop() {
    const std::size_t T = config_.unroll_length, T1 = T + 1, B = config_.batch_size,
                      A = num_actions_;
    const auto W = static_cast<std::size_t>(train_net_.state_size());
    std::vector<scalar> obs(T1 * B * obs_size_), rewards(T1 * B), behaviour(T1 * B), start(B * W);
    std::vector<std::uint8_t> dones(T1 * B), truncated(T1 * B);
    std::vector<std::int32_t> prev_actions(T1 * B), actions(T1 * B);
    std::vector<unroll<scalar>*> batch;
    batch.reserve(B);
    for (;;) {
      trainer_time_.enter(waiting_for_data);
      batch.clear();
      while (batch.size() < B) {
        auto u = queue_.pop();
        if (!u) {
          for (auto* v : batch)
            builder_.recycle(v);
          return;
        }
        batch.push_back(*u);
      }
      trainer_time_.enter(training);
      // The parameters about to be trained are the last ones published; only this thread
      // publishes once training runs.
      const std::uint64_t trainer_version = params_.version();
      std::uint64_t lag_sum = 0, lag_max = 0;
      // Time-major [T+1, B]: step t of unroll b is row t * B + b.
      for (std::size_t b = 0; b < B; ++b) {
        const auto& u = *batch[b];
        for (std::size_t t = 0; t < T1; ++t) {
          const std::size_t r = t * B + b;
          std::copy_n(u.observations.begin() + static_cast<std::ptrdiff_t>(t * obs_size_),
                      obs_size_, obs.begin() + static_cast<std::ptrdiff_t>(r * obs_size_));
          rewards[r] = u.rewards[t];
          dones[r] = u.dones[t];
          truncated[r] = u.truncated[t];
          prev_actions[r] = u.prev_actions[t];
          actions[r] = u.actions[t];
          behaviour[r] = u.behaviour_log_probs[t];
          if (t < T) {  // step T only bootstraps: its action is not trained on
            const std::uint64_t lag = trainer_version - u.behaviour_versions[t];
            lag_sum += lag;
            lag_max = std::max(lag_max, lag);
          }
        }
        std::copy(u.start_state.begin(), u.start_state.end(),
                  start.begin() + static_cast<std::ptrdiff_t>(b * W));
        builder_.recycle(batch[b]);
      }
      const training_batch<scalar> tb{
          T, B, A, obs, rewards, dones, truncated, prev_actions, actions, behaviour, start};
      train_step_result r;
      try {
        r = trainer_.train_step(tb, train_net_, optimizer_, loss_, config_.max_grad_norm);
      } catch (const std::exception& e) {
        // A trainer that fails (e.g. a GPU error) stops training, not the process: inference
        // goes on with the last parameters and the log says why.
        log(std::string("seedrl learner: training stopped: ") + e.what());
        trainer_time_.enter(waiting_for_data);  // not busy
        {
          std::lock_guard lock(stats_mutex_);
          stats_.trainer_error = e.what();
        }
        queue_.close();
        return;
      }
      if (!r.applied)
        log("seedrl learner: skipped a training step: " + r.skipped);
      params_.publish(train_net_.parameters());
      std::int64_t steps = 0;
      {
        std::lock_guard lock(stats_mutex_);
        steps = ++stats_.train_steps;
        stats_.last_loss = r.terms;
        stats_.last_grad_norm = r.grad_norm;
        if (r.learning_rate == r.learning_rate)  // not NaN: the trainer knows it
          stats_.learning_rate = r.learning_rate;
        stats_.policy_lag_mean =
            T * B > 0 ? static_cast<double>(lag_sum) / static_cast<double>(T * B) : 0.0;
        stats_.policy_lag_max = lag_max;
      }
      // The trainer thread owns the parameters and optimizer, so its checkpoints are consistent.
      if (checkpoints_ && checkpoints_->due(steps) != checkpoint_reason::none)
        save_checkpoint(to_string(checkpoints_->due(steps)));
    }
  }

  /// Whether restore() loaded, in full, a checkpoint read from checkpoint_dir.
  [[nodiscard]] bool continues_checkpoint_dir() const {
    if (!resumed_from_ || resumed_from_->empty())
      return false;
    const std::filesystem::path from =
        resumed_from_->has_parent_path() ? resumed_from_->parent_path() : ".";
    std::error_code ec;
    return std::filesystem::equivalent(from, config_.checkpoint_dir, ec) && !ec;
  }

  /// Writes a checkpoint of the training parameters, optimizer and counters. Called by the
  /// trainer thread, or by stop() once it has joined; a failure (disk full) is logged and
  /// training goes on.
  void save_checkpoint(const std::string& why) {
    const learner_stats s = stats();
    checkpoint c;
    c.step = s.train_steps;
    try {
      trainer_.sync_to_host(train_net_, optimizer_);
    } catch (const std::exception& e) {  // e.g. the GPU failed: its state is out of reach
      log(std::string("seedrl learner: could not save a checkpoint: the trainer's state could "
                      "not be read: ") +
          e.what());
      return;
    }
    store_parameters(c, train_net_);
    store_optimizer(c, optimizer_);
    c.counters["frames"] = s.frames;
    c.counters["episodes"] = s.episodes;
    c.counters["train_steps"] = s.train_steps;
    c.counters["mean_return"] = s.mean_return;
    for (const auto& [key, value] : config_.checkpoint_meta)
      c.meta[key] = value;
    try {
      checkpoint_write_options options;
      options.keep_last = config_.keep_checkpoints;
      options.report = [this](const std::filesystem::path& file, const std::string& reason) {
        log("seedrl learner: checkpoint " + file.string() + ": " + reason);
      };
      const auto path = write_checkpoint(config_.checkpoint_dir, c, options);
      checkpoints_->saved(c.step);
      {
        std::lock_guard lock(stats_mutex_);
        ++stats_.checkpoints_saved;
      }
      log("seedrl learner: saved " + path.string() + " (" + why + ", " + std::to_string(s.frames) +
          " frames)");
    } catch (const std::exception& e) {
      log(std::string("seedrl learner: could not save a checkpoint: ") + e.what());
    }
  }

  learner_config config_;
  observation_spec obs_spec_;
  action_spec act_spec_;
  std::size_t obs_size_;
  std::size_t num_actions_;
  Net infer_net_;
  Net train_net_;
  Opt optimizer_;
  Trn trainer_;
  impala_loss<scalar> loss_;
  env_state_store<scalar> store_;
  unroll_builder<scalar> builder_;
  bounded_queue<unroll<scalar>*> queue_;
  dynamic_batcher<payload> batcher_;
  parameter_store<scalar> params_;
  random_generator rng_;

  // Where the inference and trainer threads' time goes (learner_stats' seconds_* fields).
  enum inference_state : std::size_t { waiting_for_batch, inferring, blocked_on_queue };
  enum trainer_state : std::size_t { waiting_for_data, training };
  std::chrono::steady_clock::time_point created_;
  thread_time_split<3> inference_time_;
  thread_time_split<2> trainer_time_;

  std::mutex slots_mutex_;  // slot allocation and release vs. the inference thread
  std::vector<std::pair<std::size_t, std::size_t>> releases_;

  mutable std::mutex connections_mutex_;
  std::list<std::unique_ptr<connection_state>> connections_;
  std::vector<std::unique_ptr<listener_type>> listeners_;
  std::vector<std::thread> accept_threads_;
  std::optional<checkpoint_schedule<>> checkpoints_;   // set when checkpoint_dir is
  std::optional<std::filesystem::path> resumed_from_;  // the source of a full restore()
  std::thread inference_thread_, trainer_thread_, watchdog_thread_;
  std::mutex watchdog_mutex_;
  std::condition_variable watchdog_wake_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connected_{0};

  mutable std::mutex stats_mutex_;
  learner_stats stats_;
  std::array<double, 100> recent_returns_{}, recent_lengths_{};
  std::size_t returns_counted_ = 0, returns_next_ = 0;
  double returns_sum_ = 0.0, lengths_sum_ = 0.0;
  std::int64_t dropped_steps_ = 0;  // inference thread only; copied into stats_
};

}  // namespace seedrl
