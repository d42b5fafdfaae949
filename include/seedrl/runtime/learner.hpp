#pragma once
/// \file
/// The SEED learner: it accepts actors over any Transport, batches their requests dynamically,
/// runs inference with per-environment recurrent state, builds unrolls and trains on them,
/// publishing new parameters to inference as it goes. It composes three pieces, each in a
/// header of its own:
///   - actor_server (connections, handshake, authentication, validation): turns frames into
///     typed step requests for
///   - inference_loop (batcher, per-env state, action sampling, replies, unroll building),
///     which pushes completed unrolls into the training queue read by
///   - training_loop (trainer, parameter publication, checkpoints).
/// The training queue and the parameters are where the two loops meet: the host
/// parameter_store, or, when the trainer publishes on a device (DevicePublishingTrainer) and the
/// engine takes sets there (DeviceParameterEngine), the trainer's device source
/// (seedrl/runtime/parameter_source.hpp: GPU trainer to GPU engine, no host round trip); the
/// counters (learner_stats) are shared by all three. When the config asks for observation
/// normalization or reward scaling, the inference loop applies it (input_normalizer) and the
/// training loop saves its statistics in checkpoints.
///
/// Threads: the actor server's readers (for TCP and Unix sockets learner_config::io_threads
/// I/O threads, 1 by default, however many actors connect; for the in-process transport one
/// per connection) read and validate frames and copy observations into the filling batch; one
/// inference thread (runs batches, encodes every reply and hands it to the connection, builds
/// unrolls; the CPU engine adds learner_config::inference_workers - 1 threads that only
/// infer); one trainer thread (assembles batches of unrolls, trains, publishes). A reply is sent
/// by the inference thread without blocking when its socket is free, by the I/O side otherwise
/// (actor_server.hpp): the inference thread never waits on a socket.
///
/// `Net` models LearnerNetwork (seedrl/runtime/learner_network.hpp), e.g. mlp_lstm_agent;
/// `Opt` models Optimizer; `Tr` models Transport; `Trn` models Trainer
/// (seedrl/runtime/trainer.hpp): where training steps run, `host_trainer` (the CPU, the default) or
/// e.g. `cuda::mlp_lstm_trainer` (a GPU); `LossFn` models Loss (the IMPALA loss by default);
/// `Sampler` models ActionSampler (categorical sampling by default); `Engine` models
/// InferenceEngine (seedrl/runtime/inference_engine.hpp): where the inference step runs,
/// `cpu_inference_engine<Net>` by default (learner_config::inference_workers threads).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/replay/replay_file.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/actor_server.hpp"
#include "seedrl/runtime/bounded_queue.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/runtime/detail/stats_board.hpp"
#include "seedrl/runtime/inference_loop.hpp"
#include "seedrl/runtime/input_normalizer.hpp"
#include "seedrl/runtime/learner_config.hpp"
#include "seedrl/runtime/learner_network.hpp"
#include "seedrl/runtime/learner_stats.hpp"
#include "seedrl/runtime/parameter_store.hpp"
#include "seedrl/runtime/thread_time_split.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_loop.hpp"
#include "seedrl/runtime/unroll_builder.hpp"

namespace seedrl {

namespace detail {
/// `N::scalar_type`, or float when `N` has none, so that a network without one reaches the
/// learner's check (which names what is missing) instead of failing in a default argument.
template <class N>
struct learner_scalar {
  using type = float;
};
template <class N>
requires requires {
  typename N::scalar_type;
}
struct learner_scalar<N> {
  using type = typename N::scalar_type;
};
}  // namespace detail

/// See the file comment.
template <class Net, class Opt, class Tr, class Trn = host_trainer,
          class LossFn = impala_loss<typename detail::learner_scalar<Net>::type>,
          class Sampler = categorical_sampler, class Engine = cpu_inference_engine<Net>>
class learner {
  static_assert(check_learner_network<Net>(),
                "seedrl::learner: the network does not model seedrl::LearnerNetwork (what it "
                "lacks is named above; see seedrl/runtime/learner_network.hpp)");
  static_assert(!LearnerNetwork<Net> || Trainer<Trn, Net, Opt, LossFn>,
                "seedrl::learner: the trainer type does not model seedrl::Trainer for this "
                "network, optimizer and loss (see seedrl/runtime/trainer.hpp)");
  static_assert(Loss<LossFn>,
                "seedrl::learner: the loss type does not model seedrl::Loss (see "
                "seedrl/algo/loss.hpp)");
  static_assert(ActionSampler<Sampler, typename detail::learner_scalar<Net>::type>,
                "seedrl::learner: the sampler type does not model seedrl::ActionSampler (see "
                "seedrl/runtime/action_sampler.hpp)");

 public:
  using scalar = typename detail::learner_scalar<Net>::type;
  using connection_type = typename Tr::connection_type;
  using listener_type = typename Tr::listener_type;
  using inference_type = inference_loop<Net, Sampler, Engine>;
  using training_type = training_loop<Net, Opt, Trn, LossFn>;
  using server_type = actor_server<Tr, inference_type>;

