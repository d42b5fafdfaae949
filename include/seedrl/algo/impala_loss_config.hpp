#pragma once
/// \file
/// The IMPALA loss's hyper-parameters (the loss is in seedrl/algo/impala_loss.hpp), apart so
/// that headers compiled by nvcc can take them without the CPU loss's Eigen.

#include <concepts>
#include <optional>

namespace seedrl {

/// The IMPALA loss's hyper-parameters; defaults are SEED RL's (Atari) values.
template <std::floating_point S = float>
struct impala_loss_config {
  S discount = S(0.99);         ///< gamma, applied where the next step is not an episode end
  S baseline_cost = S(0.5);     ///< weight of the value regression term
  S entropy_cost = S(0.00025);  ///< weight of the entropy bonus
  S lambda = S(1);              ///< V-trace lambda
  std::optional<S> clip_rho_threshold = S(1);      ///< V-trace rho-bar; empty: no clipping
  std::optional<S> clip_pg_rho_threshold = S(1);   ///< rho clip in pg_adv; empty: no clipping
  std::optional<S> max_abs_reward = std::nullopt;  ///< clip rewards to +-this; empty: off
};

}  // namespace seedrl
