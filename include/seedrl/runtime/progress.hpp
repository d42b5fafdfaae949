#pragma once
/// \file
/// The learner's progress line and its metrics, computed from two `learner_stats` snapshots, so
/// that every training program reports the same figures the same way:
///
///   auto p = seedrl::progress_between(last, learner.stats(), seconds, max_batch);
///   std::puts(seedrl::progress_line(p).c_str());
///   if (log) seedrl::log_progress(*log, p);

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
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
};

/// The window between snapshots `before` and `after`, taken `seconds` apart; `max_batch` is the
/// learner's largest inference batch (for the fill).
inline progress_report progress_between(const learner_stats& before, const learner_stats& after,
                                        double seconds, std::size_t max_batch) {
  progress_report p;
  p.stats = after;
  p.seconds = seconds;
  if (seconds > 0.0)
    p.frames_per_second = static_cast<double>(after.frames - before.frames) / seconds;
  const std::int64_t batches = after.batches - before.batches;
  if (batches > 0 && max_batch > 0) {
    p.batch_fill = static_cast<double>(after.batch_rows - before.batch_rows) /
                   static_cast<double>(batches) / static_cast<double>(max_batch);
  }
  p.stages = stage_times_between(before, after, seconds);
  p.bound = binding_stage(p.stages);
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
  char trust[64] = "";
  if (has_trust_region_terms(s.last_loss)) {
    std::snprintf(trust, sizeof trust, " kl %.4f clip %3.0f%%", s.last_loss.approx_kl,
                  100 * s.last_loss.clip_fraction);
  }
  char clipped[48] = "";
  if (s.clipped_actions > 0)
    std::snprintf(clipped, sizeof clipped, "  clipped actions %lld",
                  static_cast<long long>(s.clipped_actions));
  char line[640];
  std::snprintf(
      line, sizeof line,
      "frames %9lld  %6.0f f/s  episodes %6lld  return %6.1f  loss %7.3f (pg %6.3f v %6.3f ent "
      "%7.4f%s)  lag %.1f/%llu  batch fill %3.0f%%  queue %zu  actors %zu  per step: env %.0f us "
      "link %.0f us batching %.0f us inference %.0f us  busy: inference %3.0f%% (queue-blocked "
      "%3.0f%%) training %3.0f%%  %s%s",
      static_cast<long long>(s.frames), p.frames_per_second, static_cast<long long>(s.episodes),
      s.mean_return, s.last_loss.total, s.last_loss.policy, s.last_loss.baseline,
      s.last_loss.entropy, trust, s.policy_lag_mean,
      static_cast<unsigned long long>(s.policy_lag_max), 100 * p.batch_fill, s.queue_depth,
      s.connected_actors, 1e6 * st.env, 1e6 * st.link, 1e6 * st.batching, 1e6 * st.inference,
      100 * st.inference_busy, 100 * st.queue_blocked, 100 * st.training_busy, to_string(p.bound),
      clipped);
  return line;
}

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
  }
  if (s.clipped_actions > 0)
    all.push_back({"actions/clipped", static_cast<double>(s.clipped_actions)});
  log.log(s.frames, all);
}

}  // namespace seedrl
