#pragma once
/// \file
/// The learner's settings (seedrl/runtime/learner.hpp), apart from the learner so that its
/// pieces (actor_server, inference_loop, training_loop) can take them without the whole learner.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "seedrl/io/checkpoint_schedule.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/replay/replay_config.hpp"
#include "seedrl/runtime/batcher.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/security/shared_secret.hpp"

namespace seedrl {

/// Running observation normalization on the learner (seedrl/runtime/input_normalizer.hpp):
/// every float observation element becomes clip((x - mean) / sqrt(var + epsilon), -clip, clip)
/// with the running statistics of every observation seen, before the network sees it.
struct observation_normalization_config {
  bool enabled = false;
  double clip = 10.0;
  double epsilon = 1e-8;
};

/// Reward scaling on the learner (seedrl/runtime/input_normalizer.hpp), as Stable-Baselines3's
/// VecNormalize: each env's discounted return R = gamma R + r is tracked, and rewards become
/// clip(r / sqrt(var(R) + epsilon), -clip, clip). Episode returns stay raw.
struct reward_scaling_config {
  bool enabled = false;
  double gamma = 0.99;
  double clip = 10.0;
  double epsilon = 1e-8;
};

/// Thread counts for the learner's two compute stages.
struct stage_threads {
  std::size_t inference = 1;  ///< learner_config::inference_workers
  std::size_t trainer = 1;    ///< learner_config::trainer_threads
};

/// The default thread counts on `cores` cores (std::thread::hardware_concurrency; 0, unknown,
/// counts as 1) for the stages that run on the CPU. A stage on a GPU gets 1 (its thread only
/// drives the device) and leaves the cores to the other, less one for the thread that drives
/// the GPU, the connections and the batching. With both on the CPU, the trainer, the stage
/// that binds in every example measured (docs/performance.md), gets half the cores but at
/// least 2, and inference the rest less one (at least 1). On 2 cores that is 1 and 2: the
/// trainer's second thread works only while a step runs, and the Catch pixel example ran
/// 1.35x faster end to end with it than with 1 and 1 on a quiet 2-core machine.
inline stage_threads default_stage_threads(unsigned cores, bool inference_on_cpu,
                                           bool trainer_on_cpu) {
  const std::size_t n = cores == 0 ? 1 : cores;
  const auto at_least_1 = [](std::size_t x) { return x == 0 ? std::size_t{1} : x; };
  stage_threads t;
  if (!trainer_on_cpu && !inference_on_cpu)
    return t;
  if (!trainer_on_cpu) {
    t.inference = at_least_1(n - 1);
  } else if (!inference_on_cpu) {
    t.trainer = at_least_1(n - 1);
  } else if (n >= 2) {
    t.trainer = std::max<std::size_t>(2, n / 2);
    t.inference = n > t.trainer + 1 ? n - t.trainer - 1 : 1;
  }
  return t;
}

/// Learner settings.
struct learner_config {
  std::size_t max_envs = 4096;     ///< environment slots across all actors
  std::size_t unroll_length = 20;  ///< T; unrolls hold T + 1 steps
  /// Steps each unroll repeats from the end of the one before (1: SEED's overlap, the last
  /// step only bootstraps). R2D2 sequences overlap by burn-in + 1, so that every step is
  /// trained once after a burn-in.
  std::size_t unroll_overlap = 1;
  std::size_t batch_size = 16;  ///< unrolls per training step
  /// Training queue capacity, in training batches. Every env of an actor finishes an unroll
  /// on the same step, so size it to hold such a burst (actors x envs per actor / batch_size):
  /// a full queue blocks inference and starves the trainer (docs/performance.md, (d)).
  std::size_t queue_batches = 2;
  /// A loss that trains from a replay (seedrl::ReplayLoss, R2D2): the replay's capacity,
  /// priorities and replay ratio; completed unrolls go there instead of the training queue.
  /// Ignored by the other losses.
  replay::sequence_replay_config replay{};
  /// With a replay and checkpoint_dir: each checkpoint also writes the replay's contents beside
  /// it (ckpt-<step>.replay, seedrl/replay/replay_file.hpp; only the newest is kept), and a full
  /// restore reads the one beside its checkpoint, so a resumed run trains on at once. Off: a
  /// resumed replay refills from the actors.
  bool checkpoint_replay = false;
  batcher_config batching{};    ///< inference batch size and deadline
  double max_grad_norm = 40.0;  ///< global-norm clipping
  std::uint32_t max_payload = protocol::default_max_payload;
  std::uint64_t seed = 0;  ///< action sampling
  /// Threads the CPU inference engine splits each batch over (cpu_inference_engine): 1 infers
  /// on the inference thread alone; W > 1 adds W - 1 threads, each with a network copy.
  std::size_t inference_workers = 1;
  /// Threads that run the actor server's socket I/O (TCP and Unix sockets: every connection's
  /// reads, frame parsing and replies, asynchronously on one io_context). 1 serves thousands of
  /// connections; more only pays when parsing many large observations binds a core.
  std::size_t io_threads = 1;
  /// Whether the inference thread writes an actor's actions itself, with a non-blocking send,
  /// when nothing else is queued on that socket (false: every reply goes through an I/O
  /// thread). Saves a thread wake-up per round trip (docs/performance.md, (g)).
  bool direct_replies = true;
  /// Threads the CPU trainer (host_trainer) splits each gradient step's unrolls over: 1 trains
  /// on the trainer thread alone; W > 1 adds W - 1 threads, each with a network copy. A trainer
  /// without threads of its own (a GPU trainer) ignores it. `default_stage_threads` picks both
  /// counts from the core count.
  std::size_t trainer_threads = 1;
  /// Where inference runs, for an engine that chooses at run time (any_inference_engine:
  /// cuda is its GPU model); engines of one kind ignore it.
  compute_device inference_device = compute_device::cpu;
  /// When set, every actor must pass the challenge-response of docs/security.md before hello.
  std::shared_ptr<const security::shared_secret> auth_secret;
  /// Longest time from accepting a connection to its welcome; a silent or slow peer is refused
  /// with idle_timeout so it cannot hold a connection slot (or, in-process, a thread).
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
  /// Serve actions and count episodes, but build no unrolls and never train: the learner
  /// plays its current (e.g. restored) parameters, as an evaluation over actor processes does.
  /// Checkpoints are off then, whatever checkpoint_dir says.
  bool inference_only = false;
  /// Called on the inference thread, after a batch's replies, with each episode that ended in
  /// it (its undiscounted return and length in steps), in the order the batch held them. Keep
  /// it short: the next batch waits for it.
  std::function<void(double episode_return, std::int64_t length)> on_episode;
  /// Off by default. Both statistics are saved in checkpoints and restored (also by a
  /// weights-only restore: the weights mean nothing without them); an inference-only learner
  /// uses them frozen.
  observation_normalization_config normalize_observations{};
  reward_scaling_config scale_rewards{};
  /// Several learner ranks (a trainer with a gradient reducer, docs/scaling.md): a hash of the
  /// settings every rank must share, compared when the ranks meet; a rank whose hash differs
  /// is refused, with both hashes printed. 0: nothing beyond the network and optimizer state,
  /// which are always compared.
  std::uint64_t run_hash = 0;
  /// Several learner ranks: compare the parameters and optimizer state of all ranks every
  /// this many training steps (and at the start and the end); a mismatch stops the run.
  std::int64_t rank_check_every = 100;
};

}  // namespace seedrl
