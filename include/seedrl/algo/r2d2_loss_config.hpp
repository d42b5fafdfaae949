#pragma once
/// \file
/// The R2D2 loss's hyper-parameters (the loss is in seedrl/algo/r2d2_loss.hpp), apart so that
/// headers compiled by nvcc and the program layer's flags can take them alone. Defaults are
/// SEED RL's Atari configuration (agents/r2d2, gcp/train_atari.sh).

#include <concepts>
#include <cstddef>

namespace seedrl {

/// See the file comment.
template <std::floating_point S = float>
struct r2d2_loss_config {
  std::size_t n_step = 5;       ///< rewards summed before the target bootstraps
  S discount = S(0.997);        ///< gamma
  bool value_rescaling = true;  ///< learn h(return) (seedrl/algo/value_rescaling.hpp)
  S value_rescaling_eps = S(1e-3);
  /// Steps at the start of each sequence that only warm the recurrent state: no loss, no
  /// gradient (the trainer runs them forward without back-propagation).
  std::size_t burn_in = 40;
  std::size_t target_update_period = 2500;  ///< gradient steps between target network copies
  double priority_eta = 0.9;  ///< a sequence's priority: eta max |TD| + (1 - eta) mean |TD|
};

}  // namespace seedrl
