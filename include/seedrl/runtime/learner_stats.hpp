#pragma once
/// \file
/// The learner's counters (learner_stats) and what two snapshots of them say: mean time per
/// stage of an actor's round trip (stage_times) and the stage that limits the run
/// (binding_stage). Shared by the learner's pieces, each of which fills its own fields.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "seedrl/algo/loss.hpp"

namespace seedrl {

/// Why a run of several learner ranks stopped. When ranks stop in the same step for different
/// reasons, the last in this order wins (a failure over a signal over ... over solved).
enum class run_stop : std::uint8_t {
  none,         ///< still running
  solved,       ///< the mean return reached the target
  frames_done,  ///< the frame budget is spent
  stopped,      ///< the learner was stopped (its program's own reason)
  actors_gone,  ///< a rank's actors all left
  signal,       ///< SIGINT or SIGTERM
  failed,       ///< training failed on a rank
};

/// A readable name for messages: "solved", "frames done", ...
constexpr const char* to_string(run_stop s) noexcept {
  switch (s) {
    case run_stop::solved:
      return "solved";
    case run_stop::frames_done:
      return "frames done";
    case run_stop::stopped:
      return "stopped";
    case run_stop::actors_gone:
      return "actors gone";
    case run_stop::signal:
      return "signal";
    case run_stop::failed:
      return "training failed";
    case run_stop::none:
      break;
  }
  return "running";
}

/// One learner rank's figures as of the ranks' last agreement (several ranks only): what the
/// progress line and the stop rule add up over the ranks.
struct rank_figures {
  std::int64_t frames = 0;
  std::int64_t episodes = 0;
  std::size_t returns_counted = 0;  ///< of the last 100 episodes
  double mean_return = 0.0;         ///< over those
  double seconds_since_start = 0.0;
  double seconds_inference = 0.0;          ///< inference thread busy
  double seconds_training = 0.0;           ///< trainer busy
  double seconds_waiting_for_ranks = 0.0;  ///< trainer waiting for the other ranks
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
  /// with the last parameters. Also set when inference chose an action that must not be sent
  /// (NaN, or a discrete index outside the action space): then inference stops answering too.
  /// Programs should report it and exit.
  std::string trainer_error;
  /// Continuous action elements a sampler wrote outside the action bounds, clipped into them
  /// before they were sent (a custom sampler's; the built-in ones keep to the bounds).
  std::int64_t clipped_actions = 0;
  /// Steps of partial unrolls thrown away because their actor left or restarted (run id).
  std::int64_t dropped_unroll_steps = 0;
  std::size_t queue_depth = 0;  ///< now
  // A replay loss's (R2D2) replay, now: sequences stored and room, sequences inserted and
  // sampled since the start, the stored sequences' mean priority, bytes stored. All 0 without.
  std::size_t replay_size = 0;
  std::size_t replay_capacity = 0;
  std::int64_t replay_inserted = 0;
  std::int64_t replay_sampled = 0;
  double replay_mean_priority = 0.0;
  std::size_t replay_bytes = 0;
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
  double seconds_waiting_for_ranks = 0.0;  ///< trainer waiting for the other learner ranks
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
  // Several learner ranks (a data-parallel run, seedrl/distributed/): this one's rank, every
  // rank's figures at the last step they agreed on (empty with one rank), and, once they
  // agreed to stop, why and whose reason it was.
  int rank = 0;
  std::vector<rank_figures> ranks;
  run_stop ranks_stopped = run_stop::none;
  int stopping_rank = -1;
};

/// The figures of all ranks together, as the progress line and the stop rule read them: frames
/// and episodes summed, the mean return weighted by each rank's episodes in its window, and
/// `returns_counted` the smallest window (the target counts once every rank has 100). The
/// rest is this rank's. With one rank, `s` itself.
inline learner_stats over_all_ranks(const learner_stats& s) {
  if (s.ranks.empty())
    return s;
  learner_stats all = s;
  all.frames = all.episodes = 0;
  all.returns_counted = s.ranks.front().returns_counted;
  double weighted = 0.0, counted = 0.0;
  for (const rank_figures& r : s.ranks) {
    all.frames += r.frames;
    all.episodes += r.episodes;
    all.returns_counted = std::min(all.returns_counted, r.returns_counted);
    weighted += r.mean_return * static_cast<double>(r.returns_counted);
    counted += static_cast<double>(r.returns_counted);
  }
  all.mean_return = counted > 0.0 ? weighted / counted : 0.0;
  return all;
}

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

}  // namespace seedrl
