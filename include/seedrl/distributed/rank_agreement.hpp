#pragma once
/// \file
/// Before each training step, data-parallel learner ranks agree whether every one of them
/// trains it. The step's gradient all-reduce waits for all ranks, so a rank that stopped
/// (solved, out of frames, its actors gone, a signal, a failure) must not leave the others
/// inside it: each rank's trainer thread, once it holds its batch or knows it will get none,
/// joins one small gather of its status, and if any rank stops, all stop after it, each
/// knowing why and whose reason it was. The same gather carries each rank's counters (frames,
/// episodes, returns, busy time), so every rank sees the same totals for its progress line and
/// its stop rule.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/runtime/learner_stats.hpp"

namespace seedrl::distributed {

/// What one rank brings to the agreement.
struct rank_status {
  bool have_batch = false;         ///< holds its next training batch
  run_stop stop = run_stop::none;  ///< why it stops; none with no batch reads as stopped
  rank_figures figures;            ///< its counters now
};

/// What every rank learns from it, identically.
struct rank_agreement {
  std::vector<rank_figures> ranks;  ///< by rank
  run_stop stop = run_stop::none;   ///< none: every rank trains this step
  int stopping_rank = -1;           ///< the lowest rank with the winning reason, when stopping
};

namespace detail {
constexpr std::size_t status_fields = 9;
}  // namespace detail

/// Gathers every rank's `mine` over `r` (every rank calls it, once per step) and decides.
inline rank_agreement agree_on_step(gradient_reducer& r, const rank_status& mine) {
  const run_stop own =
      !mine.have_batch && mine.stop == run_stop::none ? run_stop::stopped : mine.stop;
  const rank_figures& f = mine.figures;
  // Exact in a double: counts below 2^53.
  const std::array<double, detail::status_fields> packed{static_cast<double>(own),
                                                         static_cast<double>(f.frames),
                                                         static_cast<double>(f.episodes),
                                                         static_cast<double>(f.returns_counted),
                                                         f.mean_return,
                                                         f.seconds_since_start,
                                                         f.seconds_inference,
                                                         f.seconds_training,
                                                         f.seconds_waiting_for_ranks};
  const std::vector<double> all = r.gather(std::span<const double>(packed));
  if (all.size() != packed.size() * static_cast<std::size_t>(r.ranks()))
    throw std::runtime_error("seedrl: the learner ranks' status gather returned " +
                             std::to_string(all.size()) + " values for " +
                             std::to_string(r.ranks()) + " ranks");
  rank_agreement a;
  for (int k = 0; k < r.ranks(); ++k) {
    const double* v = all.data() + static_cast<std::size_t>(k) * packed.size();
    const auto stop = static_cast<run_stop>(static_cast<int>(v[0]));
    if (stop > a.stop) {
      a.stop = stop;
      a.stopping_rank = k;
    }
    rank_figures g;
    g.frames = static_cast<std::int64_t>(v[1]);
    g.episodes = static_cast<std::int64_t>(v[2]);
    g.returns_counted = static_cast<std::size_t>(v[3]);
    g.mean_return = v[4];
    g.seconds_since_start = v[5];
    g.seconds_inference = v[6];
    g.seconds_training = v[7];
    g.seconds_waiting_for_ranks = v[8];
    a.ranks.push_back(g);
  }
  return a;
}

/// A line for the log when the ranks stop: "rank 1 stopped the run (actors gone)".
inline std::string describe_stop(const rank_agreement& a) {
  return "rank " + std::to_string(a.stopping_rank) + " stopped the run (" + to_string(a.stop) + ")";
}

}  // namespace seedrl::distributed
