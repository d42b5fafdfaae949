#pragma once
/// \file
/// Acrobot, exactly as gymnasium's Acrobot-v1: a two-link pendulum hanging down, actuated at
/// the joint between the links; swing the tip above the bar. The "book" dynamics (Sutton and
/// Barto), gymnasium's constants, one fourth-order Runge-Kutta step of dt = 0.2 s per action,
/// torque -1, 0 or +1 (actions 0, 1, 2; no torque noise), joint angles wrapped to [-pi, pi],
/// velocities clipped to +-4 pi and +-9 pi. Reward -1 per step until the tip is above the bar
/// (-cos(theta1) - cos(theta1 + theta2) > 1), which terminates with reward 0; truncation after
/// 500 steps. The state is double precision and follows gymnasium's operations in order, so
/// steps match it to a few ulps. The initial state is drawn from U(-0.1, 0.1)^4 by seedrl's own
/// generator, so a given seed gives a different (equally distributed) start than gymnasium's
/// NumPy stream.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/environment.hpp"

namespace seedrl {

/// The Acrobot swing-up task with three torques; models seedrl::Environment.
class acrobot {
 public:
  using observation_type = float;
  using action_type = std::int32_t;

  /// theta1, theta2 (0: hanging down, straight), their angular velocities.
  using state = std::array<double, 4>;

  static constexpr double pi = 3.141592653589793;
  static constexpr double dt = 0.2;  ///< seconds per action
  static constexpr double max_velocity_1 = 4 * pi;
  static constexpr double max_velocity_2 = 9 * pi;
  static constexpr std::int32_t max_episode_steps = 500;
  static constexpr std::int64_t observation_size = 6;
  static constexpr std::int32_t num_actions = 3;

  explicit acrobot(std::uint64_t seed = 0) : rng_(seed) {}

  /// cos(theta1), sin(theta1), cos(theta2), sin(theta2), theta1', theta2'.
  static seedrl::observation_spec observation_spec() {
    return {dtype::float32, {observation_size}};
  }
  /// Torque -1, 0 or +1 at the joint.
  static seedrl::action_spec action_spec() { return action_spec::discrete(num_actions); }

  void seed(std::uint64_t seed) noexcept { rng_.seed(seed); }

  /// Starts an episode from a state drawn uniformly in [-0.1, 0.1)^4.
  void reset(std::span<float> observation) {
    state s{};
    for (double& x : s)
      x = rng_.uniform(-0.1, 0.1);
    reset_to(s, observation);
  }

  /// Starts an episode from a given state, e.g. to replay a recorded one.
  void reset_to(const state& s, std::span<float> observation) {
    check_size(observation);
    for (const double x : s)
      if (!std::isfinite(x))
        throw std::invalid_argument("seedrl::acrobot::reset_to: the state must be finite");
    state_ = s;
    steps_ = 0;
    ended_ = false;
    write_observation(observation);
  }

  /// Applies torque action - 1 for dt seconds.
  step_result step(action_type action, std::span<float> observation) {
    if (action < 0 || action >= num_actions)
      throw std::invalid_argument("seedrl::acrobot::step: action " + std::to_string(action) +
                                  " is not 0, 1 or 2");
    if (ended_)
      throw std::logic_error("seedrl::acrobot::step: the episode has ended; call reset() first");
    check_size(observation);
    const double torque = static_cast<double>(action - 1);
    // gymnasium's rk4 over [0, dt] in one step.
    const double half = dt / 2.0;
    const state& y = state_;
    const state k1 = derivatives(y, torque);
    const state k2 = derivatives(add(y, half, k1), torque);
    const state k3 = derivatives(add(y, half, k2), torque);
    const state k4 = derivatives(add(y, dt, k3), torque);
    state next{};
    for (std::size_t i = 0; i < 4; ++i)
      next[i] = y[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    next[0] = wrap(next[0]);
    next[1] = wrap(next[1]);
    next[2] = std::min(std::max(next[2], -max_velocity_1), max_velocity_1);
    next[3] = std::min(std::max(next[3], -max_velocity_2), max_velocity_2);
    state_ = next;
    ++steps_;

    step_result result;
    result.terminated = -std::cos(state_[0]) - std::cos(state_[1] + state_[0]) > 1.0;
    result.reward = result.terminated ? 0.0 : -1.0;
    result.truncated = !result.terminated && steps_ >= max_episode_steps;
    ended_ = result.terminated || result.truncated;
    write_observation(observation);
    return result;
  }

  const state& physics_state() const noexcept { return state_; }
  std::int32_t elapsed_steps() const noexcept { return steps_; }

 private:
  /// gymnasium's _dsdt, "book" dynamics, in its order of operations.
  static state derivatives(const state& s, double a) {
    constexpr double m1 = 1.0, m2 = 1.0, l1 = 1.0, lc1 = 0.5, lc2 = 0.5, I1 = 1.0, I2 = 1.0;
    constexpr double g = 9.8;
    const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
    const double d1 =
        m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(theta2)) + I1 + I2;
    const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(theta2)) + I2;
    const double phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - pi / 2.0);
    const double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * std::sin(theta2) -
                        2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                        (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - pi / 2) + phi2;
    const double ddtheta2 =
        (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * std::sin(theta2) - phi2) /
        (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
    const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    return {dtheta1, dtheta2, ddtheta1, ddtheta2};
  }

  static state add(const state& y, double h, const state& k) {
    return {y[0] + h * k[0], y[1] + h * k[1], y[2] + h * k[2], y[3] + h * k[3]};
  }

  /// gymnasium's wrap(x, -pi, pi): whole turns added or taken away until x is inside.
  static double wrap(double x) {
    constexpr double turn = 2 * pi;
    while (x > pi)
      x -= turn;
    while (x < -pi)
      x += turn;
    return x;
  }

  static void check_size(std::span<float> observation) {
    if (observation.size() != static_cast<std::size_t>(observation_size))
      throw std::invalid_argument("seedrl::acrobot: observation buffer holds " +
                                  std::to_string(observation.size()) + " floats, needs 6");
  }

  void write_observation(std::span<float> o) const noexcept {
    o[0] = static_cast<float>(std::cos(state_[0]));
    o[1] = static_cast<float>(std::sin(state_[0]));
    o[2] = static_cast<float>(std::cos(state_[1]));
    o[3] = static_cast<float>(std::sin(state_[1]));
    o[4] = static_cast<float>(state_[2]);
    o[5] = static_cast<float>(state_[3]);
  }

  random_generator rng_;
  state state_{};
  std::int32_t steps_ = 0;
  bool ended_ = true;
};

static_assert(check_environment<acrobot>());

}  // namespace seedrl
