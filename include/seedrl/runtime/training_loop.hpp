#pragma once
/// \file
/// The learner's training side: one thread takes `batch_size` completed unrolls from the
/// training queue, stacks them time-major into a training_batch, has the Trainer run one step
/// with the loss, publishes the new parameters to inference and writes checkpoints on
/// schedule. It owns the training copy of the network, the optimizer and the checkpoint
/// format's counters (what `restore` reads back).
///
/// With a trainer that publishes on its device (DevicePublishingTrainer, e.g. the GPU trainer
/// next to a GPU inference engine) and publish_on_device() called, each step's parameters go to
/// inference through the trainer's device source instead, and the host parameter_store gets a
/// copy only where the host needs one anyway: after each checkpoint's sync_to_host (which
/// downloads them regardless) and once when training ends. A per-step download would put a
/// device-to-host copy of every set on the training thread's critical path, which is what
/// device publication removes; nothing in the learner reads the store while it trains (only
/// learner::copy_parameters, which then returns the last checkpoint's parameters).
///
/// With several learner ranks (a trainer with a gradient reducer, docs/scaling.md), the ranks
/// meet before the first step (the run's settings, parameters and optimizer state compared),
/// agree before every step whether all of them train it (distributed/rank_agreement.hpp: no
/// rank is left waiting in a gradient collective for one that stopped), compare their
/// parameters and optimizer state every learner_config::rank_check_every steps and at the
/// end, and only rank 0 writes checkpoints.
///
/// `Net` models LearnerNetwork, `Opt` Optimizer, `Trn` Trainer<Trn, Net, Opt, LossFn> and
/// `LossFn` Loss (seedrl::impala_loss by default).

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/distributed/rank_agreement.hpp"
#include "seedrl/distributed/state_check.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/io/checkpoint_schedule.hpp"
#include "seedrl/replay/replay_file.hpp"
#include "seedrl/runtime/bounded_queue.hpp"
#include "seedrl/runtime/detail/stats_board.hpp"
#include "seedrl/runtime/input_normalizer.hpp"
#include "seedrl/runtime/learner_config.hpp"
#include "seedrl/runtime/learner_stats.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/runtime/thread_time_split.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/runtime/unroll_builder.hpp"
#include "seedrl/runtime/unroll_replay.hpp"

namespace seedrl {

/// See the file comment.
template <class Net, class Opt, class Trn = host_trainer,
          class LossFn = impala_loss<typename Net::scalar_type>>
class training_loop {
 public:
  using scalar = typename Net::scalar_type;
  using unroll_queue = bounded_queue<unroll<scalar>*>;
  using time_split = thread_time_split<3>;

  /// `net` is copied; unrolls of `observation_size`-element observations come from `queue`
  /// and go back to `pool`, parameters are published to `params`, counters go to `stats`.
  /// `num_actions` is the batch's policy width, `action_dim` D for continuous actions (else
  /// 0). `created` is the learner's clock start. Checkpoints take a snapshot of `normalizer`'s
  /// statistics, which the inference thread goes on updating.
  /// Publishes `net`'s parameters.
  training_loop(const learner_config& config, const Net& net, Opt optimizer, Trn trainer,
                LossFn loss, std::size_t observation_size, std::size_t num_actions,
                std::size_t action_dim, unroll_queue& queue, unroll_builder<scalar>& pool,
                parameter_store<scalar>& params, detail::stats_board& stats,
                std::chrono::steady_clock::time_point created, input_normalizer<scalar>& normalizer)
      : config_(config),
        obs_size_(observation_size),
        num_actions_(num_actions),
        action_dim_(action_dim),
        net_(net),
        optimizer_(std::move(optimizer)),
        trainer_(std::move(trainer)),
        loss_(std::move(loss)),
        queue_(queue),
        pool_(pool),
        params_(params),
        stats_(stats),
        normalizer_(normalizer),
        time_(waiting_for_data, created) {
    // learner_config::trainer_threads decides, over a count the trainer was built with.
    if constexpr (requires { trainer_.set_threads(config.trainer_threads); })
      trainer_.set_threads(config.trainer_threads);
    const update_schedule plan = schedule_of(loss_);
    if (plan.epochs == 0 || plan.minibatches == 0 || config.batch_size % plan.minibatches != 0) {
      throw std::invalid_argument(
          "seedrl::learner: the loss's update schedule (" + std::to_string(plan.epochs) +
          " epochs x " + std::to_string(plan.minibatches) +
          " minibatches) needs at least one of each, and batch_size (" +
          std::to_string(config.batch_size) + ") must be a multiple of the minibatch count");
    }
    params_.publish(net_.parameters());
    sample_rng_.seed(config.seed ^ 0x5eed2d2ULL);  // the replay's draws
  }