  /// `net` gives the architecture and initial parameters (copied for training and inference).
  /// `trainer` runs the training steps (the CPU by default); `sampler` chooses actions.
  /// Throws std::invalid_argument for an action space the sampler cannot serve, or a network
  /// whose action count or observation size (where it reports them) differs from the specs.
  learner(const learner_config& config, const Net& net, Opt optimizer, LossFn loss,
          observation_spec obs_spec, action_spec act_spec, Trn trainer = Trn(),
          Sampler sampler = Sampler())
      : created_((checked(net, obs_spec, act_spec, sampler), std::chrono::steady_clock::now())),
        queue_(config.queue_batches * config.batch_size),
        normalizer_(config.normalize_observations, config.scale_rewards, obs_spec, config.max_envs,
                    config.inference_only),
        inference_(config, net, obs_spec, act_spec, std::move(sampler), queue_, params_, stats_,
                   created_, normalizer_),
        training_(config, net, std::move(optimizer), std::move(trainer), std::move(loss),
                  static_cast<std::size_t>(obs_spec.num_elements()), inference_.policy_width(),
                  continuous_action_size(act_spec), queue_, inference_.unroll_pool(), params_,
                  stats_, created_, normalizer_),
        server_(config, obs_spec, act_spec, inference_, stats_,
                static_cast<double>(std::numeric_limits<scalar>::max())) {
    // A loss that trains from a replay: unrolls go there instead of the training queue.
    if (seedrl::uses_replay(training_.loss())) {
      replay_ = std::make_unique<unroll_replay<scalar>>(
          config.replay,
          replay::sequence_shape{config.unroll_length + 1,
                                 static_cast<std::size_t>(obs_spec.num_elements()),
                                 static_cast<std::size_t>(net.state_size()), frames_in_state(net)},
          config.batch_size,
          obs_spec.type == dtype::uint8 && !normalizer_.normalizes_observations());
      inference_.use_replay(replay_.get());
      training_.use_replay(replay_.get());
      checkpoint_replay_ = config.checkpoint_replay;
      log_ = config.log;
    }
    // Trainer and engine both on the device: the parameters stay there.
    if constexpr (DevicePublishingTrainer<Trn, Net, Opt>) {
      if (inference_.engine_takes_device_parameters())
        inference_.use_parameter_source(training_.publish_on_device());
    }
    // Several ranks: each rank's status at every agreement carries both threads' time.
    training_.set_stats_source([this] { return stats(); });
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
  /// The observation and return statistics (learner_config::normalize_observations,
  /// ::scale_rewards) are restored too, even when `weights_only`: weights trained on normalized
  /// inputs need them. A checkpoint without them leaves them fresh.
  /// With learner_config::checkpoint_replay, a full restore also reads the replay saved beside
  /// the checkpoint's file; a missing or unusable one is logged, and the replay refills.
  void restore(const checkpoint& c, bool weights_only = false) {
    const auto statistics = normalizer_.read(c);  // checked before anything changes
    training_.restore(c, weights_only);
    normalizer_.load(statistics);
    if (replay_ && checkpoint_replay_ && !weights_only && !c.source.empty())
      restore_replay(replay::replay_file_beside(c.source));
  }

  /// Copies of the observation and discounted-return statistics (see input_normalizer).
  running_mean_std observation_statistics() const { return normalizer_.observation_statistics(); }
  running_mean_std return_statistics() const { return normalizer_.return_statistics(); }

  /// Starts the inference and trainer threads. Throws checkpoint_error, and starts nothing, if
  /// checkpoint_dir holds checkpoints and this learner was not restored in full from one of
  /// them: a new run must not save beside another run's (require_no_checkpoints).
  void start() {
    training_.start();  // first: it is the one that may refuse
    inference_.start();
    server_.start();
  }

  /// Accepts actors on `listener` in a thread of its own until `stop()`.
  void serve(listener_type listener) { server_.serve(std::move(listener)); }

  /// Serves one already-connected actor (e.g. from a test): on the I/O pool for sockets, in a
  /// thread of its own for the in-process transport.
  void serve_connection(connection_type c) { server_.serve_connection(std::move(c)); }

  /// Graceful shutdown: stop accepting, answer what is already batched, tell every actor with
  /// a close frame (`shutting_down`, so that it reconnects to the next learner), close every
  /// connection, stop the trainer (saving a checkpoint when asked to at exit), join every
  /// thread. Safe to call twice.
  void stop() {
    if (stopping_.exchange(true))
      return;
    server_.stop_accepting();
    inference_.stop();  // requests already batched are still answered
    server_.close_all();
    training_.stop();
    server_.join();
  }

  /// Several learner ranks (a trainer with a gradient reducer): why this rank is about to stop,
  /// which the other ranks learn at the next step's agreement (and stop too: see
  /// learner_stats::ranks_stopped). Call before stop().
  void request_stop(run_stop why) noexcept { training_.request_stop(why); }

  /// The reducer joining this learner to the other ranks, or null with one rank.
  distributed::gradient_reducer* ranks() const noexcept { return training_.ranks(); }

  /// Connections the learner still holds (open, or finished and not yet joined); for tests.
  std::size_t held_connections() const { return server_.held_connections(); }

  /// A consistent copy of the counters.
  learner_stats stats() const {
    learner_stats s = stats_.read();
    s.queue_depth = queue_.size();
    if (replay_) {
      const auto r = replay_->stats();
      s.replay_size = r.size;
      s.replay_capacity = r.capacity;
      s.replay_inserted = static_cast<std::int64_t>(r.inserted);
      s.replay_sampled = static_cast<std::int64_t>(r.sampled);
      s.replay_mean_priority = r.mean_priority;
      s.replay_bytes = r.bytes_stored;
    }
    s.connected_actors = server_.connected();
    // One instant for the clock and both threads' splits, so their states sum to the clock.
    read_at_one_instant(
        [&](auto now, const auto& inference, const auto& trainer) {
          s.seconds_since_start = std::chrono::duration<double>(now - created_).count();
          inference_type::report_time(inference, s);
          training_type::report_time(trainer, s);
        },
        inference_.thread_time(), training_.thread_time());
    return s;
  }

  /// The parameters most recently published by the trainer.
  std::uint64_t parameter_version() const { return training_.parameter_version(); }

  /// Copies the newest parameters in the host store into `net` (e.g. to evaluate or save them):
  /// the newest published, or with device publication those of the last checkpoint, restore,
  /// or the end of training (see training_loop).
  void copy_parameters(Net& net) const {
    std::uint64_t v = 0;
    params_.update_if_newer(&v, net.parameters());
  }

 private:
  /// Reads the replay saved beside a restored checkpoint; says what it did either way.
  void restore_replay(const std::filesystem::path& file) {
    const auto say = [this](const std::string& line) {
      if (log_)
        log_(line);
    };
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      say("seedrl learner: no replay was saved beside this checkpoint (" + file.string() +
          "); the replay refills from the actors");
      return;
    }
    try {
      const std::size_t n = replay::read_replay_file(file, *replay_);
      say("seedrl learner: restored the replay: " + std::to_string(n) + " sequences from " +
          file.string());
    } catch (const std::exception& e) {
      say(std::string(e.what()) + "; the replay refills from the actors");
    }
  }

