// Writes the sample log directory that test/metrics/read_with_tensorboard.py checks with
// TensorBoard's reader and tools/plot_metrics.py draws. The values follow formulas that the
// script recomputes, so every tag, step and value can be compared exactly.
//   seedrl_metrics_write_events LOGDIR    (LOGDIR is emptied first)
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>

#include "seedrl/metrics/metrics_log.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LOGDIR\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path logdir = argv[1];
    // A rerun must not add a second event file or append to the old metrics.jsonl.
    std::filesystem::remove_all(logdir);
    seedrl::metrics_log log(logdir);
    const double t0 = 1700000000.0;
    for (int s = 0; s < 200; s += 10) {
      log.log(s,
              {{"loss", 1.0 / (s + 1)},
               {"return/mean", 0.75 * s - 3.0},
               {"entropy \xC3\xA9", -0.001 * s},
               {"frames", s * 400.0}},
              t0 + s * 0.25);
    }
    const double inf = std::numeric_limits<double>::infinity();
    log.log(200, {{"special/nan", std::nan("")}, {"special/inf", inf}, {"special/neg_inf", -inf}},
            t0 + 50.0);
    std::printf("wrote %s and %s\n", log.jsonl_path().c_str(), log.events_path().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seedrl_metrics_write_events: %s\n", e.what());
    return 1;
  }
  return 0;
}