  training_loop(const training_loop&) = delete;
  training_loop& operator=(const training_loop&) = delete;
  ~training_loop() { join(); }

  /// Restores a checkpoint before start(): always the parameters (checked against this
  /// network's size and scalar type); unless `weights_only`, also the optimizer state and the
  /// frame, episode and training-step counters. Throws checkpoint_error and changes nothing on
  /// a mismatch; publishes the restored parameters.
  void restore(const checkpoint& c, bool weights_only) {
    Net restored(net_);
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
              net_.parameters().begin());
    if (!weights_only)
      optimizer_ = std::move(optimizer);
    trainer_.load_from_host(net_, optimizer_);
    params_.publish(net_.parameters());
    if (!weights_only) {
      stats_.update([&](learner_stats& s) {
        s.frames = frames;
        s.episodes = episodes;
        s.train_steps = steps;
      });
      resumed_from_ = c.source;
    }
  }

  /// Turns on device publication (see the file comment): the trainer takes the network and
  /// optimizer now, and from here on publishes every step's parameters into the returned
  /// source, which the inference loop reads. Call before start().
  std::shared_ptr<parameter_source<scalar>> publish_on_device() requires
      DevicePublishingTrainer<Trn, Net, Opt> {
    device_source_ = trainer_.publish_on_device(net_, optimizer_);
    return device_source_;
  }

  /// The version of the newest published set: the device source's with device publication,
  /// else the host store's.
  std::uint64_t parameter_version() const {
    return device_source_ ? device_source_->version() : params_.version();
  }

  /// The loss it trains with.
  const LossFn& loss() const noexcept { return loss_; }

  /// Trains from `replay` (a replay loss's, R2D2) instead of the training queue: each step
  /// samples batch_size sequences (waiting while training is ahead of the actors), trains with
  /// their importance weights and gives the loss's new priorities back. Call before start().
  void use_replay(unroll_replay<scalar>* replay) noexcept { replay_ = replay; }

  /// Several ranks: where the rank's status reads its counters (the learner's stats(), which
  /// holds both threads' time). Call before start().
  void set_stats_source(std::function<learner_stats()> source) {
    stats_source_ = std::move(source);
  }

  /// Several ranks: why this rank stops, told to the others at the next agreement; call before
  /// stopping the learner (a rank stopped without it tells them run_stop::stopped).
  void request_stop(run_stop why) noexcept { stop_reason_.store(why); }

  /// The reducer of a data-parallel trainer with more than one rank, else null.
  distributed::gradient_reducer* ranks() const noexcept {
    if constexpr (requires { trainer_.reducer().get(); }) {
      distributed::gradient_reducer* r = trainer_.reducer().get();
      return r != nullptr && r->ranks() > 1 ? r : nullptr;
    } else {
      return nullptr;
    }
  }

  /// Starts the trainer thread. Throws checkpoint_error, and starts nothing, if
  /// checkpoint_dir holds checkpoints and this loop was not restored in full from one of
  /// them: a new run must not save beside another run's (require_no_checkpoints).
  /// An inference-only learner (learner_config::inference_only) starts no thread and saves no
  /// checkpoint: nothing ever reaches the queue.
  void start() {
    distributed::gradient_reducer* const world = ranks();
    if (config_.inference_only)
      return;
    if (!config_.checkpoint_dir.empty()) {
      if (!continues_checkpoint_dir())
        require_no_checkpoints(config_.checkpoint_dir);
      if (world == nullptr || world->rank() == 0)  // rank 0 writes for all
        checkpoints_.emplace(config_.checkpointing, stats_.read().train_steps);
    }
    if (world != nullptr) {
      stats_.update([&](learner_stats& s) { s.rank = world->rank(); });
      normalizer_.share_between_ranks();  // before inference starts updating them
    }
    thread_ = std::thread([this] { run(); });
  }

  /// Joins the thread (it ends once the queue is closed and drained), then saves a checkpoint
  /// when asked to at exit. Safe to call twice.
  void stop() {
    join();
    // Always at exit (when asked for), even with no new training step: the frame and episode
    // counters moved on, and a resumed run should continue from them.
    if (checkpoints_ && config_.checkpointing.at_exit && !saved_at_exit_) {
      saved_at_exit_ = true;
      save_checkpoint("at exit");
    }
  }

  /// Where the trainer thread's time goes; see report_time.
  const time_split& thread_time() const noexcept { return time_; }

