#pragma once
/// \file
/// A sequence replay's settings (seedrl/replay/sequence_replay.hpp) and its replay ratio
/// (seedrl/replay/rate_limiter.hpp), apart so that the learner's configuration can hold them
/// without the replay.

#include <cstddef>

namespace seedrl::replay {

/// How fast training may consume what actors insert; seedrl/replay/rate_limiter.hpp says how.
struct replay_ratio {
  double samples_per_insert = 0.0;  ///< r; 0: no limit
  /// Samples either way that e may stray; 0: n + r (one batch and one insert).
  double tolerance = 0.0;
  std::size_t min_size = 1;  ///< sequences stored before the first sample
};

/// A replay's settings; defaults are SEED RL's R2D2 Atari configuration.
struct sequence_replay_config {
  std::size_t max_sequences = 100000;
  std::size_t max_bytes = 0;         ///< 0: no bound beyond max_sequences
  double priority_exponent = 0.9;    ///< alpha
  double importance_exponent = 0.6;  ///< beta
  double min_priority = 1e-6;        ///< priorities are at least this
  replay_ratio ratio;                ///< samples per insert, both ways
  /// The memory a replay may take; 0: what the machine has available (MemAvailable).
  std::size_t memory_limit_bytes = 0;
};

}  // namespace seedrl::replay
