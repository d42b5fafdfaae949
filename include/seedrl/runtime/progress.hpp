#pragma once
/// \file
/// The learner's progress line and its metrics, computed from two `learner_stats` snapshots, so
/// that every training program reports the same figures the same way:
///
///   auto p = seedrl::progress_between(last, learner.stats(), seconds, max_batch);
///   std::puts(seedrl::progress_line(p).c_str());
///   if (log) seedrl::log_progress(*log, p);

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "seedrl/metrics/metrics_log.hpp"
#include "seedrl/runtime/learner_stats.hpp"

namespace seedrl {

/// Rates and stage times over one reporting window.
struct progress_report {
  learner_stats stats;             ///< the snapshot at the window's end
  double seconds = 0.0;            ///< window length
  double frames_per_second = 0.0;  ///< env frames answered per second
  double batch_fill = 0.0;         ///< mean inference batch rows / max_batch, 0..1
  stage_times stages;
  run_bound bound = run_bound::unknown;
  /// Several learner ranks: the slowest one over the window (the rank the others waited for
  /// least: theirs is the batch they wait for) and its busy shares; -1 with one rank.
  int slowest_rank = -1;
  double slowest_inference_busy = 0.0;
  double slowest_training_busy = 0.0;
  /// A replay loss's replay (R2D2): sequences inserted and sampled per second.
  double replay_inserts_per_second = 0.0;
  double replay_samples_per_second = 0.0;
};

/// The window between snapshots `before` and `after`, taken `seconds` apart; `max_batch` is the
/// learner's largest inference batch (for the fill).
inline progress_report progress_between(const learner_stats& before, const learner_stats& after,
                                        double seconds, std::size_t max_batch) {
  progress_report p;
  p.stats = after;
  p.seconds = seconds;
  if (seconds > 0.0) {
    p.frames_per_second = static_cast<double>(after.frames - before.frames) / seconds;
    p.replay_inserts_per_second =
        static_cast<double>(after.replay_inserted - before.replay_inserted) / seconds;
    p.replay_samples_per_second =
        static_cast<double>(after.replay_sampled - before.replay_sampled) / seconds;
  }
  const std::int64_t batches = after.batches - before.batches;
  if (batches > 0 && max_batch > 0) {
    p.batch_fill = static_cast<double>(after.batch_rows - before.batch_rows) /
                   static_cast<double>(batches) / static_cast<double>(max_batch);
  }
  p.stages = stage_times_between(before, after, seconds);
  p.bound = binding_stage(p.stages);
  if (after.ranks.size() > 1 && before.ranks.size() == after.ranks.size()) {
    double least_wait = 2.0;
    for (std::size_t k = 0; k < after.ranks.size(); ++k) {
      const rank_figures &a = after.ranks[k], &b = before.ranks[k];
      const double wall = a.seconds_since_start - b.seconds_since_start;
      if (wall <= 0.0)
        continue;
      const double wait = (a.seconds_waiting_for_ranks - b.seconds_waiting_for_ranks) / wall;
      if (wait < least_wait) {
        least_wait = wait;
        p.slowest_rank = static_cast<int>(k);
        p.slowest_inference_busy = (a.seconds_inference - b.seconds_inference) / wall;
        p.slowest_training_busy = (a.seconds_training - b.seconds_training) / wall;
      }
    }
  }
  return p;
}

/// Whether the last loss reported trust-region diagnostics (PPO's approximate KL and clip
/// fraction); losses without them (IMPALA) leave both 0, and their output stays as it was.
inline bool has_trust_region_terms(const loss_terms& l) {
  return l.approx_kl != 0.0 || l.clip_fraction != 0.0;
}

/// One line: frames, frames/s, episodes, mean return, loss terms (with approximate KL and clip
/// fraction when the loss reports them), policy lag (mean/max of the last training batch), batch
/// fill, queue depth, actors, time per stage, busy fractions (with inference's time blocked on
/// the full training queue), the binding stage, and the clipped actions when there were any.
inline std::string progress_line(const progress_report& p) {
  const learner_stats& s = p.stats;
  const stage_times& st = p.stages;
  char trust[80] = "";
  if (has_trust_region_terms(s.last_loss)) {  // clipped against the proximal policy, and mu
    std::snprintf(trust, sizeof trust, " kl %.4f clip %3.0f%% vs mu %3.0f%%", s.last_loss.approx_kl,
                  100 * s.last_loss.clip_fraction, 100 * s.last_loss.behaviour_clip_fraction);
  }
  char clipped[48] = "";
  if (s.clipped_actions > 0)
    std::snprintf(clipped, sizeof clipped, "  clipped actions %lld",
                  static_cast<long long>(s.clipped_actions));
  char replay[128] = "";
  if (s.replay_capacity > 0)  // a value-based loss's replay: Q instead of entropy
    std::snprintf(replay, sizeof replay,
                  "  q %.3f  replay %zu/%zu (%.0f MB) in %.1f/s out %.1f/s priority %.3f",
                  s.last_loss.q_value, s.replay_size, s.replay_capacity,
                  static_cast<double>(s.replay_bytes) / 1e6, p.replay_inserts_per_second,
                  p.replay_samples_per_second, s.replay_mean_priority);
  char ranks[96] = "";
  if (p.slowest_rank >= 0)
    std::snprintf(ranks, sizeof ranks,
                  "  ranks %zu (slowest %d: inference %3.0f%% training %3.0f%%)", s.ranks.size(),
                  p.slowest_rank, 100 * p.slowest_inference_busy, 100 * p.slowest_training_busy);
  char line[864];
  std::snprintf(
      line, sizeof line,
      "frames %9lld  %6.0f f/s  episodes %6lld  return %6.1f  loss %7.3f (pg %6.3f v %6.3f ent "
      "%7.4f%s)  entropy %.3f  lag %.1f/%llu  batch fill %3.0f%%  queue %zu  actors %zu  per "
      "step: env %.0f us "
      "link %.0f us batching %.0f us inference %.0f us  busy: inference %3.0f%% (queue-blocked "
      "%3.0f%%) training %3.0f%%  %s%s%s%s",
      static_cast<long long>(s.frames), p.frames_per_second, static_cast<long long>(s.episodes),
      s.mean_return, s.last_loss.total, s.last_loss.policy, s.last_loss.baseline,
      s.last_loss.entropy, trust, s.last_loss.policy_entropy, s.policy_lag_mean,
      static_cast<unsigned long long>(s.policy_lag_max), 100 * p.batch_fill, s.queue_depth,
      s.connected_actors, 1e6 * st.env, 1e6 * st.link, 1e6 * st.batching, 1e6 * st.inference,
      100 * st.inference_busy, 100 * st.queue_blocked, 100 * st.training_busy, to_string(p.bound),
      replay, clipped, ranks);
  return line;
}

/// Watches a discrete policy for collapse: its entropy falling below 1% of its maximum (log A
/// for A actions) while the mean return is still far from its best, i.e. more than 10% of the
/// target's magnitude short of --target-return, or without a target, of the best mean return
/// seen so far. Such a policy is near-deterministic and no longer explores, and training rarely
/// recovers (the entropy bonus is too weak or the learning rate too high). `check` returns the
/// warning the first time, then never again. Continuous policies are not watched: a Gaussian's
/// entropy has no maximum a share of which means collapse.
class entropy_collapse_watch {
 public:
  entropy_collapse_watch(std::int32_t num_actions, std::optional<double> target_return)
      : max_entropy_(num_actions > 1 ? std::log(static_cast<double>(num_actions)) : 0.0),
        has_target_(target_return.has_value()),
        target_(target_return.value_or(0.0)) {}

