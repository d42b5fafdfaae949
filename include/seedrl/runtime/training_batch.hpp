#pragma once
/// \file
/// What the learner hands a Trainer (seedrl/runtime/trainer.hpp) and what it gets back, apart
/// from the trainers so that headers compiled by nvcc can take them without Eigen.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "seedrl/algo/loss.hpp"

namespace seedrl {

/// A batch of B unrolls of T+1 steps on the host, time-major: step t of unroll b is row
/// t * B + b. Step 0 repeats the last step of the unroll before (SEED's overlap).
template <class S>
struct training_batch {
  std::size_t T = 0;                    ///< unroll length (the arrays hold T+1 steps)
  std::size_t B = 0;                    ///< unrolls
  std::size_t num_actions = 0;          ///< A
  std::span<const S> observations;      ///< [(T+1)*B*observation size]
  std::span<const S> rewards;           ///< [(T+1)*B]
  std::span<const std::uint8_t> dones;  ///< [(T+1)*B]
  /// [(T+1)*B] nonzero: step t's env output ended the episode by a time limit (dones is set
  /// too). The loss leaves transition t-1 out (seedrl/algo/impala_loss.hpp); all zeros: none.
  std::span<const std::uint8_t> truncated;
  std::span<const std::int32_t> prev_actions;  ///< [(T+1)*B] the action before step t
  std::span<const std::int32_t> actions;       ///< [(T+1)*B] the action taken at step t
  std::span<const S> behaviour_log_probs;      ///< [(T+1)*B] log mu(a_t)
  std::span<const S> start_state;              ///< [B * state width] recurrent state at step 0
  /// Continuous action spaces (D = action_dim > 0) carry their actions here, D values per row,
  /// and leave prev_actions and actions zero; discrete ones leave these empty.
  std::size_t action_dim = 0;
  std::span<const S> prev_env_actions = {};  ///< [(T+1)*B*D] the action the env got before step t
  std::span<const S> raw_actions = {};  ///< [(T+1)*B*D] the sample taken at step t (pre-squash u)
  /// [B] a prioritized replay's importance weights (R2D2); empty: every unroll weighs 1
  std::span<const S> importance_weights = {};
};

/// What one training step did.
struct train_step_result {
  loss_terms terms;        ///< the loss on the batch (before the update)
  double grad_norm = 0.0;  ///< global gradient norm before clipping
  bool applied = true;     ///< false: the update was skipped (see `skipped`)
  std::string skipped;     ///< why, when not applied
  double learning_rate = std::numeric_limits<double>::quiet_NaN();  ///< of this step, if known
  /// [B] a replay loss's new priorities of the batch's sequences (seedrl::ReplayLoss); else empty
  std::vector<double> priorities;
};

}  // namespace seedrl