  /// Writes a reading of thread_time() into the learner's counters.
  static void report_time(const std::array<double, 3>& seconds, learner_stats& s) noexcept {
    s.seconds_waiting_for_data = seconds[waiting_for_data];
    s.seconds_training = seconds[training];
    s.seconds_waiting_for_ranks = seconds[waiting_for_ranks];
  }

 private:
  enum state : std::size_t { waiting_for_data, training, waiting_for_ranks };

  void join() {
    if (thread_.joinable())
      thread_.join();
  }

  void run() {
    distributed::gradient_reducer* const world = ranks();
    if (world != nullptr && !meet(*world))
      return;
    const std::size_t T = config_.unroll_length, T1 = T + 1, B = config_.batch_size,
                      A = num_actions_;
    const auto W = static_cast<std::size_t>(net_.state_size());
    std::vector<scalar> obs(T1 * B * obs_size_), rewards(T1 * B), behaviour(T1 * B), start(B * W);
    std::vector<std::uint8_t> dones(T1 * B), truncated(T1 * B);
    std::vector<std::int32_t> prev_actions(T1 * B), actions(T1 * B);
    const std::size_t D = action_dim_;
    std::vector<scalar> prev_env_actions(T1 * B * D), raw_actions(T1 * B * D);
    std::vector<unroll<scalar>*> batch;
    batch.reserve(B);
    for (;;) {
      time_.enter(waiting_for_data);
      batch.clear();
      bool have_batch = true;
      if (replay_ != nullptr) {
        have_batch = replay_->sample(sample_rng_, sampled_);
      } else {
        while (batch.size() < B) {
          auto u = queue_.pop();
          if (!u) {
            have_batch = false;
            break;
          }
          batch.push_back(*u);
        }
      }
      if (world != nullptr && !agree(*world, have_batch))
        have_batch = false;
      if (!have_batch) {
        for (auto* v : batch)
          pool_.recycle(v);
        if (device_source_)
          refresh_host_copy();  // the final parameters, for learner::copy_parameters
        return;
      }
      time_.enter(training);
      // The parameters about to be trained are the last ones published; only this thread
      // publishes once training runs. In the numbering of the source inference reads.
      const std::uint64_t trainer_version = parameter_version();
      std::uint64_t lag_sum = 0, lag_max = 0;
      training_batch<scalar> tb;
      if (replay_ != nullptr) {
        tb = sampled_.view(A);
        tb.importance_weights = sampled_.importance_weights;
      } else {
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
            std::copy_n(u.prev_env_actions.begin() + static_cast<std::ptrdiff_t>(t * D), D,
                        prev_env_actions.begin() + static_cast<std::ptrdiff_t>(r * D));
            std::copy_n(u.raw_actions.begin() + static_cast<std::ptrdiff_t>(t * D), D,
                        raw_actions.begin() + static_cast<std::ptrdiff_t>(r * D));
            if (t < T) {  // step T only bootstraps: its action is not trained on
              const std::uint64_t lag = trainer_version - u.behaviour_versions[t];
              lag_sum += lag;
              lag_max = std::max(lag_max, lag);
            }
          }
          std::copy(u.start_state.begin(), u.start_state.end(),
                    start.begin() + static_cast<std::ptrdiff_t>(b * W));
          pool_.recycle(batch[b]);
        }
        tb = {T,       B,         A,     obs, rewards,          dones,      truncated, prev_actions,
              actions, behaviour, start, D,   prev_env_actions, raw_actions};
      }
      train_step_result r;
      try {
        r = trainer_.train_step(tb, net_, optimizer_, loss_, config_.max_grad_norm);
      } catch (const std::exception& e) {
        if (world != nullptr) {
          // The other ranks may already wait in this step's collective for a gradient this
          // rank will never send: only ending every rank's process frees them.
          config_.log("seedrl learner: rank " + std::to_string(world->rank()) +
                      ": training failed: " + e.what() + "; ending every rank (" +
                      world->describe() + ")");
          world->abort_all(1);
        }
        // A trainer that fails (e.g. a GPU error) stops training, not the process: inference
        // goes on with the last parameters and the log says why.
        config_.log(std::string("seedrl learner: training stopped: ") + e.what());
        time_.enter(waiting_for_data);  // not busy
        stats_.update([&](learner_stats& s) { s.trainer_error = e.what(); });
        close_data();
        return;
      }
      if (replay_ != nullptr && r.applied && r.priorities.size() == B)
        replay_->update_priorities(sampled_.ids, r.priorities);
      if (!r.applied)
        config_.log("seedrl learner: skipped a training step: " + r.skipped);
      if (!device_source_)  // else the trainer published on its device
        params_.publish(net_.parameters());
      std::int64_t steps = 0;
      stats_.update([&](learner_stats& s) {
        steps = ++s.train_steps;
        s.last_loss = r.terms;
        s.last_grad_norm = r.grad_norm;
        if (r.learning_rate == r.learning_rate)  // not NaN: the trainer knows it
          s.learning_rate = r.learning_rate;
        s.policy_lag_mean =
            T * B > 0 ? static_cast<double>(lag_sum) / static_cast<double>(T * B) : 0.0;
        s.policy_lag_max = lag_max;
      });
      // This thread owns the parameters and optimizer, so its checkpoints are consistent.
      if (checkpoints_ && checkpoints_->due(steps) != checkpoint_reason::none)
        save_checkpoint(to_string(checkpoints_->due(steps)));
      if (world != nullptr && config_.rank_check_every > 0 &&
          steps % config_.rank_check_every == 0 &&
          !same_state(*world, "after training step " + std::to_string(steps)))
        return;
    }
  }

  /// Several ranks, before the first step: the run's settings, then the parameters and
  /// optimizer state (initialised from the same seed, or restored from the same checkpoint)
  /// must match rank 0's. False when they do not: every rank stops alike.
  bool meet(distributed::gradient_reducer& world) {
    time_.enter(waiting_for_ranks);
    try {
      distributed::require_same_on_all_ranks(world, config_.run_hash, "run settings",
                                             "when they met");
    } catch (const std::exception& e) {
      return stop_for(e.what());
    }
    return same_state(world, "when they met (a rank initialised or restored differently)");
  }

  /// Several ranks: the parameters and optimizer state compared across the ranks (every rank
  /// calls it at the same step). False, with the error recorded, when they differ.
  bool same_state(distributed::gradient_reducer& world, const std::string& when) {
    try {
      trainer_.sync_to_host(net_, optimizer_);
      const std::uint64_t h =
          distributed::training_state_hash<scalar>(net_.parameters(), optimizer_);
      distributed::require_identical_ranks(world, h, when);
      last_state_hash_ = h;
      return true;
    } catch (const std::exception& e) {
      return stop_for(e.what());
    }
  }

  /// Records why every rank stops (the same on each) and closes the queue so that inference
  /// never blocks on it; returns false.
  bool stop_for(const std::string& why) {
    config_.log(std::string("seedrl learner: ") + why);
    time_.enter(waiting_for_data);  // not busy
    stats_.update([&](learner_stats& s) {
      s.trainer_error = why;
      s.ranks_stopped = run_stop::failed;
    });
    close_data();
    return false;
  }

  /// Several ranks, with or without a batch: the agreement of this step. True when every
  /// rank trains it; otherwise every rank compares its final state and returns false.
  bool agree(distributed::gradient_reducer& world, bool have_batch) {
    time_.enter(waiting_for_ranks);
    distributed::rank_status mine;
    mine.have_batch = have_batch;
    mine.stop = stop_reason_.load();
    const learner_stats now = stats_source_ ? stats_source_() : stats_.read();
    mine.figures.frames = now.frames;
    mine.figures.episodes = now.episodes;
    mine.figures.returns_counted = now.returns_counted;
    mine.figures.mean_return = now.mean_return;
    mine.figures.seconds_since_start = now.seconds_since_start;
    mine.figures.seconds_inference = now.seconds_inference;
    mine.figures.seconds_training = now.seconds_training;
    mine.figures.seconds_waiting_for_ranks = now.seconds_waiting_for_ranks;
    distributed::rank_agreement a;
    try {
      a = distributed::agree_on_step(world, mine);
    } catch (const std::exception& e) {
      return stop_for(e.what());
    }
    stats_.update([&](learner_stats& s) { s.ranks = a.ranks; });
    if (a.stop == run_stop::none) {
      try {
        normalizer_.share_with_ranks(world);  // the same statistics on every rank
      } catch (const std::exception& e) {
        return stop_for(e.what());
      }
      return true;
    }
    const std::int64_t steps = stats_.read().train_steps;
    config_.log("seedrl learner: " + distributed::describe_stop(a) + " after training step " +
                std::to_string(steps));
    if (!same_state(world, "at the end, after training step " + std::to_string(steps)))
      return false;
    config_.log("seedrl learner: rank " + std::to_string(world.rank()) + " of " +
                std::to_string(world.ranks()) + ": parameters and optimizer state " +
                distributed::hash_text(last_state_hash_) + " after training step " +
                std::to_string(steps) + ", the same on every rank");
    time_.enter(waiting_for_data);
    stats_.update([&](learner_stats& s) {
      s.ranks_stopped = a.stop;
      s.stopping_rank = a.stopping_rank;
    });
    close_data();
    return false;
  }

  /// Closes where unrolls come from, so that inference never blocks on it again.
  void close_data() {
    queue_.close();
    if (replay_ != nullptr)
      replay_->close();
  }

  /// With device publication: brings the trainer's parameters to the host store.
  void refresh_host_copy() {
    try {
      trainer_.sync_to_host(net_, optimizer_);
      params_.publish(net_.parameters());
    } catch (const std::exception& e) {
      config_.log(std::string("seedrl learner: could not read the trainer's final parameters: ") +
                  e.what());
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
    const learner_stats s = stats_.read();
    checkpoint c;
    c.step = s.train_steps;
    try {
      trainer_.sync_to_host(net_, optimizer_);
    } catch (const std::exception& e) {  // e.g. the GPU failed: its state is out of reach
      config_.log(std::string("seedrl learner: could not save a checkpoint: the trainer's state "
                              "could not be read: ") +
                  e.what());
      return;
    }
    if (device_source_)  // sync_to_host just brought them: the host copy catches up for free
      params_.publish(net_.parameters());
    store_parameters(c, net_);
    store_optimizer(c, optimizer_);
    normalizer_.store(c);
    c.counters["frames"] = s.frames;
    c.counters["episodes"] = s.episodes;
    c.counters["train_steps"] = s.train_steps;
    c.counters["mean_return"] = s.mean_return;
    for (const auto& [key, value] : config_.checkpoint_meta)
      c.meta[key] = value;
    // The replay first, so that a checkpoint on disk has its replay complete beside it (a
    // crash between the two leaves the checkpoint without one: its resume refills).
    std::optional<std::filesystem::path> replay_file;
    if (replay_ != nullptr && config_.checkpoint_replay) {
      const auto file = replay::replay_file_beside(std::filesystem::path(config_.checkpoint_dir) /
                                                   checkpoint_file_name(c.step));
      try {
        const std::size_t n = replay::write_replay_file(file, *replay_);
        replay_file = file;
        config_.log("seedrl learner: saved the replay (" + std::to_string(n) + " sequences) in " +
                    file.string());
      } catch (const std::exception& e) {
        config_.log(std::string("seedrl learner: the replay was not saved: ") + e.what());
      }
    }
    try {
      checkpoint_write_options options;
      options.keep_last = config_.keep_checkpoints;
      options.report = [this](const std::filesystem::path& file, const std::string& reason) {
        config_.log("seedrl learner: checkpoint " + file.string() + ": " + reason);
      };
      const auto path = write_checkpoint(config_.checkpoint_dir, c, options);
      if (replay_file)  // only the newest replay is kept: a resume reads the newest checkpoint's
        replay::remove_other_replay_files(config_.checkpoint_dir, *replay_file, options.report);
      checkpoints_->saved(c.step);
      stats_.update([](learner_stats& st) { ++st.checkpoints_saved; });
      config_.log("seedrl learner: saved " + path.string() + " (" + why + ", " +
                  std::to_string(s.frames) + " frames)");
    } catch (const std::exception& e) {
      config_.log(std::string("seedrl learner: could not save a checkpoint: ") + e.what());
    }
  }

  learner_config config_;
  std::size_t obs_size_;
  std::size_t num_actions_;
  std::size_t action_dim_;  // D for continuous actions, else 0
  Net net_;
  Opt optimizer_;
  Trn trainer_;
  LossFn loss_;
  unroll_queue& queue_;
  unroll_builder<scalar>& pool_;
  unroll_replay<scalar>* replay_ = nullptr;  // set: training samples here (use_replay)
  replay::sampled_sequences<scalar> sampled_;
  random_generator sample_rng_{0x5eed2d2ULL};
  parameter_store<scalar>& params_;
  detail::stats_board& stats_;
  input_normalizer<scalar>& normalizer_;  // several ranks: shared at every agreement
  time_split time_;
  std::shared_ptr<parameter_source<scalar>> device_source_;  // set by publish_on_device()
  std::optional<checkpoint_schedule<>> checkpoints_;         // set when checkpoint_dir is
  std::optional<std::filesystem::path> resumed_from_;        // the source of a full restore()
  bool saved_at_exit_ = false;
  std::function<learner_stats()> stats_source_;  // several ranks: the learner's stats()
  std::atomic<run_stop> stop_reason_{run_stop::none};
  std::uint64_t last_state_hash_ = 0;
  std::thread thread_;
};

}  // namespace seedrl