  /// The state's first values that are frames (a learner-side frame stack's history,
  /// seedrl/net/frame_stack.hpp), which the replay stores as the frames' type.
  static std::size_t frames_in_state(const Net& net) {
    if constexpr (requires { net.history_size(); })
      return static_cast<std::size_t>(net.history_size());
    else
      return 0;
  }

  /// Checks what the pieces cannot see alone, before any of them is built: a mismatch would
  /// otherwise surface as an exception on the inference thread at the first batch.
  static void checked(const Net& net, const observation_spec& obs_spec, const action_spec& act_spec,
                      const Sampler& sampler) {
    sampler.check(act_spec);
    if constexpr (requires { net.num_actions(); }) {
      if (act_spec.is_discrete() && static_cast<std::int64_t>(net.num_actions()) !=
                                        static_cast<std::int64_t>(act_spec.num_actions)) {
        throw std::invalid_argument(
            "seedrl::learner: the network has " + std::to_string(net.num_actions()) +
            " actions, the action spec " + std::to_string(act_spec.num_actions));
      }
    }
    if constexpr (requires { net.policy_size(); }) {
      const std::size_t want = sampler.outputs_per_row(act_spec);
      if (static_cast<std::size_t>(net.policy_size()) != want) {
        throw std::invalid_argument("seedrl::learner: the network writes " +
                                    std::to_string(net.policy_size()) +
                                    " policy outputs per row, the action sampler reads " +
                                    std::to_string(want) + " for this action spec");
      }
    }
    if constexpr (requires { net.observation_size(); }) {
      if (static_cast<std::int64_t>(net.observation_size()) != obs_spec.num_elements()) {
        throw std::invalid_argument("seedrl::learner: the network reads " +
                                    std::to_string(net.observation_size()) +
                                    " elements per observation, the observation spec has " +
                                    std::to_string(obs_spec.num_elements()));
      }
    }
  }

  std::chrono::steady_clock::time_point created_;  // set after checked(): it runs first
  detail::stats_board stats_;
  bounded_queue<unroll<scalar>*> queue_;           // inference -> training, by pointer
  parameter_store<scalar> params_;                 // training -> inference
  input_normalizer<scalar> normalizer_;            // inference updates, training saves
  std::unique_ptr<unroll_replay<scalar>> replay_;  // a replay loss's, instead of the queue
  bool checkpoint_replay_ = false;                 // learner_config::checkpoint_replay
  std::function<void(const std::string&)> log_;    // learner_config::log
  inference_type inference_;
  training_type training_;
  server_type server_;
  std::atomic<bool> stopping_{false};
};

}  // namespace seedrl