  std::string check(const learner_stats& s) {
    if (warned_ || max_entropy_ <= 0.0 || s.train_steps == 0 || s.returns_counted == 0)
      return {};
    if (!has_best_ || s.mean_return > best_) {
      best_ = s.mean_return;
      has_best_ = true;
    }
    const double goal = has_target_ ? target_ : best_;
    const double margin = 0.1 * std::max(std::abs(goal), 1.0);
    const double h = s.last_loss.policy_entropy;
    if (!(h < 0.01 * max_entropy_) || s.mean_return >= goal - margin)
      return {};
    warned_ = true;
    char line[512];
    std::snprintf(line, sizeof line,
                  "warning: the policy's entropy fell to %.4f nats (under 1%% of its maximum "
                  "%.3f) at %lld frames while the mean return %.1f is far from %s %.1f: the "
                  "policy has collapsed and explores no more; a larger --entropy-cost or a "
                  "smaller --learning-rate may keep it from collapsing",
                  h, max_entropy_, static_cast<long long>(s.frames), s.mean_return,
                  has_target_ ? "the target" : "its best", goal);
    return line;
  }

 private:
  double max_entropy_;
  bool has_target_;
  double target_;
  bool has_best_ = false;
  double best_ = 0.0;  // the best mean return seen, once has_best_
  bool warned_ = false;
};

/// Writes the window's figures to `log` at step = env frames (as SEED RL plots its curves).
inline void log_progress(metrics_log& log, const progress_report& p) {
  const learner_stats& s = p.stats;
  const stage_times& st = p.stages;
  const metric_value values[] = {
      {"episode/return", s.mean_return},
      {"episode/length", s.mean_episode_length},
      {"episodes", static_cast<double>(s.episodes)},
      {"frames_per_second", p.frames_per_second},
      {"loss/total", s.last_loss.total},
      {"loss/policy", s.last_loss.policy},
      {"loss/baseline", s.last_loss.baseline},
      {"loss/entropy", s.last_loss.entropy},
      {"policy/entropy", s.last_loss.policy_entropy},
      {"train/learning_rate", s.learning_rate},
      {"train/grad_norm", s.last_grad_norm},
      {"train/steps", static_cast<double>(s.train_steps)},
      {"learner/batch_fill", p.batch_fill},
      {"learner/queue_depth", static_cast<double>(s.queue_depth)},
      {"learner/actors", static_cast<double>(s.connected_actors)},
      {"stage_us/env", 1e6 * st.env},
      {"stage_us/link", 1e6 * st.link},
      {"stage_us/batching", 1e6 * st.batching},
      {"stage_us/inference", 1e6 * st.inference},
      {"busy/inference", st.inference_busy},
      {"busy/queue_blocked", st.queue_blocked},
      {"busy/training", st.training_busy},
      {"train/policy_lag_mean", s.policy_lag_mean},
      {"train/policy_lag_max", static_cast<double>(s.policy_lag_max)},
  };
  // The optional figures last, so that a run without them logs what it always did.
  std::vector<metric_value> all(std::begin(values), std::end(values));
  if (has_trust_region_terms(s.last_loss)) {
    all.push_back({"loss/approx_kl", s.last_loss.approx_kl});
    all.push_back({"loss/clip_fraction", s.last_loss.clip_fraction});
    all.push_back({"loss/behaviour_clip_fraction", s.last_loss.behaviour_clip_fraction});
  }
  if (s.replay_capacity > 0) {
    all.push_back({"loss/q_value", s.last_loss.q_value});
    all.push_back({"replay/size", static_cast<double>(s.replay_size)});
    all.push_back({"replay/bytes", static_cast<double>(s.replay_bytes)});
    all.push_back({"replay/inserts_per_second", p.replay_inserts_per_second});
    all.push_back({"replay/samples_per_second", p.replay_samples_per_second});
    all.push_back({"replay/mean_priority", s.replay_mean_priority});
  }
  if (s.clipped_actions > 0)
    all.push_back({"actions/clipped", static_cast<double>(s.clipped_actions)});
  if (p.slowest_rank >= 0) {
    all.push_back({"ranks/count", static_cast<double>(s.ranks.size())});
    all.push_back({"ranks/slowest", static_cast<double>(p.slowest_rank)});
    all.push_back({"ranks/slowest_busy_inference", p.slowest_inference_busy});
    all.push_back({"ranks/slowest_busy_training", p.slowest_training_busy});
  }
  log.log(s.frames, all);
}

}  // namespace seedrl
